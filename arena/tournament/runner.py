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
import dataclasses
import multiprocessing as mp
import pickle
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, Protocol

from arena.bots.manifest import Manifest
from arena.bots.pool import BotPool, build_all
from arena.errors import ArenaError
from arena.launch.launcher import Launcher
from arena.referee import TimeControl
from arena.tournament.config import TournamentConfig
from arena.tournament.ratings import OnlineRatings
from arena.tournament.schedule import GameSpec, iter_schedule, schedule_size
from arena.tournament.storage import ResultStore

MAX_WORKER_DEATHS = 3
"""A game that loses this many worker processes (crash, kill, OOM) in one run stops the run."""

Finished = tuple[GameSpec, dict[str, Any], float]  # spec, record, duration in seconds


class Executor(Protocol):
    """Plays games somewhere and yields them as they finish (in any order)."""

    def run(self, specs: Iterable[GameSpec]) -> Iterator[Finished]: ...

    def close(self) -> None: ...


@dataclass
class Progress:
    """What the live display shows; updated by the coordinator after every stored game."""

    total: int
    done: int
    played_now: int = 0
    failures: int = 0
    started: float = field(default_factory=time.monotonic)
    ratings: OnlineRatings = field(default_factory=OnlineRatings)

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


def play_spec(pool: BotPool, index: dict[str, int], config: TournamentConfig,
              spec: GameSpec) -> Finished:
    """Play one scheduled game with a worker's pool (shared by local and Dask workers)."""
    result = pool.play(index[spec.seat0], index[spec.seat1], seed=spec.seed, edition=config.edition,
                       time_control=TimeControl(**config.time_control), game_id=spec.game_id,
                       ruleset=config.ruleset())
    return spec, result.record, result.duration_s


def run_tournament(config: TournamentConfig, *, executor: Executor | None = None,
                   launcher: Launcher | None = None,
                   on_progress: Callable[[Progress, GameSpec | None], None] | None = None,
                   on_build_error: Callable[[str, str], None] | None = None) -> RunSummary:
    """Play every scheduled game that is not stored yet; returns when done or interrupted.
    Bots are started by ``launcher`` (default: the one for the config's sandbox level).

    Raises SandboxError before anything is stored if the launcher's sandbox cannot be
    provided on this machine (a Dask executor checks on its workers instead)."""
    started = time.monotonic()
    launcher = launcher or Launcher.for_level(config.sandbox)
    if executor is None:
        launcher.check()
    config.out.mkdir(parents=True, exist_ok=True)
    with ResultStore(config.out, create=True) as store:
        store.save_config(config)
        completed = store.completed_ids()
        total = schedule_size(config.plan)
        already = min(len(completed), total)
        todo = iter_schedule(config.plan, completed)  # lazy: a big run starts at once
        progress = Progress(total=total, done=already)
        _replay_ratings(store, progress)
        log_dir = config.out / "logs"
        manifests = [Manifest.load(folder) for folder in config.folders]
        errors: dict[int, str] = {}
        # Under strict, built confined in <out>/builds/<name>/, which the workers then run; a
        # Dask cluster builds on its workers (the coordinator may not be able to sandbox).
        if already < total and (executor is None or not launcher.copies_builds):
            built, errors = build_all(manifests, log_dir, list(config.names), launcher=launcher,
                                      build_dir=config.out / "builds")
            config = dataclasses.replace(config, entrants=tuple(
                dataclasses.replace(e, folder=m.folder) for e, m in zip(config.entrants, built, strict=True)))
        build_errors = {config.names[i]: error for i, error in errors.items()}
        for name, error in build_errors.items():
            if on_build_error is not None:
                on_build_error(name, error)
        if on_progress is not None:
            on_progress(progress, None)
        interrupted = False
        if already < total:
            runner = executor or LocalExecutor(config, errors, log_dir, launcher=launcher)
            try:
                for spec, record, duration in runner.run(todo):
                    store.store_game(spec, record, duration)
                    _update(progress, record)
                    if on_progress is not None:
                        on_progress(progress, spec)
            except KeyboardInterrupt:
                interrupted = True
            finally:
                runner.close()
    return RunSummary(total, already, progress.played_now, progress.failures,
                      interrupted, build_errors, time.monotonic() - started)


def _update(progress: Progress, record: dict[str, Any]) -> None:
    progress.done += 1
    progress.played_now += 1
    progress.failures += record["result"]["reason"] != "normal"
    progress.ratings.add_record(record)


def _replay_ratings(store: ResultStore, progress: Progress) -> None:
    """Online ratings of the games already stored (for the live leader after a resume)."""
    for record in store.records():
        _update(progress, record)
    progress.done -= progress.played_now
    progress.played_now = 0


# ------------------------------------------------------------------ local processes
@dataclass
class _Worker:
    """A worker process, the coordinator's end of its pipe, and the game it is playing."""

    number: int
    process: Any
    conn: Any
    game: GameSpec | None = None


class LocalExecutor:
    """``concurrency`` worker processes, each playing games with its own bot processes.

    The coordinator hands each worker its next game itself, over a pipe of its own, when
    the worker reports the previous one (or ``None`` when nothing is left). So the game
    of a worker that dies, however it dies (a signal, OOM, an abort, an early exit even
    with status 0), is always known: it is put back at the head of the queue and played
    again by a fresh worker with fresh bots. A worker killed mid-message only breaks its
    own pipe. A game that took down MAX_WORKER_DEATHS workers stops the run with an
    ArenaError naming it (the games stored so far are kept; a rerun retries it).
    """

    def __init__(self, config: TournamentConfig, broken: dict[int, str], log_dir: Path, *,
                 launcher: Launcher | None = None) -> None:
        self.config = config
        self.launcher = launcher or Launcher.for_level(config.sandbox)  # pickled to each worker
        self.broken = broken
        self.log_dir = log_dir
        self._ctx = mp.get_context("spawn")
        self._workers: list[_Worker] = []  # every worker started, for close()
        self._started = 0
        self.deaths: Counter[str] = Counter()  # game id -> workers lost while it was being played

    def _start_worker(self, game: GameSpec) -> _Worker:
        number = self._started
        self._started += 1
        parent, child = self._ctx.Pipe()
        process = self._ctx.Process(
            target=_worker_main, name=f"arena-worker-{number}", daemon=True,
            args=(self.config.to_json(), self.broken, str(self.log_dir / f"worker-{number}"), number, child,
                  self.launcher))
        process.start()
        child.close()  # the worker's end: only the worker holds it, so its death closes the pipe
        worker = _Worker(number, process, parent)
        self._workers.append(worker)
        self._hand(worker, game)
        return worker

    @staticmethod
    def _hand(worker: _Worker, game: GameSpec | None) -> None:
        worker.game = game
        try:
            worker.conn.send(game)
        except OSError:  # it died between games: the wait loop sees its pipe close
            pass

    def run(self, specs: Iterable[GameSpec]) -> Iterator[Finished]:
        fresh = iter(specs)

        def next_game() -> GameSpec | None:
            return next(fresh, None)

        busy: list[_Worker] = []
        for _ in range(max(1, self.config.concurrency)):
            game = next_game()
            if game is None:
                break
            busy.append(self._start_worker(game))
        while busy:
            ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in busy], timeout=1.0))
            for worker in [w for w in busy if w.conn in ready or w.process.sentinel in ready]:
                message, why = self._receive(worker)
                game = worker.game
                assert game is not None
                if message is not None:
                    yield message
                    following = next_game()
                    if following is not None and not worker.process.is_alive():
                        busy.remove(worker)  # it died after its game (not that game's fault)
                        self._reap(worker)
                        busy.append(self._start_worker(following))
                        continue
                    self._hand(worker, following)
                    if following is None:
                        busy.remove(worker)
                    continue
                if why is None:  # the pipe is readable but the message is not whole yet
                    continue
                busy.remove(worker)
                self.launcher.remove_stale()  # thaw and kill its bots (frozen ones ignore SIGKILL)
                self.deaths[game.game_id] += 1
                if self.deaths[game.game_id] >= MAX_WORKER_DEATHS:
                    raise ArenaError(
                        f"game {game.game_id} ({game.seat0} vs {game.seat1}) was lost with its worker "
                        f"process {self.deaths[game.game_id]} times (last: {why}); stopping. The games "
                        f"stored so far are kept: see the logs in {self.log_dir}, then run the same "
                        "command again to retry it")
                busy.append(self._start_worker(game))  # before anything else: schedule order

    def _receive(self, worker: _Worker) -> tuple[Finished | None, str | None]:
        """The worker's finished game, or (None, why it is lost), or (None, None): still playing."""
        try:
            if worker.conn.poll():
                message = worker.conn.recv()
                if message[0] == "done":
                    return message[1], None
                why = f"worker failed: {message[1]}"
            elif worker.process.is_alive():
                return None, None
            else:
                why = "worker exited"
        except (EOFError, OSError, pickle.UnpicklingError, ValueError, TypeError, IndexError):
            why = "worker exited"
        self._reap(worker)
        return None, f"{why}, {_exit_status(worker.process.exitcode)}"

    @staticmethod
    def _reap(worker: _Worker) -> None:
        worker.conn.close()
        worker.process.join(5)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join(5)

    def close(self) -> None:
        for worker in self._workers:
            if worker.process.is_alive():
                worker.process.terminate()  # SIGTERM: the worker kills its bots and exits
        deadline = time.monotonic() + 5
        for worker in self._workers:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join(1)
            worker.conn.close()
        self._workers.clear()
        self.launcher.remove_stale()  # of workers that had to be killed before they cleaned up


def _exit_status(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def _die_with_parent() -> None:
    """Ask Linux to SIGTERM this worker when the coordinator dies, even by kill -9."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def _worker_main(config_json: dict[str, Any], broken: dict[int, str], log_dir: str, number: int,
                 conn: Any, launcher: Launcher) -> None:
    """A worker: play each game the coordinator sends until it sends None."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the coordinator's business
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # unwinds: the pool kills its bots
    _die_with_parent()
    config = TournamentConfig.from_json(config_json)
    manifests = [Manifest.load(folder) for folder in config.folders]
    index = {name: i for i, name in enumerate(config.names)}
    try:
        with BotPool(manifests, Path(log_dir), labels=list(config.names), do_build=False,
                     broken=broken, launcher=launcher, pondering=config.pondering) as pool:
            while (spec := conn.recv()) is not None:
                conn.send(("done", play_spec(pool, index, config, spec)))
            # All played: the coordinator may SIGTERM us now; let the pool close its bots in peace.
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
    except (EOFError, BrokenPipeError):  # the coordinator is gone
        sys.exit(1)
    except Exception as exc:  # a bug: tell the coordinator in one line rather than print a traceback
        try:
            conn.send(("error", f"{type(exc).__name__}: {exc}"[:500]))
        except OSError:
            pass
        sys.exit(1)
