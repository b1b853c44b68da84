"""Scripted misbehaving bots for the referee's failure cases, over :mod:`arena.testing`.

:data:`KINDS` holds the kinds of ``tests/programs/misbehave.py`` as :class:`ScriptedBot`
classes; :func:`scripted_pair` gives two real :class:`~arena.bots.session.BotHandle` over
:class:`~arena.testing.ScriptedLauncher` on one fake clock (``handle.launcher.clock``; the
launcher keeps the latest ``bot``, its ``starts`` and ``kills``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from arena.bots.session import BotHandle
from arena.protocol import messages
from arena.protocol.constants import MAX_MESSAGE_BYTES
from arena.testing import Exit, FakeClock, Output, ScriptedBot, Think, reply, scripted_handle

TRIGGER_MOVE = 3  # a misbehaving bot plays normally until its third move of a game
_LOGS = tempfile.TemporaryDirectory(prefix="arena-scripted-")  # the handles' logs, removed at exit


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


def scripted_pair(first: BotMaker | str, second: BotMaker | str = "normal", *,
                  log_dir: Path | None = None) -> tuple[BotHandle, BotHandle]:
    """Two real bot handles over scripted bots sharing one fake clock
    (``players[0].launcher.clock``): kinds of :data:`KINDS` or bot factories; the second is
    named apart when both have one name. Their logs go to ``log_dir`` (else a new folder)."""
    clock = FakeClock()
    makers = [misbehaving(k) if isinstance(k, str) else k for k in (first, second)]
    names = [m().name for m in makers]
    if names[0] == names[1]:
        names[1] += "-2"
    logs = log_dir or Path(tempfile.mkdtemp(dir=_LOGS.name))
    return (scripted_handle(makers[0], clock, log_dir=logs, name=names[0]),
            scripted_handle(makers[1], clock, log_dir=logs, name=names[1]))
