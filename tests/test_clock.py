"""The time-control rules (arena.clock): limits, the first-move allowance and the bank."""

from __future__ import annotations

import doctest

import pytest

import arena.clock
from arena.clock import GameClock, TimeControl, move_limits_ms
from arena.errors import ConfigError


def test_doctests() -> None:
    assert doctest.testmod(arena.clock).failed == 0


def test_first_move_has_the_larger_limit_for_each_seat() -> None:
    clock = GameClock(TimeControl(per_move_ms=100, bank_ms=1000, first_move_ms=400))
    assert clock.limit_ms(0) == clock.limit_ms(1) == 400
    assert clock.charge(0, 50) == 0
    assert clock.limit_ms(0) == 100 and clock.limit_ms(1) == 400
    assert clock.to_json() == [{"bank_ms": 1000, "per_move_ms": 100}, {"bank_ms": 1000, "per_move_ms": 400}]


def test_overruns_draw_on_the_bank_until_a_timeout() -> None:
    clock = GameClock(TimeControl(per_move_ms=100, bank_ms=250, first_move_ms=100))
    assert clock.charge(1, 200) == 0 and clock.bank_ms(1) == 150
    assert clock.allowance_ms(1) == 250
    assert clock.charge(1, 100) == 0 and clock.bank_ms(1) == 150  # exactly the limit: no draw
    assert clock.charge(1, 300) == 50 and clock.bank_ms(1) == 0
    assert clock.bank_ms(0) == 250  # the other seat's bank is its own


def test_move_limits_follow_each_seats_first_move() -> None:
    tc = TimeControl(per_move_ms=100, bank_ms=0, first_move_ms=500)
    assert move_limits_ms(tc, [0, 1, 0, 0, 1]) == [500, 500, 100, 100, 100]
    assert move_limits_ms(tc, [1, 1, 0]) == [500, 100, 500]


@pytest.mark.parametrize("kwargs", [{"per_move_ms": 0}, {"bank_ms": -1}, {"first_move_ms": 1.5},
                                    {"per_move_ms": True}])
def test_bad_time_controls_are_refused(kwargs: dict) -> None:
    with pytest.raises(ConfigError, match="time control"):
        TimeControl(**kwargs)
