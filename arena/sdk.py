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
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from arena.engine import GameState, Move
from arena.engine.components import ruleset_from_wire

PROTOCOL_VERSION = 1


@dataclass(frozen=True)
class Clock:
    """The time this move may take, as the referee counts it."""

    per_move_ms: int  # this move's limit before the bank is touched (first move: larger)
    bank_ms: int  # what is left of the bank
    received: float  # time.monotonic() when the request arrived

    def budget_s(self, bank_share: float = 0.0, margin_s: float = 0.05) -> float:
        """Seconds to think: the per-move limit plus ``bank_share`` of the bank, minus a margin."""
        return max(0.0, (self.per_move_ms + bank_share * self.bank_ms) / 1000.0 - margin_s)

    def elapsed_s(self) -> float:
        return time.monotonic() - self.received


Choose = Callable[[GameState, list[Move], Clock], Any]


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

    def recv(self) -> str | None:
        return self._sock.recv_string()

    def close(self) -> None:
        self._sock.close()


class _StdioLink:
    def send(self, text: str) -> None:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    def recv(self) -> str | None:
        line = sys.stdin.readline()
        return line if line else None

    def close(self) -> None:
        pass


def run(choose: Choose, name: str, version: str = "1.0", *, legal_moves: bool = False,
        on_game_over: Callable[[dict[str, Any]], None] | None = None) -> None:
    """Serve the referee until it says shutdown (or closes the connection).

    ``legal_moves=True`` asks the referee to include the legal moves in each request
    (this SDK computes them itself either way, so Python bots rarely need it).
    """
    endpoint, token = os.environ.get("ARENA_ENDPOINT"), os.environ.get("ARENA_TOKEN")
    link: _ZmqLink | _StdioLink = _ZmqLink(endpoint, token) if endpoint and token else _StdioLink()
    try:
        link.send(json.dumps({"type": "hello", "name": name, "version": version,
                              "protocol": PROTOCOL_VERSION,
                              "capabilities": {"legal_moves": legal_moves}}))
        seat = 0
        rules = None
        while True:
            text = link.recv()
            if text is None:
                return
            received = time.monotonic()
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
                link.send(json.dumps(reply, separators=(",", ":")))
            elif kind == "game_over":
                if on_game_over is not None:
                    on_game_over(message)
            elif kind == "shutdown":
                return
    finally:
        link.close()
