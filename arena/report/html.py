"""The report page: :class:`ReportContent` (frames, figures as PNG bytes, links) in, one
self-contained HTML string out. Images are embedded as data URIs and the style sheet is
inline, so ``index.html`` opens from disk with no server; the only links go to files
beside it (the CSV tables, the PNGs, the replay viewers).
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pandas as pd

from arena.report.stats import BradleyTerry

Format = Callable[[Any], str]


@dataclass
class Figure:
    """One plot: its PNG bytes, where the PNG file is (relative to index.html), its alt text."""

    png: bytes
    path: str
    alt: str


@dataclass
class ReportContent:
    """Everything the page shows. Frames are from :mod:`arena.report.stats`; a frame may be
    empty (nothing stored yet). ``replay_links`` maps game_id to the viewer's relative path."""

    title: str
    folder: str
    generated_at: str
    status: str  # "no tournament", "empty", "unfinished", "complete"
    stored: int
    scheduled: int | None
    config: dict[str, Any] | None
    names: list[str]
    colors: dict[str, str]
    standings: pd.DataFrame
    bradley_terry: BradleyTerry | None = None
    head_to_head: pd.DataFrame | None = None
    seat: pd.DataFrame | None = None
    endings: pd.DataFrame | None = None
    abnormal: pd.DataFrame | None = None
    think: pd.DataFrame | None = None
    slowest: pd.DataFrame | None = None
    bank: pd.DataFrame | None = None
    scores: pd.DataFrame | None = None
    lengths: pd.DataFrame | None = None
    replays: pd.DataFrame | None = None
    replay_links: dict[str, str] = field(default_factory=dict)
    figures: dict[str, Figure] = field(default_factory=dict)
    csv_files: list[tuple[str, str]] = field(default_factory=list)  # (relative path, what it holds)
    notes: list[str] = field(default_factory=list)


SECTIONS = (
    ("overview", "Overview"),
    ("standings", "Standings"),
    ("ratings", "Bradley-Terry ratings"),
    ("head-to-head", "Head to head"),
    ("seat-advantage", "Seat advantage"),
    ("endings", "How games ended"),
    ("think-time", "Think time"),
    ("scores", "Scores and game length"),
    ("progression", "Rating progression"),
    ("replays", "Replays"),
    ("files", "Files"),
)
"""The sections of the page, in order: (anchor id, heading)."""


# ------------------------------------------------------------------ formatting
def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def num(spec: str) -> Format:
    return lambda v: "–" if _missing(v) else format(v, spec)


def signed(spec: str) -> Format:
    return lambda v: "–" if _missing(v) else format(v, "+" + spec)


def pct(v: Any) -> str:
    return "–" if _missing(v) else f"{v:.0%}"


def text(v: Any) -> str:
    return "–" if _missing(v) else str(v)


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


@dataclass(frozen=True)
class Col:
    """A table column: the frame column (or a function of the row), its header, how to
    format it, a tooltip, and whether the cell is already HTML."""

    key: str | Callable[[Any], Any]
    header: str
    fmt: Format = text
    tip: str = ""
    raw: bool = False
    numeric: bool = True


def table(frame: pd.DataFrame, cols: Sequence[Col], *, cls: str = "", caption: str = "") -> str:
    """An HTML table of ``frame`` with the given columns (all text escaped unless ``raw``)."""
    head = "".join(f'<th{_attr("title", c.tip)}{" class=num" if c.numeric else ""}>{esc(c.header)}</th>'
                   for c in cols)
    rows = []
    for record in frame.to_dict("records"):
        row = SimpleNamespace(**{str(k): v for k, v in record.items()})
        cells = []
        for c in cols:
            value = c.key(row) if callable(c.key) else getattr(row, c.key)
            shown = c.fmt(value)
            cells.append(f'<td{" class=num" if c.numeric else ""}>{shown if c.raw else esc(shown)}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    cap = f"<caption>{caption}</caption>" if caption else ""
    return (f'<div class="scroll"><table class="{esc(cls)}">{cap}<thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


def _attr(name: str, value: str) -> str:
    return f' {name}="{esc(value)}"' if value else ""


# ------------------------------------------------------------------ the page
def render_report(content: ReportContent) -> str:
    """The whole page."""
    c = content
    nav = "".join(f'<a href="#{sid}">{esc(title)}</a>' for sid, title in SECTIONS)
    body = [
        _overview(c), _standings(c), _ratings(c), _head_to_head(c), _seat(c), _endings(c), _think(c),
        _scores(c), _progression(c), _replays(c), _files(c),
    ]
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>{esc(c.title)}</title>
<style>{_CSS}</style>
</head>
<body>
<header>
<h1>{esc(c.title)}</h1>
<p class="sub">Results folder <code>{esc(c.folder)}</code> &middot; report generated {esc(c.generated_at)}</p>
{_banner(c)}
<nav>{nav}</nav>
</header>
<main>
{"".join(body)}
</main>
<footer>Generated by <code>arena report</code>. Every number is recomputed from the stored game
records.</footer>
</body>
</html>
"""


def _banner(c: ReportContent) -> str:
    if c.status == "no tournament":
        return ('<div class="banner empty" id="status" data-status="no-tournament"><b>Nothing to report '
                "yet.</b> This folder holds no tournament database: no tournament has been started here."
                "</div>")
    if c.status == "empty":
        of = f" of {c.scheduled} scheduled" if c.scheduled else ""
        return (f'<div class="banner empty" id="status" data-status="empty"><b>No games stored yet</b> '
                f"(0{of}). The tournament has been set up but no game has finished; the entrants are "
                "listed below.</div>")
    if c.status == "unfinished":
        share = f" ({c.stored / c.scheduled:.0%})" if c.scheduled else ""
        return ('<div class="banner unfinished" id="status" data-status="unfinished"><b>Unfinished '
                f"tournament:</b> {c.stored} of {c.scheduled} scheduled games are stored{share}. The run "
                "was stopped or is still going; everything below is computed from the games stored so far "
                "(running the same command again resumes it).</div>")
    opening = '<div class="banner complete" id="status" data-status="complete">'
    if c.scheduled:
        return f"{opening}Complete: all {c.stored} scheduled games are stored.</div>"
    return f"{opening}{c.stored} games stored.</div>"


def _section(sid: str, intro: str, content: str) -> str:
    title = dict(SECTIONS)[sid]
    return (f'<section id="{sid}"><h2>{esc(title)}</h2>'
            + (f'<p class="intro">{intro}</p>' if intro else "") + content + "</section>")


def _nothing(c: ReportContent) -> str:
    return '<p class="none">No games stored yet: nothing to show here.</p>'


def _figure(c: ReportContent, key: str, caption: str = "") -> str:
    fig = c.figures.get(key)
    if fig is None:
        return ""
    data = base64.b64encode(fig.png).decode("ascii")
    cap = f"<figcaption>{caption}</figcaption>" if caption else ""
    return (f'<figure><a href="{esc(fig.path)}"><img src="data:image/png;base64,{data}" alt="{esc(fig.alt)}"'
            f' data-plot="{esc(key)}"></a>{cap}</figure>')


def _bot(c: ReportContent) -> Col:
    def cell(row: Any) -> str:
        name = row.name
        color = c.colors.get(name, "#adb5bd")
        return f'<span class="bot"><i style="background:{esc(color)}"></i>{esc(name)}</span>'
    return Col(lambda row: row, "bot", cell, raw=True, numeric=False)


def _game_link(c: ReportContent, game_id: Any, label: str | None = None) -> str:
    link = c.replay_links.get(str(game_id))
    shown = esc(label if label is not None else game_id)
    return f'<a class="replay" href="{esc(link)}">{shown}</a>' if link else shown


# ------------------------------------------------------------------ sections
def _overview(c: ReportContent) -> str:
    cfg = c.config or {}
    rows = []
    if cfg:
        tc = cfg.get("time_control") or {}
        rows += [
            ("tournament", cfg.get("name", "")),
            ("format", cfg.get("format", "") + (f" (challengers: {', '.join(cfg['challengers'])})"
                                                if cfg.get("challengers") else "")),
            ("entrants", f"{len(cfg.get('entrants', []))}: "
                         + ", ".join(e["name"] for e in cfg.get("entrants", []))),
            *([("game", cfg["game"])] if cfg.get("game") not in (None, "patchwork") else []),
            ("games per pairing", cfg.get("games", "")),
            ("edition", cfg.get("edition", "")),
            ("seed", cfg.get("seed", "")),
            ("time control", f"{tc.get('per_move_ms', '?')} ms per move, bank {tc.get('bank_ms', '?')} ms, "
                             f"first move {tc.get('first_move_ms', '?')} ms"),
        ]
    rows.append(("games stored", f"{c.stored}" + (f" of {c.scheduled} scheduled" if c.scheduled else "")))
    if c.lengths is not None and len(c.lengths):
        abnormal = int((~c.lengths["normal"].astype(bool)).sum())
        rows.append(("ended abnormally", f"{abnormal} ({abnormal / len(c.lengths):.0%})"))
    notes = "".join(f"<li>{esc(n)}</li>" for n in c.notes)
    facts = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    leader = ""
    if len(c.standings) and int(c.standings["games"].sum()):
        top = c.standings.iloc[0]
        leader = (f"<p>Leader by conservative TrueSkill rating: <b>{esc(top['name'])}</b> "
                  f"(μ {top['mu']:.1f}, σ {top['sigma']:.1f}, {top['wins']} wins in {top['games']} "
                  "games).</p>")
    return _section("overview", "", f'<table class="facts">{facts}</table>{leader}'
                    + (f'<ul class="notes">{notes}</ul>' if notes else ""))


def _standings(c: ReportContent) -> str:
    intro = ("TrueSkill ratings recomputed from every stored game in schedule order (no draws), ranked by "
             "the conservative rating μ − 3σ. Win rates carry a 95% Wilson interval; a forfeit (timeout, "
             "crash, ...) is a loss. Mean score and margin (own score minus the opponent's) count only the "
             "games that ended by the rules.")
    if c.standings.empty:
        return _section("standings", intro, '<p class="none">No entrants recorded.</p>')
    cols = [Col("rank", "#", num("d")), _bot(c), Col("mu", "μ", num(".2f")), Col("sigma", "σ", num(".2f")),
            Col("conservative", "μ − 3σ", num(".2f"), "the ranking key"),
            Col("games", "games", num("d")), Col("wins", "wins", num("d")),
            Col(lambda r: r, "win rate [95% CI]", lambda r: "–" if not r.games else
                f"{r.win_rate:.0%} [{r.win_low:.0%}, {r.win_high:.0%}]"),
            Col("normal_games", "normal games", num("d"), "games that ended by the rules"),
            Col("mean_score", "mean score", num(".1f")),
            Col("mean_margin", "mean margin", signed(".1f"), "own score minus the opponent's"),
            Col("failures", "failures", num("d"), "games this bot lost by timeout, crash, illegal move, ...")]
    return _section("standings", intro, table(c.standings, cols, cls="standings"))


def _ratings(c: ReportContent) -> str:
    intro = ("A Bradley-Terry model fitted to all games at once (as Ordo and BayesElo rate chess engines), "
             "on the Elo scale with the average bot at 0: a gap of 100 Elo means the stronger bot is "
             "expected to win 64% of their games, 200 Elo 76%. One virtual win each way per pairing that met "
             "keeps a "
             "bot that won or lost everything at a finite rating. The 95% intervals come from a parametric "
             "bootstrap (tournaments simulated from the fitted ratings and refitted).")
    bt = c.bradley_terry
    if bt is None or bt.table.empty:
        return _section("ratings", intro, _nothing(c))
    cols = [Col("rank", "#", num("d")), _bot(c), Col("elo", "Elo", signed(".0f")),
            Col(lambda r: r, "95% interval", lambda r: f"[{r.elo_low:+.0f}, {r.elo_high:+.0f}]"),
            Col("elo_sd", "± (1 sd)", num(".0f")),
            Col("games", "games", num("d")), Col("wins", "wins", num("d"))]
    los = bt.los
    head = "".join(f"<th class=num>{esc(n)}</th>" for n in los.columns)
    rows = []
    for name, values in los.iterrows():
        cells = []
        for other, v in values.items():
            if name == other or _missing(v):
                cells.append('<td class="num diag">–</td>')
                continue
            shade = _los_color(float(v))
            shown = ">99.9%" if v > 0.999 else "<0.1%" if v < 0.001 else f"{v:.1%}"
            cells.append(f'<td class="num" style="background:{shade}" title="P({esc(name)} is stronger than '
                         f'{esc(other)})">{shown}</td>')
        rows.append(f"<tr><th>{esc(name)}</th>{''.join(cells)}</tr>")
    los_html = (f'<h3>Likelihood of superiority</h3><p class="intro">The probability that the row bot is '
                f"really stronger than the column bot, given these games. At 95% or more the gap is very "
                f"likely real; around 50% it is noise.</p>"
                f'<div class="scroll"><table class="los"><thead><tr><th></th>{head}</tr></thead>'
                f'<tbody>{"".join(rows)}</tbody></table></div>')
    notes = "".join(f'<p class="warn">{esc(n)}</p>' for n in bt.notes)
    return _section("ratings", intro, notes + '<div class="pair">' + table(bt.table, cols, cls="bt")
                    + _figure(c, "elo") + "</div>" + los_html)


def _los_color(v: float) -> str:
    """Green for likely stronger, red for likely weaker, white near 50%."""
    strength = min(1.0, abs(v - 0.5) * 2)
    if v >= 0.5:
        r, g, b = 235 - 120 * strength, 251 - 40 * strength, 238 - 110 * strength
    else:
        r, g, b = 255 - 10 * strength, 245 - 120 * strength, 245 - 120 * strength
    return f"rgb({r:.0f},{g:.0f},{b:.0f})"


def _head_to_head(c: ReportContent) -> str:
    intro = ("Each cell: wins–losses of the row bot against the column bot over all their games, "
             "forfeits included, and its win rate. The table below gives each pairing's score margins over "
             "the games that ended by the rules.")
    h2h = c.head_to_head
    if h2h is None or h2h.empty:
        return _section("head-to-head", intro, _nothing(c))
    order = {n: i for i, n in enumerate(c.names)}
    pairs = h2h[h2h["name"].map(order) < h2h["opponent"].map(order)]
    cols = [Col(lambda r: f"{r.name} vs {r.opponent}", "pairing", numeric=False),
            Col("games", "games", num("d")),
            Col(lambda r: f"{r.wins}–{r.losses}", "wins–losses"),
            Col("normal_games", "normal games", num("d")),
            Col("mean_margin", "mean margin", signed(".1f"), "first-named bot's score minus the other's"),
            Col(lambda r: "–" if _missing(r.min_margin) else f"{r.min_margin:+.0f} … {r.max_margin:+.0f}",
                "margin range"),
            Col(lambda r: f"{r.failures} / {r.opponent_failures}", "forfeits",
                tip="games forfeited by the first-named bot / by the second")]
    return _section("head-to-head", intro, _figure(c, "head_to_head") + table(pairs, cols, cls="pairs")
                    + _figure(c, "margins", "Each dot is a game; filled: the first-named bot moved first."))


def _seat(c: ReportContent) -> str:
    intro = ("How often the player who moves first wins, over the games that ended by the rules (the seat "
             "has nothing to do with a crash). Tournament pairings play every circle twice with the seats "
             "swapped, so the seat advantage cancels out of the standings.")
    seat = c.seat
    if seat is None or seat.empty or not int(seat.iloc[0]["games"]):
        return _section("seat-advantage", intro, _nothing(c) if c.stored == 0 else
                        '<p class="none">No game ended by the rules yet.</p>')
    overall = seat.iloc[0]
    lead = (f'<p class="lead" id="seat-summary">The first player won <b>{overall["first_wins"]}</b> of '
            f'<b>{overall["games"]}</b> games: {overall["first_win_rate"]:.1%} '
            f'(95% interval {overall["first_low"]:.1%} – {overall["first_high"]:.1%}).</p>')
    bots = seat.iloc[1:]
    cols = [_bot(c), Col("first_games", "games first", num("d")), Col("first_wins", "wins first", num("d")),
            Col("first_win_rate", "win rate first", pct), Col("second_games", "games second", num("d")),
            Col("second_wins", "wins second", num("d")), Col("second_win_rate", "win rate second", pct),
            Col("seat_gain", "difference", lambda v: "–" if _missing(v) else f"{v * 100:+.0f} pts")]
    return _section("seat-advantage", intro, lead + '<div class="pair">' + table(bots, cols, cls="seat")
                    + _figure(c, "seat") + "</div>")


def _endings(c: ReportContent) -> str:
    intro = ("Per bot: games that ended by the rules, games won because the opponent failed, and the games "
             "the bot itself lost by a failure, by kind (protocol error covers malformed, schema-breaking, "
             "oversize and out-of-turn messages).")
    e = c.endings
    if e is None or e.empty or not int(e["games"].sum()):
        return _section("endings", intro, _nothing(c))
    fixed = {"name", "games", "normal", "opponent_failed", "failures"}
    kinds = [k for k in e.columns if k not in fixed]
    cols = [_bot(c), Col("games", "games", num("d")), Col("normal", "normal", num("d")),
            Col("opponent_failed", "opponent failed", num("d")),
            *[Col(k, k, num("d")) for k in kinds], Col("failures", "own failures", num("d"))]
    out = table(e, cols, cls="endings") + _figure(c, "endings")
    bad = c.abnormal
    if bad is not None and len(bad):
        acols = [Col("idx", "#", num("d")),
                 Col(lambda r: _game_link(c, r.game_id), "game (replay)", raw=True, numeric=False),
                 Col(lambda r: f"{r.seat0} vs {r.seat1}", "seats 0 / 1", numeric=False),
                 Col("failed", "failed", numeric=False), Col("category", "how", numeric=False),
                 Col("moves", "moves", num("d")), Col("detail", "detail", numeric=False)]
        out += _fold(f"Games that ended abnormally ({len(bad)})", table(bad, acols, cls="abnormal"), len(bad))
    else:
        out += '<p class="good">Every game ended by the rules.</p>'
    return _section("endings", intro, out)


def _think(c: ReportContent) -> str:
    tc = (c.config or {}).get("time_control") or {}
    intro = ("The time each bot took per move as the referee measured it (wall clock, from request to reply, "
             f"so it includes messaging). Limits: {tc.get('per_move_ms', '?')} ms per move, "
             f"{tc.get('first_move_ms', '?')} ms for a bot's first move of a game, plus a bank of "
             f"{tc.get('bank_ms', '?')} ms per game that absorbs overruns.")
    t = c.think
    if t is None or t.empty or not int(t["moves"].sum()):
        return _section("think-time", intro, _nothing(c))
    cols = [_bot(c), Col("moves", "moves", num("d")), Col("mean_ms", "mean ms", num(".1f")),
            Col("median_ms", "median ms", num(".1f")), Col("p90_ms", "90th pct ms", num(".1f")),
            Col("p99_ms", "99th pct ms", num(".1f")), Col("max_ms", "max ms", num(".1f")),
            Col("total_s", "total s", num(".1f"))]
    out = table(t, cols, cls="think") + _figure(
        c, "think_time", "Box: middle half of the moves; whiskers: 5th to 95th percentile; dots: slower and "
        "faster moves; diamond: the mean.")
    slow = c.slowest
    if slow is not None and len(slow):
        scols = [_bot(c), Col("time_ms", "ms", num(".1f")),
                 Col(lambda r: _game_link(c, r.game_id), "game", raw=True, numeric=False),
                 Col("move", "move", num("d")), Col("action", "action", numeric=False),
                 Col("patch", "patch", text)]
        out += "<h3>Slowest moves</h3>" + table(slow, scols, cls="slowest")
    bank = c.bank
    out += "<h3>Time-bank use</h3>"
    if bank is not None and len(bank) and int(bank["games_using_bank"].sum()):
        bcols = [_bot(c), Col("games", "games", num("d")),
                 Col("games_using_bank", "games using the bank", num("d")),
                 Col("moves_over_limit", "moves over the limit", num("d")),
                 Col("mean_bank_ms", "mean ms drawn per game", num(".0f")),
                 Col("max_bank_ms", "most drawn in a game (ms)", num(".0f")),
                 Col("max_bank_share", "of the bank", pct)]
        out += table(bank, bcols, cls="bank") + _figure(c, "bank")
    else:
        out += ('<p class="good" id="bank-none">No bot drew on its time bank: every move was within its '
                "limit.</p>")
    return _section("think-time", intro, out)


def _scores(c: ReportContent) -> str:
    intro = ("Final scores (buttons + 7×7 bonus − 2 per empty square) of the games that ended by the rules, "
             "and how long games were in moves and in wall-clock time.")
    s = c.scores
    if s is None or s.empty or not int(s["games"].sum()):
        return _section("scores", intro, _nothing(c))
    cols = [_bot(c), Col("games", "games", num("d")), Col("mean", "mean", num(".1f")),
            Col("std", "sd", num(".1f")), Col("min", "min", num(".0f")), Col("median", "median", num(".1f")),
            Col("max", "max", num(".0f")), Col("mean_margin", "mean margin", signed(".1f"))]
    out = '<div class="pair">' + table(s, cols, cls="scores") + "</div>" + _figure(c, "scores")
    lengths = c.lengths
    if lengths is not None and len(lengths):
        normal = lengths[lengths["normal"].astype(bool)]
        if len(normal):
            out += (f'<p>Games that ended by the rules took {normal["moves"].mean():.1f} moves on average '
                    f'(from {normal["moves"].min()} to {normal["moves"].max()}) and '
                    f'{normal["duration_s"].mean():.2f} s (up to {normal["duration_s"].max():.2f} s).</p>')
        out += _figure(c, "lengths")
    return _section("scores", intro, out)


def _progression(c: ReportContent) -> str:
    intro = ("Each bot's TrueSkill μ after each of its games (band: μ ± σ), rated in schedule order. A "
             "narrow band that has levelled off means the rating has settled.")
    if "progression" not in c.figures:
        return _section("progression", intro, _nothing(c))
    return _section("progression", intro, _figure(c, "progression"))


def _replays(c: ReportContent) -> str:
    intro = ("A step-by-step viewer for every game that ended abnormally and for a sample of normal games "
             "(the first of each pairing, then spread over the tournament). Each opens from disk; step with "
             "the arrow keys, the buttons or the slider.")
    r = c.replays
    if r is None or r.empty:
        return _section("replays", intro, _nothing(c))
    cols = [Col("idx", "#", num("d")),
            Col(lambda row: _game_link(c, row.game_id, "replay ▸") if str(row.game_id) in c.replay_links
                else "unavailable", "viewer", raw=True, numeric=False),
            Col("game_id", "game", numeric=False),
            Col(lambda row: f"{row.seat0} vs {row.seat1}", "seats 0 / 1", numeric=False),
            Col(lambda row: f"{row.score0} : {row.score1}", "score"),
            Col("winner_name", "winner", numeric=False), Col("reason", "ending", numeric=False),
            Col("moves", "moves", num("d")), Col("why", "listed as", numeric=False)]
    listing = table(r, cols, cls="replays")
    return _section("replays", intro, _fold(f"{len(r)} games with a replay viewer", listing, len(r)))


def _fold(title: str, content: str, rows: int, open_up_to: int = 15) -> str:
    """A heading with its table, folded away (click to open) when the table is long."""
    state = " open" if rows <= open_up_to else ""
    return f"<details{state}><summary>{esc(title)}</summary>{content}</details>"


def _files(c: ReportContent) -> str:
    items = "".join(f'<li><a href="{esc(path)}">{esc(path)}</a> — {esc(what)}</li>'
                    for path, what in c.csv_files)
    pngs = "".join(f'<li><a href="{esc(f.path)}">{esc(f.path)}</a></li>' for f in c.figures.values())
    return _section("files", "Everything in this report as CSV tables and PNG plots, beside this page.",
                    (f"<h3>Tables</h3><ul>{items}</ul>" if items else "")
                    + (f"<h3>Plots</h3><ul>{pngs}</ul>" if pngs else ""))


_CSS = """
:root { --ink: #212529; --muted: #6c757d; --line: #dee2e6; --bg: #f8f9fa; --link: #1864ab; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink);
       background: var(--bg); }
header { padding: 16px 28px 0; background: white; border-bottom: 1px solid var(--line); position: sticky;
         top: 0; z-index: 2; }
header h1 { margin: 0; font-size: 24px; }
.sub { margin: 2px 0 8px; color: var(--muted); }
nav { display: flex; flex-wrap: wrap; gap: 2px 14px; padding: 6px 0 8px; }
nav a { color: var(--link); text-decoration: none; font-size: 13px; }
nav a:hover { text-decoration: underline; }
main { max-width: 1280px; margin: 0 auto; padding: 8px 28px 20px; }
section { background: white; border: 1px solid var(--line); border-radius: 10px; padding: 6px 20px 16px;
          margin: 16px 0; scroll-margin-top: 120px; }
h2 { font-size: 19px; margin: 10px 0 4px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
.intro { color: #495057; max-width: 980px; margin: 2px 0 10px; }
.banner { padding: 8px 12px; border-radius: 8px; margin: 0 0 4px; }
.banner.empty { background: #fff3bf; border: 1px solid #fcc419; }
.banner.unfinished { background: #fff4e6; border: 1px solid #ffa94d; }
.banner.complete { background: #ebfbee; border: 1px solid #8ce99a; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: 6px 0 10px; font-size: 13px; }
th, td { padding: 4px 9px; border-bottom: 1px solid #e9ecef; text-align: left; white-space: nowrap; }
thead th { background: #f1f3f5; border-bottom: 2px solid var(--line); font-weight: 600; }
tbody tr:hover { background: #f8f9fa; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
td.diag { color: #adb5bd; background: #f8f9fa; }
table.facts th { background: none; color: var(--muted); font-weight: 500; border: none;
                 padding: 2px 14px 2px 0; }
table.facts td { border: none; padding: 2px 0; white-space: normal; }
table.abnormal td:last-child { white-space: normal; min-width: 280px; color: #495057; }
.bot { display: inline-flex; align-items: center; gap: 6px; font-weight: 600; }
.bot i { display: inline-block; width: 11px; height: 11px; border-radius: 3px; }
figure { margin: 8px 0 14px; }
figure img { max-width: 100%; height: auto; border: 1px solid #f1f3f5; border-radius: 6px; }
figcaption { color: var(--muted); font-size: 12px; }
.pair { display: flex; flex-wrap: wrap; gap: 8px 24px; align-items: flex-start; }
.pair figure { flex: 1 1 520px; margin-top: 0; }
.none { color: var(--muted); font-style: italic; }
.good { color: #2b8a3e; }
.warn { color: #c92a2a; }
.lead { font-size: 15px; }
a.replay { color: var(--link); }
details { margin: 14px 0 6px; }
summary { font-weight: 600; font-size: 15px; cursor: pointer; }
footer { text-align: center; color: var(--muted); font-size: 12px; padding: 8px 0 24px; }
"""

__all__ = ["Col", "Figure", "ReportContent", "SECTIONS", "render_report", "table"]
