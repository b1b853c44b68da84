"""The executors driven by a scheduler that waits: every result is recorded before the next
game is asked for and before the game is handed on to be stored, a worker the scheduler had
nothing for gets a game once a result frees one, and the in-process and worker-process
executors play the same Swiss tournament."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.bots.pool import sample_bots_dir
from arena.clock import TimeControl
from arena.referee import GameResult
from arena.tournament.schedule import GameSpec
from arena.tournament.scheduler import WAIT, Next, Swiss
from arena.tournament.series import InProcess, Lineup, run_series
from arena.tournament.workers import WorkerProcesses

SAMPLES = sample_bots_dir()
FAST = TimeControl(per_move_ms=2000, bank_ms=10_000, first_move_ms=5000)


class Logged:
    """A Swiss scheduler that logs every call: ("next", what it answered) and ("record", id)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.swiss = Swiss(names, 2, 3)
        self.log: list[tuple[str, str]] = []

    def next(self) -> Next:
        answer = self.swiss.next()
        self.log.append(("next", answer.game_id if isinstance(answer, GameSpec) else answer.value))
        return answer

    def record(self, game: GameSpec, winner: int) -> None:
        self.log.append(("record", game.game_id))
        self.swiss.record(game, winner)

    @property
    def total(self) -> int:
        return self.swiss.total


def play(executor: InProcess | WorkerProcesses, names: tuple[str, ...],
         ahead: bool) -> tuple[Logged, list[str], dict]:
    scheduler = Logged(names)
    order: list[str] = []
    winners: dict[str, int] = {}

    def sink(spec: GameSpec, result: GameResult) -> None:
        log = scheduler.log
        recorded = log.index(("record", spec.game_id))  # recorded before it is handed on
        # ... and, with worker processes, the scheduler was asked for the worker's next game
        # before this one is stored (the worker plays on while the coordinator stores); one
        # process plays one game at a time, so it has nothing to gain from asking early
        assert not ahead or any(kind == "next" for kind, _ in log[recorded + 1:]), log[recorded:]
        order.append(spec.game_id)
        winners[spec.game_id] = result.winner

    try:
        run_series(scheduler, executor, sink)
    finally:
        executor.close()
    return scheduler, order, winners


@pytest.mark.slow
def test_workers_wait_for_a_round_and_play_the_same_swiss_as_one_process(tmp_path: Path) -> None:
    lineup = Lineup.of([SAMPLES / "random", SAMPLES / "greedy", SAMPLES / "random", SAMPLES / "greedy"],
                       time_control=FAST)
    names = lineup.labels
    here, here_order, here_winners = play(InProcess(lineup, tmp_path / "one"), names, False)
    there, there_order, there_winners = play(WorkerProcesses(lineup, tmp_path / "many", concurrency=3), names,
                                                True)
    assert len(here_order) == len(there_order) == 8
    assert here_winners == there_winners and sorted(here_order) == sorted(there_order)
    assert here.swiss.history == there.swiss.history
    # 3 workers, 4 games a round: some worker was told to wait, and still every game was played
    assert ("next", WAIT.value) in there.log
    # no round-2 game was asked for before every round-1 game was recorded
    first_round = [g for g in there_order if g.startswith("r1-")]
    last_record = max(there.log.index(("record", g)) for g in first_round)
    assert all(not (kind == "next" and what.startswith("r2-")) for kind, what in there.log[:last_record])
