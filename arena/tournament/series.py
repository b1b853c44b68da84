"""One runner for every series of games: a lineup of bots, a schedule, an executor, a sink.

`arena play`, check-bot, `arena sprt`, bench-bots and tournaments (local and on Dask) all
play their games through :func:`run_series`:

- a :class:`Lineup` says who plays and how every game is played (bot folders, labels,
  time control, rules, launcher); it is a picklable value sent to every worker;
- a *schedule* (``match_schedule``, ``sprt_schedule``, ``gauntlet_schedule`` in
  :mod:`arena.tournament.schedule`) is a lazy sequence of :class:`GameSpec`: seats by
  label, seed, id; a tournament gives a *scheduler* instead
  (:mod:`arena.tournament.scheduler`), which hears every result before it is asked for
  the next game and may answer "nothing yet" (a Swiss round waiting for its last games);
- an :class:`Executor` plays the schedule's games somewhere and yields each as it finishes:
  :class:`InProcess` (one pool of bots in this process, games in schedule order),
  :class:`arena.tournament.workers.WorkerProcesses` (local worker processes, with
  worker-death handling) or :class:`arena.tournament.distributed.DaskExecutor`;
- the caller's sink gets every finished game (prints it, appends it, stores it), and an
  optional stopping rule is asked after each one whether to stop (SPRT, as fastchess does).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from arena.bots.manifest import Manifest
from arena.bots.pool import BotPool, build_all, unique_labels
from arena.clock import DEFAULT_TIME_CONTROL, TimeControl
from arena.engine import Ruleset
from arena.errors import ArenaError
from arena.launch.launcher import Launcher, UnconfinedLauncher
from arena.referee import GameResult
from arena.tournament.schedule import HIDDEN_KEY_BYTES, GameSpec, hidden_seed
from arena.tournament.scheduler import DONE, Scheduler, as_scheduler

Played = tuple[GameSpec, GameResult]
"""A finished game: its spec and the referee's result (record, termination, duration...)."""


def new_hidden_key() -> bytes:
    """A fresh secret for a run's hidden draws (:func:`arena.tournament.schedule.hidden_seed`)."""
    return os.urandom(HIDDEN_KEY_BYTES)


@dataclass(frozen=True)
class Lineup:
    """The bots of a series and how each game is played; picklable (sent to every worker).

    ``launcher`` starts every bot and build (built once from the sandbox level, picklable).
    ``broken`` maps an entrant's index to its build error: its games are forfeits.
    ``hidden_key`` is the run's secret for what no bot may know (a fresh one unless given: a
    tournament keeps its own in its results folder); the records keep each game's hidden
    seed, which is all a replay needs."""

    folders: tuple[Path, ...]
    labels: tuple[str, ...]
    time_control: TimeControl = DEFAULT_TIME_CONTROL
    ruleset: Ruleset | None = None  # None: Patchwork of ``edition``
    edition: str = "revised"
    launcher: Launcher = field(default_factory=UnconfinedLauncher)
    pondering: bool = False
    broken: Mapping[int, str] = field(default_factory=dict)
    # The manifests as read once, before any build: a build may rewrite its bot.toml, and a
    # worker must not read it again (one bad file would take down every worker).
    read: tuple[Manifest, ...] = ()
    hidden_key: bytes = field(default_factory=new_hidden_key, repr=False)

    @classmethod
    def of(cls, folders: Iterable[Path], **options: Any) -> Lineup:
        """A lineup of bot folders labelled by their manifests' names (a second 'random'
        becomes 'random-2'). Raises ManifestError for a folder without a valid bot.toml."""
        manifests = [Manifest.load(folder) for folder in folders]
        return cls(tuple(m.folder for m in manifests), tuple(unique_labels([m.name for m in manifests])),
                   read=tuple(manifests), **options)

    def manifests(self) -> list[Manifest]:
        """The bots' manifests, in their current folders (built copies, a Dask worker's
        unpacked ones); read from the folders only when the lineup holds none yet."""
        if not self.read:
            return [Manifest.load(folder) for folder in self.folders]
        return [dataclasses.replace(manifest, folder=folder)
                for manifest, folder in zip(self.read, self.folders, strict=True)]

    def seats(self, spec: GameSpec) -> tuple[int, int]:
        """The entrant indexes of a game's seat 0 and seat 1."""
        return self.labels.index(spec.seat0), self.labels.index(spec.seat1)

    def pool(self, log_dir: Path, *, do_build: bool = False, build_dir: Path | None = None) -> BotPool:
        """A pool of this lineup's bots, started lazily (a worker's, or :class:`InProcess`'s)."""
        return BotPool(self.manifests(), log_dir, labels=list(self.labels), do_build=do_build,
                       broken=dict(self.broken), launcher=self.launcher, pondering=self.pondering,
                       build_dir=build_dir)

    def play(self, pool: BotPool, spec: GameSpec, on_move: Callable[..., None] | None = None) -> GameResult:
        """Play one game of the schedule with ``pool`` (a pool of this lineup)."""
        return pool.play(*self.seats(spec), seed=spec.seed, edition=self.edition, ruleset=self.ruleset,
                         time_control=self.time_control, game_id=spec.game_id, on_move=on_move,
                         hidden_seed=hidden_seed(self.hidden_key, spec))


def build_lineup(lineup: Lineup, log_dir: Path, build_dir: Path | None = None) -> Lineup:
    """Build every bot once, before workers start: the lineup to run, with the built copies
    (under strict, and for shipped or submitted bots: in ``build_dir/<label>``, by default
    ``log_dir/builds/<label>``) and the build errors as ``broken``."""
    manifests = lineup.manifests()  # read now, before any build can rewrite them
    built, errors = build_all(manifests, log_dir, list(lineup.labels), launcher=lineup.launcher,
                              build_dir=build_dir or log_dir / "builds")
    return dataclasses.replace(lineup, folders=tuple(m.folder for m in built), read=tuple(manifests),
                               broken={**lineup.broken, **errors})


Source = Scheduler | Iterable[GameSpec]
"""What an executor plays: a scheduler (:mod:`arena.tournament.scheduler`), or a plain
sequence of games (a scheduler that never waits)."""

STUCK = ("the scheduler waits for results, but no game is in flight (a bug in the format's "
         "scheduler)")


class Executor(Protocol):
    """Plays the games a scheduler gives and yields them as they finish (in any order).

    Each finished game is recorded with the scheduler (``record``) before its next game is
    asked for, and before it is yielded: a worker gets its next game without waiting for
    the caller to store the last one. A worker the scheduler has nothing for (``WAIT``)
    waits until another result is recorded."""

    def run(self, specs: Source) -> Iterator[Played]: ...

    def close(self) -> None: ...


class InProcess:
    """Games one at a time, in schedule order, with one pool of bots in this process (built on
    creation). ``on_move(spec, state, entry)`` is called after every move (`play --show`);
    :attr:`pool` stays open until :meth:`close` (check-bot reads its bots' handshake)."""

    def __init__(self, lineup: Lineup, log_dir: Path,
                 on_move: Callable[[GameSpec, Any, dict[str, Any]], None] | None = None) -> None:
        self.lineup = lineup
        self.pool = lineup.pool(log_dir, do_build=True)
        self.on_move = on_move

    def run(self, specs: Source) -> Iterator[Played]:
        scheduler = as_scheduler(specs)
        while (spec := scheduler.next()) is not DONE:
            if not isinstance(spec, GameSpec):  # WAIT with nothing in flight
                raise ArenaError(STUCK)
            hook = functools.partial(self.on_move, spec) if self.on_move is not None else None
            result = self.lineup.play(self.pool, spec, hook)
            scheduler.record(spec, result.winner)
            yield spec, result

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> InProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


StopRule = Callable[[GameSpec, GameResult], bool]
"""Asked after each finished game (after the sink): True stops the series."""


def run_series(schedule: Source, executor: Executor,
               on_result: Callable[[GameSpec, GameResult], None], *, stop: StopRule | None = None) -> bool:
    """Play ``schedule`` (games, or a scheduler) on ``executor``, handing each finished game
    to ``on_result``; returns True if ``stop`` ended the series early (the games in flight are
    abandoned). The caller closes the executor (its bots may still be needed, as check-bot's are)."""
    games = executor.run(schedule)
    try:
        for spec, result in games:
            on_result(spec, result)
            if stop is not None and stop(spec, result):
                return True
    finally:
        close = getattr(games, "close", None)
        if close is not None:
            close()
    return False


__all__ = ["STUCK", "Executor", "InProcess", "Lineup", "Played", "Source", "StopRule", "build_lineup",
           "new_hidden_key",
           "run_series"]
