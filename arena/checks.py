"""The conformance check a bot author runs before submitting (`arena check-bot`)."""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from arena.channel.manifest import Manifest
from arena.engine import Ruleset
from arena.errors import ArenaError
from arena.match import BotPool, sample_bots_dir
from arena.referee import TimeControl
from arena.untrusted import inside, refuse_symlinks, remove_tree, shown, walk

SLOW_START_S = 2.0


@dataclass
class ConformanceReport:
    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def run_conformance(bot: Path, *, games: int = 4, log_dir: Path | None = None,
                    per_move_ms: int = 1000, bank_ms: int = 10_000,
                    first_move_ms: int = 5000, ruleset: Ruleset | None = None,
                    sandbox: str = "none", submitting: bool = False) -> ConformanceReport:
    """Build the bot, time its handshake, play ``games`` games against random in both seats
    (confined by ``sandbox``, "none" or "strict", as a tournament would). ``submitting``
    also refuses a folder holding symbolic links (it is about to be copied)."""
    report = ConformanceReport()
    try:
        manifest = Manifest.load(bot)
    except ArenaError as exc:
        report.problems.append(str(exc))
        return report
    if submitting:
        try:
            refuse_symlinks(manifest.folder)
        except ArenaError as exc:
            report.problems.append(str(exc))
            return report
    report.lines.append(f"manifest: name {manifest.name!r}, protocol {manifest.protocol}, "
                        f"command {' '.join(manifest.command)!r}")
    opponent = Manifest.load(sample_bots_dir() / "random")
    tc = TimeControl(per_move_ms, bank_ms, first_move_ms)
    with tempfile.TemporaryDirectory(prefix="arena-check-") as tmp:
        logs = log_dir or Path(tmp)
        with BotPool([manifest, opponent], logs, sandbox=sandbox) as pool:
            if 0 in pool.build_errors:
                report.problems.append(pool.build_errors[0])
                return report
            if manifest.build:
                report.lines.append("build: ok")
            try:
                seconds = pool.start_time(0)
            except ArenaError as exc:
                report.problems.append(f"start: {exc}")
                return report
            hello = pool.handles[0].hello
            report.lines.append(f"handshake: ok in {seconds * 1000:.0f} ms (hello: name "
                                f"{hello['name']!r}, version {hello['version']!r}, legal_moves "
                                f"{pool.handles[0].wants_legal_moves})")
            if seconds > SLOW_START_S:
                report.problems.append(f"slow start: the hello came after {seconds:.1f} s "
                                       f"(keep it under {SLOW_START_S:g} s)")
            slowest = 0.0
            for game in range(games):
                seats = (0, 1) if game % 2 == 0 else (1, 0)
                result = pool.play(*seats, seed=game // 2, time_control=tc, ruleset=ruleset,
                                   game_id=f"check-{game + 1}")
                mine = [m for m in result.record["moves"] if seats[m["player"]] == 0]
                slowest = max([slowest] + [m["time_ms"] for m in mine])
                outcome = "won" if seats[result.winner] == 0 else "lost"
                report.lines.append(f"game {game + 1} (seat {seats.index(0)}): {outcome} "
                                    f"{result.scores[seats.index(0)]} : "
                                    f"{result.scores[1 - seats.index(0)]}, "
                                    f"{len(mine)} moves, {result.termination.value}")
                if result.loser is not None and seats[result.loser] == 0:
                    report.problems.append(f"game {game + 1}: {result.termination.value}: "
                                           f"{result.detail}")
            report.lines.append(f"slowest move: {slowest:.0f} ms (per-move limit {per_move_ms} ms)")
            if slowest > per_move_ms:
                report.problems.append(f"a move took {slowest:.0f} ms, over the {per_move_ms} ms "
                                       "per-move limit (it drew on the bank)")
    return report


PREVIOUS = ".previous"  # entrants/.previous/<name>-<UTC time>/: versions replaced by submit --replace


@dataclass
class Submission:
    report: ConformanceReport
    installed: Path | None = None  # None: refused
    previous: Path | None = None  # where the version it replaced was kept


SUBMIT_MAX_BYTES = 1 << 30  # a bot folder handed in: its files' total (apparent) size
SUBMIT_MAX_FILES = 100_000


def _too_big(folder: Path) -> str | None:
    """Why a folder is too big to be handed in (copied, built, packed for Dask), or None.
    Apparent sizes: a sparse file of 100 GB is copied as 100 GB of zeros."""
    total = count = 0
    for root, dirs, files in walk(folder):
        for name in dirs + files:
            count += 1
            try:
                info = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            total += info.st_size if stat.S_ISREG(info.st_mode) else 0
            if total > SUBMIT_MAX_BYTES or count > SUBMIT_MAX_FILES:
                return (f"{shown(str(folder))}: more than {SUBMIT_MAX_BYTES >> 20} MiB or "
                        f"{SUBMIT_MAX_FILES} files and folders: too big to hand in")
    return None


def _plain_modes(folder: Path) -> None:
    """The copy (owned by root) without setuid, setgid or sticky bits and writable by root
    only: copytree keeps modes, so a setuid file handed in became a root-owned setuid
    program that any local user could run."""
    for root, dirs, files in walk(folder):
        for path in [root, *(os.path.join(root, name) for name in dirs + files)]:
            info = os.lstat(path)
            if not stat.S_ISLNK(info.st_mode):
                os.chmod(path, stat.S_IMODE(info.st_mode) & 0o755)


def submit(bot: Path, entrants: Path, *, games: int = 4, sandbox: str = "strict",
           replace: bool = False) -> Submission:
    """Build and check ``bot``; copy it into ``entrants/<name>`` only if it passes.

    An existing entrant of the same name is refused (before anything runs) unless
    ``replace``; then it is moved to ``entrants/.previous/<name>-<UTC time>/`` (a folder of
    bot folders one level down, so a tournament over ``entrants/`` never picks it up) and
    the new copy takes its place. The copy is complete before the old one moves.
    """
    import shutil
    import tempfile
    from datetime import UTC, datetime

    try:
        manifest = Manifest.load(bot)
    except ArenaError as exc:
        return Submission(ConformanceReport(problems=[str(exc)]))
    target = inside(entrants, manifest.name)  # the name rule already keeps it a plain name
    taken = (f"an entrant named {manifest.name!r} already exists ({target}): pass --replace to "
             "replace it (the old version is kept)")
    if target.exists() and not replace:
        return Submission(ConformanceReport(problems=[taken]))
    too_big = _too_big(manifest.folder)
    if too_big:
        return Submission(ConformanceReport(problems=[too_big]))
    report = run_conformance(bot, games=games, sandbox=sandbox, submitting=True)
    if report.problems:
        return Submission(report)
    entrants.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{manifest.name}-", dir=entrants))
    try:
        try:
            shutil.copytree(manifest.folder, staging / "bot", symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__"))
        except RecursionError:  # Python 3.11's copytree recurses once per folder level
            report.problems.append(f"{shown(str(manifest.folder))}: folders nested too deeply to copy")
            return Submission(report)
        except OSError as exc:  # a FIFO, a socket or a device (shutil.Error lists them), unreadable
            what = exc.args[0][0][2] if isinstance(exc, shutil.Error) and exc.args and exc.args[0] else exc
            report.problems.append(f"{shown(str(manifest.folder))}: cannot copy it: {shown(str(what), 300)} "
                                   "(a bot folder holds only folders and regular files)")
            return Submission(report)
        try:  # the bot may have made links since the check: judge the copy itself
            refuse_symlinks(staging / "bot", manifest.folder)
        except ArenaError as exc:
            report.problems.append(str(exc))
            return Submission(report)
        _plain_modes(staging / "bot")
        previous = None
        if target.exists() or target.is_symlink():
            if not replace:  # appeared while the check ran
                report.problems.append(taken)
                return Submission(report)
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
            kept = entrants / PREVIOUS
            kept.mkdir(exist_ok=True)
            previous = kept / f"{manifest.name}-{stamp}"
            number = 1
            while previous.exists():
                number += 1
                previous = kept / f"{manifest.name}-{stamp}-{number}"
            target.rename(previous)
        (staging / "bot").rename(target)
    finally:
        remove_tree(staging)
    return Submission(report, target, previous)
