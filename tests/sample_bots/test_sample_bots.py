"""The sample bots through the real protocol: every pairing plays, greedy beats random."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from arena.bots.manifest import Manifest
from arena.bots.pool import BotPool, sample_bots_dir
from arena.engine import Termination
from arena.launch.process import ResourceLimits
from arena.records import replay
from arena.referee import TimeControl
from tests.helpers import live_bot_processes, write_bot

SAMPLES = ["random", "greedy", "cbot"]


@pytest.mark.parametrize(("a", "b"), list(itertools.combinations(SAMPLES, 2)))
def test_full_game_between_each_pair_of_sample_bots(tmp_path: Path, a: str, b: str) -> None:
    manifests = [Manifest.load(sample_bots_dir() / name) for name in (a, b)]
    with BotPool(manifests, tmp_path / "logs") as pool:
        assert pool.build_errors == {}
        results = [pool.play(0, 1, seed=3), pool.play(1, 0, seed=3)]
    for result in results:
        assert result.termination is Termination.NORMAL, result.detail
        final = replay(result.record)[-1]
        assert final.is_terminal() and list(final.scores()) == result.record["result"]["scores"]
        assert all(m["time_ms"] >= 0 for m in result.record["moves"])
    assert live_bot_processes([m for h in pool.handles for m in h.markers]) == []


def test_c_bot_is_built_by_the_harness(tmp_path: Path) -> None:
    manifests = [Manifest.load(sample_bots_dir() / "cbot"), Manifest.load(sample_bots_dir() / "random")]
    with BotPool(manifests, tmp_path / "logs") as pool:
        built = pool.handles[0].manifest.folder
        # a shipped bot is built in a private copy (the installed package is not ours to write)
        assert built != manifests[0].folder and (built / "bot").exists() and pool.build_errors == {}
        result = pool.play(0, 1, seed=5)
    assert result.termination is Termination.NORMAL
    assert any(m.get("info") == "C bot" for m in result.record["moves"] if m["player"] == 0)


@pytest.mark.slow
def test_greedy_beats_random_in_at_least_90_of_100_games(tmp_path: Path) -> None:
    manifests = [Manifest.load(sample_bots_dir() / name) for name in ("greedy", "random")]
    greedy_wins = 0
    with BotPool(manifests, tmp_path / "logs") as pool:
        for game in range(100):
            seats = (0, 1) if game % 2 == 0 else (1, 0)
            result = pool.play(*seats, seed=1000 + game // 2)
            assert result.termination is Termination.NORMAL, result.detail
            greedy_wins += seats[result.winner] == 0
    assert greedy_wins >= 90, f"greedy won only {greedy_wins} of 100"


SLOW_SETUP_BOT = '''
import time
from arena.sdk import run

def setup():
    time.sleep(4)  # heavy imports and tables, after the hello

    def choose(state, legal_moves, clock):
        return legal_moves[0], f"{clock.elapsed_s():.3f}"
    return choose

run(setup=setup, name="slow-setup")
'''


@pytest.mark.parametrize("protocol", ["zmq", "stdio"])
@pytest.mark.slow
def test_sdk_setup_after_hello_is_on_the_first_moves_clock(tmp_path: Path, protocol: str) -> None:
    """run(setup=...) says hello at once; a request that came during the set-up is timed
    from before it, so the bot's clock never runs behind the referee's."""
    folder = tmp_path / "slow"
    folder.mkdir()
    (folder / "bot.py").write_text(SLOW_SETUP_BOT)
    manifests = [Manifest.load(sample_bots_dir() / "random"),
                 write_bot(folder, "slow-setup", ["python", "bot.py"], protocol=protocol)]
    with BotPool(manifests, tmp_path / "logs") as pool:
        assert pool.start_time(1) < 4  # the hello did not wait for the set-up
        result = pool.play(0, 1, seed=3)
    assert result.termination is Termination.NORMAL, result.detail
    mine = [m for m in result.record["moves"] if m["player"] == 1]
    first = mine[0]
    assert first["time_ms"] > 2000, first  # the request came during the set-up, and waited
    # The bot's clock saw that wait (it may see more: the time since the hello), ...
    assert float(first["info"]) >= first["time_ms"] / 1000.0 - 0.2, first
    late = [m for m in mine[1:] if float(m["info"]) >= 1]
    assert late == [], late  # ... later requests: timed from their arrival


FAILING_BOT = '''
import sys, time
from arena.sdk import run

def choose(state, legal_moves, clock):
    if state.ply >= 4:
        if sys.argv[1] == "raise":
            raise ValueError("no idea what to play")
        end = time.process_time() + 60
        while time.process_time() < end:  # runs into RLIMIT_CPU
            pass
    return legal_moves[0]

run(choose, name="failing")
'''


@pytest.mark.parametrize(("how", "reason"), [("raise", "ValueError: no idea what to play"),
                                              pytest.param("spin", "CPU time limit (RLIMIT_CPU) reached",
                                                           marks=pytest.mark.slow)])  # spins its CPU limit
def test_sdk_bot_that_fails_mid_game_says_why(tmp_path: Path, how: str, reason: str) -> None:
    """An exception in choose, or the soft CPU limit, reaches the referee as the bot's
    error message: a crash under its real cause, not a vanished connection."""
    folder = tmp_path / "failing"
    folder.mkdir()
    (folder / "bot.py").write_text(FAILING_BOT)
    manifests = [write_bot(folder, "failing", ["python", "bot.py", how]),
                 Manifest.load(sample_bots_dir() / "random")]
    with BotPool(manifests, tmp_path / "logs", limits=ResourceLimits(cpu_seconds=3)) as pool:
        result = pool.play(0, 1, seed=3, time_control=TimeControl(per_move_ms=10_000, bank_ms=0))
    assert result.termination is Termination.CRASH and result.loser == 0, result.detail
    assert reason in result.detail, result.detail
