"""`arena sprt`: play seat-swapped game pairs between NEW and OLD until the SPRT decides.

The games go through :func:`arena.tournament.series.run_series` with a stopping rule, as
fastchess runs its SPRT: after each finished game the rule counts it, and once the pair it
belongs to is whole it asks the test whether to stop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from arena.clock import TimeControl
from arena.engine import Ruleset, Termination
from arena.errors import ArenaError
from arena.launch.launcher import Launcher, UnconfinedLauncher
from arena.records import append_record
from arena.referee import GameResult
from arena.tournament.schedule import GameSpec, sprt_schedule
from arena.tournament.series import Executor, InProcess, Lineup, build_lineup, run_series
from arena.tournament.sprt import SPRT, Status
from arena.tournament.workers import WorkerProcesses


@dataclass
class SprtState:
    """Counts so far; ``pairs[k]`` = pairs in which NEW won k of the 2 games."""

    sprt: SPRT
    wins: int = 0
    losses: int = 0
    failures: int = 0
    pairs: list[int] = field(default_factory=lambda: [0, 0, 0])
    # (the bot at fault, the reason) -> the details of those games (what the run prints)
    abnormal: dict[tuple[str, str], list[str]] = field(default_factory=dict)

    @property
    def games(self) -> int:
        return self.wins + self.losses

    @property
    def llr(self) -> float:
        return self.sprt.llr_pairs(*self.pairs)

    @property
    def status(self) -> Status:
        return self.sprt.status_pairs(*self.pairs)


class SprtRule:
    """The stopping rule of a series: counts each game for ``new`` and, when both games of
    a pair are in (in any order), the pair; then stops once the test has decided."""

    def __init__(self, state: SprtState, new: str,
                 on_pair: Callable[[SprtState], None] | None = None) -> None:
        self.state = state
        self.new = new
        self.on_pair = on_pair
        self._halves: dict[int, int] = {}  # pair -> games NEW won of the one in so far

    def __call__(self, spec: GameSpec, result: GameResult) -> bool:
        if result.loser is not None and _never_played(result, result.loser):
            # A bot that cannot be built or started loses every game: any verdict would be
            # about nothing (and "H1 accepted" against a broken OLD would pass a CI gate).
            who = (spec.seat0, spec.seat1)[result.loser]
            detail = result.detail.splitlines()[0] if result.detail else result.termination.value
            raise ArenaError(f"{who} could not start, so the test cannot judge it: {detail} "
                             f"({result.termination.value} before its first move; arena check-bot "
                             f"on it says more)")
        state = self.state
        new_won = (spec.seat0, spec.seat1)[result.winner] == self.new
        state.wins += new_won
        state.losses += not new_won
        state.failures += result.loser is not None
        if result.loser is not None:
            at_fault = (spec.seat0, spec.seat1)[result.loser]
            state.abnormal.setdefault((at_fault, result.termination.value), []).append(result.detail)
        if spec.pair not in self._halves:
            self._halves[spec.pair] = new_won
            return False
        state.pairs[self._halves.pop(spec.pair) + new_won] += 1
        if self.on_pair is not None:
            self.on_pair(state)
        return state.status != "continue"


def _never_played(result: GameResult, seat: int) -> bool:
    """The seat lost without playing a move: its build or start failed, or it crashed first."""
    if result.termination not in (Termination.START_FAILURE, Termination.CRASH):
        return False
    return not any(move["player"] == seat for move in result.record["moves"])


def run_sprt(new: Path, old: Path, sprt: SPRT, *, max_games: int, seed: int, log_dir: Path,
             time_control: TimeControl, ruleset: Ruleset | None = None, out: Path | None = None,
             on_pair: Callable[[SprtState], None] | None = None,
             launcher: Launcher | None = None, concurrency: int = 1) -> SprtState:
    """Play pairs (same circle, seats swapped) until the test accepts H0 or H1 or
    ``max_games`` are played. H1 is "NEW is stronger by elo1". With ``concurrency`` > 1
    the games run in that many worker processes; when the test decides, the games still
    in flight are abandoned (neither counted nor written to ``out``)."""
    lineup = Lineup.of([new, old], time_control=time_control, ruleset=ruleset,
                       launcher=launcher or UnconfinedLauncher())
    state = SprtState(sprt)
    executor: Executor
    if concurrency > 1:
        executor = WorkerProcesses(build_lineup(lineup, log_dir), log_dir, concurrency,
                                   advice="No verdict: sprt does not resume, so running it again starts "
                                          "the test over from the first pair")
    else:
        executor = InProcess(lineup, log_dir)

    def keep(spec: GameSpec, result: GameResult) -> None:
        if out is not None:
            append_record(out, result.record)

    try:
        run_series(sprt_schedule(lineup.labels[0], lineup.labels[1], seed, max_games), executor, keep,
                   stop=SprtRule(state, lineup.labels[0], on_pair))
    finally:
        executor.close()
    return state
