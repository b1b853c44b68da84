"""The mcts sample bot: plays whole games through the referee within its time, and its
fixed-iteration mode is reproducible."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from arena.bots.manifest import Manifest
from arena.bots.pool import BotPool, sample_bots_dir
from arena.engine import GameState, Termination
from arena.records import replay
from arena.referee import TimeControl
from arena.sdk import Clock
from tests.helpers import arena

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
    assert move.action == "advance" and info == "only move"  # the shortcut: no search at all


def test_no_time_still_gives_a_legal_move(mcts_bot: ModuleType) -> None:
    state = GameState.new(seed=3)
    move, _ = mcts_bot.make_choose()(state, state.legal_moves(), Clock(1, 0, time.monotonic()))
    assert move in state.legal_moves()


# ---------------------------------------------------------------- the time budget
def test_margin_grows_with_the_latency_the_bot_has_seen(mcts_bot: ModuleType) -> None:
    clock = Clock(1000, 10_000, 0.0)
    calm, _ = mcts_bot.think_budget(clock)
    busy, _ = mcts_bot.think_budget(clock, latency_s=0.2)
    stalled, _ = mcts_bot.think_budget(clock, latency_s=2.0)
    assert calm == pytest.approx(0.85)  # 90% of the limit minus 50 ms
    assert busy == pytest.approx(0.5)  # minus twice the latency instead
    assert stalled == pytest.approx(0.4)  # at most half the limit while the bank is healthy ...
    low_bank = Clock(1000, 3000, 0.0)  # ... but all of it once the bank is below the reserve
    assert mcts_bot.think_budget(low_bank, latency_s=2.0, full_bank_ms=10_000)[0] == 0.0


def test_close_calls_never_spend_the_reserve(mcts_bot: ModuleType) -> None:
    assert mcts_bot.think_budget(Clock(1000, 10_000, 0.0), full_bank_ms=10_000)[1] == pytest.approx(0.4)
    assert mcts_bot.think_budget(Clock(200, 10_000, 0.0), full_bank_ms=10_000)[1] == pytest.approx(0.1)
    assert mcts_bot.think_budget(Clock(1000, 5000, 0.0), full_bank_ms=10_000)[1] == 0.0
    assert mcts_bot.think_budget(Clock(1000, 4000, 0.0), full_bank_ms=10_000)[1] == 0.0


def test_latency_is_learnt_from_the_bank(mcts_bot: ModuleType) -> None:
    latency = mcts_bot.Latency()
    first = Clock(1000, 10_000, time.monotonic() - 0.9)  # answered after 0.9 s of its own
    latency.observe(first)
    latency.answered(first)
    second = Clock(1000, 9800, time.monotonic())  # but the referee drew 200 ms: 1.2 s
    latency.observe(second)
    assert latency.estimate_s == pytest.approx(0.3, abs=0.02)
    latency.answered(second)  # answered at once, nothing drawn: the estimate decays
    latency.observe(Clock(1000, 9800, time.monotonic()))
    assert latency.estimate_s == pytest.approx(0.27, abs=0.02)
    latency.answered(Clock(1000, 9800, time.monotonic()))
    latency.observe(Clock(5000, 10_000, time.monotonic()))  # a new game: the bank refilled
    assert latency.estimate_s == pytest.approx(0.243, abs=0.02) and latency.full_bank_ms == 10_000


# ---------------------------------------------------------------- under load
@pytest.mark.slow
def test_no_fault_under_strict_on_a_loaded_machine(tmp_path: Path) -> None:
    """A CPU hog per core beside it, a short time control and the strict sandbox (each bot
    capped at one core): mcts still loses no game by fault."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    try:
        out = tmp_path / "games.jsonl"
        done = arena("play", str(MCTS), str(sample_bots_dir() / "greedy"), "--games", "4",
                     "--time-per-move", "200", "--sandbox", "strict", "--out", str(out),
                     "--logs", str(tmp_path / "logs"), timeout=600)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert done.returncode == 0, done.stderr
    assert "0 ended abnormally" in done.stdout, done.stdout
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["result"]["reason"] for r in records] == ["normal"] * 4
    assert sum(r["players"][r["result"]["winner"]] == "mcts" for r in records) >= 3, done.stdout
