"""The conformance check a bot author runs before submitting (`arena check-bot`)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from arena.bots.manifest import MANIFEST, SUBMISSION, Manifest, ManifestError
from arena.bots.pool import sample_bots_dir, unique_labels
from arena.bots.session import START_TIMEOUT_S, BotHandle
from arena.clock import DEFAULT_TIME_CONTROL, TimeControl, move_limits_ms
from arena.engine import Ruleset
from arena.engine.components import patchwork
from arena.errors import ArenaError, BotTerminatedError
from arena.launch import scratch as scratch_folders
from arena.launch.launcher import Launcher, UnconfinedLauncher
from arena.launch.levels import Sandbox
from arena.launch.process import STDERR_CAP_BYTES, log_was_cut
from arena.referee import GameResult, Termination, failure_detail, termination_for
from arena.tournament.schedule import GameSpec, match_schedule
from arena.tournament.series import InProcess, Lineup, run_series
from arena.untrusted import copy_folder, file_name, for_terminal, inside, remove_tree, shown

SLOW_START_S = 2.0
_DIGITS = re.compile(r"\d+")
WELCOME_WAIT_S = 0.3  # how long after its hello a bot is watched for dying on the welcome
# Seeds whose first position gives the first player the longest move_request a real game of
# each ruleset makes at its first move (legal moves included): found by searching seeds 0-19,999.
# Patchwork: 86,356 bytes (1,345 legal moves; the longest of any real position is 87,458, later
# in a game); Stack'n Stuff: 44,841 (681). check-bot plays one game more on it, the bot first,
# when the bot asks for legal moves: a fixed-size line buffer (Go's bufio.Scanner, 64 KiB)
# fails there rather than in a tournament, where 1 game in 40 meets such a request.
LONG_SEEDS = {"patchwork": 12818, "stack-n-stuff": 19715}


@dataclass
class ConformanceReport:
    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # worth fixing; the bot still passes
    log: Path | None = None  # the bot's stderr log, kept after the check


def outcome_text(result: GameResult, names: tuple[str, str]) -> str:
    """How a game ended, ``names`` in seat order: the scores with whose they are, "greedy 12,
    random 5: greedy wins"; a tie on points said as one (rule 10 gives it to the first to
    reach the last space); for a forfeit "aborted, X lost by crash, Y wins" (the scores of
    a game cut short mean nothing). `arena play` and `arena check-bot` print it."""
    winner = names[result.winner]
    if result.loser is not None:
        return f"aborted, {names[result.loser]} lost by {result.termination.value}, {winner} wins"
    s0, s1 = result.scores
    scores = f"{names[0]} {s0}, {names[1]} {s1}"
    if s0 == s1:
        return f"{scores}: a tie on points, {winner} wins as the first to reach the last space"
    return f"{scores}: {winner} wins"


LOG_REMOVED = "bot log: removed, as the check passed (to keep it: arena check-bot --logs DIR)"


@contextmanager
def _log_folder(report: ConformanceReport, log_dir: Path | None) -> Iterator[Path]:
    """``log_dir``, or a new temporary folder, removed at the end when the check found
    nothing to look into (no problem, no warning): a newcomer's passing checks left one
    /tmp/arena-check-* folder each. Kept if the check ends with an exception (Ctrl-C on a
    bot that hangs, say), and then said where: nothing else would name it."""
    if log_dir is not None:
        yield log_dir
        return
    logs = Path(tempfile.mkdtemp(prefix="arena-check-"))
    try:
        yield logs
    except BaseException:
        if any(logs.iterdir()):
            sys.stderr.write(f"the bot's logs are kept: {for_terminal(str(logs), newlines=False)}\n")
        else:  # interrupted before anything was logged (a build): nothing to look into
            remove_tree(logs)
        raise
    if not any(logs.iterdir()):  # the bot never started (its build failed): no log to keep
        remove_tree(logs)
        report.log = None
        report.lines = [line for line in report.lines if not line.startswith("bot log: ")]
    elif not report.problems and not report.warnings:
        remove_tree(logs)
        report.log = None  # said last: it is removed at the end
        report.lines = [line for line in report.lines if not line.startswith("bot log: ")] + [LOG_REMOVED]


def _died_on_welcome(handle: BotHandle) -> BotTerminatedError | None:
    """Watch the bot for WELCOME_WAIT_S after its hello: what it died on if it ended on the
    welcome (before this, the check said "handshake: ok" and then game 1 "crashed between
    games, after the last game_over"), else None."""
    deadline = time.monotonic() + WELCOME_WAIT_S
    while handle.is_running() and time.monotonic() < deadline:
        time.sleep(0.01)
    died = handle.welcome_death()
    if died is not None:
        handle.died_on_welcome += 1
    return died


ENDED_BY_HARNESS = (-signal.SIGKILL, -signal.SIGTERM)  # a bot still running after shutdown's grace


def after_last_game(handle: BotHandle) -> str | None:
    """End the bot as a tournament does (shutdown, then a kill) and say, with its log tail,
    if it had died after its last game_over or on shutdown (an exit status other than 0),
    or None. Without this a bot that crashed reading game_over passed a 1-game check: only
    the start of a next game noticed the crash."""
    process = handle.process
    if process is None:
        return None
    handle.close()
    code = process.exit_code()
    if code is None or code == 0 or code in ENDED_BY_HARNESS:
        return None
    error = BotTerminatedError(
        f"after its last game the bot ended with {process.describe_exit()} (on game_over or "
        "shutdown): a bot waits for the next new_game or for shutdown, and exits with status 0 on "
        "shutdown")
    return failure_detail(handle, error, Termination.CRASH)


def run_conformance(bot: Path, *, games: int = 4, log_dir: Path | None = None,
                    per_move_ms: int = DEFAULT_TIME_CONTROL.per_move_ms,
                    bank_ms: int = DEFAULT_TIME_CONTROL.bank_ms,
                    first_move_ms: int = DEFAULT_TIME_CONTROL.first_move_ms, ruleset: Ruleset | None = None,
                    launcher: Launcher | None = None, submitting: bool = False,
                    on_stage: Callable[[str], None] | None = None,
                    seed: int = 0) -> ConformanceReport:
    """Build the bot, time its handshake, play ``games`` games against random in both seats
    on seeds ``seed``, ``seed``, ``seed + 1``... (started by ``launcher``, level none by
    default, as a tournament would), and for a bot asking for legal moves one more on a
    LONG_SEEDS seed, where its first request is as long as real ones get. ``submitting``
    also refuses a folder holding symbolic links (it is about to be copied). The logs go
    to ``log_dir``, or to a new temporary folder that is kept only if the check found a
    problem or a warning (``report.log`` names the bot's log, None once removed).
    ``on_stage("checking")`` is called once the build is done and the games begin (`arena
    serve` shows a version's state from it)."""
    report = ConformanceReport()
    if submitting:
        refused = links_refused(bot)
        if refused:
            report.problems.append(refused)
            return report
    try:
        manifest = Manifest.load(bot)
    except ManifestError as exc:
        report.problems.extend(f"{exc.path}: {problem}" for problem in exc.problems)
        return report
    except ArenaError as exc:
        report.problems.append(str(exc))
        return report
    report.lines.append(f"manifest: name {manifest.name!r}, protocol {manifest.protocol}, "
                        f"command {' '.join(manifest.command)!r}")
    opponent = Manifest.load(sample_bots_dir() / "random")
    tc = TimeControl(per_move_ms, bank_ms, first_move_ms)
    labels = tuple(unique_labels([manifest.name, opponent.name]))
    lineup = Lineup((manifest.folder, opponent.folder), labels, time_control=tc, ruleset=ruleset,
                    launcher=launcher or UnconfinedLauncher())
    with _log_folder(report, log_dir) as logs, InProcess(lineup, logs) as executor:
        pool = executor.pool
        report.log = pool.handles[0].stderr_log
        try:  # a --logs folder used before holds earlier runs' logs: this check's begin here
            log_start = report.log.stat().st_size
        except OSError:
            log_start = 0
        if 0 in pool.build_errors:
            report.problems.append(pool.build_errors[0])
            # the bot never ran: what there is to read is its build's output
            report.log = inside(logs, f"{file_name(labels[0])}.build.log")
            report.lines.append(f"build log: {report.log}")
            return report
        if manifest.build:
            report.lines.append("build: ok")
        if on_stage is not None:
            on_stage("checking")
        report.lines.append(f"bot log: {report.log}")
        handle = pool.handles[0]
        try:
            seconds = pool.start_time(0)
        except ArenaError as exc:
            report.problems.append(f"start: {failure_detail(handle, exc, termination_for(exc))}")
            return report
        hello = handle.hello
        wants_legal_moves = handle.wants_legal_moves
        said = (f"(hello: name {hello['name']!r}, version {hello['version']!r}, legal_moves "
                f"{wants_legal_moves})")
        died = _died_on_welcome(handle)
        if died is not None:
            report.lines.append(f"handshake: its hello came in {seconds * 1000:.0f} ms {said}, then it "
                                "died on the welcome")
            report.problems.append(f"handshake: {failure_detail(handle, died, Termination.CRASH)}")
            return report
        report.lines.append(f"handshake: ok in {seconds * 1000:.0f} ms {said}")
        if hello["name"] != manifest.name:  # a copied bot: which name counts?
            report.warnings.append(f"its hello says name {hello['name']!r} and its bot.toml "
                                   f"{manifest.name!r}: tournaments and ratings use bot.toml's (the hello's "
                                   "is informative)")
        if seconds > SLOW_START_S:  # a warning: the referee waits START_TIMEOUT_S, and load varies
            report.warnings.append(f"slow start: the hello came after {seconds:.1f} s (keep it under "
                                   f"{SLOW_START_S:g} s; the referee gives up after "
                                   f"{START_TIMEOUT_S:g} s): say hello first, then load (imports, "
                                   "tables, a JVM's classes) before or during the first move, which "
                                   "has a larger limit (the Python SDK's run(setup=...) does this)")
        slowest = [0.0, 0.0]  # the bot's slowest first move of a game, and other move
        timed_out = [False, False]  # a first move, another move timed out (not in the record)
        over: list[tuple[float, int, bool]] = []  # moves over their limit: ms, limit, the very first move
        stale = 0
        last_lost_by_fault = False

        played = 0
        seen: dict[str, int] = {}  # a problem's text -> the first game it came in

        def judge(spec: GameSpec, result: GameResult) -> None:
            nonlocal stale, last_lost_by_fault, played
            seats = lineup.seats(spec)
            number = played = spec.index + 1
            moves = result.record["moves"]
            limits = move_limits_ms(tc, [m["player"] for m in moves])
            mine = [(m["time_ms"], limit) for m, limit in zip(moves, limits, strict=True)
                    if seats[m["player"]] == 0]
            for index, (took, limit) in enumerate(mine):  # limit: arena.clock's, as the referee's
                slowest[index > 0] = max(slowest[index > 0], took)
                if took > limit:
                    over.append((took, limit, index == 0 and played == 1))
            stale += result.stale_replies  # all the bot's: the opponent (random) sends none
            late = result.termination is Termination.TIMEOUT and result.loser is not None \
                and seats[result.loser] == 0
            if late:
                timed_out[len(mine) > 0] = True
            long = " on long messages" if spec.game_id == "check-long" else ""
            report.lines.append(f"game {number} (seat {seats.index(0)}{long}): "
                                f"{outcome_text(result, (labels[seats[0]], labels[seats[1]]))}; "
                                f"{len(mine)} moves"
                                + (f", then its move {len(mine) + 1} timed out" if late else "")
                                + (", normal" if result.loser is None else ""))
            last_lost_by_fault = result.loser is not None and seats[result.loser] == 0
            if last_lost_by_fault:
                problem = f"{result.termination.value}: {result.detail}"
                # The same traceback 4 times hid what else went wrong; told apart by its words,
                # not its numbers (a pid, a JVM's uptime, a time in ms differ every game).
                kind = _DIGITS.sub("0", problem)
                same = seen.get(kind)
                report.problems.append(f"game {number}: " + (problem if same is None else
                                                           f"{result.termination.value}, as in game {same}"))
                seen.setdefault(kind, number)

        def timed_out_now(spec: GameSpec, result: GameResult) -> bool:
            """Stop at the bot's first timeout: each of the others would cost the whole
            first-move limit and bank again (a bot reading stdin to its end made a check of
            4 games last 61 s, to print the same hint four times)."""
            return result.termination is Termination.TIMEOUT and last_lost_by_fault

        # Both seats on each seed (seed, seed, seed + 1, ...), the bot in seat 0 first, as `arena
        # play` plays; then, for a bot asking for legal moves, the longest requests real games make.
        schedule = list(match_schedule(labels[0], labels[1], games, seed, "check"))
        long_seed = LONG_SEEDS.get((ruleset or patchwork()).name)
        if wants_legal_moves and long_seed is not None:
            schedule.append(GameSpec(games, "check-long", labels[0], labels[1], long_seed, games // 2 + 1))
        if run_series(schedule, executor, judge, stop=timed_out_now):
            report.lines.append(f"stopped after game {played} of {games}: the bot timed out, and each other "
                                "game would wait for it as long again; fix that first")
        exits = pool.handles[0].exited_on_its_own
        if exits:
            report.problems.append(
                f"the bot exited between games ({exits[0]}) and had to be started again "
                f"{len(exits)} time(s): a bot must play many games, one after another, until the "
                "referee sends shutdown")
        elif not last_lost_by_fault:  # its fault is reported already (and it may have been ended)
            ended = after_last_game(pool.handles[0])
            if ended:
                report.problems.append(ended)
        report.lines.append(f"longest message sent to it: {handle.largest_sent:,} bytes"
                            + ("" if wants_legal_moves else " (it asks for no legal moves)"))
        worst = [("timed out" if timed_out[i] else f"{slowest[i]:.0f} ms") for i in (0, 1)]
        report.lines.append(f"slowest first move: {worst[0]} (limit {tc.first_move_ms} ms); "
                            f"slowest other move: {worst[1]} (limit {tc.per_move_ms} ms)")
        if over:
            took, limit, first = max(over, key=lambda move: move[0] - move[1])
            # A warning: the bank is there to be spent (mcts does, by design); running it dry is a
            # timeout, which is a problem of its own.
            report.warnings.append(
                f"{len(over)} move(s) over their limit, drawing on the bank: the worst took {took:.0f} "
                f"ms, limit {limit} ms" + (
                    f" (its first move: loading after the hello counts in it; load within "
                    f"{tc.first_move_ms} ms, or before the hello, which may come up to "
                    f"{START_TIMEOUT_S:g} s after the start)" if first else ""))
        if log_was_cut(pool.handles[0].stderr_log, since=log_start):
            report.warnings.append(
                f"log cut: the bot wrote more than {STDERR_CAP_BYTES >> 20} MiB to stderr in one run, so its "
                "log was cut at that cap and the rest dropped: write less to stderr (a stack trace "
                "or a board every move?), or the log will not show what went wrong")
        if stale:
            report.warnings.append(
                f"{stale} stale repl{'y' if stale == 1 else 'ies'}: the bot answered a request it "
                "had already answered (the referee drops such replies; answer each move_request "
                "exactly once, with its seq)")
    return report


PREVIOUS = ".previous"  # entrants/.previous/<name>-<UTC time>/: versions replaced by submit --replace


@dataclass
class Submission:
    report: ConformanceReport
    installed: Path | None = None  # None: refused
    previous: Path | None = None  # where the version it replaced was kept


def links_refused(bot: Path) -> str | None:
    """Why submit refuses the folder ``bot`` before reading anything in it, or None: the
    folder or its bot.toml is a symbolic link, or bot.toml is not a regular file. Submit
    runs as root on a stranger's folder: a bot.toml linked to a root-only file was read and
    parsed, and the refusal quoted its keys and values. A link further in is refused by
    the copy (:func:`~arena.untrusted.copy_folder`), which counts entries as it lists them:
    a walk here listed a folder of 1.5 million entries first (27 s, 250 MB)."""
    label = str(bot)
    try:
        folder = os.lstat(bot)
        if stat.S_ISLNK(folder.st_mode):
            return f"{label} is a symbolic link: submit takes the bot's folder itself"
        if not stat.S_ISDIR(folder.st_mode):
            return None  # Manifest.load says what is wrong
        info = os.lstat(bot / MANIFEST)
    except FileNotFoundError:
        return None  # no folder, or no bot.toml: Manifest.load says which
    except OSError as exc:
        return f"{label}: cannot read: {exc.strerror or exc}"
    if stat.S_ISLNK(info.st_mode):
        return f"{label}: {MANIFEST} is a symbolic link: submit takes plain files only"
    if not stat.S_ISREG(info.st_mode):
        return f"{label}: {MANIFEST} is not a regular file: submit takes plain files only"
    return None


def submit(bot: Path, entrants: Path, *, games: int = 4, launcher: Launcher | None = None,
           replace: bool = False, per_move_ms: int = DEFAULT_TIME_CONTROL.per_move_ms,
           bank_ms: int = DEFAULT_TIME_CONTROL.bank_ms,
           first_move_ms: int = DEFAULT_TIME_CONTROL.first_move_ms) -> Submission:
    """Copy ``bot`` into a private folder inside ``entrants``, build and check the copy under
    ``launcher`` (default: strict), and move it to ``entrants/<name>`` only if it passes.

    An existing entrant of the same name is refused (before anything runs) unless
    ``replace``; then it is moved to ``entrants/.previous/<name>-<UTC time>/`` (a folder of
    bot folders one level down, so a tournament over ``entrants/`` never picks it up) and
    the new copy takes its place. The copy is complete before the old one moves.
    """
    from datetime import UTC, datetime

    refused = links_refused(bot)  # before anything in the folder is read
    if refused:
        return Submission(ConformanceReport(problems=[refused]))
    try:
        manifest = Manifest.load(bot)
    except ArenaError as exc:
        return Submission(ConformanceReport(problems=[str(exc)]))
    target = inside(entrants, manifest.name)  # the name rule already keeps it a plain name
    taken = (f"an entrant named {manifest.name!r} already exists ({target}): if this is a new "
             "version of that bot, pass --replace (the old version is kept); if it is another bot, "
             "give it another name in its bot.toml")
    if target.exists() and not replace:
        return Submission(ConformanceReport(problems=[taken]))
    alike = _named_alike(entrants, manifest.name)
    if alike is not None:
        return Submission(ConformanceReport(problems=[
            f"an entrant named {alike!r} already exists ({inside(entrants, alike)}): a name may not "
            f"differ from another entrant's only in case ({manifest.name!r}); choose another name"]))
    if manifest.folder in entrants.resolve().parents or entrants.resolve() == manifest.folder:
        return Submission(ConformanceReport(problems=[
            f"{shown(str(entrants))}: the entrants folder is inside the bot folder {shown(str(bot))}: "
            "choose one outside it"]))
    launcher = launcher or Launcher.for_level(Sandbox.STRICT)
    report = ConformanceReport()
    created = not entrants.exists()
    entrants.mkdir(parents=True, exist_ok=True)
    scratch_folders.remove_stale(entrants, hidden=True)  # staging copies of submits killed before they could
    staging = scratch_folders.make_folder(manifest.name, entrants, hidden=True)
    try:
        try:  # never through a link, even one swapped in meanwhile; modes made plain (0o755 at most)
            copy_folder(bot, staging / "bot", links_inside=False, mode_mask=0o755)
            copied = Manifest.load(staging / "bot")
        except ArenaError as exc:
            report.problems.append(str(exc))
            return Submission(report)
        except OSError as exc:
            report.problems.append(f"{shown(str(bot))}: cannot copy it: {shown(exc.strerror or str(exc))}")
            return Submission(report)
        if copied.name != manifest.name:
            report.problems.append(f"{shown(str(bot))}: its bot.toml changed while it was copied")
            return Submission(report)
        # The stamp tells versions apart (a resume refuses a changed entrant) and makes every
        # build of this entrant, the check's included, run in a copy of its own at any level:
        # what is installed is the source that passed, never written by a build.
        submitted = {"submitted_at": datetime.now(UTC).isoformat(timespec="seconds"), "from": str(bot),
                     "id": os.urandom(8).hex()}
        stamp_file = staging / "bot" / SUBMISSION  # a name of ours: whatever the bot shipped by it goes
        if stamp_file.is_dir() and not stamp_file.is_symlink():
            remove_tree(stamp_file)
        elif os.path.lexists(stamp_file):
            stamp_file.unlink()
        stamp_file.write_text(json.dumps(submitted) + "\n")
        # The check runs on the copy, which its author can no longer change (a root-owned 0700
        # folder): what is installed is what passed. Before, the folder was checked and then
        # copied, and files swapped in meanwhile were installed unchecked.
        report = _as_submitted(run_conformance(staging / "bot", games=games, launcher=launcher,
                                               submitting=True, per_move_ms=per_move_ms, bank_ms=bank_ms,
                                               first_move_ms=first_move_ms), staging / "bot", bot)
        if report.problems:
            return Submission(report)
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
        if created and not target.exists():
            try:
                entrants.rmdir()  # made for this submission, which was refused: leave no trace
            except OSError:
                pass
    return Submission(report, target, previous)


def _named_alike(entrants: Path, name: str) -> str | None:
    """The name of an entrant folder in ``entrants`` that is ``name`` in another case, or None:
    'Greedy' beside 'greedy' reads as the same entrant, and is one on a case-insensitive disk."""
    try:
        with os.scandir(entrants) as entries:
            for entry in entries:
                if entry.name != name and entry.name.lower() == name.lower() and entry.is_dir():
                    return entry.name
    except OSError:
        pass
    return None


def _as_submitted(report: ConformanceReport, copy: Path, folder: Path) -> ConformanceReport:
    """The report of the check of ``copy``, its paths named as in the folder handed in."""
    def named(text: str) -> str:
        return text.replace(str(copy), str(folder))

    return dataclasses.replace(report, lines=[named(t) for t in report.lines],
                               problems=[named(t) for t in report.problems],
                               warnings=[named(t) for t in report.warnings])
