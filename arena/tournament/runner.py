"""Running a tournament: schedule what is not stored yet, play it concurrently, store each game.

The coordinator (this process) owns the results folder; games run in worker processes
(local, or on a Dask cluster: see :mod:`arena.tournament.distributed`), each worker
with its own bot processes reused across its games. Finished games stream back and
are stored one transaction each, so killing the coordinator at any moment loses at
most the games in flight, and running the same command again plays exactly the games
that are missing.
"""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import queue
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import trueskill

from arena.channel.cgroup import remove_stale_groups
from arena.channel.manifest import Manifest
from arena.channel.sandbox import check_strict_available
from arena.errors import ArenaError
from arena.match import BotPool, build_all
from arena.referee import TimeControl
from arena.tournament.config import TournamentConfig
from arena.tournament.ratings import environment
from arena.tournament.schedule import GameSpec, schedule
from arena.tournament.storage import ResultStore

MAX_REVIVALS = 10  # worker deaths tolerated in one run before giving up

Finished = tuple[GameSpec, dict[str, Any], float]  # spec, record, duration in seconds


class Executor(Protocol):
    """Plays games somewhere and yields them as they finish (in any order)."""

    def run(self, specs: list[GameSpec]) -> Iterator[Finished]: ...

    def close(self) -> None: ...


@dataclass
class Progress:
    """What the live display shows; updated by the coordinator after every stored game."""

    total: int
    done: int
    played_now: int = 0
    failures: int = 0
    started: float = field(default_factory=time.monotonic)
    ratings: dict[str, trueskill.Rating] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.played_now / elapsed if elapsed > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        return (self.total - self.done) / self.rate if self.rate > 0 else None

    def leader(self) -> tuple[str, float] | None:
        if not self.ratings:
            return None
        name, rating = max(self.ratings.items(), key=lambda kv: (kv[1].mu - 3 * kv[1].sigma, kv[0]))
        return name, rating.mu - 3 * rating.sigma


@dataclass
class RunSummary:
    total: int
    already_stored: int
    played: int
    failures: int
    interrupted: bool
    build_errors: dict[str, str]
    seconds: float


def play_spec(pool: BotPool, index: dict[str, int], config: TournamentConfig,
              spec: GameSpec) -> Finished:
    """Play one scheduled game with a worker's pool (shared by local and Dask workers)."""
    result = pool.play(index[spec.seat0], index[spec.seat1], seed=spec.seed, edition=config.edition,
                       time_control=TimeControl(**config.time_control), game_id=spec.game_id,
                       ruleset=config.ruleset())
    return spec, result.record, result.duration_s


def run_tournament(config: TournamentConfig, *, executor: Executor | None = None,
                   on_progress: Callable[[Progress, GameSpec | None], None] | None = None,
                   on_build_error: Callable[[str, str], None] | None = None) -> RunSummary:
    """Play every scheduled game that is not stored yet; returns when done or interrupted.

    Raises SandboxError before anything is stored if the config asks for a strict sandbox
    that this machine cannot provide (a Dask executor checks on its workers instead)."""
    started = time.monotonic()
    if executor is None and config.sandbox == "strict":
        check_strict_available()
    config.out.mkdir(parents=True, exist_ok=True)
    with ResultStore(config.out, create=True) as store:
        store.save_config(config)
        completed = store.completed_ids()
        full = schedule(config)
        todo = [spec for spec in full if spec.game_id not in completed]
        env = environment()
        progress = Progress(total=len(full), done=len(full) - len(todo))
        _replay_ratings(store, env, progress)
        log_dir = config.out / "logs"
        manifests = [Manifest.load(folder) for folder in config.folders]
        errors = build_all(manifests, log_dir, list(config.names)) if todo else {}
        build_errors = {config.names[i]: error for i, error in errors.items()}
        for name, error in build_errors.items():
            if on_build_error is not None:
                on_build_error(name, error)
        if on_progress is not None:
            on_progress(progress, None)
        interrupted = False
        if todo:
            runner = executor or LocalExecutor(config, errors, log_dir)
            try:
                for spec, record, duration in runner.run(todo):
                    store.store_game(spec, record, duration)
                    _update(progress, env, record)
                    if on_progress is not None:
                        on_progress(progress, spec)
            except KeyboardInterrupt:
                interrupted = True
            finally:
                runner.close()
    return RunSummary(len(full), len(full) - len(todo), progress.played_now, progress.failures,
                      interrupted, build_errors, time.monotonic() - started)


def _update(progress: Progress, env: trueskill.TrueSkill, record: dict[str, Any]) -> None:
    progress.done += 1
    progress.played_now += 1
    result = record["result"]
    progress.failures += result["reason"] != "normal"
    winner, loser = record["players"][result["winner"]], record["players"][1 - result["winner"]]
    ratings = progress.ratings
    new_winner, new_loser = trueskill.rate_1vs1(ratings.get(winner, env.create_rating()),
                                                ratings.get(loser, env.create_rating()), env=env)
    ratings[winner], ratings[loser] = new_winner, new_loser


def _replay_ratings(store: ResultStore, env: trueskill.TrueSkill, progress: Progress) -> None:
    """Online ratings of the games already stored (for the live leader after a resume)."""
    for record in store.records():
        _update(progress, env, record)
    progress.done -= progress.played_now
    progress.played_now = 0


# ------------------------------------------------------------------ local processes
class LocalExecutor:
    """``concurrency`` worker processes, each playing games with its own bot processes."""

    def __init__(self, config: TournamentConfig, broken: dict[int, str], log_dir: Path) -> None:
        self.config = config
        self.broken = broken
        self.log_dir = log_dir
        self._ctx = mp.get_context("spawn")
        self._workers: dict[int, Any] = {}
        self._tasks: Any = None
        self._results: Any = None
        self._revivals = 0

    def _start_worker(self, worker_id: int) -> None:
        process = self._ctx.Process(
            target=_worker_main, name=f"arena-worker-{worker_id}", daemon=True,
            args=(self.config.to_json(), self.broken, str(self.log_dir / f"worker-{worker_id}"),
                  self._tasks, self._results))
        process.start()
        self._workers[worker_id] = process

    def run(self, specs: list[GameSpec]) -> Iterator[Finished]:
        self._tasks = self._ctx.Queue()
        self._results = self._ctx.Queue()
        count = max(1, min(self.config.concurrency, len(specs)))
        for spec in specs:
            self._tasks.put(spec)
        for _ in range(count):
            self._tasks.put(None)
        for worker_id in range(count):
            self._start_worker(worker_id)
        in_flight: dict[int, GameSpec] = {}
        remaining = len(specs)
        while remaining:
            try:
                kind, worker_id, *payload = self._results.get(timeout=0.5)
            except queue.Empty:
                self._revive_dead_workers(in_flight)
                continue
            if kind == "started":
                in_flight[worker_id] = payload[0]
            elif kind == "done":
                in_flight.pop(worker_id, None)
                remaining -= 1
                yield payload[0], payload[1], payload[2]

    def _revive_dead_workers(self, in_flight: dict[int, GameSpec]) -> None:
        """A worker that died (e.g. killed from outside) loses only its game in flight,
        which is queued again for a fresh worker."""
        for worker_id, process in list(self._workers.items()):
            if process.exitcode is not None and process.exitcode != 0:
                self._revivals += 1
                if self._revivals > MAX_REVIVALS:
                    raise ArenaError(f"worker processes died {self._revivals} times (last exit code "
                                     f"{process.exitcode}); see the logs in {self.log_dir}")
                if self.config.sandbox == "strict":
                    remove_stale_groups()  # thaw and kill its bots (frozen ones ignore SIGKILL)
                lost = in_flight.pop(worker_id, None)
                if lost is not None:
                    self._tasks.put(lost)
                self._tasks.put(None)
                self._start_worker(worker_id)

    def close(self) -> None:
        for process in self._workers.values():
            if process.is_alive():
                process.terminate()  # SIGTERM: the worker kills its bots and exits
        deadline = time.monotonic() + 5
        for process in self._workers.values():
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join(1)
        self._workers.clear()
        if self.config.sandbox == "strict":
            remove_stale_groups()  # of workers that had to be killed before they cleaned up
        for q in (self._tasks, self._results):
            if q is not None:
                q.cancel_join_thread()
                q.close()


def _die_with_parent() -> None:
    """Ask Linux to SIGTERM this worker when the coordinator dies, even by kill -9."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def _worker_main(config_json: dict[str, Any], broken: dict[int, str], log_dir: str,
                 tasks: Any, results: Any) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the coordinator's business
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # unwinds: the pool kills its bots
    _die_with_parent()
    worker_id = int(Path(log_dir).name.rsplit("-", 1)[1])
    config = TournamentConfig.from_json(config_json)
    manifests = [Manifest.load(folder) for folder in config.folders]
    index = {name: i for i, name in enumerate(config.names)}
    with BotPool(manifests, Path(log_dir), labels=list(config.names), do_build=False,
                 broken=broken, sandbox=config.sandbox, pondering=config.pondering) as pool:
        while (spec := tasks.get()) is not None:
            results.put(("started", worker_id, spec))
            results.put(("done", worker_id, *play_spec(pool, index, config, spec)))
        # All played: the coordinator may SIGTERM us now; let the pool close its bots in peace.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
