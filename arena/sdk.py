"""The Python SDK for bot authors: a bot is a function from a state to a move, plus run().

```python
import random
from arena.sdk import run

def choose(state, legal_moves, clock):
    return random.choice(legal_moves)

run(choose, name="random", version="1.0")
```

``state`` is an :class:`arena.engine.GameState` (clone it and simulate as much as you
like), ``legal_moves`` a list of :class:`arena.engine.Move`, ``clock`` a
:class:`Clock` telling how much time this move may take. Return a Move (or its JSON
form); return ``(move, "info text")`` to attach an info string. ``run()`` speaks the
protocol over ZeroMQ when the referee set ``ARENA_ENDPOINT`` and ``ARENA_TOKEN``, and
JSON lines on stdin/stdout otherwise (``protocol = "stdio"`` in bot.toml). See
protocol/PROTOCOL.md and protocol/SDK.md.

A bot with slow imports or precomputation passes ``setup`` instead of ``choose``:
``run(setup=make_choose, name=...)`` says hello first (the referee waits only a few
seconds for it) and calls ``setup()`` to get the choose function afterwards, when any
time it takes is counted on the first move's clock (which is larger). This module
imports the engine (and numpy) only after the hello for the same reason.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from arena.protocol.constants import PROTOCOL_VERSION  # light: nothing else is loaded

if TYPE_CHECKING:  # imported in run(), after the hello: numpy takes seconds on a busy machine
    from arena.engine import GameState, Move


@dataclass(frozen=True)
class Clock:
    """The time this move may take, as the referee counts it."""

    per_move_ms: int  # this move's limit before the bank is touched (first move: larger)
    bank_ms: int  # what is left of the bank
    received: float  # time.monotonic() when the request arrived (see run(): never later)

    def budget_s(self, bank_share: float = 0.0, margin_s: float = 0.05) -> float:
        """Seconds to think: the per-move limit plus ``bank_share`` of the bank, minus a margin."""
        return max(0.0, (self.per_move_ms + bank_share * self.bank_ms) / 1000.0 - margin_s)

    def elapsed_s(self) -> float:
        return time.monotonic() - self.received


Choose = Callable[["GameState", "list[Move]", Clock], Any]


class _ZmqLink:
    def __init__(self, endpoint: str, token: str) -> None:
        import zmq

        self._ctx: zmq.Context = zmq.Context.instance()
        self._sock = self._ctx.socket(zmq.DEALER)
        self._sock.setsockopt(zmq.IDENTITY, token.encode())
        self._sock.setsockopt(zmq.LINGER, 1000)
        self._sock.connect(endpoint)

    def send(self, text: str) -> None:
        self._sock.send_string(text)

    def pending(self) -> bool:
        """Is a message already waiting (so it arrived while the bot was busy)?"""
        return bool(self._sock.poll(0))

    def recv(self) -> str | None:
        return self._sock.recv_string()

    def close(self) -> None:
        self._sock.close()


class _StdioLink:
    """JSON lines on stdin/stdout; stdin is read unbuffered by Python so that
    ``pending()`` can see whether a line is already waiting."""

    def __init__(self) -> None:
        self._buffer = b""
        self._eof = False

    def send(self, text: str) -> None:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    def pending(self) -> bool:
        if b"\n" in self._buffer or self._eof:
            return True
        return bool(select.select([sys.stdin.fileno()], [], [], 0)[0])

    def recv(self) -> str | None:
        while b"\n" not in self._buffer:
            chunk = b"" if self._eof else os.read(sys.stdin.fileno(), 1 << 16)
            if not chunk:
                self._eof = True
                text, self._buffer = self._buffer, b""
                return text.decode() if text.strip() else None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode()

    def close(self) -> None:
        pass


def run(choose: Choose | None = None, name: str = "bot", version: str = "1.0", *,
        legal_moves: bool = False, on_game_over: Callable[[dict[str, Any]], None] | None = None,
        setup: Callable[[], Choose] | None = None) -> None:
    """Serve the referee until it says shutdown (or closes the connection).

    ``legal_moves=True`` asks the referee to include the legal moves in each request
    (this SDK computes them itself either way, so Python bots rarely need it).
    ``setup``, instead of ``choose``: called once after the hello, returns the choose
    function (heavy imports and precomputation go there, see the module docs).

    ``Clock.received`` is when the request arrived as far as the bot can tell: if it was
    already queued when the bot came to read it (the bot was busy, in ``setup`` say), the
    moment the bot sent its last message (the referee answers a message, it does not send
    ahead), or the last time the queue was seen empty if later: the bot's clock never runs
    behind the referee's.
    """
    if (choose is None) == (setup is None):
        raise TypeError("run() needs exactly one of choose and setup")
    if hasattr(signal, "SIGXCPU"):  # the soft CPU limit: say so, rather than vanish
        signal.signal(signal.SIGXCPU, _cpu_limit)
    endpoint, token = os.environ.get("ARENA_ENDPOINT"), os.environ.get("ARENA_TOKEN")
    link: _ZmqLink | _StdioLink = _ZmqLink(endpoint, token) if endpoint and token else _StdioLink()
    try:
        earliest = time.monotonic()  # nothing still unread can have arrived before this
        link.send(json.dumps({"type": "hello", "name": name, "version": version,
                              "protocol": PROTOCOL_VERSION,
                              "capabilities": {"legal_moves": legal_moves}}))
        from arena.engine import GameState, Move
        from arena.engine.components import ruleset_from_wire

        if setup is not None:
            choose = setup()
        assert choose is not None
        seat = 0
        rules = None
        while True:
            waiting = not link.pending()
            text = link.recv()
            if text is None:
                return
            if waiting:  # it arrived while we waited: now is when
                earliest = time.monotonic()
            received = earliest  # else it came while we were busy, at the earliest then
            message = json.loads(text)
            kind = message.get("type")
            if kind == "new_game":
                seat = message["seat"]
                rules = ruleset_from_wire(message["ruleset"], message["edition"], message["components"])
            elif kind == "move_request":
                state = GameState.from_json(message["state"], ruleset=rules)
                clocks = message["clocks"][seat]
                clock = Clock(clocks["per_move_ms"], clocks["bank_ms"], received)
                answer = choose(state, state.legal_moves(), clock)
                info = None
                if isinstance(answer, tuple) and not isinstance(answer, Move):
                    answer, info = answer
                move_json = answer.to_json(state.ruleset.cols) if isinstance(answer, Move) else answer
                reply: dict[str, Any] = {"type": "move", "seq": message["seq"], "move": move_json}
                if info:
                    reply["info"] = str(info)[:1000]
                text = json.dumps(reply, separators=(",", ":"))
                earliest = time.monotonic()  # the next request answers this reply
                link.send(text)
            elif kind == "game_over":
                if on_game_over is not None:
                    on_game_over(message)
            elif kind == "shutdown":
                return
    except BaseException as exc:
        # Say why before the connection closes, so that the game is lost as a crash with
        # this reason (and not as whatever the referee makes of a vanished connection).
        if not isinstance(exc, KeyboardInterrupt):
            try:
                link.send(json.dumps({"type": "error", "message": _describe(exc)}))
            except Exception:  # noqa: BLE001 - the original error is the one to raise
                pass
        raise
    finally:
        link.close()


class CpuLimitReached(Exception):
    """RLIMIT_CPU's soft limit (SIGXCPU): the hard one kills the process a second later."""


def _cpu_limit(signum: int, frame: object) -> None:
    raise CpuLimitReached("CPU time limit (RLIMIT_CPU) reached")


def _describe(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text[:1000]
