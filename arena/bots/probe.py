"""The probe: what a failed bot's hint may need to know, read from its folder, its log, its
channel and /proc, into the :class:`~arena.bots.diagnose.Facts` that
:func:`~arena.bots.diagnose.diagnose` reads.

Everything here is for a hint only, and careful with what the bot controls: a path its
command or its log names is looked at only inside its folder (never through a link out of
it: :func:`file_facts`), a file is read only if it is regular and only its first 256 bytes,
and a folder is listed only to its first MISSING_SCAN entries.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import platform
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.bots.diagnose import (
    LOG_LOOK_LINES,
    ErrorKind,
    Facts,
    FileFacts,
    denied_words,
    missing_files,
    needs_dying_words,
    parent_relative_rest,
    spaced_candidates,
)
from arena.channel.transport import StdioChannel
from arena.errors import BotStartError, BotTerminatedError, BotTimeoutError, MalformedMessageError
from arena.launch.process import BotProcess, log_is_full
from arena.launch.proctree import read_stat

if TYPE_CHECKING:
    from arena.bots.session import BotHandle

MISSING_SCAN = 1000  # entries of a bot's folder looked at for a hint naming its programs
_LOG_TAIL_BYTES = 64 << 10  # read from the end of the log to find its last lines
_LOG_LINE_CHARS = 300
# A silent bot that used a quarter of a CPU over this long is "still computing" (a timeout's hint).
BUSY_SAMPLE_S = 0.1
_DYING_S = 0.3  # how long a bot that wrote a line that is not JSON is given to exit, for that
NEXT_LINES = 3  # lines of stdout shown after one that is not JSON, when the bot dies with it
# x86_64 system call numbers, as /proc/<pid>/task/<tid>/syscall shows them (for a hint):
# read, and the sleeps (nanosleep, clock_nanosleep).
_SYS_READ = 0 if platform.machine() == "x86_64" else -1
_SYS_SLEEPS = frozenset({35, 230}) if platform.machine() == "x86_64" else frozenset()


def error_kind(error: BaseException) -> ErrorKind:
    """The kind of a bot's failure, as :class:`~arena.bots.diagnose.Facts` says it."""
    if isinstance(error, BotStartError):
        return "start"
    if isinstance(error, BotTerminatedError):
        return "terminated"
    if isinstance(error, BotTimeoutError):
        return "timeout"
    if isinstance(error, MalformedMessageError):
        return "malformed"
    return "other"


# ------------------------------------------------------------------ the bot's folder


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def in_folder(folder: Path, word: str) -> Path | None:
    """The path ``word`` names in the bot's ``folder`` when no link on its way leads out of the
    folder (the last part is not followed: look at it with lexists or lstat), else None. A
    hint looks at nothing of the host's: a build may leave `host -> /` in its copy and a log
    then name 'host/etc/shadow' (the hint said whether it existed, and its mode)."""
    top = Path(os.path.realpath(folder))
    path = Path(os.path.normpath(top / word))
    if not _within(path, top) or path == top:
        return None
    parent = Path(os.path.realpath(path.parent))
    return parent / path.name if _within(parent, top) else None


def _read_head(folder: Path, word: str) -> tuple[os.stat_result, bytes] | None:
    """The mode and first 256 bytes of the regular file ``word`` names inside the bot's
    ``folder``, or None: never through a link (O_NOFOLLOW), never a FIFO or a device."""
    path = folder / word
    try:  # a link loop raises RuntimeError here; links, FIFOs and devices are not opened
        if not _within(path.resolve(), folder) or not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            info = os.fstat(fd)
            head = os.read(fd, 256) if stat.S_ISREG(info.st_mode) else b""
        finally:
            os.close(fd)
    except (OSError, RuntimeError):
        return None
    return (info, head) if stat.S_ISREG(info.st_mode) else None


def _named_alike(path: Path, word: str) -> str | None:
    """The entry of ``word``'s folder (``path``, inside the bot's folder, names nothing) whose
    name differs from ``word``'s only in case (Bot.py for bot.py: Windows does not tell them
    apart), or None; among the first MISSING_SCAN entries (a folder may be huge)."""
    try:
        with os.scandir(path.parent) as entries:
            for entry in itertools.islice(entries, MISSING_SCAN):
                if entry.name != path.name and entry.name.lower() == path.name.lower():
                    return os.path.join(os.path.dirname(word), entry.name)
    except OSError:
        pass
    return None


def programs_in(folder: Path) -> tuple[str, ...]:
    """The executable regular files among the first MISSING_SCAN entries of ``folder`` (for a
    hint: a folder may be huge), () if it cannot be listed."""
    programs: list[str] = []
    try:
        with os.scandir(folder) as entries:
            for entry in itertools.islice(entries, MISSING_SCAN):
                if entry.is_file(follow_symlinks=False) and entry.stat().st_mode & 0o111:
                    programs.append(entry.name)
    except OSError:
        pass
    return tuple(programs)


def file_facts(folder: Path, word: str, *, look_around: bool = True) -> FileFacts:
    """What a hint may ask of the path ``word`` in the bot's (resolved) ``folder``; with
    ``look_around``, for one that does not exist, what its folder holds. Nothing for a path
    that cannot be looked at (a NUL, a name too long, a link loop)."""
    try:
        return _file_facts(folder, word, look_around)
    except (OSError, ValueError, RuntimeError):
        return FileFacts()


def _file_facts(folder: Path, word: str, look_around: bool) -> FileFacts:
    found = _read_head(folder, word)
    head, head_mode = (found[1], found[0].st_mode) if found is not None else (None, 0)
    path = in_folder(folder, word)
    if path is None:
        return FileFacts(head=head, head_mode=head_mode)
    exists = os.path.lexists(path)
    real = Path(os.path.realpath(path))
    try:
        mode: int | None = os.lstat(path).st_mode
    except OSError:
        mode = None
    return FileFacts(
        inside=True, relative=str(path.relative_to(Path(os.path.realpath(folder)))), exists=exists,
        regular=_within(real, Path(os.path.realpath(folder))) and os.path.isfile(real),
        mode=mode, head=head, head_mode=head_mode,
        alike=None if exists or not look_around else _named_alike(path, word),
        programs=() if exists or not look_around else programs_in(path.parent))


def _files(folder: Path, command: tuple[str, ...], tail: tuple[str, ...]) -> dict[str, FileFacts]:
    """What a hint may ask of the paths the command's words name (looked around), and of
    those words without their first part, consecutive ones joined by spaces, and the files
    the log names."""
    files = {word: file_facts(folder, word) for word in command[:64]}
    words = [rest for word in command[:20] if (rest := parent_relative_rest(word)[1])]
    words += [joined for _, joined in spaced_candidates(command)]
    missing = missing_files(tail)
    words += missing + [os.path.basename(word) for word in missing if os.path.basename(word)]
    words += denied_words(tail)
    for word in words:
        if word not in files:
            files[word] = file_facts(folder, word, look_around=False)
    return files


# ------------------------------------------------------------------ the bot's log


def read_log_tail(log: Path, start: int, lines: int) -> list[str]:
    """The last ``lines`` lines written to ``log`` from byte ``start`` on (one run's), each cut
    to a few hundred characters; empty when there are none."""
    try:
        with open(log, "rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(start, size - _LOG_TAIL_BYTES))
            data = handle.read()
    except OSError:
        return []
    found = [line if len(line) <= _LOG_LINE_CHARS else line[:_LOG_LINE_CHARS - 3] + "..."
             for line in data.decode("utf-8", "replace").expandtabs().splitlines() if line.strip()]
    return found[-lines:] if lines > 0 else []


# ------------------------------------------------------------------ the bot's process, in /proc


def waits(process: BotProcess) -> frozenset[str]:
    """What the running bot's threads are blocked in, from /proc (for a hint only):
    "input" (a read of its stdin), "sleep" (nanosleep, clock_nanosleep), "other"."""
    found: set[str] = set()
    for pid in process.tree.pids():
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks[:64]:
            try:
                with open(f"/proc/{pid}/task/{tid}/syscall", "rb") as handle:
                    words = handle.read(200).split()
            except OSError:
                continue
            if not words or not words[0].isdigit():
                continue  # "running"
            number = int(words[0])
            if number == _SYS_READ and len(words) > 1 and words[1] == b"0x0":
                found.add("input")
            elif number in _SYS_SLEEPS:
                found.add("sleep")
            else:
                found.add("other")
    return frozenset(found)


def busy(process: BotProcess) -> bool:
    """Whether the running bot used the CPU over the next BUSY_SAMPLE_S (for a hint only):
    a JVM computes in a thread of its own while its main thread, the one whose state
    /proc/<pid>/stat shows, waits; so the processes' CPU time (all their threads) is looked
    at, not their state. A bot blocked on its input uses none."""
    pids = process.tree.pids()

    def ticks() -> int:
        return sum(found.cpu for found in map(read_stat, map(str, pids)) if found is not None)

    before = ticks()
    time.sleep(BUSY_SAMPLE_S)
    return ticks() - before >= BUSY_SAMPLE_S * os.sysconf("SC_CLK_TCK") / 4


def states(process: BotProcess) -> frozenset[str]:
    """The /proc states of the running bot's processes (R: on a CPU or waiting for one, so
    thinking, not waiting for input; T: stopped by a signal). For a hint only."""
    return frozenset(found.state for found in process.tree.scan().values())


def dying_lines(process: BotProcess, channel: StdioChannel) -> tuple[str, ...]:
    """For a bot that wrote a line that is not JSON: its next lines on stdout once it died
    within _DYING_S (a JVM writes why it cannot start on stdout); () if it lives on."""
    deadline = time.monotonic() + _DYING_S
    while process.is_alive() and time.monotonic() < deadline:
        channel.unread_lines(0)  # read on: a bot with more to write cannot exit meanwhile
        time.sleep(0.01)
    if process.is_alive():
        return ()
    return tuple(channel.unread_lines(NEXT_LINES))


# ------------------------------------------------------------------ all of it


def probe(handle: BotHandle, error: BaseException) -> Facts:
    """The facts of ``handle``'s failure ``error`` (its bot's folder, log, channel and
    processes looked at now), for :func:`~arena.bots.diagnose.diagnose`. A running bot's
    pipe and /proc are looked at first, before its folder and log: a reply a few ms late
    must find the bot as it was when its time ran out (asleep), not on a CPU writing it."""
    manifest, launcher, session = handle.manifest, handle.launcher, handle.session
    kind = error_kind(error)
    silent = isinstance(error, BotTimeoutError) and error.silent
    stdio = manifest.protocol == "stdio"
    running = handle.is_running()
    channel = handle.channel if isinstance(handle.channel, StdioChannel) else None
    process = handle.process if isinstance(handle.process, BotProcess) else None
    found: dict[str, Any] = {}
    if channel is not None and process is not None and stdio:
        if not handle.hello and kind in ("start", "terminated") and handle.no_hello:
            found["partial_line"] = bool(channel.partial_line().strip())
            if not found["partial_line"] and running:
                found["busy"] = busy(process)
        if silent and running:
            found["states"] = seen = states(process)
            if not seen & {"T", "t"}:
                found["waits"] = waited = waits(process)
                if "input" not in waited and "R" not in seen:
                    found["busy"] = busy(process)
                # What its stdout holds, read once the sampling above is done (it takes up to
                # BUSY_SAMPLE_S): a reply a few ms late lands meanwhile.
                found["partial_line"] = bool(channel.partial_line().strip())
                found["wrote_since_send"] = wrote = channel.wrote_since_send()
                found["reply_waiting"] = wrote and len(channel.inbox) > 0
    folder = manifest.folder.resolve()
    tail = tuple(handle.log_tail(LOG_LOOK_LINES))
    command = tuple(manifest.command)
    facts = Facts(
        kind=kind, error=str(error), silent=silent, stdio=stdio, strict=launcher.strict,
        language=handle.language, command=command, program=manifest.argv()[0] if command else "",
        folder=str(folder), folder_names=frozenset({folder.name, manifest.folder.name}),
        has_build=bool(manifest.build), broken=handle.broken is not None,
        files=_files(folder, command, tail),
        hidden=tuple(word for word in command if word.startswith("/")
                     and not launcher.shows(word, folder=folder)),
        hello=bool(handle.hello), no_hello=handle.no_hello, running=running,
        start_timeout_s=handle.start_timeout_s, log_tail=tail, log_full=log_is_full(handle.stderr_log),
        line_channel=channel is not None,
        bad_text=session.bad_text if session is not None else "",
        last_sent=session.last_sent if session is not None else 0,
        moved_this_game=handle.moved_this_game, games_this_run=handle.games_this_run,
        memory_limit=launcher.memory_limit(), max_processes=launcher.sandbox_limits.processes, **found)
    if channel is not None and process is not None and needs_dying_words(facts):
        facts = dataclasses.replace(facts, next_lines=dying_lines(process, channel))
    return facts
