"""The sections of the report page, as a registry.

A section is an anchor id, a heading, a ``compute`` function and a template
(``templates/sections/<id>.html``). ``compute`` takes the :class:`ReportData` and returns
a :class:`Part`: what its template shows (``context``), the tables it writes as CSV and
the figures it draws (matplotlib, from :mod:`arena.report.plots`), and notes for the
overview. It is pure: :mod:`arena.report.build` writes the files and renders the page.

Adding a section is one decorated function here plus one template::

    @section("my-id", "My heading")
    def _mine(data: ReportData) -> Part:
        return Part({"rows": ...}, tables={"mine": Table(frame, "what the CSV holds")})

Sections appear in the order they are registered; a section with nothing to show for a
results folder returns an empty ``Part()`` (its template says so).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pandas as pd
from matplotlib.figure import Figure as MplFigure

from arena.errors import ArenaError
from arena.report import plots, stats
from arena.tournament.scheduler import BYE_WINS, Knockout, Swiss


@dataclass(frozen=True)
class Table:
    """A table written as ``csv/<key>.csv`` and listed in the Files section."""

    frame: pd.DataFrame
    what: str


@dataclass(frozen=True)
class Plot:
    """A figure written as ``plots/<key>.png`` and embedded in the page (None: not drawn)."""

    figure: MplFigure | None
    alt: str


@dataclass
class Part:
    """What a section's compute returns: ``context`` for its template (empty: nothing to show)."""

    context: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, Table] = field(default_factory=dict)
    plots: dict[str, Plot] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class ReportData:
    """The inputs of every section: the stored games and moves (frames from
    :mod:`arena.tournament.storage`), the stored config (None when no tournament was started),
    the entrants' names, the time control and the report's options. Statistics several
    sections use are computed once, on first use."""

    games: pd.DataFrame
    moves: pd.DataFrame
    config: dict[str, Any] | None
    names: list[str]
    time_control: dict[str, int]
    scheduled: int | None = None
    sample: int = 6
    replicates: int = 1000
    seed: int = 0

    @property
    def stored(self) -> int:
        return len(self.games)

    @cached_property
    def standings(self) -> pd.DataFrame:
        return stats.standings(self.games, self.names)

    @cached_property
    def order(self) -> list[str]:
        """The bots best first: every table and plot lists them in this order."""
        return [str(name) for name in self.standings["name"]]

    @cached_property
    def colors(self) -> dict[str, str]:
        return plots.bot_colors(self.order)

    @cached_property
    def bradley_terry(self) -> stats.BradleyTerry:
        return stats.bradley_terry(self.games, self.order, replicates=self.replicates, seed=self.seed)

    @cached_property
    def head_to_head(self) -> pd.DataFrame:
        return stats.head_to_head(self.games, self.order)

    @cached_property
    def lengths(self) -> pd.DataFrame:
        return stats.game_lengths(self.games)

    @cached_property
    def replays(self) -> pd.DataFrame:
        """The games that get a replay viewer."""
        return stats.replay_selection(self.games, self.sample)

    @property
    def format(self) -> str:
        return str((self.config or {}).get("format", ""))

    @cached_property
    def rounds(self) -> Swiss | Knockout | None:
        """A Swiss or knockout tournament's state (pairings, byes, standings per round; the
        bracket), rebuilt from the stored games as a resumed run rebuilds it; None for the
        other formats or a config that cannot be read."""
        if self.format not in ("swiss", "knockout") or self.config is None:
            return None
        from arena.tournament.config import TournamentConfig
        from arena.tournament.scheduler import replay

        try:
            plan = TournamentConfig.from_json(self.config).plan
        except ArenaError:
            return None
        state = replay(plan, dict(zip(self.games["game_id"], map(int, self.games["winner"]), strict=True)))
        return state if isinstance(state, Swiss | Knockout) else None


@dataclass(frozen=True)
class Section:
    """One section of the page: anchor id, heading, compute and template."""

    id: str
    title: str
    compute: Callable[[ReportData], Part]
    template: str
    shown: Callable[[ReportData], bool] | None = None  # None: on every page


SECTIONS: list[Section] = []
"""The registered sections, in page order."""


def section(sid: str, title: str, template: str | None = None, *,
            shown: Callable[[ReportData], bool] | None = None) -> Callable[[Callable[[ReportData], Part]],
                                                                        Callable[[ReportData], Part]]:
    """Register the decorated compute function as the section ``sid`` (template
    ``sections/<sid>.html`` unless given); ``shown``: only on the pages it says (a format's)."""
    def register(compute: Callable[[ReportData], Part]) -> Callable[[ReportData], Part]:
        if any(s.id == sid for s in SECTIONS):
            raise ValueError(f"report section {sid!r} is registered twice")
        SECTIONS.append(Section(sid, title, compute, template or f"sections/{sid}.html", shown))
        return compute
    return register


def sections_for(data: ReportData, among: list[Section] | None = None) -> list[Section]:
    """The sections of ``data``'s page (of ``among``, by default every registered one), in order."""
    return [s for s in (SECTIONS if among is None else among) if s.shown is None or s.shown(data)]


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A frame's rows as dicts (what the templates loop over)."""
    return [{str(k): v for k, v in row.items()} for row in frame.to_dict("records")]


# ------------------------------------------------------------------ the sections
@section("overview", "Overview")
def _overview(data: ReportData) -> Part:
    cfg = data.config or {}
    facts: list[tuple[str, Any]] = []
    if cfg:
        tc = cfg.get("time_control") or {}
        entrants = [str(e.get("name", "")) for e in cfg.get("entrants", [])]
        facts += [
            ("tournament", cfg.get("name", "")),
            ("format", cfg.get("format", "") + (f" (challengers: {', '.join(cfg['challengers'])})"
                                                if cfg.get("challengers") else "")),
            ("entrants", f"{len(entrants)}: " + ", ".join(entrants)),
            *([("game", cfg["game"])] if cfg.get("game") not in (None, "patchwork") else []),
            ("games per pairing", cfg.get("games", "")),
            ("edition", cfg.get("edition", "")),
            ("seed", cfg.get("seed", "")),
            ("time control", f"{tc.get('per_move_ms', '?')} ms per move, bank {tc.get('bank_ms', '?')} ms, "
                             f"first move {tc.get('first_move_ms', '?')} ms"),
        ]
    facts.append(("games stored", f"{data.stored}" + (f" of {data.scheduled} scheduled" if data.scheduled
                                                       else "")))
    if data.stored:
        abnormal = int((~data.lengths["normal"].astype(bool)).sum())
        facts.append(("ended abnormally", f"{abnormal} ({abnormal / data.stored:.0%})"))
    table = data.standings
    leader = table.iloc[0].to_dict() if len(table) and int(table["games"].sum()) else None
    return Part({"facts": facts, "leader": leader})


@section("standings", "Standings")
def _standings(data: ReportData) -> Part:
    part = Part({"rows": records(data.standings)},
                tables={"standings": Table(data.standings, "TrueSkill standings with win-rate intervals, "
                                                           "mean score and margin")})
    if not data.stored and data.config is not None:
        entrants = pd.DataFrame(data.config.get("entrants", []))
        if len(entrants):
            part.tables["entrants"] = Table(entrants, "the entrants")
    return part


@section("swiss", "Swiss rounds", shown=lambda data: data.format == "swiss")
def _swiss(data: ReportData) -> Part:
    state = data.rounds
    if not isinstance(state, Swiss) or not state.history:
        return Part()
    won = {str(g): str(w) for g, w in zip(data.games["game_id"], data.games["winner_name"], strict=True)}
    rounds, pairing_rows, standing_rows = [], [], []
    for r in state.history:
        boards = []
        for board, (a, b) in enumerate(r.pairings, 1):
            prefix = f"r{r.number}-b{board}-"
            winners = [w for g, w in won.items() if g.startswith(prefix)]
            row = {"round": r.number, "board": board, "first": a, "second": b,
                   "first_wins": winners.count(a), "second_wins": winners.count(b), "games": len(winners)}
            boards.append(row)
            pairing_rows.append(row)
        if r.bye is not None:
            pairing_rows.append({"round": r.number, "board": 0, "first": r.bye, "second": "(bye)",
                                 "first_wins": BYE_WINS, "second_wins": 0, "games": 0})
        standings = [{"round": r.number, "rank": i, "name": name, "wins": wins}
                     for i, (name, wins) in enumerate(r.standings, 1)]
        standing_rows += standings
        rounds.append({"number": r.number, "boards": boards, "bye": r.bye, "standings": standings})
    return Part({"rounds": rounds, "planned": state.rounds, "bye_wins": BYE_WINS},
                tables={"swiss_pairings": Table(pd.DataFrame(pairing_rows), "every Swiss pairing per round "
                                                "with its games won (a bye: board 0)"),
                        "swiss_standings": Table(pd.DataFrame(standing_rows), "the Swiss standings (wins, "
                                                 "byes included) after each finished round")})


@section("bracket", "Knockout bracket", shown=lambda data: data.format == "knockout")
def _bracket(data: ReportData) -> Part:
    state = data.rounds
    if not isinstance(state, Knockout):
        return Part()
    size = len(state.bracket[0]) * 2
    rounds, rows = [], []
    for number, matches in enumerate(state.bracket, 1):
        left = size >> number  # matches in this round
        title = {1: "Final", 2: "Semi-finals", 4: "Quarter-finals"}.get(left, f"Round {number}")
        shown = []
        for m, match in enumerate(matches, 1):
            row = {"round": number, "match": m, "seed_a": match.seeds[0], "a": match.names[0],
                   "seed_b": match.seeds[1], "b": match.names[1], "a_wins": match.wins[0],
                   "b_wins": match.wins[1], "extra_pair": match.extra, "winner": match.winner, "by": match.by}
            rows.append(row)
            shown.append(row)
        rounds.append({"title": title, "matches": shown})
    frame = pd.DataFrame(rows).astype({"seed_b": "Int64"})
    return Part({"rounds": rounds, "champion": state.champion, "games": state.games,
                 "drawn": len(state.bracket), "needed": max(1, (size - 1).bit_length())},
                tables={"bracket": Table(frame, "every knockout match: seeds, games won, extra pair, winner "
                                                "and how it was decided")})


@section("ratings", "Bradley-Terry ratings")
def _ratings(data: ReportData) -> Part:
    if not data.stored:
        return Part()
    bt = data.bradley_terry
    los = bt.los
    matrix = [(str(name), [(str(other), _superiority(float(v)) if name != other and not pd.isna(v) else None)
                           for other, v in values.items()])
              for name, values in los.iterrows()]
    part = Part({"rows": records(bt.table), "columns": [str(c) for c in los.columns], "matrix": matrix,
                 "notes": bt.notes}, notes=list(bt.notes))
    part.tables["bradley_terry"] = Table(bt.table, "Bradley-Terry Elo ratings with 95% bootstrap intervals")
    part.tables["likelihood_of_superiority"] = Table(los.reset_index(),
                                                     "P(row bot is stronger than column bot)")
    part.plots["elo"] = Plot(plots.elo_plot(bt.table, data.colors) if len(bt.table) else None,
                             "Bradley-Terry ratings")
    return part


def _superiority(v: float) -> dict[str, str]:
    """A likelihood-of-superiority cell: the share shown and its shade (green for likely
    stronger, red for likely weaker, white near 50%)."""
    strength = min(1.0, abs(v - 0.5) * 2)
    if v >= 0.5:
        r, g, b = 235 - 120 * strength, 251 - 40 * strength, 238 - 110 * strength
    else:
        r, g, b = 255 - 10 * strength, 245 - 120 * strength, 245 - 120 * strength
    shown = ">99.9%" if v > 0.999 else "<0.1%" if v < 0.001 else f"{v:.1%}"
    return {"shown": shown, "shade": f"rgb({r:.0f},{g:.0f},{b:.0f})"}


@section("head-to-head", "Head to head")
def _head_to_head(data: ReportData) -> Part:
    if not data.stored:
        return Part()
    h2h, order = data.head_to_head, data.order
    rank = {n: i for i, n in enumerate(order)}
    pairs = h2h[h2h["name"].map(rank) < h2h["opponent"].map(rank)]
    margins = stats.pairing_margins(data.games, order)
    wins = stats.win_matrix(h2h, order, "wins")
    part = Part({"pairs": records(pairs)})
    part.tables["head_to_head"] = Table(h2h, "per ordered pair of bots: games, wins, losses, margins, "
                                             "forfeits")
    part.tables["head_to_head_wins"] = Table(wins.astype("Int64").reset_index(),  # counts: 4, not 4.0
                                             "wins of the row bot against the column bot")
    part.tables["pairing_margins"] = Table(margins, "score margin of every game that ended by the rules, per "
                                                    "pairing")
    matrix = plots.head_to_head_plot(wins, stats.win_matrix(h2h, order, "games")) if len(order) > 1 else None
    part.plots["head_to_head"] = Plot(matrix, "head-to-head win matrix")
    part.plots["margins"] = Plot(plots.margins_plot(margins, data.colors) if len(margins) else None,
                                 "score margins per pairing")
    return part


@section("seat-advantage", "Seat advantage")
def _seat(data: ReportData) -> Part:
    if not data.stored:
        return Part()
    seat = stats.seat_advantage(data.games, data.order)
    played = int(seat.iloc[0]["games"])
    return Part({"overall": seat.iloc[0].to_dict() if played else None, "rows": records(seat.iloc[1:])},
                tables={"seat_advantage": Table(seat, "first-player wins overall and per bot (games ended by "
                                                      "the rules)")},
                plots={"seat": Plot(plots.seat_plot(seat) if played else None, "seat advantage")})


@section("endings", "How games ended")
def _endings(data: ReportData) -> Part:
    if not data.stored:
        return Part()
    endings = stats.endings(data.games, data.order)
    abnormal = stats.abnormal_games(data.games)
    fixed = {"name", "games", "normal", "opponent_failed", "failures"}
    part = Part({"rows": records(endings) if int(endings["games"].sum()) else [],
                 "kinds": [str(k) for k in endings.columns if k not in fixed], "abnormal": records(abnormal)})
    part.tables["endings"] = Table(endings, "how each bot's games ended, failures by kind")
    part.tables["abnormal_games"] = Table(abnormal, "every game that did not end by the rules")
    part.plots["endings"] = Plot(plots.endings_plot(endings), "how games ended per bot")
    return part


@section("think-time", "Think time")
def _think(data: ReportData) -> Part:
    if not data.stored:
        return Part()
    moves, order, colors, tc = data.moves, data.order, data.colors, data.time_control
    think = stats.think_times(moves, order)
    slowest = stats.slowest_moves(moves, 10)
    bank_games = stats.bank_use(moves, tc)
    bank = stats.bank_summary(bank_games, order)
    timed = bool(moves["time_ms"].notna().any())
    drawn = bool(len(bank_games) and (bank_games["bank_ms"] > 0).any())
    part = Part({"rows": records(think) if int(think["moves"].sum()) else [], "slowest": records(slowest),
                 "bank": records(bank), "bank_used": bool(len(bank) and int(bank["games_using_bank"].sum()))})
    part.tables["think_times"] = Table(think, "time per move per bot")
    part.tables["slowest_moves"] = Table(slowest, "the slowest moves of the tournament")
    part.tables["bank_use"] = Table(bank_games, "time drawn from the bank per bot and game")
    part.tables["bank_summary"] = Table(bank, "time-bank use per bot")
    part.plots["think_time"] = Plot(plots.think_time_plot(moves, order, colors, tc["per_move_ms"]) if timed
                                    else None, "think time per move")
    part.plots["bank"] = Plot(plots.bank_plot(bank_games, order, colors, tc["bank_ms"]) if drawn else None,
                              "time-bank use")
    return part


@section("scores", "Scores and game length")
def _scores(data: ReportData) -> Part:
    if not data.stored:
        return Part()
    games, order = data.games, data.order
    scores = stats.score_table(games, order)
    lengths = data.lengths
    normal = lengths[lengths["normal"].astype(bool)]
    summary = None
    if len(normal):
        summary = {"mean_moves": normal["moves"].mean(), "min_moves": normal["moves"].min(),
                   "max_moves": normal["moves"].max(), "mean_s": normal["duration_s"].mean(),
                   "max_s": normal["duration_s"].max()}
    part = Part({"rows": records(scores) if int(scores["games"].sum()) else [], "summary": summary})
    part.tables["scores"] = Table(scores, "final scores per bot (games ended by the rules)")
    part.tables["game_lengths"] = Table(lengths, "moves and duration of every game")
    normal_games = (games["reason"] == "normal").any()
    drawn = plots.scores_plot(stats.per_bot_games(games), order, data.colors) if normal_games else None
    part.plots["scores"] = Plot(drawn, "final scores per bot")
    part.plots["lengths"] = Plot(plots.lengths_plot(lengths), "game length and duration")
    return part


@section("progression", "Rating progression")
def _progression(data: ReportData) -> Part:
    if not data.stored:
        return Part()
    progression = stats.rating_progression(data.games, data.order)
    what = "TrueSkill mu and sigma of each bot after each of its games"
    return Part({"drawn": True}, tables={"rating_progression": Table(progression, what)},
                plots={"progression": Plot(plots.progression_plot(progression, data.order, data.colors),
                                           "rating progression")})


@section("replays", "Replays")
def _replays(data: ReportData) -> Part:
    if not data.stored:
        return Part()
    selection = data.replays
    return Part({"rows": records(selection)},
                tables={"replays": Table(selection, "the games with a replay viewer")})


@section("files", "Files")
def _files(data: ReportData) -> Part:
    return Part()  # the page lists what the other sections wrote


__all__ = ["Part", "Plot", "ReportData", "SECTIONS", "Section", "Table", "records", "section",
           "sections_for"]
