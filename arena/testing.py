"""Scripted bots in-process, for tests: the real :class:`~arena.bots.session.BotHandle` and the
real referee, without starting a process.

Like python-chess's ``MockTransport``: a :class:`ScriptedLauncher` stands where the launcher
would start a bot process, and gives the handle a :class:`ScriptedProcess` and a
:class:`ScriptedChannel` where the pipes to the process would be. Everything above them is
the code the user meets: :class:`~arena.bots.session.BotHandle` (start, restart, freeze,
log tail, hints), :class:`~arena.channel.session.BotSession` (handshake, sequence numbers,
decode and schema check), the referee, and the same :class:`~arena.channel.transport.Inbox`
and :class:`~arena.channel.transport.LineFramer` a stdio bot's bytes go through (flood,
oversize, not UTF-8, deliver-before-error). Time is a :class:`FakeClock` the referee reads
(``play_game(..., clock=clock)``): a bot "thinks" by moving it, and a wait for a bot that
will never answer moves it to the deadline at once, so a timeout takes microseconds.

A :class:`ScriptedBot` answers each referee message with :data:`Output` items; every message
the referee sends it is decoded with ``sender="referee"`` (schema-checked) and kept in
``received``; what it writes to ``stderr`` lands in the handle's log. For example::

    clock = FakeClock()
    players = (scripted_handle(ScriptedBot, clock, log_dir=tmp_path, name="a"),
               scripted_handle(ScriptedBot, clock, log_dir=tmp_path, name="b"))
    result = play_game(players, seed=1, clock=clock)

Nothing in :mod:`arena` imports this module (an import contract holds it).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.bots.manifest import Manifest
from arena.bots.session import START_TIMEOUT_S, BotHandle
from arena.channel.transport import Channel, Inbox, LineFramer
from arena.errors import BotTerminatedError
from arena.launch.bubblewrap import SandboxLimits
from arena.launch.cgroup import BotCgroup
from arena.launch.process import BotProcess, ResourceLimits
from arena.protocol import messages
from arena.protocol.codec import decode, encode
from arena.protocol.constants import MAX_MESSAGE_BYTES

__all__ = ["Exit", "FakeClock", "Output", "ScriptedBot", "ScriptedChannel", "ScriptedLauncher",
           "ScriptedProcess", "Think", "reply", "scripted_handle"]


class FakeClock:
    """Seconds, moved only by the scripted bots and channels (pass as play_game's clock)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += max(seconds, 0.0)


@dataclass(frozen=True)
class Think:
    """The bot's later outputs come this many ms later."""

    ms: float


@dataclass(frozen=True)
class Exit:
    """The bot's process exits with this code (after what it wrote before)."""

    code: int


Output = bytes | dict[str, Any] | Think | Exit
"""What a scripted bot does: write raw bytes, write a message (one line), think, or exit."""


class ScriptedBot:
    """Advances, or places a special patch on its first empty square, which is always
    legal in Patchwork (a short game, and no legal moves to send: the referee's work per
    move is what it is with most bots); override :meth:`hello` or :meth:`answer` to
    misbehave, or set ``legal_moves`` to ask for the legal moves (it plays the same)."""

    name = "scripted"
    legal_moves = False

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []  # every referee message, schema-checked
        self.stderr: list[str] = []  # what it "wrote to its log"
        self.moves = 0  # move requests of the current game

    def hello(self) -> list[Output]:
        return [dict(messages.hello(self.name, "1", legal_moves=self.legal_moves))]

    def on_message(self, message: dict[str, Any]) -> list[Output]:
        self.received.append(message)
        if message["type"] == "new_game":
            self.moves = 0
        if message["type"] != "move_request":
            return []
        self.moves += 1
        return self.answer(message)

    def answer(self, request: dict[str, Any]) -> list[Output]:
        return [reply(request)]


def reply(request: Mapping[str, Any], seq: int | None = None) -> dict[str, Any]:
    """A legal answer to ``request`` (see :class:`ScriptedBot`), for request ``seq`` if given."""
    seq = request["seq"] if seq is None else seq
    state = request["state"]
    if state["decision"] != "special":
        return dict(messages.move_reply(seq, {"action": "advance"}))
    quilt = state["quilts"][state["to_move"]]
    row, col = next((r, c) for r, line in enumerate(quilt) for c, square in enumerate(line) if square == ".")
    return dict(messages.move_reply(seq, {"action": "special", "cells": [[row, col]]}))


class ScriptedChannel:
    """A :class:`~arena.channel.transport.Channel` to a :class:`ScriptedBot`, in-process.

    The bot's outputs become the bytes of its stdout, framed into the real inbox when their
    time on ``clock`` comes; a ``recv`` with nothing due moves the clock by its timeout. A
    move request sent while its ``process`` is frozen fails the test (the referee thaws a
    bot before its turn)."""

    def __init__(self, bot: ScriptedBot, clock: FakeClock, *, name: str = "scripted",
                 max_bytes: int = MAX_MESSAGE_BYTES, max_pending: int = 64,
                 process: ScriptedProcess | None = None) -> None:
        self.bot = bot
        self.clock = clock
        self.name = name
        self.process = process
        self.inbox = Inbox(name, max_pending)
        self.framer = LineFramer(self.inbox, max_bytes)
        self.exit_code: int | None = None  # set once its process has "exited"
        self.sent: list[str] = []  # every text the referee sent, as sent
        self._due: list[tuple[float, int, bytes | dict[str, Any] | Exit]] = []  # (time, order, output)
        self._order = itertools.count()
        self._schedule(bot.hello())

    def send(self, text: str, timeout_s: float | None = None) -> None:
        if self.exit_code is not None:
            raise BotTerminatedError(f"bot {self.name}: exit code {self.exit_code}")
        assert "\n" not in text and text.isascii(), text
        frozen = self.process is not None and self.process.frozen
        assert not (frozen and '"move_request"' in text), "a move request to a frozen bot"
        self.sent.append(text)
        message = decode(text, sender="referee")  # schema-checked
        assert encode(message) == text  # the referee's fast encoder writes what the strict one would
        self._schedule(self.bot.on_message(message))

    def recv(self, timeout_s: float) -> str | None:
        deadline = self.clock() + timeout_s
        self._arrive()  # all that is due by now, as the real channel reads all the pipe holds
        while not (self.inbox or self.inbox.flooded):
            if self._due and self._due[0][0] <= deadline:
                self.clock.advance(self._due[0][0] - self.clock())
                self._arrive()
            elif self.exit_code is not None:
                raise BotTerminatedError(f"bot {self.name}: exit code {self.exit_code}")
            else:
                self.clock.advance(deadline - self.clock())
                return None
        return self.inbox.take()

    def close(self) -> None:
        pass

    def _schedule(self, outputs: Iterable[Output]) -> None:
        when = self.clock()
        for output in outputs:
            if isinstance(output, Think):
                when += output.ms / 1000.0
            else:
                heapq.heappush(self._due, (when, next(self._order), output))

    def _arrive(self) -> None:
        """Feed every output due by now to the framer, in order, as one read."""
        while self._due and self._due[0][0] <= self.clock():
            _, _, output = heapq.heappop(self._due)
            if isinstance(output, Exit):
                if self.exit_code is None:
                    self.exit_code = output.code
                    self.framer.at_eof()
            elif self.exit_code is None:
                self.framer.feed(output if isinstance(output, bytes) else encode(output).encode() + b"\n")
        self.framer.read_done()


class ScriptedProcess:
    """The process of a :class:`ScriptedBot`, as a :class:`~arena.bots.session.BotRun`: alive
    until the bot exits (an :class:`Exit` output) or it is killed; what the bot wrote to
    ``stderr`` reaches the handle's log when the handle reads it (:meth:`settle_log`)."""

    cgroup: BotCgroup | None = None

    def __init__(self, bot: ScriptedBot, *, stderr_log: Path, marker: str, can_freeze: bool = True,
                 on_kill: Callable[[], object] | None = None) -> None:
        self.bot = bot
        self.on_kill = on_kill  # called at its first kill_tree
        self.stderr_log = stderr_log
        self.marker = marker
        self.channel: ScriptedChannel | None = None  # set by the launcher
        self.killed = False
        self._can_freeze = can_freeze
        self._frozen = False
        self._logged = 0  # lines of bot.stderr written to the log so far

    @property
    def can_freeze(self) -> bool:
        return self._can_freeze

    @property
    def frozen(self) -> bool:
        return self._frozen

    def poll(self) -> int | None:
        if self.killed:
            return -9
        return self.channel.exit_code if self.channel is not None else None

    def exit_code(self) -> int | None:
        return self.poll()

    def is_alive(self) -> bool:
        return self.poll() is None

    def describe_exit(self) -> str:
        code = self.poll()
        return "killed by signal 9 (SIGKILL)" if code == -9 else f"exit code {code}"

    def cpu_seconds(self) -> float:
        return 0.0

    def cpu_over(self, seconds: float) -> bool:
        return False

    def freeze(self, timeout_s: float = 0.0) -> bool:
        self._frozen = self._can_freeze
        return self._frozen

    def thaw(self) -> None:
        self._frozen = False

    def settle_log(self, timeout_s: float = 0.0) -> None:
        lines = self.bot.stderr[self._logged:]
        if lines:
            self.stderr_log.parent.mkdir(parents=True, exist_ok=True)
            with open(self.stderr_log, "a", encoding="utf-8") as log:
                log.writelines(line + "\n" for line in lines)
            self._logged += len(lines)

    def kill_tree(self, grace_s: float = 0.0) -> None:
        self.settle_log()
        if not self.killed and self.on_kill is not None:
            self.on_kill()
        self.killed = True
        self._frozen = False


class ScriptedLauncher:
    """A launcher (:class:`~arena.bots.session.BotLauncher`) whose bots are ``make_bot()``, one
    new bot at each start after the first, run on ``clock``. It counts ``starts`` and ``kills``
    and keeps the latest ``bot``, ``process`` and ``channel``. ``strict`` and
    ``sandbox_limits`` are what the hints are told of the sandbox; ``can_freeze``: whether the
    handle freezes the bot off its turn (as under strict with a cgroup freezer)."""

    def __init__(self, make_bot: Callable[[], ScriptedBot], clock: FakeClock, *,
                 limits: ResourceLimits | None = None, strict: bool = False,
                 sandbox_limits: SandboxLimits | None = None, can_freeze: bool = True) -> None:
        self.make_bot = make_bot
        self.clock = clock
        self.bot = make_bot()
        self.process: ScriptedProcess | None = None
        self.channel: ScriptedChannel | None = None
        self.starts = 0
        self.kills = 0
        self._limits = limits or ResourceLimits()
        self._strict = strict
        self._sandbox_limits = sandbox_limits or SandboxLimits()
        self._can_freeze = can_freeze

    @property
    def limits(self) -> ResourceLimits:
        return self._limits

    @property
    def strict(self) -> bool:
        return self._strict

    @property
    def sandbox_limits(self) -> SandboxLimits:
        return self._sandbox_limits

    def memory_limit(self) -> str:
        if self._strict:
            return f"{self._sandbox_limits.memory_bytes >> 20} MiB under --sandbox strict"
        return f"{self._limits.address_space_bytes >> 20} MiB of address space under --sandbox none"

    def shows(self, path: str, *, folder: Path) -> bool:
        return not self._strict or path.startswith(str(folder))

    def open_bot(self, argv: Sequence[str], *, folder: Path, name: str, stderr_log: Path,
                 limits: ResourceLimits | None,
                 channel: Callable[[BotProcess], Channel]) -> tuple[ScriptedProcess, ScriptedChannel]:
        """Start the next scripted bot (``argv``, ``folder`` and the real ``channel`` maker are
        not used: its channel is a :class:`ScriptedChannel`)."""
        if self.starts:
            self.bot = self.make_bot()
        self.starts += 1
        process = ScriptedProcess(self.bot, stderr_log=stderr_log, marker=f"scripted-{name}-{self.starts}",
                                  can_freeze=self._can_freeze, on_kill=self._killed)
        process.channel = ScriptedChannel(self.bot, self.clock, name=name, process=process)
        self.process, self.channel = process, process.channel
        return process, process.channel

    def _killed(self) -> None:
        self.kills += 1


def scripted_handle(make_bot: Callable[[], ScriptedBot], clock: FakeClock, *, log_dir: Path,
                    name: str | None = None, start_timeout_s: float = START_TIMEOUT_S,
                    **launcher: Any) -> BotHandle:
    """A real :class:`~arena.bots.session.BotHandle` over a :class:`ScriptedLauncher` of
    ``make_bot`` (``launcher``: its keyword arguments), its log in ``log_dir``; named
    ``name``, else as its bot. The launcher is ``handle.launcher``."""
    scripted = ScriptedLauncher(make_bot, clock, **launcher)
    name = name or scripted.bot.name
    manifest = Manifest(folder=log_dir / f"{name}-folder", name=name, command=("scripted-bot",),
                        protocol="stdio")
    return BotHandle(manifest, log_dir=log_dir, launcher=scripted, label=name,
                     start_timeout_s=start_timeout_s)
