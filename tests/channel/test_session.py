"""BotSession over a scripted channel: the handshake, request numbers, unread accounting."""

from __future__ import annotations

import pytest

from arena.channel.session import BotSession
from arena.engine import GameState
from arena.errors import BotStartError, SchemaViolationError
from arena.protocol import PROTOCOL_VERSION, messages
from arena.testing import FakeClock, Output, ScriptedBot, ScriptedChannel
from tests.scripted import KINDS


def session(bot: ScriptedBot, seq: int = 0) -> BotSession:
    return BotSession(ScriptedChannel(bot, FakeClock(), name="b"), "b", seq=seq)


def test_handshake_answers_welcome_with_the_version_both_speak() -> None:
    bot = ScriptedBot()
    s = session(bot)
    hello = s.handshake(1.0)
    assert hello is not None and s.hello == hello and s.protocol == PROTOCOL_VERSION
    assert [m["type"] for m in bot.received] == ["welcome"]
    assert bot.received[0]["protocol"] == PROTOCOL_VERSION


def test_a_version_the_referee_does_not_speak_is_told_then_a_start_failure() -> None:
    bot = KINDS["wrong_protocol"]()
    s = session(bot)
    with pytest.raises(BotStartError, match="speaks protocol 2; this referee speaks 1"):
        s.handshake(1.0)
    assert [m["type"] for m in bot.received] == ["error"] and not s.hello


def test_silence_is_none_and_a_bad_hello_is_its_schema_error() -> None:
    class Silent(ScriptedBot):
        def hello(self) -> list[Output]:
            return []

    assert session(Silent()).handshake(0.5) is None
    with pytest.raises(SchemaViolationError, match="hello"):
        session(KINDS["bad_hello"]()).handshake(1.0)


def test_request_numbers_continue_from_the_given_seq() -> None:
    s = session(ScriptedBot(), seq=41)
    assert [s.next_seq(), s.next_seq()] == [42, 43]


def test_unread_bytes_count_until_the_bot_answers_the_latest_request() -> None:
    s = session(ScriptedBot())
    s.handshake(1.0)
    assert s.unread > 0  # the welcome
    clocks = [messages.clock(1000, 500), messages.clock(1000, 500)]
    s.send(messages.move_request(s.next_seq(), "g", GameState.new(1), clocks))
    answer = s.receive(1.0)
    assert answer is not None and answer["seq"] == s.seq and s.unread == 0
    s.send(messages.game_over("g", scores=[1, 2], winner=1, reason="normal"))
    assert s.unread > 0
