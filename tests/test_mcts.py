"""The mcts sample bot: plays whole games through the referee within its time, and its
fixed-iteration mode is reproducible."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from arena.channel.manifest import Manifest
from arena.engine import GameState, Termination
from arena.match import BotPool, sample_bots_dir
from arena.records import replay
from arena.referee import TimeControl
from arena.sdk import Clock

MCTS = sample_bots_dir() / "mcts"


@pytest.fixture
def mcts_bot() -> Iterator[ModuleType]:
    """The bot's module, imported from its folder (it imports its helpers by plain name)."""
    names = ("bot", "search", "heuristics")
    saved = {name: sys.modules.pop(name) for name in names if name in sys.modules}
    sys.path.insert(0, str(MCTS))
    try:
        import bot

        yield bot
    finally:
        sys.path.remove(str(MCTS))
        for name in names:
            sys.modules.pop(name, None)
        sys.modules.update(saved)


@pytest.mark.parametrize("edition", ["revised", "original"])
def test_full_game_against_random_within_the_time_control(tmp_path: Path, edition: str) -> None:
    tc = TimeControl(per_move_ms=50, bank_ms=1000, first_move_ms=200)
    manifests = [Manifest.load(MCTS), Manifest.load(sample_bots_dir() / "random")]
    with BotPool(manifests, tmp_path / "logs") as pool:
        assert pool.build_errors == {}
        result = pool.play(0, 1, seed=11, edition=edition, time_control=tc)
    assert result.termination is Termination.NORMAL, result.detail
    final = replay(result.record)[-1]
    assert final.is_terminal() and list(final.scores()) == result.record["result"]["scores"]
    times = [m["time_ms"] for m in result.record["moves"] if m["player"] == 0]
    limits = [tc.first_move_ms] + [tc.per_move_ms] * (len(times) - 1)
    overruns = [max(0.0, t - limit) for t, limit in zip(times, limits, strict=True)]
    assert sum(overruns) < tc.bank_ms, f"drew {sum(overruns):.0f} ms on a {tc.bank_ms} ms bank"
    assert any("iterations" in m.get("info", "") for m in result.record["moves"] if m["player"] == 0)


def test_fixed_iterations_play_the_same_move_every_time(mcts_bot: ModuleType) -> None:
    state = GameState.new(seed=4)
    for move in ([m for m in state.legal_moves() if m.action == "buy"][:1] or state.legal_moves()[:1]):
        state.apply(move)
    choose = mcts_bot.make_choose(iterations=150)
    answers = {choose(state.clone(), state.legal_moves(), Clock(1000, 10_000, time.monotonic()))[0]
               for _ in range(2)}
    assert len(answers) == 1 and answers.pop() in state.legal_moves()


def test_answers_at_once_with_a_single_sensible_move(mcts_bot: ModuleType) -> None:
    state = GameState.new(seed=2)
    state.buttons = [0, 0]  # nothing affordable: advancing is the only move
    choose = mcts_bot.make_choose()  # imports and tables: the set-up, not on the move's clock
    clock = Clock(1000, 10_000, time.monotonic())
    move, info = choose(state, state.legal_moves(), clock)
    assert move.action == "advance" and info == "only move" and clock.elapsed_s() < 0.2


def test_no_time_still_gives_a_legal_move(mcts_bot: ModuleType) -> None:
    state = GameState.new(seed=3)
    move, _ = mcts_bot.make_choose()(state, state.legal_moves(), Clock(1, 0, time.monotonic()))
    assert move in state.legal_moves()
