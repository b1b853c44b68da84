"""The series runner: schedules, stopping rules, and the executors agreeing game for game."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.bots.pool import sample_bots_dir
from arena.clock import TimeControl
from arena.engine import Termination
from arena.referee import GameResult
from arena.tournament.schedule import GameSpec, gauntlet_schedule, match_schedule, pair_seed, sprt_schedule
from arena.tournament.sequential import SprtRule, SprtState
from arena.tournament.series import InProcess, Lineup, build_lineup, run_series
from arena.tournament.sprt import SPRT
from arena.tournament.workers import WorkerProcesses

SAMPLES = sample_bots_dir()
FAST = TimeControl(per_move_ms=2000, bank_ms=10_000, first_move_ms=5000)


def test_match_schedule_swaps_seats_on_each_seed() -> None:
    games = list(match_schedule("a", "b", 5, 10, "play"))
    assert [(s.game_id, s.seat0, s.seat1, s.seed, s.pair) for s in games] == [
        ("play-1", "a", "b", 10, 0), ("play-2", "b", "a", 10, 0), ("play-3", "a", "b", 11, 1),
        ("play-4", "b", "a", 11, 1), ("play-5", "a", "b", 12, 2)]


def test_sprt_schedule_plays_whole_pairs_on_hashed_seeds() -> None:
    games = list(sprt_schedule("new", "old", 7, max_games=5))
    assert [s.game_id for s in games] == ["sprt-0-0", "sprt-0-1", "sprt-1-0", "sprt-1-1"]
    assert [(s.seat0, s.seat1) for s in games[:2]] == [("new", "old"), ("old", "new")]
    assert [s.seed for s in games] == [pair_seed(7, ("new", "old"), k) for k in (0, 0, 1, 1)]


def test_gauntlet_schedule_alternates_opponents_pair_by_pair() -> None:
    games = list(gauntlet_schedule("me", ["x", "y"], 4, 1))
    assert [(s.seat0, s.seat1, s.seed) for s in games] == [
        ("me", "x", 1), ("x", "me", 1), ("me", "y", 1), ("y", "me", 1),
        ("me", "x", 2), ("x", "me", 2), ("me", "y", 2), ("y", "me", 2)]
    assert [s.pair for s in games] == [0, 0, 1, 1, 2, 2, 3, 3]


def _result(winner: int) -> GameResult:
    return GameResult({"result": {"scores": [1, 0], "winner": winner}}, Termination.NORMAL, winner, None, "")


def test_the_sprt_rule_counts_whole_pairs_whatever_order_their_games_finish_in() -> None:
    state = SprtState(SPRT(0, 20, 0.05, 0.05))
    pairs: list[list[int]] = []
    rule = SprtRule(state, "new", on_pair=lambda s: pairs.append(list(s.pairs)))
    a0, a1, b0, b1 = sprt_schedule("new", "old", 1, 4)
    assert rule(a0, _result(0)) is False  # NEW won in seat 0; its pair is not whole yet
    assert rule(b1, _result(0)) is False  # the other pair's second game first: old won
    assert pairs == [] and state.wins == 1 and state.losses == 1
    assert rule(a1, _result(1)) is False  # NEW won in seat 1: pair 0 is 2 of 2
    assert rule(b0, _result(1)) is False  # old won in seat 1: pair 1 is 0 of 2
    assert pairs == [[0, 0, 1], [1, 0, 1]]


def test_the_sprt_rule_stops_the_series_once_the_test_decides() -> None:
    state = SprtState(SPRT(0, 400, 0.2, 0.2))  # wide bounds: decided after a few won pairs
    rule = SprtRule(state, "new")
    games = sprt_schedule("new", "old", 1, 1000)
    stopped_after = None
    for n, spec in enumerate(games, 1):
        if rule(spec, _result(0 if spec.seat0 == "new" else 1)):
            stopped_after = n
            break
    assert stopped_after is not None and stopped_after % 2 == 0 and state.status == "accept H1"


def test_a_stopping_rule_ends_the_series_and_the_executor_keeps_its_bots(tmp_path: Path) -> None:
    lineup = Lineup.of([SAMPLES / "random", SAMPLES / "greedy"], time_control=FAST)
    seen: list[str] = []
    with InProcess(lineup, tmp_path / "logs") as executor:
        stopped = run_series(match_schedule(*lineup.labels, 6, 3, "t"), executor,
                             lambda spec, result: seen.append(spec.game_id),
                             stop=lambda spec, result: spec.index == 2)
        assert stopped and seen == ["t-1", "t-2", "t-3"]
        assert executor.pool.handles[0].hello is not None  # still open for the caller
        assert not run_series(match_schedule(*lineup.labels, 1, 3, "again"), executor, lambda *_: None)


@pytest.mark.slow
def test_worker_processes_play_the_same_games_as_one_process(tmp_path: Path) -> None:
    lineup = build_lineup(Lineup.of([SAMPLES / "random", SAMPLES / "greedy", SAMPLES / "cbot"],
                                    time_control=FAST), tmp_path / "build-logs")
    assert not lineup.broken
    games = list(gauntlet_schedule("random", ["greedy", "cbot"], 2, 5))

    def moves(executor: InProcess | WorkerProcesses) -> dict[str, list[dict]]:
        found: dict[str, list[dict]] = {}

        def keep(spec: GameSpec, result: GameResult) -> None:
            found[f"{spec.index}-{spec.game_id}"] = [
                {k: v for k, v in m.items() if k not in ("time_ms", "info")} for m in result.record["moves"]]

        try:
            run_series(games, executor, keep)
        finally:
            executor.close()
        return found

    here = moves(InProcess(lineup, tmp_path / "one"))
    workers = moves(WorkerProcesses(lineup, tmp_path / "many", concurrency=2))
    assert len(here) == len(games) and here == workers


@pytest.mark.slow
def test_sprt_on_worker_processes_counts_whole_pairs_and_writes_what_it_counted(tmp_path: Path) -> None:
    from arena.records import read_records
    from arena.tournament.sequential import run_sprt

    out = tmp_path / "sprt.jsonl"
    pairs: list[int] = []
    state = run_sprt(SAMPLES / "greedy", SAMPLES / "random", SPRT(0, 400, 0.2, 0.2), max_games=40, seed=2,
                     log_dir=tmp_path / "logs", time_control=FAST, out=out, concurrency=2,
                     on_pair=lambda s: pairs.append(sum(s.pairs)))
    # greedy nearly always beats random: decided within a few pairs (unless a loaded machine
    # makes games fail), and then the series stops early
    assert state.status != "continue" or state.failures, (state, pairs)
    assert state.status == "continue" or state.games < 40
    assert pairs == list(range(1, sum(state.pairs) + 1))
    assert state.games - 2 * sum(state.pairs) in (0, 1)  # at most one game of an unfinished pair
    records = [record for _, record in read_records(out)]
    assert len(records) == state.games  # every game counted is written; those in flight are dropped
    assert {r["game_id"] for r in records} <= {s.game_id for s in sprt_schedule("greedy", "random", 2, 40)}


@pytest.mark.slow
def test_bench_bots_plays_its_gauntlet_on_worker_processes(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from arena import bench_bots
    from arena.records import read_records

    out = tmp_path / "bench.jsonl"
    assert bench_bots.main(["--bot", "greedy", "--opponents", "random", "cbot", "--games", "2",
                            "--per-move-ms", "2000", "--concurrency", "2", "--seed", "3",
                            "--out", str(out), "--logs", str(tmp_path / "logs")]) == 0
    printed = capsys.readouterr().out
    assert printed.count("] vs ") == 4 and "[4/4]" in printed
    table = printed[printed.index("| opponent"):].splitlines()
    assert [row.split("|")[1].strip() for row in table[2:4]] == ["random", "cbot"]
    assert [row.split("|")[2].strip() for row in table[2:4]] == ["2", "2"]
    records = [record for _, record in read_records(out)]
    assert sorted((r["players"][0], r["players"][1], r["seed"]) for r in records) == sorted(
        [("greedy", "random", 3), ("random", "greedy", 3), ("greedy", "cbot", 3), ("cbot", "greedy", 3)])
