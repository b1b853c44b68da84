"""A running bot: its process, its channel and the handshake, behind one handle.

The handle is started once and reused across games (each game begins with a
``new_game`` message); after any failure the referee calls :meth:`BotHandle.kill`
and the next :meth:`BotHandle.ensure_started` starts a fresh process.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import os
import platform
import re
import shlex
import stat
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from arena.bots.manifest import Manifest, bot_language
from arena.channel.session import BAD_TEXT_CHARS, BotSession
from arena.channel.transport import BRIDGE_OPEN_FILES, BridgeChannel, Channel, StdioChannel, bridge_argv
from arena.errors import BotStartError, BotTerminatedError, BotTimeoutError, MalformedMessageError
from arena.launch.bubblewrap import SandboxLimits
from arena.launch.launcher import BubblewrapLauncher, Launcher, UnconfinedLauncher
from arena.launch.process import STDERR_LOG_MAX_BYTES, BotProcess, log_is_full
from arena.launch.proctree import read_stat
from arena.protocol import messages
from arena.protocol.codec import encode_trusted
from arena.protocol.constants import MAX_MESSAGE_BYTES
from arena.signals import deferred_interrupts
from arena.untrusted import file_name, inside

log = logging.getLogger("arena.wire")

START_TIMEOUT_S = 20.0  # wall clock: a Python bot on a loaded machine under a one-core quota can take seconds
SHUTDOWN_GRACE_S = 0.5
"""How long a bot has to exit after shutdown before it is killed (README: check-bot)."""
# A bot that has not said hello at this many starts in a row (each waiting START_TIMEOUT_S)
# is not started again by this handle: its remaining games are start failures at once.
MAX_SILENT_STARTS = 3
# A running bot is restarted between games once one of its processes has used this share
# of the per-process CPU limit, so that no well-behaved bot meets the limit mid-game.
RECYCLE_CPU_SHARE = 0.5
# Bytes sent to a frozen bot that it has not shown it read (by answering a move request)
# before it is thawed to read them: well under a pipe's 64 KiB, so a stdio send to a frozen
# bot never waits (a new_game is ~6 KiB, a game_over ~0.3 KiB).
FROZEN_UNREAD_BYTES = 32 << 10
# A silent bot that used a quarter of a CPU over this long is "still computing" (a timeout's hint).
BUSY_SAMPLE_S = 0.1
# x86_64 system call numbers, as /proc/<pid>/task/<tid>/syscall shows them (for a hint):
# read, and the sleeps (nanosleep, clock_nanosleep).
_SYS_READ = 0 if platform.machine() == "x86_64" else -1
_SYS_SLEEPS = frozenset({35, 230}) if platform.machine() == "x86_64" else frozenset()
_NEW_GAME = '{"type":"new_game"'  # how every new_game the referee sends begins (encode_trusted)
# A bot killed by one of these right after a message longer than LONG_LINE_BYTES is told
# that lines can be long (a C bot reading into char line[4096]), whatever its language.
_MEMORY_SIGNALS = ("SIGSEGV", "SIGBUS", "SIGABRT")
LONG_LINE_BYTES = 4096
GO_SCANNER_BYTES = 64 << 10  # bufio.MaxScanTokenSize: a longer line stops a default bufio.Scanner
# Languages whose usual way of reading a line reads it whole: a death after a long message is
# not blamed on a fixed-size buffer there unless it is a memory fault.
_WHOLE_LINE_LANGUAGES = frozenset({"python", "js"})
MISSING_SCAN = 1000  # entries of a bot's folder looked at for a hint naming its programs
LOG_TAIL_LINES = 20  # of a bot's stderr log, shown with a start failure or a crash
_LOG_TAIL_BYTES = 64 << 10  # read from the end of the log to find them
_LOG_LINE_CHARS = 300
# A command is executed directly (no shell): these first words and words show a shell line.
_SHELL_BUILTINS = frozenset({"cd", "export", "source", ".", "set", "ulimit", "exec", "eval"})
_SHELL_OPERATORS = frozenset({"&&", "||", ";", "|", ">", ">>", "<", "2>&1", "&", "2>", "1>"})
_HELLO_LINE = re.compile(r'"type"\s*:\s*"hello"')
_ZMQ_VARIABLE = re.compile(r"\bARENA_(TOKEN|ENDPOINT)\b")
# Node's process.stdout.write is synchronous on a pipe on Linux: nothing to flush there.
_FLUSH_IDIOMS = ("print(..., flush=True), fflush(stdout), System.out.flush() (a BufferedWriter's own "
                 "flush()), Go's bufio Writer.Flush(), Rust's io::stdout().flush(), Perl's $| = 1; "
                 "Node's process.stdout.write needs none")
# A JVM's unified logging line ("[0.346s][warning][os,thread] ..."), which goes to stdout.
_JVM_LOG_LINE = re.compile(r"\[\d+\.\d+s\]\[(?:warning|error|info)\]")
NEXT_LINES = 3  # lines of stdout shown after one that is not JSON, when the bot dies with it
_WINDOWS_PYTHONS = frozenset({"py", "py.exe", "python.exe", "python3.exe", "pythonw", "pythonw.exe"})
# A line a Python bot printed with print(message) rather than json.dumps: a dict's repr
_PYTHON_REPR = re.compile(r"""\{'[^']*': """)
# A variable a bot read that its environment does not hold: Python's os.environ[...] (its
# traceback's line, then the KeyError), Rust's env::var(...).unwrap()
_MISSING_VARIABLE = re.compile(r"(?s:environ\[.*KeyError: ')|`Err` value: NotPresent")
# A file a bot (Python, C's perror) did not find by a relative path
_MISSING_FILE = re.compile(r"No such file or directory: '([^'/][^']{0,299})'")
# A file a bot was refused: Python's "Permission denied: 'mybot.log'", "can't open file '...': [Errno 13]",
# Node's "EACCES: permission denied, open 'mybot.log'"
_DENIED_PATH = re.compile(r"Permission denied: '([^']{1,300})'|can't open file '([^']{1,300})': \[Errno 13\]"
                          r"|EACCES: permission denied, \w+ '([^']{1,300})'")
# A write refused by a read-only file system: "Read-only file system" (Python, C, Rust), Go's
# lower-case "read-only file system", Node's "EROFS: read-only file system, open '...'"
_READ_ONLY = re.compile(r"read-only file system|\bEROFS\b", re.IGNORECASE)
_DYING_S = 0.3  # how long a bot that wrote a line that is not JSON is given to exit, for that
# Interpreters that read a script's carriage returns as part of its lines (Python and Node do not).
_CRLF_INTERPRETERS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "perl", "ruby", "awk"})
# Interpreters by file extension, for a script without a #! line.
_INTERPRETERS = {".py": "python3", ".sh": "bash", ".js": "node", ".rb": "ruby", ".pl": "perl"}


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _in_folder(folder: Path, word: str) -> Path | None:
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


def _regular_in_folder(folder: Path, word: str) -> bool:
    """Whether ``word`` names a regular file of the bot's folder (through links that stay in it)."""
    path = _in_folder(folder, word)
    if path is None:
        return False
    real = Path(os.path.realpath(path))
    return _within(real, Path(os.path.realpath(folder))) and os.path.isfile(real)  # False on any OSError


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


def _spaced_path(words: tuple[str, ...], folder: Path) -> str | None:
    """The path in the bot's folder that consecutive words of its command make once joined by
    spaces, the first of them naming nothing ("python my files/bot.py"), or None."""
    for i, word in enumerate(words[:20]):
        alone = _in_folder(folder, word)
        if alone is None or os.path.lexists(alone):
            continue
        for j in range(i + 2, min(len(words), i + 8) + 1):
            joined = " ".join(words[i:j])
            path = _in_folder(folder, joined)
            if path is not None and os.path.lexists(path):
                return joined
    return None


def _named_alike(folder: Path, word: str) -> str | None:
    """The entry of ``word``'s folder (inside the bot's ``folder``) whose name differs from
    ``word``'s only in case (Bot.py for bot.py: Windows does not tell them apart), or None;
    among the first MISSING_SCAN entries (a folder may be huge)."""
    path = _in_folder(folder, word)
    if path is None or os.path.lexists(path):
        return None
    try:
        with os.scandir(path.parent) as entries:
            for entry in itertools.islice(entries, MISSING_SCAN):
                if entry.name != path.name and entry.name.lower() == path.name.lower():
                    return os.path.join(os.path.dirname(word), entry.name)
    except OSError:
        pass
    return None


def _programs_in(folder: Path) -> list[str]:
    """The executable regular files among the first MISSING_SCAN entries of ``folder`` (for a
    hint: a folder may be huge), [] if it cannot be listed."""
    programs: list[str] = []
    try:
        with os.scandir(folder) as entries:
            for entry in itertools.islice(entries, MISSING_SCAN):
                if entry.is_file(follow_symlinks=False) and entry.stat().st_mode & 0o111:
                    programs.append(entry.name)
    except OSError:
        pass
    return programs


def _crlf_fix(script: str) -> str:
    """How to convert a script's Windows line endings: sed is everywhere, dos2unix often not.
    The name is the bot's: quoted for a shell (a name holding '; curl ... | sh' is a word)."""
    word = shlex.quote(script)
    return f"sed -i 's/\\r$//' {word}, or dos2unix {word}"


def _interpreter(first_line: bytes, script: str) -> str:
    """The interpreter a script names in its #! line (``#!/usr/bin/env python3``: python3),
    else the usual one for its extension, else a placeholder."""
    words = first_line[2:].decode("ascii", "replace").split() if first_line.startswith(b"#!") else []
    if words and Path(words[0]).name == "env" and len(words) == 2:
        return words[1]
    if len(words) == 1:
        return Path(words[0]).name
    return _INTERPRETERS.get(Path(script).suffix, "<interpreter>")


def fixed_buffer_hint(size: int, language: str | None, ended: str = "died") -> str:
    """The hint for a bot that ``ended`` ("died", "exited", "gave up") right after a message
    of ``size`` bytes: it may read lines into a fixed-size buffer; with the usual cause in
    ``language`` (:func:`bot_language`) when it has one that fits the size."""
    text = (f"it {ended} right after a message of {size:,} bytes: if it reads each line into a "
            f"fixed-size buffer, that is why: messages can be up to {MAX_MESSAGE_BYTES >> 20} MiB on one "
            "line (a move_request with its legal moves can reach 87 KB): read each line whole")
    if language == "go" and size + 1 > GO_SCANNER_BYTES:
        return text + (f"; a Go bufio.Scanner stops at a line over {GO_SCANNER_BYTES >> 10} KiB (Scan "
                       "returns false, Err says \"token too long\"): give it room first, "
                       "scanner.Buffer(make([]byte, 1<<20), 1<<20), or read with a bufio.Reader's "
                       "ReadString('\\n')")
    if language == "rust":
        return text + ("; in Rust, read with io::stdin().lock().lines() or read_line into a String, "
                       "not into a fixed array such as [0u8; 8192]")
    if language == "c":
        return text + ("; in C, fgets into a char array cuts a longer line in pieces: read with "
                       "getline(&line, &cap, stdin), which grows its buffer")
    if language == "cpp":
        return text + ("; in C++, std::getline(std::cin, line) into a std::string reads it whole; a char "
                       "array (fgets, cin.getline) does not")
    if language == "java":
        return text + ("; Java's BufferedReader.readLine reads a line whole, so look for a fixed-size "
                       "char[] or a single read(...) in its own code")
    return text


def wait_to_leave(handles: list[BotHandle]) -> None:
    """Give bots told to leave (:meth:`BotHandle.ask_to_leave`) SHUTDOWN_GRACE_S, together, to
    exit: a pool's bots wait once, not once each in turn (a worker with many bots outlasted
    the time its coordinator gives it to close)."""
    deadline = time.monotonic() + SHUTDOWN_GRACE_S
    while any(handle.is_running() for handle in handles) and time.monotonic() < deadline:
        time.sleep(0.01)


class BotHandle:
    """One bot process speaking the protocol over ZeroMQ or stdio: a
    :class:`~arena.referee.Player`.

    A ZeroMQ bot runs under its bridge (:mod:`arena.channel.zmq_bridge`), which owns the
    bot's socket inside its sandbox; the referee speaks to every bot over pipes. The
    protocol itself (handshake, request numbers, messages) is its :class:`BotSession`.
    """

    def __init__(self, manifest: Manifest, *, log_dir: Path, launcher: Launcher | None = None,
                 start_timeout_s: float = START_TIMEOUT_S, label: str | None = None,
                 pondering: bool = False) -> None:
        self.manifest = manifest
        self.name = label or manifest.name
        self.launcher = launcher or UnconfinedLauncher()  # for this bot (a claimed one under strict)
        self.pondering = pondering  # True: never frozen between moves (see freeze)
        self._start_timeout_s = start_timeout_s
        self.stderr_log = inside(log_dir, f"{file_name(self.name)}.stderr.log")
        self.process: BotProcess | None = None
        self.channel: Channel | None = None
        self.session: BotSession | None = None  # kept after a kill: its seq carries on
        self._freezes = False  # its running process is frozen between moves (see freeze)
        self.hello: dict[str, Any] = {}
        self.starts = 0
        self.recycled = 0  # restarts between games because the CPU limit drew near
        self.markers: list[str] = []  # the process-tree marker of every process started
        self.cgroups: list[Path] = []  # and the cgroup folders of every sandboxed one
        self.broken: str | None = None  # set when the bot cannot be built: never started
        self._silent_starts = 0  # starts in a row without a hello (see MAX_SILENT_STARTS)
        self._no_hello = False  # the last start ended without a hello (see hint)
        self.exited_on_its_own: list[str] = []  # how it exited, each time it left between games
        self._moved_this_game = True  # it has answered a move_request since its last new_game (a hint's)
        self._games_this_run = 0  # new_game messages sent to its running process
        self.died_on_welcome = 0  # starts that ended after the hello, before any new_game
        self.largest_sent = 0  # the longest message sent to it (characters, no newline)
        self.language = bot_language(manifest)
        self._log_start = 0  # where the latest run's lines begin in stderr_log

    def next_seq(self) -> int:
        """The sequence number of the next request to this bot."""
        assert self.session is not None
        return self.session.next_seq()

    @property
    def wants_legal_moves(self) -> bool:
        """Its running process asked for the legal moves in its hello."""
        return bool(self.hello) and self.session is not None and self.session.wants_legal_moves

    @property
    def last_decode_ns(self) -> int:
        """Referee time spent decoding the bot's last message."""
        return self.session.last_decode_ns if self.session is not None else 0

    @property
    def last_message_bytes(self) -> int:
        """The size of the bot's last message."""
        return self.session.last_bytes if self.session is not None else 0

    def is_running(self) -> bool:
        return self.process is not None and self.process.is_alive()

    def ensure_started(self) -> None:
        """Start the process and do the handshake unless it is already running.

        Raises BotStartError (cannot start, no hello in time), BotTerminatedError (it
        exited at start, or between games: it is started again for the next game) or a
        ProtocolError (a bad hello).
        """
        if self.broken is not None:
            raise BotStartError(self.broken)
        if self.is_running() and self.channel is not None and self.process is not None:
            # RLIMIT_CPU counts a process's whole life: a bot reused for hours of games
            # would be killed mid-game by a limit meant for runaways. Start a fresh one.
            # Cheap: /proc is read only once the bot could be near the limit.
            limit = self.launcher.limits.cpu_seconds
            if not self.process.cpu_over(RECYCLE_CPU_SHARE * limit):
                return
            log.info("bot %s: restarted between games after %.0f s of CPU (limit %d s per process)",
                     self.name, self.process.cpu_seconds(), limit)
            self.recycled += 1
            self.close()
        elif self.process is not None and self.hello:
            # It left by itself after a game. A moment later (after new_game) it would have lost
            # this game by a crash; whether it had gone already was a matter of timing, and so
            # was the verdict: the game is lost either way.
            on_welcome = self.welcome_death()
            if on_welcome is not None:
                self.died_on_welcome += 1
                self.kill()
                raise on_welcome
            how = self.process.describe_exit()
            self.exited_on_its_own.append(how)
            self.kill()
            raise BotTerminatedError(f"bot {self.name}: {how} between games, after the last game_over: a "
                                     "bot must play many games, one after another, until the referee "
                                     "sends shutdown")
        self.kill()
        stdio = self.manifest.protocol == "stdio"
        limits = self.launcher.limits
        if stdio:
            argv = self.manifest.argv()
        else:  # the bridge gets more descriptors than the bot: see BRIDGE_OPEN_FILES
            argv = bridge_argv(self.manifest.argv(), bot_open_files=limits.open_files)
            limits = dataclasses.replace(limits, open_files=max(limits.open_files, BRIDGE_OPEN_FILES))
        self.stderr_log.parent.mkdir(parents=True, exist_ok=True)
        try:  # the log is appended to: this run's lines start here
            self._log_start = self.stderr_log.stat().st_size
        except OSError:
            self._log_start = 0
        try:
            with deferred_interrupts():  # a Ctrl-C comes once the process is known, to be killed
                self.process = self.launcher.start_bot(argv, folder=self.manifest.folder, name=self.name,
                                                       stderr_log=self.stderr_log, limits=limits)
        except BotStartError as exc:
            raise BotStartError(f"bot {self.name}: {exc}") from None
        self.starts += 1
        self._freezes = self.process.can_freeze and not self.pondering
        self.markers.append(self.process.marker)
        if self.process.cgroup is not None:
            self.cgroups.extend(sorted(set(self.process.cgroup.folders.values())))
        channel = StdioChannel if stdio else BridgeChannel
        self.channel = channel(self.process, name=self.name)
        self.session = BotSession(self.channel, self.name,
                                  seq=self.session.seq if self.session is not None else 0)
        self._no_hello = False
        hello = self.session.receive(self._start_timeout_s)
        if hello is None:
            self._no_hello = True
            self._silent_starts += 1
            error = f"bot {self.name}: no hello within {self._start_timeout_s:g} s of start"
            if self._silent_starts >= MAX_SILENT_STARTS:  # each costs the start timeout: stop paying
                self.broken = (f"{error}, {self._silent_starts} starts in a row: its other games are "
                               "lost without starting it again")
            raise BotStartError(error)
        self._silent_starts = 0
        self._games_this_run = 0
        self.hello = self.session.accept(hello)

    def welcome_death(self) -> BotTerminatedError | None:
        """When the process has ended after its hello and before any new_game, what it died
        on (the welcome: a bot that stops at a message type it does not handle), else None."""
        if self.process is None or not self.hello or self._games_this_run or self.process.is_alive():
            return None
        return BotTerminatedError(
            f"bot {self.name}: {self.process.describe_exit()} after its hello, before the first game "
            "(on `welcome`): a bot must ignore (and may log) the message types it does not handle, "
            "as the protocol requires (PROTOCOL.md, section 1), and wait for new_game")

    @property
    def frozen(self) -> bool:
        return self.process is not None and self.process.frozen

    @property
    def freezes(self) -> bool:
        """Its running process is frozen off its turn (a cgroup freezer, not pondering)."""
        return self._freezes

    def freeze(self) -> None:
        """Stop all of the bot's processes (cgroup freezer) until :meth:`thaw`, so it computes
        nothing off its turn. A no-op when pondering, without a freezer (level none, or no
        usable cgroup freezer on the host), and while the bot has more unread input than
        a frozen bot may hold (it then stays thawed to read it)."""
        if not self._freezes or self.process is None:  # the move's hot path at level none
            return
        if self.session is not None and self.session.unread > FROZEN_UNREAD_BYTES:
            return
        self.process.freeze()

    def thaw(self) -> None:
        """Let the bot run again; returns once the kernel has thawed every process."""
        if self._freezes and self.process is not None:
            self.process.thaw()

    def send(self, message: Mapping[str, Any], timeout_s: float | None = None) -> None:
        """Send a message built by :mod:`arena.protocol.messages`."""
        self.send_text(encode_trusted(message), timeout_s)

    def send_text(self, text: str, timeout_s: float | None = None) -> None:
        """Send an already encoded message (the referee encodes once, measures the cost: the
        move requests, sent this way only).

        Sends to a frozen bot wait in its pipe or socket; a frozen bot with too much
        unread input is thawed first, so that a send never waits on it. ``timeout_s``: the
        bot's time to read it (see :meth:`~arena.channel.transport.PipeChannel.send`)."""
        assert self.session is not None
        if text.startswith(_NEW_GAME):  # the referee's own encoding: "type" comes first
            self._moved_this_game = False
            self._games_this_run += 1
        self.largest_sent = max(self.largest_sent, len(text))
        unread = self.session.unread + len(text) + 1
        if unread > FROZEN_UNREAD_BYTES and self.frozen:
            log.info("bot %s: thawed to read %d bytes of unread messages", self.name, unread)
            self.thaw()
        self.session.send_text(text, timeout_s)

    def receive(self, timeout_s: float) -> dict[str, Any] | None:
        """The next message, decoded and schema-checked, or None on timeout."""
        assert self.session is not None
        message = self.session.receive(timeout_s)
        if message is not None and message["type"] == "move":
            self._moved_this_game = True
        return message

    def log_full_note(self) -> str:
        """For a failure's detail: the log reached its size limit, so nothing more was kept."""
        if not log_is_full(self.stderr_log):
            return ""
        return (f"its log {self.stderr_log} reached its {STDERR_LOG_MAX_BYTES >> 20} MiB limit: nothing more "
                "was kept")

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> list[str]:
        """The last ``lines`` lines the latest run of the bot wrote to its stderr log, each cut
        to a few hundred characters; empty when it wrote nothing."""
        if self.process is not None:
            self.process.settle_log()  # a bot that has died: let what it last wrote arrive
        try:
            with open(self.stderr_log, "rb") as handle:
                size = handle.seek(0, 2)
                handle.seek(max(self._log_start, size - _LOG_TAIL_BYTES))
                data = handle.read()
        except OSError:
            return []
        found = [line if len(line) <= _LOG_LINE_CHARS else line[:_LOG_LINE_CHARS - 3] + "..."
                 for line in data.decode("utf-8", "replace").expandtabs().splitlines() if line.strip()]
        return found[-lines:] if lines > 0 else []

    def hint(self, error: BaseException) -> str:
        """What to change for the common newcomer mistake behind ``error`` (a failure of this
        bot), or "" when it is not one of them (issue 15's list)."""
        if self.broken is not None:  # its build failed: the build's output says why (no program yet)
            return ""
        words = self.manifest.command
        if isinstance(error, (BotStartError, BotTerminatedError)) and words and (
                words[0] in _SHELL_BUILTINS or any(w in _SHELL_OPERATORS for w in words)):
            return ("no shell is run: 'command' is executed as it is, so put the commands in a "
                    "script (e.g. run.sh with its #! line) and run that")
        starting = not self.hello and isinstance(error, (BotStartError, BotTerminatedError))
        # Unconfined, Popen finds no such program (BotStartError); under the sandbox its
        # launcher (setpriv) does, and exits with status 127.
        not_found = isinstance(error, BotStartError) or "exit code 127" in str(error)
        if starting and not_found and words and words[0] in _WINDOWS_PYTHONS:
            return (f"{words[0]!r} is Windows' name for Python: on Linux run it with python (or "
                    "python3), e.g. command = \"python bot.py\"")
        windows = self._windows_program(words[0]) if starting and words else ""
        if windows:
            return windows
        if (starting and not_found and words and "/" not in words[0]
                and _regular_in_folder(self.manifest.folder, words[0])):
            return (f"a command without a '/' is looked up on the PATH, not in the bot's folder: "
                    f"write {json.dumps('./' + words[0])} in bot.toml" + self._setpriv_note())
        stdio = self.manifest.protocol == "stdio"
        program = self._program_hint(error) if starting else ""
        if program:
            return program + self._setpriv_note()
        if isinstance(error, MalformedMessageError) and not stdio and "frames, the first empty" in str(error):
            return ("use a DEALER socket, not REQ (a REQ socket puts an empty frame before each "
                    "message)")
        exited_0 = isinstance(error, BotTerminatedError) and "exit code 0" in str(error)
        hello_in_log = starting and any(_HELLO_LINE.search(line) for line in self.log_tail(200))
        if hello_in_log and not stdio:
            # under the bridge a bot's stdout goes to its log (and its stdin is empty)
            return ("this bot's log holds a hello, so it speaks JSON lines on stdout: set "
                    "protocol = \"stdio\" in its bot.toml")
        if hello_in_log:
            return "its hello went to its log (stderr): write messages to stdout"
        if (starting and stdio and isinstance(error, BotTerminatedError)
                and any(_ZMQ_VARIABLE.search(line) for line in self.log_tail())):
            return ("its log names ARENA_TOKEN or ARENA_ENDPOINT, which only a ZeroMQ bot is given: "
                    "a ZeroMQ bot needs protocol = \"zmq\" in its bot.toml (a stdio bot speaks JSON "
                    "lines on stdin/stdout)")
        if starting and stdio and self._no_hello and isinstance(self.channel, StdioChannel):
            if self.channel.partial_line().strip():
                return ("it wrote part of a line and no newline: end each message with a "
                        "newline and flush your stdout after each message")
            if self.is_running() and self._busy():  # loading, not unflushed: flushing would not help
                return (f"it was still computing when the start timeout ({self._start_timeout_s:g} s) ran "
                        "out: send hello first, then load or precompute (the first move has a larger "
                        "limit; the Python SDK's run(setup=...) does this)")
            return ("it wrote nothing on stdout: flush your stdout after each message "
                    f"({_FLUSH_IDIOMS})" + self._slow_start())
        silent = (isinstance(error, BotTimeoutError) and error.silent and stdio and self.is_running()
                  and isinstance(self.channel, StdioChannel))
        states = self._states() if silent else set()
        if states & {"T", "t"}:
            return ("it was stopped (state T in /proc: a SIGSTOP or SIGTSTP sent to itself or its "
                    "process group), so it could not answer: a bot must never stop itself")
        # silent: a stdio bot that sent nothing before its time ran out; what it did meanwhile
        channel = self.channel if silent and isinstance(self.channel, StdioChannel) else None
        if channel is not None:
            waiting = self._waits()
            # Blocked reading its stdin, it thinks it has answered, whatever a thread of it computes
            # meanwhile (pondering); else a thread of its own may compute (a JVM's main thread waits).
            reading = "input" in waiting
            computing = not reading and ("R" in states or self._busy())
            # What its stdout holds, read once the sampling above is done (it takes up to
            # BUSY_SAMPLE_S) and for all the branches below: a reply a few ms late lands meanwhile.
            partial = channel.partial_line().strip()
            wrote = channel.wrote_since_send()
            if wrote and len(channel.inbox):
                # its move came in after all, once the time had run out
                return ("its reply came after its time ran out: it is too slow for this time control; "
                        "keep each move within the per-move limit (the request's clocks say it, and "
                        "what is left in the bank)")
            if partial:
                if not computing:
                    return ("it wrote part of a line and no newline after the move_request: end each "
                            "message with a newline and flush stdout after it")
            elif wrote:
                return ("it wrote only blank lines on stdout after the move_request, and no move: "
                        "write the move as one line of JSON, and nothing else, then flush stdout")
            elif computing:
                return ("it was still computing when its time ran out: it is too slow for this time "
                        "control; keep each move within the per-move limit (the request's clocks say "
                        "it, and what is left in the bank)")
            else:
                if "sleep" in waiting and not reading:
                    return ("it was sleeping when its time ran out (not reading its input, not "
                            "computing): a move must come within the per-move limit, and the bank")
                doing = "was waiting for its input" if reading else "was not computing"
                return (f"it wrote nothing on stdout after the move_request and {doing}: "
                        f"flush stdout after every message ({_FLUSH_IDIOMS}), and read stdin line by "
                        "line (not to end of file)")
        if starting and not stdio and (self._no_hello or exited_0):
            return ("a ZeroMQ bot connects a DEALER socket, identity ARENA_TOKEN, to ARENA_ENDPOINT "
                    "and sends hello first; a bot speaking JSON lines on stdin/stdout needs "
                    "protocol = \"stdio\" in its bot.toml" + (self._slow_start() if self._no_hello else ""))
        if exited_0 and self.hello:
            return self._long_message_hint(error, "exited") or (
                "it exited by itself: a bot must play many games, one after another, until "
                "the referee sends shutdown")
        if isinstance(error, BotTerminatedError) and " gave up: " in str(error):
            gave_up = self._long_message_hint(error, "gave up")
            if gave_up:
                return gave_up
        crash = self._crash_hint(error) if isinstance(error, BotTerminatedError) else ""
        if crash:
            return crash
        if not self.hello and "at $.type: expected one of" in str(error):
            return ('a bot\'s first message is its hello: {"type": "hello", "name": ..., "version": ..., '
                    '"protocol": 1} (protocol/PROTOCOL.md, section 5, "hello")')
        bad_text = (self.session.bad_text if self.session is not None else "").strip()
        if isinstance(error, MalformedMessageError) and stdio and bad_text:
            if _JVM_LOG_LINE.match(bad_text):
                threads = ("Failed to start thread" in bad_text or "native thread" in bad_text)
                return ("a JVM writes its own warnings on stdout: give java -Xlog:disable "
                        "-Xlog:all=warning:stderr (they then go to the bot's log)"
                        + ("; it could not start a thread: under --sandbox strict a bot has at most "
                           f"{self._sandbox_limits().processes} processes and threads" if threads else ""))
            if _PYTHON_REPR.match(bad_text):
                return ("this is how Python prints a dict (single quotes, True, None), not JSON: "
                        "send print(json.dumps(message), flush=True)")
            if bad_text[0] not in "{[":
                dying = self._dying_words()
                if dying:
                    return dying
                return ("stdout carries only protocol messages: print debug output to stderr "
                        "(it goes to the bot's log)")
            if len(bad_text) < BAD_TEXT_CHARS and bad_text[-1] in "{[,:":  # a message's first line
                return ("one message per line: write each message as one line of JSON (no "
                        "pretty-printing, no newlines inside a message)")
        return self._setpriv_note().strip(" ()") if starting else ""

    def _dying_words(self) -> str:
        """For a bot that wrote a line that is not JSON and then died (a JVM writes why it
        cannot start, or its fatal error, on stdout): its next lines, and what a JVM's mean;
        "" for a bot still running (a debug print)."""
        if self.process is None or not isinstance(self.channel, StdioChannel):
            return ""
        deadline = time.monotonic() + _DYING_S
        while self.process.is_alive() and time.monotonic() < deadline:
            self.channel.unread_lines(0)  # read on: a bot with more to write cannot exit meanwhile
            time.sleep(0.01)
        if self.process.is_alive():
            return ""
        lines = self.channel.unread_lines(NEXT_LINES)
        if not lines:
            return ""
        said = "its next lines on stdout, as it died: " + " | ".join(
            json.dumps(line.strip()[:200]) for line in lines)
        text = " ".join(lines)
        if "object heap" in text or "insufficient memory for the Java Runtime" in text:
            return (said + "; the JVM could not get the heap it was given: give it -Xmx well under the "
                    f"bot's memory ({self._memory_limit()}), e.g. -Xmx512m")
        return said + "; a program that fails may write why on stdout (a JVM does)"

    def _memory_limit(self) -> str:
        if isinstance(self.launcher, BubblewrapLauncher):
            return f"{self._sandbox_limits().memory_bytes >> 20} MiB under --sandbox strict"
        return f"{self.launcher.limits.address_space_bytes >> 20} MiB of address space under --sandbox none"

    def _sandbox_limits(self) -> SandboxLimits:
        """The strict sandbox's limits: this bot's, or those a strict tournament would give it."""
        launcher = self.launcher
        return launcher.sandbox_limits if isinstance(launcher, BubblewrapLauncher) else SandboxLimits()

    def _crash_hint(self, error: BotTerminatedError) -> str:
        """For a bot that died: writing into its folder under the sandbox (read-only there), a
        fixed-size line buffer overrun by a long message (it died by a signal right after one),
        or, under the sandbox with nothing in its log, what the sandbox changes; else ""."""
        if self.is_running():  # it gave up (sent error) rather than died
            return ""
        tail = self.log_tail()
        strict = isinstance(self.launcher, BubblewrapLauncher)
        if strict and any(_READ_ONLY.search(line) for line in tail):
            return ("under --sandbox strict the bot's folder is read-only: write files in $TMPDIR (a "
                    "private temporary folder), never next to the bot")
        denied = (self._denied_hint(tail) if strict else "") or self._environment_hint(tail)
        if denied:
            return denied
        text = str(error)
        if "out of memory" in text:  # before "died before its first move": that is why it died
            java = Path(self.manifest.command[0]).name == "java"
            return ("it used more memory than a bot may have: use less"
                    + (" (a JVM sizes its heap from the machine's memory unless given -Xmx: give it "
                       "well under the limit, e.g. -Xmx512m)" if java else ""))
        long = self._long_message_hint(error)
        if long:
            return long
        if self.hello and not self._moved_this_game and self._games_this_run <= 1:
            # its first game since it started: no game_over came before, but the welcome did
            return ("it died before its first move, in its first game since it started: on `welcome`, "
                    "this game's new_game or its first move_request (its log says which); a bot must "
                    "ignore (and may log) the message types it does not handle")
        if self.hello and not self._moved_this_game:
            return ("it died before its first move of this game: on this game's new_game or first "
                    "move_request, or still on the game_over of the game before (its log says which)")
        if not any(f"({name})" in text for name in _MEMORY_SIGNALS):
            return ""
        if not tail and strict:
            said = "its log is full" if log_is_full(self.stderr_log) else "its log is empty"
            return (f"{said}; if it runs under --sandbox none, look at what strict changes: "
                    "the bot's folder is read-only (write files in $TMPDIR: a file opened for writing "
                    "next to the bot is NULL in C), and it sees only its own folder and the system's")
        return ""

    def _long_message_hint(self, error: BaseException, ended: str = "died") -> str:
        """For a stdio bot that ``ended`` right after a message longer than LONG_LINE_BYTES
        (a signal, an exit of any status, a Go or Rust panic, an error message): the
        :func:`fixed_buffer_hint`; else "". A guess, worded as one (a bot asking for the legal
        moves always ends after a long message), and not made for the languages that read a
        line whole unless it was a memory fault."""
        if self.manifest.protocol != "stdio" or self.session is None or not self.hello:
            return ""
        sent = self.session.last_sent
        if sent <= LONG_LINE_BYTES:
            return ""
        memory = any(f"({name})" in str(error) for name in _MEMORY_SIGNALS)
        if not memory and self.language in _WHOLE_LINE_LANGUAGES:
            return ""
        return fixed_buffer_hint(sent, self.language, ended)

    def _denied_hint(self, tail: list[str]) -> str:
        """Under strict, for a log naming a file of the bot's folder it was denied (Python's
        "Permission denied: 'mybot.log'", Node's EACCES): one other users cannot read, or one it tried to
        write (its folder's files belong to another user there); else ""."""
        folder = self.manifest.folder.resolve()
        for line in tail:
            found = _DENIED_PATH.search(line)
            if found is None:
                continue
            word = next(group for group in found.groups() if group)
            path = _in_folder(folder, word)
            if path is None or not os.path.lexists(path):
                continue
            unreadable = self._unreadable_hint(str(path.relative_to(folder)), folder)
            return unreadable or (
                f"under --sandbox strict the bot's folder is read-only and {path.relative_to(folder)} "
                "belongs to another user: write files in $TMPDIR (a private temporary folder), never "
                "next to the bot")
        return ""

    def _environment_hint(self, tail: list[str]) -> str:
        """For a log showing the bot looked for what its environment does not give it: a
        variable (Python's KeyError from os.environ, Rust's NotPresent) or a file by a path
        relative to another folder than its own ('wdir/weights.txt' for the weights.txt beside
        it); else ""."""
        text = "\n".join(tail)
        if _MISSING_VARIABLE.search(text):
            return ("the bot's environment holds only PATH, HOME, LANG and TMPDIR (and ARENA_* for a "
                    "ZeroMQ bot): read no other variable, or give a default")
        folder = self.manifest.folder.resolve()
        for found in _MISSING_FILE.finditer(text):
            word = found[1]
            path = _in_folder(folder, word)
            if path is None or os.path.lexists(path):
                continue
            name = os.path.basename(word)
            beside = _in_folder(folder, name) if name else None
            if beside is not None and os.path.lexists(beside):
                return (f"the bot runs in its own folder, where {word} is not but {name} is: paths are "
                        "relative to the bot's folder")
        return ""

    def _setpriv_note(self) -> str:
        """After a start hint under the sandbox whose log quotes setpriv: what setpriv is (the
        author never named it), else ""."""
        if not isinstance(self.launcher, BubblewrapLauncher):
            return ""
        if not any(line.startswith("setpriv: ") for line in self.log_tail(5)):
            return ""
        return " (setpriv, named in its log, is the sandbox's launcher: it executes the command)"

    def _slow_start(self) -> str:
        """After no hello: the rest of the hint when the bot may be loading still (it runs,
        and it wrote to its log), else ""."""
        if not (self.is_running() and self.log_tail(1)):
            return ""
        return (f"; or it is still starting: say hello first, then load (the start limit is "
                f"{self._start_timeout_s:g} s; the Python SDK's run(setup=...) does this)")

    def _program_hint(self, error: BaseException) -> str:
        """The hint for a start that failed because of the program the command names: outside
        the sandbox's view, not executable, without its #! line, or with Windows line endings."""
        words = self.manifest.command
        folder = self.manifest.folder.resolve()
        if isinstance(self.launcher, BubblewrapLauncher):
            sandbox = self.launcher.sandbox
            for word in words:
                if word.startswith("/") and not sandbox.shows(word, folder=folder):
                    return (f"under the sandbox only the bot's own folder is visible, not {word}: "
                            "use a path inside it")
                if ".." in word and not _within(Path(os.path.normpath(folder / word)), folder):
                    return (f"under the sandbox only the bot's own folder is visible, and {word} is "
                            "outside it: copy what the bot needs into its folder and use a path inside it")
        above = self._parent_relative_hint(words, folder)
        if above:
            return above
        spaced = _spaced_path(words, folder)
        if spaced is not None:
            return (f"{json.dumps(spaced)} holds a space, so the command line split it into words: quote "
                    f"it (command = \"... '{spaced}'\") or give the words as a list")
        if "/" not in words[0]:
            script = next((word for word in words[1:] if not word.startswith("-")), None)
            return (self._file_hint(script, folder) if script is not None else "") \
                or self._script_hint(words, folder)
        found = _read_head(folder, words[0])
        if found is None:
            return self._file_hint(words[0], folder) or self._missing_hint(words[0], folder)
        info, head = found
        first_line = head.split(b"\n", 1)[0]
        crlf = head.startswith(b"#!") and first_line.endswith(b"\r")
        if crlf and not info.st_mode & 0o111:  # Permission denied comes first: both need fixing
            return (f"{words[0]} is not executable and has Windows (CRLF) line endings: chmod +x it, "
                    f"and convert it ({_crlf_fix(words[0])})")
        if crlf:
            return (f"{words[0]} has Windows (CRLF) line endings, so its #! line ends in a carriage "
                    f"return: convert it ({_crlf_fix(words[0])})")
        if not info.st_mode & 0o111:
            interpreter = _interpreter(first_line, words[0])
            return (f"{words[0]} is not executable: chmod +x it, or run it with its interpreter: "
                    f"command = [{json.dumps(interpreter)}, {json.dumps(words[0].removeprefix('./'))}]")
        # Without a #! line the kernel cannot run it (Exec format error), and under the sandbox
        # setpriv hands it to /bin/sh instead, whose errors begin with the script's path.
        sh_said = f"{self.manifest.argv()[0]}: "
        if (not head.startswith((b"#!", b"\x7fELF")) and any(
                "Exec format error" in line or line.startswith(sh_said)
                for line in [str(error), *self.log_tail(5)])):
            return f"{words[0]} has no #! line: add one, e.g. #!/usr/bin/env python3"
        return ""

    def _parent_relative_hint(self, words: tuple[str, ...], folder: Path) -> str:
        """For a word of the command naming a path from the folder above the bot's ("v_rel/bot.js"
        in the folder v_rel, written from its parent): it begins with the folder's own name, and
        names nothing in the bot's folder but would without that first part; else ""."""
        names = {folder.name, self.manifest.folder.name}
        for i, word in enumerate(words[:20]):
            head, _, rest = word.removeprefix("./").partition("/")
            path = _in_folder(folder, word)
            if head not in names or not rest or path is None or os.path.lexists(path):
                continue
            beside = _in_folder(folder, rest)
            if beside is not None and os.path.lexists(beside):
                fixed = "./" + rest if i == 0 else rest  # a program's path must hold a '/' (else: the PATH)
                return (f"paths in 'command' are relative to the bot's folder ({folder.name}): write "
                        f"{json.dumps(fixed)}, not {json.dumps(word)}")
        return ""

    def _file_hint(self, word: str, folder: Path) -> str:
        """For a file the command names in the bot's folder (its program, or the script its
        interpreter runs): one whose name differs only in case, or one the sandbox's uid cannot
        read (a file of mode 600 copied from Windows); else ""."""
        alike = _named_alike(folder, word)
        if alike is not None:
            return (f"{word} is not in the bot's folder, but {alike} is: file names are "
                    "case-sensitive on Linux (rename the file or change the command)")
        return self._unreadable_hint(word, folder)

    def _unreadable_hint(self, word: str, folder: Path) -> str:
        """Under strict, for a file in the bot's folder that other users cannot read: the
        sandbox's uid cannot; else ""."""
        if not isinstance(self.launcher, BubblewrapLauncher):
            return ""
        path = _in_folder(folder, word)
        try:
            mode = os.lstat(path).st_mode if path is not None else 0
        except OSError:
            return ""
        if not stat.S_ISREG(mode) or mode & 0o004:
            return ""
        return (f"{word} is mode {mode & 0o777:o}: under --sandbox strict the bot runs as a user of "
                f"its own, which must be able to read it (chmod -R o+rX {shlex.quote(str(folder))})")

    def _windows_program(self, word: str) -> str:
        """When the command's program, in the bot's folder, is a Windows program (MZ header):
        it cannot run here; else ""."""
        found = _read_head(self.manifest.folder.resolve(), word)
        if found is None or not found[1].startswith(b"MZ"):
            return ""
        return (f"{word} is a Windows program (.exe), which Linux cannot run: build the bot here "
                "(a build = \"...\" line in bot.toml) or run its source with its interpreter")

    def _missing_hint(self, word: str, folder: Path) -> str:
        """The hint when the program ``word`` names (with a '/') is not in the bot's folder:
        after a build, the build must make it; the folder's programs are named (at most
        three, from its first MISSING_SCAN entries: a folder may be huge)."""
        path = Path(os.path.normpath(folder / word))
        inside = _in_folder(folder, word)  # whether a host file exists must not show (lib -> /usr/sbin)
        if inside is None or os.path.lexists(inside):
            return ""
        programs = _programs_in(inside.parent)
        where = "in the bot's folder" if path.parent == folder else f"in {path.parent.relative_to(folder)}"
        text = f"{word} is not {where}"
        if self.manifest.build:
            text += " after its build: 'command' must name the program the build makes"
        if programs:
            shown_programs = ", ".join(json.dumps(name) for name in sorted(programs)[:3])
            text += f" (programs there: {shown_programs}{', ...' if len(programs) > 3 else ''})"
        return text

    def _script_hint(self, words: tuple[str, ...], folder: Path) -> str:
        """For a command running a script through its interpreter (``["bash", "bot.sh"]``):
        the hint when the script, in the bot's folder, has Windows (CRLF) line endings, which
        a shell reads as part of each word; else ""."""
        if Path(words[0]).name not in _CRLF_INTERPRETERS:
            return ""
        script = next((word for word in words[1:] if not word.startswith("-")), None)
        found = _read_head(folder, script) if script is not None else None
        if script is None or found is None or b"\r\n" not in found[1]:
            return ""
        return (f"{script} has Windows (CRLF) line endings, and {words[0]} reads the carriage "
                f"return as part of each line: convert it ({_crlf_fix(script)})")

    def _waits(self) -> set[str]:
        """What the running bot's threads are blocked in, from /proc (for a hint only):
        "input" (a read of its stdin), "sleep" (nanosleep, clock_nanosleep), "other"."""
        found: set[str] = set()
        if self.process is None:
            return found
        for pid in self.process.tree.pids():
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
        return found

    def _busy(self) -> bool:
        """Whether the running bot used the CPU over the next BUSY_SAMPLE_S (for a hint only):
        a JVM computes in a thread of its own while its main thread, the one whose state
        /proc/<pid>/stat shows, waits; so the processes' CPU time (all their threads) is looked
        at, not their state. A bot blocked on its input uses none."""
        if self.process is None:
            return False
        pids = self.process.tree.pids()

        def ticks() -> int:
            return sum(found.cpu for found in map(read_stat, map(str, pids)) if found is not None)

        before = ticks()
        time.sleep(BUSY_SAMPLE_S)
        return ticks() - before >= BUSY_SAMPLE_S * os.sysconf("SC_CLK_TCK") / 4

    def _states(self) -> set[str]:
        """The /proc states of the running bot's processes (R: on a CPU or waiting for one, so
        thinking, not waiting for input; T: stopped by a signal). For a hint only."""
        if self.process is None:
            return set()
        return {found.state for found in self.process.tree.scan().values()}

    def kill(self) -> None:
        """Kill the whole process tree now (idempotent); the next start is a fresh process."""
        if self.channel is not None:
            try:
                self.channel.close()
            finally:
                self.channel = None
        if self.process is not None:
            self.process.kill_tree()
            self.process = None
        self._freezes = False
        self.hello = {}

    def ask_to_leave(self) -> bool:
        """Send shutdown, thawed first (a frozen bot can neither read it nor exit); whether
        it was running. Not waited for: a bot that does not read it is killed all the same
        (a red team's bot that stopped reading held its pool's closing 5 s per bot)."""
        if not (self.is_running() and self.channel is not None):
            return False
        try:
            self.thaw()
            self.send(messages.shutdown(), timeout_s=0.0)
        except Exception:  # noqa: BLE001 - a dying bot must not stop the cleanup
            pass
        return True

    def close(self) -> None:
        """Ask politely (shutdown), give it SHUTDOWN_GRACE_S to exit, then kill everything left."""
        try:
            if self.ask_to_leave():
                wait_to_leave([self])
        finally:  # even when interrupted (Ctrl-C, a SIGTERM unwinding) while it waited
            self.kill()

    def __enter__(self) -> BotHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
