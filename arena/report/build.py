"""Write a results folder's report: read the store, compute (stats), draw (plots), assemble
(html), and write ``report/`` with ``index.html``, ``plots/*.png``, ``csv/*.csv`` and
``replays/*.html``. The only module of the package that touches files.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from arena.errors import ArenaError, ConfigError, RecordError
from arena.referee import DEFAULT_TIME_CONTROL
from arena.report import plots, stats
from arena.report.html import Figure, ReportContent, render_report
from arena.report.replay_html import replay_html
from arena.untrusted import csv_frame, file_name, inside

GAME_COLUMNS = ("idx", "game_id", "pair", "seed", "seat0", "seat1", "score0", "score1", "winner",
                "winner_name", "loser", "reason", "detail", "moves", "duration_s", "started_at",
                "finished_at", "first_player")
MOVE_COLUMNS = ("idx", "game_id", "ply", "player", "name", "action", "patch", "cells", "time_ms")
OWN_OUTPUTS = (("plots", "*.png"), ("csv", "*.csv"), ("replays", "*.html"))
"""What a report writes inside its folder (and clears before writing again)."""


@dataclass
class Results:
    """What a results folder holds, as frames. ``config`` is None when no tournament was
    started there; ``scheduled`` is the number of games the config schedules."""

    folder: Path
    config: dict[str, Any] | None
    games: pd.DataFrame
    moves: pd.DataFrame
    scheduled: int | None
    records: dict[str, dict[str, Any]] = field(default_factory=dict)  # the ones asked for, by game_id
    notes: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        entrants = [e["name"] for e in (self.config or {}).get("entrants", [])]
        return stats.entrant_order(self.games, entrants)

    @property
    def time_control(self) -> dict[str, int]:
        stored = (self.config or {}).get("time_control") or {}
        return {key: int(stored.get(key, default)) for key, default in DEFAULT_TIME_CONTROL.to_json().items()}


@dataclass
class ReportSummary:
    """What :func:`write_report` wrote."""

    out: Path
    index: Path
    status: str
    stored: int
    scheduled: int | None
    replays: int
    notes: list[str]


def load_results(folder: Path, *, want_records: Callable[[pd.DataFrame], set[str]] | None = None,
                 ignore: tuple[str, ...] = ("report",)) -> Results:
    """Read a results folder (read-only, safe while a tournament writes to it).

    A folder that does not exist, or that holds files but no tournament database, raises
    ConfigError; an empty folder (``ignore``d entries aside) gives empty Results.
    ``want_records(games)`` names the games whose full records to keep (for replays).
    """
    from arena.tournament.storage import DB_NAME, ResultStore

    folder = Path(folder)
    if not folder.exists():
        raise ConfigError(f"{folder}: no such folder")
    if not folder.is_dir():
        raise ConfigError(f"{folder}: not a results folder (it is a file)")
    if not (folder / DB_NAME).is_file() and not [p for p in folder.iterdir() if p.name not in ignore]:
        return Results(folder, None, _empty(GAME_COLUMNS), _empty(MOVE_COLUMNS), None)
    with ResultStore(folder, readonly=True) as store:
        try:
            config = store.stored_config()
            games = store.games_frame()
            moves = store.moves_frame()
            wanted = want_records(games) if want_records else set()
            first_player: dict[str, int] = {}
            kept: dict[str, dict[str, Any]] = {}
            for record in store.records():
                game_id = str(record.get("game_id"))
                first_player[game_id] = int(record.get("first_player", 0) or 0)
                if game_id in wanted:
                    kept[game_id] = record
        except ArenaError:
            raise
        except Exception as exc:  # sqlite3 errors, a corrupt record text
            raise ConfigError(f"{folder}: cannot read the stored games ({exc})") from None
    # Moves and games are read in separate queries: a game stored in between has no moves yet.
    moves = moves[moves["game_id"].isin(set(games["game_id"]))]
    games = games.assign(first_player=games["game_id"].map(first_player).fillna(0).astype("int64"))
    scheduled = None
    notes: list[str] = []
    if config is not None:
        try:
            from arena.tournament.config import TournamentConfig
            from arena.tournament.schedule import schedule_size

            stored_config = TournamentConfig.from_json(config)
            scheduled = schedule_size(stored_config.plan)
            if stored_config.ruleset().unverified:  # Stack'n Stuff's proxy components
                notes.append(stored_config.ruleset().unverified)
        except ArenaError as exc:
            notes.append(f"the stored config cannot be read ({exc}); the number of scheduled games is "
                         "unknown")
    return Results(folder, config, games, moves, scheduled, kept, notes)


def _empty(columns: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})


def write_report(results: Path, out: Path | None = None, *, sample: int = 6, replicates: int = 1000,
                 seed: int = 0) -> ReportSummary:
    """Write the report of the results folder ``results`` into ``out`` (default
    ``results/report``) and return what was written. ``sample``: how many normal games get
    a replay (every abnormal game does); ``replicates``: bootstrap tournaments for the
    Bradley-Terry intervals; ``seed``: their random seed."""
    results = Path(results)
    out = Path(out) if out is not None else results / "report"
    def replayed(games: pd.DataFrame) -> set[str]:
        return set(stats.replay_selection(games, sample)["game_id"])

    data = load_results(results, want_records=replayed,
                        ignore=(out.name,) if out.parent.resolve() == results.resolve() else ())
    games, moves, names = data.games, data.moves, data.names
    stored = len(games)
    if data.config is None and not stored:
        status = "no tournament"
    elif not stored:
        status = "empty"
    elif data.scheduled is not None and stored < data.scheduled:
        status = "unfinished"
    else:
        status = "complete"

    try:
        out.mkdir(parents=True, exist_ok=True)
        for sub, pattern in OWN_OUTPUTS:
            (out / sub).mkdir(exist_ok=True)
            for old in (out / sub).glob(pattern):
                old.unlink()
    except OSError as exc:
        raise ConfigError(f"{out}: cannot write the report there ({exc.strerror})") from None

    table = stats.standings(games, names)
    order = table["name"].tolist()  # best first: every table and plot lists bots in this order
    colors = plots.bot_colors(order)
    title = f"Tournament report: {(data.config or {}).get('name') or results.name}"
    content = ReportContent(
        title=title, folder=str(results), generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        status=status, stored=stored, scheduled=data.scheduled, config=data.config, names=order,
        colors=colors, standings=table, notes=list(data.notes))
    tables: dict[str, tuple[pd.DataFrame, str]] = {
        "standings": (table, "TrueSkill standings with win-rate intervals, mean score and margin")}

    if stored:
        tc = data.time_control
        bt = stats.bradley_terry(games, order, replicates=replicates, seed=seed)
        h2h = stats.head_to_head(games, order)
        margins = stats.pairing_margins(games, order)
        seat = stats.seat_advantage(games, order)
        endings = stats.endings(games, order)
        abnormal = stats.abnormal_games(games)
        think = stats.think_times(moves, order)
        slowest = stats.slowest_moves(moves, 10)
        bank_games = stats.bank_use(moves, tc)
        bank = stats.bank_summary(bank_games, order)
        scores = stats.score_table(games, order)
        lengths = stats.game_lengths(games)
        progression = stats.rating_progression(games, order)
        selection = stats.replay_selection(games, sample)
        content.bradley_terry = bt
        content.head_to_head, content.seat, content.endings, content.abnormal = h2h, seat, endings, abnormal
        content.think, content.slowest, content.bank = think, slowest, bank
        content.scores, content.lengths, content.replays = scores, lengths, selection
        content.notes += bt.notes
        tables.update({
            "bradley_terry": (bt.table, "Bradley-Terry Elo ratings with 95% bootstrap intervals"),
            "likelihood_of_superiority": (bt.los.reset_index(), "P(row bot is stronger than column bot)"),
            "head_to_head": (h2h, "per ordered pair of bots: games, wins, losses, margins, forfeits"),
            "head_to_head_wins": (stats.win_matrix(h2h, order, "wins").reset_index(),
                                  "wins of the row bot against the column bot"),
            "pairing_margins": (margins, "score margin of every game that ended by the rules, per pairing"),
            "seat_advantage": (seat, "first-player wins overall and per bot (games ended by the rules)"),
            "endings": (endings, "how each bot's games ended, failures by kind"),
            "abnormal_games": (abnormal, "every game that did not end by the rules"),
            "think_times": (think, "time per move per bot"),
            "slowest_moves": (slowest, "the slowest moves of the tournament"),
            "bank_use": (bank_games, "time drawn from the bank per bot and game"),
            "bank_summary": (bank, "time-bank use per bot"),
            "scores": (scores, "final scores per bot (games ended by the rules)"),
            "game_lengths": (lengths, "moves and duration of every game"),
            "rating_progression": (progression, "TrueSkill mu and sigma of each bot after each of its games"),
            "replays": (selection, "the games with a replay viewer"),
        })
        # Bot names are plot labels: never let matplotlib parse "$...$" in them as mathtext.
        with plots.plain_text():
            figures: dict[str, tuple[Any, str]] = {
                "elo": (plots.elo_plot(bt.table, colors) if len(bt.table) else None, "Bradley-Terry ratings"),
                "head_to_head": (plots.head_to_head_plot(stats.win_matrix(h2h, order, "wins"),
                                                         stats.win_matrix(h2h, order, "games"))
                                 if len(order) > 1 else None, "head-to-head win matrix"),
                "margins": (plots.margins_plot(margins, colors) if len(margins) else None,
                            "score margins per pairing"),
                "seat": (plots.seat_plot(seat) if int(seat.iloc[0]["games"]) else None, "seat advantage"),
                "endings": (plots.endings_plot(endings), "how games ended per bot"),
                "think_time": (plots.think_time_plot(moves, order, colors, tc["per_move_ms"])
                               if moves["time_ms"].notna().any() else None, "think time per move"),
                "bank": (plots.bank_plot(bank_games, order, colors, tc["bank_ms"])
                         if len(bank_games) and (bank_games["bank_ms"] > 0).any() else None, "time-bank use"),
                "scores": (plots.scores_plot(stats.per_bot_games(games), order, colors)
                           if (games["reason"] == "normal").any() else None, "final scores per bot"),
                "lengths": (plots.lengths_plot(lengths), "game length and duration"),
                "progression": (plots.progression_plot(progression, order, colors), "rating progression"),
            }
            for key, (fig, alt) in figures.items():
                if fig is None:
                    continue
                buffer = io.BytesIO()
                fig.savefig(buffer, format="png")
                png = buffer.getvalue()
                (out / "plots" / f"{key}.png").write_bytes(png)
                content.figures[key] = Figure(png, f"plots/{key}.png", alt)
        for row in selection.itertuples(index=False):
            record = data.records.get(row.game_id)
            if record is None:
                continue
            try:
                page = replay_html(record, back_link="../index.html")
            except RecordError as exc:
                content.notes.append(f"no replay for game {row.game_id}: {exc}")
                continue
            name = f"replays/{file_name(str(row.game_id), limit=120, fallback='game')}.html"
            inside(out, *name.split("/")).write_text(page, encoding="utf-8")
            content.replay_links[str(row.game_id)] = name
    elif data.config is not None:
        entrants = pd.DataFrame(data.config.get("entrants", []))
        if len(entrants):
            tables["entrants"] = (entrants, "the entrants")

    for key, (frame, what) in tables.items():
        path = f"csv/{key}.csv"
        csv_frame(frame).to_csv(out / path, index=False)  # no cell a spreadsheet would run
        content.csv_files.append((path, what))
    index = out / "index.html"
    index.write_text(render_report(content), encoding="utf-8")
    return ReportSummary(out, index, status, stored, data.scheduled, len(content.replay_links), content.notes)


__all__ = ["Results", "ReportSummary", "load_results", "write_report"]
