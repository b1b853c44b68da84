"""`make bench`'s peer section: its pure parts (PGN move counts, ratios, the verdict, the table),
and the section end to end in its --quick smoke mode (no timing asserted)."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from arena.bench_peer import (
    OUR_PAIRS,
    SEQ_HOLE,
    fastchess_argv,
    floor_script,
    pgn_games,
    pgn_plies,
    process_times,
    ratio,
    table,
    verdict,
)

FASTCHESS_PGN = """\
[Event "Fastchess Tournament"]
[Site "?"]
[Round "1"]
[White "a"]
[Black "b"]
[Result "1-0"]
[PlyCount "5"]
[Termination "normal"]

1. e4 {+0.18/2 0.000s} e5 {-0.23/2 0.000s} 2. Qh5 {+0.23/2 0.000s}
Nc6 {-0.26/2 0.000s} 3. Bc4 {0.00/2 0.000s} 1-0

[Event "Fastchess Tournament"]
[Round "2"]
[Result "0-1"]
[Termination "time forfeit"]

1. f3 e5 2. g4 (2. e4 Nf6 (2... d5)) 2... Qh4# 0-1

"""


def test_pgn_plies_come_from_the_ply_count_tag_or_the_moves_counted():
    games = pgn_games(FASTCHESS_PGN)
    assert [g.plies for g in games] == [5, 4]  # the tag; then moves counted, variations and comments out
    assert [g.termination for g in games] == ["normal", "time forfeit"]
    assert pgn_plies(FASTCHESS_PGN) == (9, 2, 1, "time forfeit")


def test_pgn_plies_of_nothing():
    assert pgn_plies("") == (0, 0, 0, "")


def test_pgn_unfinished_game_counts_as_not_ended_normally():
    assert pgn_plies('[Result "*"]\n\n1. e4 e5 *\n') == (2, 1, 1, "unfinished")


def test_ratio_and_verdict():
    assert ratio(30e-6, 60e-6) == 0.5
    assert math.isnan(ratio(-1e-6, 60e-6)) and math.isnan(ratio(30e-6, 0.0))
    assert math.isnan(ratio(math.nan, 1))
    assert verdict([0.56, 0.77, 1.0]) == "ok: no pair above 1x (worst 1.00x)"
    assert verdict([0.56, 1.75, 2.8, math.nan]) == "MISS: 2 of 3 pairs above 1x (worst 2.80x)"
    assert verdict([math.nan]) == "no pair measured"


def test_table_aligns_columns():
    lines = table([("stdio none c1", "12.5", "0.56x"), ("zmq strict c2", "250.0", "2.80x")],
                  ("pair", "us/move", "ratio"))
    assert lines[0].split() == ["pair", "us/move", "ratio"]
    assert len({len(line) for line in lines}) == 1  # right-aligned to one width
    assert lines[2].startswith("  zmq strict c2")


def test_every_pair_of_the_issue_is_measured():
    assert set(OUR_PAIRS) == {(t, s, c) for t in ("stdio", "zmq") for s in ("none", "strict") for c in (1, 2)}


def test_fastchess_runs_stockfish_at_one_node_without_a_clock(tmp_path):
    argv = fastchess_argv("fc", "sf", 10, 2, tmp_path / "g.pgn")
    text = " ".join(argv)
    assert "-each tc=inf nodes=1" in text and "-rounds 5 -games 2" in text and "-concurrency 2" in text
    assert argv.count("cmd=sf") == 2 and f"file={tmp_path / 'g.pgn'}" in argv


def test_process_times_of_an_exited_process_exclude_its_children():
    child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; "
                              "subprocess.run([sys.executable, '-c', 'sum(range(3_000_000))'])"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
    own, children = process_times(child.pid)
    child.wait()
    assert own >= 0 and children > 0


def test_the_c_floor_script_holds_each_games_messages(tmp_path):
    floor_script(tmp_path / "s.txt", 1)
    lines = (tmp_path / "s.txt").read_bytes().splitlines()
    assert [line[:2] for line in lines[:2]] == [b"N0", b"N1"]
    assert [line[:2] for line in lines[-2:]] == [b"O0", b"O1"]
    requests = lines[2:-2]
    assert requests and all(line[:1] == b"R" and b'"seq":%d' % SEQ_HOLE in line for line in requests)


def test_bench_takes_the_peer_options_in_any_order(monkeypatch):
    import arena.bench as bench

    calls: list[tuple[str, dict[str, object]]] = []
    monkeypatch.setattr(bench, "bench_peer", lambda **kw: calls.append(("peer", kw)))
    monkeypatch.setattr(bench, "bench_harness", lambda **kw: calls.append(("harness", kw)))
    bench.main(["harness", "--quick", "peer", "--fastchess", "/opt/fastchess"])
    assert calls == [("harness", {"quick": True}),
                     ("peer", {"quick": True, "fastchess": "/opt/fastchess", "stockfish": None})]


def _quick(tmp_path: Path, *options: str) -> str:
    done = subprocess.run([sys.executable, "-m", "arena.bench", "peer", "--quick", *options], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    out = done.stdout
    for figure in ("stdio none c1", "stdio none c2", "zmq none c1", "zmq none c2", "round 1: ",
                   "greedy stdio none c1", "greedy zmq none c2", "games/s per core"):
        assert figure in out, (figure, out)
    return out


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcc") is None, reason="the null bots and the C floor are built with gcc")
def test_quick_peer_section_without_fastchess_compares_with_the_c_floor(tmp_path):
    out = _quick(tmp_path)
    assert "fastchess not given" in out and "C floor us/move" in out
    assert "round 1: not judged: fastchess absent" in out


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("ARENA_FASTCHESS"), reason="set ARENA_FASTCHESS to a fastchess binary")
def test_quick_peer_section_with_fastchess(tmp_path):
    out = _quick(tmp_path, "--fastchess", os.environ["ARENA_FASTCHESS"])
    assert "fastchess us/move" in out and "C pipe floor, round 1, c1" in out
    assert "round 1: ok" in out or "round 1: MISS" in out or "round 1: no pair measured" in out


def test_the_harness_cpu_is_its_processes_own_never_a_subtraction_of_the_bots():
    from arena.bench_harness import Run

    run = Run(games=2, moves=100, wall_s=1.0, coordinator_cpu_s=0.5, children_cpu_s=0.2, bots_cpu_s=0.4,
              bridges_cpu_s=0.3, coordinator_rss_kb=0, coordinator_median_rss_kb=0, worker_rss_kb=[],
              failures=0, failure_detail="", workers_own_cpu_s=1.0, workers_seen=1)
    # the sandboxed bots and bridges were not reaped through the worker (children < bots + bridges):
    assert run.harness_cpu_s == 0.5 + 1.0 + 0.3
