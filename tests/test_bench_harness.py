"""`make bench`'s harness section: it runs end to end and prints every figure (no timing asserted)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from arena.bench_harness import game_overheads

FIGURES = [
    "harness CPU per move, margin (c1, none)", "  coordinator", "  referee workers", "  ZeroMQ bridges",
    "  (bots: excluded)", "floor CPU per move: bare loop", "floor CPU per move: + state", "harness / floor",
    "harness / floor, all on one CPU",
    "moves/s, concurrency 1, none", "moves/s, concurrency 2, none", "scaling 1 -> 2, none", "moves/s",
    "new_game -> first request", "game_over -> next new_game", "coordinator peak RSS",
    "coordinator RSS while playing", "each worker's peak RSS", "coordinator CPU per game",
    "games not ended by the rules",
]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcc") is None, reason="the null stdio bot is built with gcc")
def test_quick_harness_section_prints_every_figure(tmp_path):
    done = subprocess.run([sys.executable, "-m", "arena.bench", "harness", "--quick"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "Traceback" not in done.stderr
    lines = out.splitlines()
    for figure in FIGURES:
        assert any(line.strip().startswith(figure.strip()) for line in lines), (figure, out)
    assert "<= 1.5x: " in out and "<= 1 ms (mean): " in out  # targets with their verdicts
    ratio = next(line for line in lines if line.strip().startswith("harness / floor"))
    assert ratio.count("x") >= 2 and "n/a" not in ratio and "nan" not in ratio
    pinned = next(line for line in lines if line.strip().startswith("harness / floor, all on one CPU"))
    assert "x: " in pinned or "not measured" in pinned, pinned


def test_game_overheads_pair_the_two_bots_games():
    ms = 1_000_000
    events = {  # game 1: new_game at 0 and 1 ms, first request at 3 ms, game over at 50/51 ms
        "a": [("N", 0), ("R", 3 * ms), ("O", 50 * ms), ("N", 52 * ms), ("O", 90 * ms)],
        "b": [("N", 1 * ms), ("O", 51 * ms), ("N", 53 * ms), ("R", 55 * ms), ("O", 91 * ms)],
    }
    to_first, between = game_overheads(events)
    assert to_first == [3.0, 3.0]  # from the first new_game of either bot to the first request
    assert between == [1.0]  # from the last game_over to the next first new_game


def test_game_overheads_give_nothing_for_unmatched_games():
    assert game_overheads({"a": [("N", 0)], "b": []}) == ([], [])
