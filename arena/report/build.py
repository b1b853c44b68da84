"""Write a results folder's report: read the store, let every registered section
(:mod:`arena.report.sections`) compute its tables and figures, render the page from the
templates (:mod:`arena.report.render`), and write ``report/`` with ``index.html``,
``plots/*.png``, ``csv/*.csv`` and ``replays/*.html``. The only module of the package that touches files.
"""

from __future__ import annotations

import io
import logging
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from arena.clock import DEFAULT_TIME_CONTROL
from arena.errors import ArenaError, ConfigError, RecordError
from arena.report import plots, stats
from arena.report.render import render
from arena.report.replay_html import replay_html
from arena.report.sections import SECTIONS, Part, ReportData, Section, sections_for
from arena.untrusted import csv_frame, file_name, inside

log = logging.getLogger(__name__)

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
            if stored_config.format == "knockout":  # and the extra pairs of its tied matches
                from arena.tournament.scheduler import replay

                winners = dict(zip(games["game_id"], map(int, games["winner"]), strict=True))
                scheduled = replay(stored_config.plan, winners).total
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
    games = data.games
    stored = len(games)
    if data.config is None and not stored:
        status = "no tournament"
    elif not stored:
        status = "empty"
    elif data.scheduled is not None and stored < data.scheduled:
        status = "unfinished"
    else:
        status = "complete"

    _check_report_folder(out)
    report = ReportData(games, data.moves, data.config, data.names, data.time_control,
                        scheduled=data.scheduled, sample=sample, replicates=replicates, seed=seed)
    failed: dict[str, str] = {}  # section id -> why it is left out
    # Bot names are plot labels: never let matplotlib parse "$...$" in them as mathtext.
    with plots.plain_text():
        shown = sections_for(report, SECTIONS)
        parts = {s.id: _compute(s, report, failed) for s in shown}
    # Everything is computed before the last report's files go: a failure leaves that one whole.
    try:
        out.mkdir(parents=True, exist_ok=True)
        for sub, pattern in OWN_OUTPUTS:
            (out / sub).mkdir(exist_ok=True)
            for old in (out / sub).glob(pattern):
                old.unlink()
    except OSError as exc:
        raise ConfigError(f"{out}: cannot write the report there ({exc.strerror})") from None
    notes = [*data.notes, *failed.values(), *(note for part in parts.values() for note in part.notes)]
    figures: dict[str, Figure] = {}
    csv_files: list[tuple[str, str]] = []
    for part in parts.values():
        for key, plot in part.plots.items():
            if plot.figure is None:
                continue
            buffer = io.BytesIO()
            plot.figure.savefig(buffer, format="png")
            png = buffer.getvalue()
            (out / "plots" / f"{key}.png").write_bytes(png)
            figures[key] = Figure(png, f"plots/{key}.png", plot.alt)
        for key, table in part.tables.items():
            path = f"csv/{key}.csv"
            csv_frame(table.frame).to_csv(out / path, index=False)  # no cell a spreadsheet would run
            csv_files.append((path, table.what))
    replay_links: dict[str, str] = {}
    for row in (report.replays.itertuples(index=False) if stored else ()):
        record = data.records.get(row.game_id)
        if record is None:
            continue
        try:
            page = replay_html(record, back_link="../index.html")
        except RecordError as exc:
            notes.append(f"no replay for game {row.game_id}: {exc}")
            continue
        name = f"replays/{file_name(str(row.game_id), limit=120, fallback='game')}.html"
        inside(out, *name.split("/")).write_text(page, encoding="utf-8")
        replay_links[str(row.game_id)] = name
    index = out / "index.html"
    page = render("page.html", sections=shown, parts={sid: part.context for sid, part in parts.items()},
                  title=f"Tournament report: {(data.config or {}).get('name') or results.name}",
                  folder=str(results), generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
                  status=status, stored=stored, scheduled=data.scheduled, config=data.config,
                  colors=report.colors, notes=notes, figures=figures, replay_links=replay_links,
                  csv_files=csv_files, failed=failed)
    index.write_text(page, encoding="utf-8")
    return ReportSummary(out, index, status, stored, data.scheduled, len(replay_links), notes)


GENERATOR = "patchwork-arena report"  # index.html's <meta name="generator">: a folder holding our report


def _check_report_folder(out: Path) -> None:
    """Refuse to write into a folder that holds files but no report of ours: writing clears
    ``csv/*.csv``, ``plots/*.png`` and ``replays/*.html`` (the last report's), which would
    delete a user's own files there (``--out ~/data``)."""
    try:
        if not out.exists() or not any(out.iterdir()):
            return
        # never blocking on a FIFO, never through a link, a head only
        fd = os.open(out / "index.html", os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            head = os.read(fd, 4096) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
        finally:
            os.close(fd)
        index = head.decode("utf-8", "replace")
    except OSError:
        index = ""
    # Reports written before the generator tag had this title.
    if f'<meta name="generator" content="{GENERATOR}">' in index or "<title>Tournament report: " in index:
        return
    raise ConfigError(f"{out}: holds files but no report: a report goes into a new or empty folder, or "
                      "over an earlier report (whose csv/, plots/ and replays/ files it replaces)")


def _compute(section: Section, report: ReportData, failed: dict[str, str]) -> Part:
    """A section's part; when its computation fails (a bug, or data no one foresaw), an empty
    part and a note: one section must not take the whole report away."""
    try:
        return section.compute(report)
    except Exception as exc:  # noqa: BLE001 - the note says what failed; the rest of the report stands
        log.debug("report section %s failed", section.id, exc_info=True)  # for --debug, not a traceback
        failed[section.id] = (f"the section {section.title!r} could not be computed ({type(exc).__name__}: "
                              f"{str(exc)[:200]}) and is left out")
        return Part()


@dataclass(frozen=True)
class Figure:
    """One drawn plot: its PNG bytes, where the PNG file is (relative to index.html), its alt text."""

    png: bytes
    path: str
    alt: str


__all__ = ["Results", "ReportSummary", "load_results", "write_report"]
