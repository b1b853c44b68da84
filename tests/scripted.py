"""Scripted bots in-process: the referee's failure cases without starting a process.

Like python-chess's ``MockTransport``: a :class:`ScriptedChannel` stands where the pipe to
a bot process would be, and everything above it is the real code the user meets: the
referee, :class:`~arena.channel.session.BotSession` (handshake, sequence numbers, decode and
schema check), and the same :class:`~arena.channel.transport.Inbox` and
:class:`~arena.channel.transport.LineFramer` a stdio bot's bytes go through (flood,
oversize, not UTF-8, deliver-before-error). Time is a :class:`FakeClock` the referee reads:
a bot "thinks" by moving it, and a wait for a bot that will never answer moves it to the
deadline at once, so a timeout takes microseconds.

A :class:`ScriptedBot` answers each referee message with :class:`Output` items; every
message the referee sends it is decoded with ``sender="referee"`` (schema-checked) and kept
in ``received``. :func:`misbehaving` gives the kinds of ``tests/programs/misbehave.py``.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.channel.session import BotSession
from arena.channel.transport import Inbox, LineFramer
from arena.errors import BotStartError, BotTerminatedError
from arena.protocol import messages
from arena.protocol.codec import decode, encode
from arena.protocol.constants import MAX_MESSAGE_BYTES

TRIGGER_MOVE = 3  # a misbehaving bot plays normally until its third move of a game


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


Output = bytes | dict[str, Any] | Think | Exit  # raw bytes, a message (one line), or an event


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
    time on ``clock`` comes; a ``recv`` with nothing due moves the clock by its timeout."""

    def __init__(self, bot: ScriptedBot, clock: FakeClock, *, name: str = "scripted",
                 max_bytes: int = MAX_MESSAGE_BYTES, max_pending: int = 64) -> None:
        self.bot = bot
        self.clock = clock
        self.name = name
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


class ScriptedPlayer:
    """A :class:`~arena.referee.Player` whose bot is a new ``make_bot()`` at each start."""

    def __init__(self, make_bot: Callable[[], ScriptedBot], clock: FakeClock, *,
                 name: str | None = None, start_timeout_s: float = 20.0) -> None:
        self.make_bot = make_bot
        self.clock = clock
        self.bot = make_bot()
        self.name = name or self.bot.name
        self.broken: str | None = None
        self.stderr_log = Path(f"{self.name}.stderr.log")
        self.start_timeout_s = start_timeout_s
        self.starts = 0
        self.kills = 0
        self.channel: ScriptedChannel | None = None
        self.session: BotSession | None = None
        self.frozen = False

    @property
    def wants_legal_moves(self) -> bool:
        return self.session is not None and self.session.wants_legal_moves

    @property
    def last_decode_ns(self) -> int:
        return self.session.last_decode_ns if self.session is not None else 0

    @property
    def last_message_bytes(self) -> int:
        return self.session.last_bytes if self.session is not None else 0

    def ensure_started(self) -> None:
        if self.broken is not None:
            raise BotStartError(self.broken)
        if self.is_running() and self.session is not None and self.session.hello:
            return
        if self.starts:
            self.bot = self.make_bot()
        self.starts += 1
        self.channel = ScriptedChannel(self.bot, self.clock, name=self.name)
        self.session = BotSession(self.channel, self.name,
                                  seq=self.session.seq if self.session is not None else 0)
        if self.session.handshake(self.start_timeout_s) is None:
            raise BotStartError(f"bot {self.name}: no hello within {self.start_timeout_s:g} s of start")

    def next_seq(self) -> int:
        assert self.session is not None
        return self.session.next_seq()

    def send(self, message: Mapping[str, Any], timeout_s: float | None = None) -> None:
        assert self.session is not None
        self.session.send(message)

    def send_text(self, text: str, timeout_s: float | None = None) -> None:
        assert self.session is not None
        assert not (self.frozen and '"move_request"' in text), "a move request to a frozen bot"
        self.session.send_text(text, timeout_s)

    def receive(self, timeout_s: float) -> dict[str, Any] | None:
        assert self.session is not None
        return self.session.receive(timeout_s)

    freezes = True  # as under strict: the referee freezes the waiting bot once a turn is long

    def freeze(self) -> None:
        self.frozen = True

    def thaw(self) -> None:
        self.frozen = False

    def is_running(self) -> bool:
        return self.channel is not None and self.channel.exit_code is None

    def kill(self) -> None:
        if self.channel is not None:
            self.kills += 1
            self.channel = None

    def hint(self, error: BaseException) -> str:
        return ""

    def log_tail(self) -> list[str]:
        return list(self.bot.stderr)

    def log_full_note(self) -> str:
        return ""


# ------------------------------------------------------------------ misbehaviours


def _on_trigger(action: Callable[[dict[str, Any]], list[Output]]) -> type[ScriptedBot]:
    class Bot(ScriptedBot):
        def answer(self, request: dict[str, Any]) -> list[Output]:
            return action(request) if self.moves == TRIGGER_MOVE else [reply(request)]

    return Bot


def _allowance_ms(request: Mapping[str, Any]) -> float:
    mover = request["state"]["to_move"]
    clock = request["clocks"][mover]
    return float(clock["per_move_ms"] + clock["bank_ms"])


class _Crash(ScriptedBot):
    def answer(self, request: dict[str, Any]) -> list[Output]:
        if self.moves < TRIGGER_MOVE:
            return [reply(request)]
        self.stderr.extend(["Traceback (most recent call last):", "RuntimeError: boom"])
        return [Exit(3)]


class _ExitAtStart(ScriptedBot):
    def hello(self) -> list[Output]:
        self.stderr.append("cannot load the model")
        return [Exit(7)]


def _hello(message: dict[str, Any]) -> type[ScriptedBot]:
    class Bot(ScriptedBot):
        def hello(self) -> list[Output]:
            return [message]

    return Bot


KINDS: dict[str, type[ScriptedBot]] = {
    "normal": ScriptedBot,
    "hang": _on_trigger(lambda r: []),
    "sleep_past_limit": _on_trigger(lambda r: [Think(_allowance_ms(r) + 500), reply(r)]),
    "uses_bank": _on_trigger(lambda r: [Think(r["clocks"][r["state"]["to_move"]]["per_move_ms"] + 300),
                                        reply(r)]),
    "crash": _Crash,
    "last_words": _on_trigger(lambda r: [reply(r), Exit(3)]),  # answers, then dies
    "exit_at_start": _ExitAtStart,
    "garbage": _on_trigger(lambda r: [b"\x00\xffthis is not json at all\n"]),
    "not_json": _on_trigger(lambda r: [b"this is not json at all\n"]),
    "truncated": _on_trigger(lambda r: [b'{"type": "move", "seq": %d, "move": {"act\n' % r["seq"]]),
    "schema": _on_trigger(lambda r: [{"type": "move", "seq": r["seq"],
                                      "move": {"action": "fly", "to": "moon"}}]),
    "illegal": _on_trigger(lambda r: [{"type": "move", "seq": r["seq"], "move": {
        "action": "buy", "patch": r["state"]["circle"][5], "cells": [[0, 0], [0, 1]]}}]),
    "huge": _on_trigger(lambda r: [b'{"type": "move", "seq": 1, "info": "%s"}\n' % (b"x" * MAX_MESSAGE_BYTES)
                                   ]),
    "flood": _on_trigger(lambda r: [reply(r, r["seq"] - 1)] * 5000),  # stale replies, all at once
    "stale_flood": _on_trigger(lambda r: [x for _ in range(101) for x in (Think(1), reply(r, r["seq"] - 1))]),
    # Five stale replies padded to 250 KB: few, but more than a message's worth of them in all.
    "stale_padded": _on_trigger(lambda r: [x for _ in range(5) for x in (
        Think(1), {**reply(r, r["seq"] - 1), "x-pad": "p" * 250_000})]),
    "late_reply": type("LateReply", (ScriptedBot,), {"answer": lambda self, r: (
        [reply(r, r["seq"] - 1), reply(r)] if self.moves > 1 else [reply(r)])}),
    "future_seq": _on_trigger(lambda r: [reply(r, r["seq"] + 5)]),
    "hello_again": _on_trigger(lambda r: [dict(messages.hello("again"))]),
    "gives_up": _on_trigger(lambda r: [dict(messages.error("I resign: out of ideas"))]),
    "bad_hello": _hello({"type": "hello", "name": "x"}),
    "wrong_protocol": _hello(dict(messages.hello("future", "9", protocol=2))),
    "move_first": _hello({"type": "move", "seq": 1, "move": {"action": "advance"}}),
}


def misbehaving(kind: str) -> Callable[[], ScriptedBot]:
    """A factory of scripted bots of ``kind`` (a key of :data:`KINDS`), named ``bad-KIND``."""
    cls = KINDS[kind]

    def make() -> ScriptedBot:
        bot = cls()
        bot.name = f"bad-{kind}"
        return bot

    return make


BotMaker = Callable[[], ScriptedBot]


def scripted_pair(first: BotMaker | str,
                  second: BotMaker | str = "normal") -> tuple[ScriptedPlayer, ScriptedPlayer]:
    """Two players sharing one fake clock (``players[0].clock``): kinds of :data:`KINDS` or
    bot factories; the second is named apart when both have one name."""
    clock = FakeClock()
    makers = [misbehaving(k) if isinstance(k, str) else k for k in (first, second)]
    names = [m().name for m in makers]
    if names[0] == names[1]:
        names[1] += "-2"
    return (ScriptedPlayer(makers[0], clock, name=names[0]),
            ScriptedPlayer(makers[1], clock, name=names[1]))
