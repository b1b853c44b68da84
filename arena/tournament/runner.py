"""Running a tournament: schedule what is not stored yet, play it concurrently, store each game.

The coordinator (this process) owns the results folder; games run through
:func:`arena.tournament.series.run_series` in worker processes (local:
:mod:`arena.tournament.workers`, or on a Dask cluster: :mod:`arena.tournament.distributed`), each worker
with its own bot processes reused across its games. Finished games stream back and
are stored one transaction each, so killing the coordinator at any moment loses at
most the games in flight, and running the same command again plays exactly the games
that are missing. The games come from the format's scheduler
(:mod:`arena.tournament.scheduler`); on a resume it first hears the stored games again
(:class:`~arena.tournament.scheduler.Replay`), so a Swiss or knockout run pairs its later
rounds from the same results as a run never interrupted.
"""

from __future__ import annotations

import dataclasses
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from arena.bots.manifest import Manifest
from arena.launch.launcher import Launcher
from arena.referee import GameResult
from arena.tournament.config import TournamentConfig
from arena.tournament.ratings import ScheduleOrderTally
from arena.tournament.schedule import GameSpec, schedule_size
from arena.tournament.scheduler import DONE, Ahead, Replay, make_scheduler
from arena.tournament.series import Executor, Lineup, build_lineup, run_series
from arena.tournament.storage import ResultStore
from arena.tournament.workers import MAX_WORKER_DEATHS, WorkerProcesses

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MAX_WORKER_DEATHS", "Progress", "RunSummary", "run_tournament", "tournament_lineup"]


@dataclass
class Progress:
    """What the live display shows; updated by the coordinator after every stored game."""

    total: int
    done: int
    ratings: ScheduleOrderTally  # the games rated so far, in schedule order: the live leader
    played_now: int = 0
    failures: int = 0
    started: float = field(default_factory=time.monotonic)

    @property
    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.played_now / elapsed if elapsed > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        return (self.total - self.done) / self.rate if self.rate > 0 else None

    def leader(self) -> tuple[str, float] | None:
        return self.ratings.leader()


@dataclass
class RunSummary:
    total: int
    already_stored: int
    played: int
    failures: int
    interrupted: bool
    build_errors: dict[str, str]
    seconds: float
    table: pd.DataFrame | None = None  # the final rating table when every game is in; else None


def tournament_lineup(config: TournamentConfig, launcher: Launcher | None = None,
                      hidden_key: bytes | None = None) -> Lineup:
    """The lineup of a tournament: its entrants by name, its time control, rules, the
    launcher (default: the one for the config's sandbox level) and the secret of its hidden
    draws (:meth:`ResultStore.hidden_key`; default: a fresh one)."""
    lineup = Lineup(config.folders, config.names, time_control=config.time_control,
                    ruleset=config.ruleset(), edition=config.edition,
                    launcher=launcher or Launcher.for_level(config.sandbox), pondering=config.pondering)
    return lineup if hidden_key is None else dataclasses.replace(lineup, hidden_key=hidden_key)


def run_tournament(config: TournamentConfig, *, executor: Executor | None = None,
                   launcher: Launcher | None = None,
                   on_progress: Callable[[Progress, GameSpec | None], None] | None = None,
                   on_build_error: Callable[[str, str], None] | None = None) -> RunSummary:
    """Play every scheduled game that is not stored yet; returns when done or interrupted.
    Bots are started by ``launcher`` (default: the one for the config's sandbox level).

    ``executor`` plays the games elsewhere (a Dask cluster); by default local worker
    processes, ``config.concurrency`` of them. Raises SandboxError before anything is
    stored if the config asks for a strict sandbox that this machine cannot provide (a
    Dask executor checks on its workers instead)."""
    started = time.monotonic()
    launcher = launcher or Launcher.for_level(config.sandbox)
    if executor is None:
        launcher.check()
    config.out.mkdir(parents=True, exist_ok=True)
    with ResultStore(config.out, create=True) as store:
        store.save_config(config)
        store.check_versions({e.name: Manifest.load(e.folder).version() for e in config.entrants})
        completed = store.completed_ids()
        stored = store.games_frame()
        # Round robin and gauntlet leave the stored games out at once (lazily: a big run starts at
        # once); Swiss and knockout hear them again, in their own order, to rebuild their state.
        scheduler = Replay(make_scheduler(config.plan, completed),
                           dict(zip(stored["game_id"], map(int, stored["winner"]), strict=True)))
        first = scheduler.next()
        total = max(scheduler.total, schedule_size(config.plan))
        already = min(len(completed), total)
        todo = Ahead(first, scheduler)
        progress = Progress(total=total, done=already, ratings=ScheduleOrderTally(total, config.names))
        _replay_ratings(stored, progress)
        pending = first is not DONE
        log_dir = config.out / "logs"
        hidden_key = store.hidden_key()
        lineup = tournament_lineup(config, launcher, hidden_key)
        if isinstance(getattr(executor, "lineup", None), Lineup):  # made before the store was open (Dask)
            executor.lineup = dataclasses.replace(executor.lineup, hidden_key=hidden_key)  # type: ignore[union-attr]
        # Under strict (and a shipped or submitted bot at any level) built in <out>/builds/<name>/,
        # which the workers then run; a Dask cluster builds on its workers (the coordinator may not be
        # able to sandbox).
        if pending and (executor is None or not launcher.copies_builds):
            lineup = build_lineup(lineup, log_dir, config.out / "builds")
        build_errors = {config.names[i]: error for i, error in lineup.broken.items()}
        for name, error in build_errors.items():
            if on_build_error is not None:
                on_build_error(name, error)
        if on_progress is not None:
            on_progress(progress, None)

        def store_one(spec: GameSpec, result: GameResult) -> None:
            with _ctrl_c_after():  # a game stored is a game counted (the interrupted line said 7 of 8)
                store.store_game(spec, result.record, result.duration_s)
                if scheduler.total > progress.total:  # a knockout's extra pair
                    progress.total = progress.ratings.total = scheduler.total
                _update(progress, spec.index, spec.seat0, spec.seat1, result.record["result"])
                if on_progress is not None:
                    on_progress(progress, spec)

        interrupted = False
        if pending:
            runner = executor or WorkerProcesses(
                lineup, log_dir, config.concurrency,
                advice="The games stored so far are kept: run the same command again to retry it")
            try:
                run_series(todo, runner, store_one)
            except KeyboardInterrupt:
                interrupted = True
            finally:
                runner.close()
    return RunSummary(progress.total, already, progress.played_now, progress.failures,
                      interrupted, build_errors, time.monotonic() - started, progress.ratings.table())


@contextmanager
def _ctrl_c_after() -> Iterator[None]:
    """Hold a Ctrl-C (SIGINT) that arrives in the block until its end, then raise it: storing a
    game and counting it are one step. Only in the main thread (elsewhere, nothing to hold)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
    if held:
        raise KeyboardInterrupt


def _update(progress: Progress, idx: int, seat0: str, seat1: str, result: dict[str, Any]) -> None:
    progress.done += 1
    progress.played_now += 1
    progress.failures += result["reason"] != "normal"
    progress.ratings.add_game(idx, seat0, seat1, result["winner"], result["reason"])


def _replay_ratings(games: pd.DataFrame, progress: Progress) -> None:
    """The games already stored, into the ratings (the live leader after a resume): read
    from the games table, not by parsing every record."""
    for idx, seat0, seat1, winner, reason in zip(games["idx"], games["seat0"], games["seat1"],
                                                 games["winner"], games["reason"], strict=True):
        _update(progress, int(idx), seat0, seat1, {"winner": int(winner), "reason": reason})
    progress.done -= progress.played_now
    progress.played_now = 0
