"""A running bot: its process, its channel and the handshake, behind one handle.

The handle is started once and reused across games (each game begins with a
``new_game`` message); after any failure the referee calls :meth:`BotHandle.kill`
and the next :meth:`BotHandle.ensure_started` starts a fresh process.

The handle runs over what its launcher gives it (:meth:`BotLauncher.open_bot`): a started
process and a channel to it, a real :class:`~arena.launch.launcher.Launcher`'s, or
:class:`arena.testing.ScriptedLauncher`'s in tests. What to change after a failure, its
:meth:`BotHandle.hint`, is :func:`arena.bots.diagnose.diagnose` over the facts that
:func:`arena.bots.probe.probe` finds.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from arena.bots.diagnose import LOG_TAIL_LINES, diagnose
from arena.bots.manifest import Manifest, bot_language
from arena.bots.probe import probe, read_log_tail
from arena.channel.session import BotSession
from arena.channel.transport import BRIDGE_OPEN_FILES, BridgeChannel, Channel, StdioChannel, bridge_argv
from arena.errors import BotStartError, BotTerminatedError
from arena.launch.bubblewrap import SandboxLimits
from arena.launch.launcher import UnconfinedLauncher
from arena.launch.process import STDERR_LOG_MAX_BYTES, BotProcess, ResourceLimits, log_is_full
from arena.protocol import messages
from arena.protocol.codec import encode_trusted
from arena.signals import deferred_interrupts
from arena.untrusted import file_name, inside

if TYPE_CHECKING:
    from arena.launch.cgroup import BotCgroup

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
_NEW_GAME = '{"type":"new_game"'  # how every new_game the referee sends begins (encode_trusted)


class BotRun(Protocol):
    """A started bot process, as the handle sees it: a :class:`~arena.launch.process.BotProcess`,
    or :class:`arena.testing.ScriptedProcess`."""

    marker: str  # its process tree's marker
    cgroup: BotCgroup | None  # its cgroup under the strict sandbox

    @property
    def can_freeze(self) -> bool: ...
    @property
    def frozen(self) -> bool: ...
    def is_alive(self) -> bool: ...
    def poll(self) -> int | None: ...
    def exit_code(self) -> int | None: ...
    def describe_exit(self) -> str: ...
    def cpu_seconds(self) -> float: ...
    def cpu_over(self, seconds: float) -> bool: ...
    def freeze(self, timeout_s: float = ...) -> bool: ...
    def thaw(self) -> None: ...
    def settle_log(self, timeout_s: float = ...) -> None: ...
    def kill_tree(self, grace_s: float = ...) -> None: ...


class BotLauncher(Protocol):
    """What the handle needs of its launcher (a :class:`~arena.launch.launcher.Launcher`, or
    :class:`arena.testing.ScriptedLauncher`): the limits, what the sandbox is (for hints),
    and :meth:`open_bot`."""

    @property
    def limits(self) -> ResourceLimits: ...
    @property
    def strict(self) -> bool: ...
    @property
    def sandbox_limits(self) -> SandboxLimits: ...
    def memory_limit(self) -> str: ...
    def shows(self, path: str, *, folder: Path) -> bool: ...

    def open_bot(self, argv: Sequence[str], *, folder: Path, name: str, stderr_log: Path,
                 limits: ResourceLimits | None,
                 channel: Callable[[BotProcess], Channel]) -> tuple[BotRun, Channel]:
        """Start the bot and open ``channel`` (a channel class over its pipes) to it."""
        ...


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

    def __init__(self, manifest: Manifest, *, log_dir: Path, launcher: BotLauncher | None = None,
                 start_timeout_s: float = START_TIMEOUT_S, label: str | None = None,
                 pondering: bool = False) -> None:
        self.manifest = manifest
        self.name = label or manifest.name
        self.launcher = launcher or UnconfinedLauncher()  # for this bot (a claimed one under strict)
        self.pondering = pondering  # True: never frozen between moves (see freeze)
        self._start_timeout_s = start_timeout_s
        self.stderr_log = inside(log_dir, f"{file_name(self.name)}.stderr.log")
        self.process: BotRun | None = None
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
        self.no_hello = False  # the last start ended without a hello (see hint)
        self.exited_on_its_own: list[str] = []  # how it exited, each time it left between games
        self.moved_this_game = True  # it has answered a move_request since its last new_game (a hint's)
        self.games_this_run = 0  # new_game messages sent to its running process
        self.died_on_welcome = 0  # starts that ended after the hello, before any new_game
        self.largest_sent = 0  # the longest message sent to it (characters, no newline)
        self.language = bot_language(manifest)
        self._log_start = 0  # where the latest run's lines begin in stderr_log

    @property
    def start_timeout_s(self) -> float:
        """How long a start may take, until the hello."""
        return self._start_timeout_s

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
        framing = StdioChannel if stdio else BridgeChannel
        try:
            with deferred_interrupts():  # a Ctrl-C comes once the process is known, to be killed
                self.process, self.channel = self.launcher.open_bot(
                    argv, folder=self.manifest.folder, name=self.name, stderr_log=self.stderr_log,
                    limits=limits, channel=functools.partial(framing, name=self.name))
        except BotStartError as exc:
            raise BotStartError(f"bot {self.name}: {exc}") from None
        self.starts += 1
        self._freezes = self.process.can_freeze and not self.pondering
        self.markers.append(self.process.marker)
        if self.process.cgroup is not None:
            self.cgroups.extend(sorted(set(self.process.cgroup.folders.values())))
        self.session = BotSession(self.channel, self.name,
                                  seq=self.session.seq if self.session is not None else 0)
        self.no_hello = False
        hello = self.session.receive(self._start_timeout_s)
        if hello is None:
            self.no_hello = True
            self._silent_starts += 1
            error = f"bot {self.name}: no hello within {self._start_timeout_s:g} s of start"
            if self._silent_starts >= MAX_SILENT_STARTS:  # each costs the start timeout: stop paying
                self.broken = (f"{error}, {self._silent_starts} starts in a row: its other games are "
                               "lost without starting it again")
            raise BotStartError(error)
        self._silent_starts = 0
        self.games_this_run = 0
        self.hello = self.session.accept(hello)

    def welcome_death(self) -> BotTerminatedError | None:
        """When the process has ended after its hello and before any new_game, what it died
        on (the welcome: a bot that stops at a message type it does not handle), else None."""
        if self.process is None or not self.hello or self.games_this_run or self.process.is_alive():
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
            self.moved_this_game = False
            self.games_this_run += 1
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
            self.moved_this_game = True
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
        return read_log_tail(self.stderr_log, self._log_start, lines)

    def hint(self, error: BaseException) -> str:
        """What to change for the common newcomer mistake behind ``error`` (a failure of this
        bot), or "" when it is not one of them: :func:`~arena.bots.diagnose.diagnose` over
        what :func:`~arena.bots.probe.probe` finds now."""
        if self.broken is not None:  # its build failed: the build's output says why (no program yet)
            return ""
        return diagnose(probe(self, error))

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
