"""Running games between bot folders: build, start once, reuse across games, clean up.

:class:`BotPool` is what `arena play`, `arena check-bot` and every tournament worker
use: it owns one :class:`BotHandle` per entrant, and plays games
through the referee.
"""

from __future__ import annotations

import functools
import resource
import time
from collections.abc import Callable
from pathlib import Path

from arena.bots.manifest import Manifest, build
from arena.bots.session import BotHandle, wait_to_leave
from arena.engine import Ruleset
from arena.errors import ArenaError, BotStartError
from arena.launch import scratch as scratch_folders
from arena.launch.launcher import Launcher, UnconfinedLauncher
from arena.launch.process import ResourceLimits
from arena.protocol.codec import load_schemas
from arena.referee import DEFAULT_TIME_CONTROL, GameResult, MoveCallback, TimeControl, play_game
from arena.resources import sample_bots_dir
from arena.untrusted import file_name, inside, remove_tree


def unique_labels(names: list[str]) -> list[str]:
    """Make display names unique: a second 'random' becomes 'random-2'."""
    seen: dict[str, int] = {}
    labels = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        labels.append(name if seen[name] == 1 else f"{name}-{seen[name]}")
    return labels


def build_all(manifests: list[Manifest], log_dir: Path, labels: list[str], *,
              launcher: Launcher | None = None,
              build_dir: Path | None = None) -> tuple[list[Manifest], dict[int, str]]:
    """Build every bot once (a folder listed twice is built once); returns the manifests to
    run (built copies under a strict launcher) and index -> build error.

    When the ``launcher`` copies builds (strict), each build runs confined in
    ``build_dir/<label>``, a private copy of the bot's folder (see
    :func:`arena.bots.manifest.build`); so does a shipped or submitted bot's build under any launcher."""
    launcher = launcher or UnconfinedLauncher()
    if build_dir is None and any(m.builds_in_copy(launcher) for m in manifests):
        raise ValueError("sandboxed builds and shipped or submitted bots' builds need a build_dir")
    built: dict[Path, Manifest | str] = {}
    runnable: list[Manifest] = []
    errors: dict[int, str] = {}
    for index, manifest in enumerate(manifests):
        if manifest.folder not in built:
            label = file_name(labels[index])
            try:
                built[manifest.folder] = build(
                    manifest, inside(log_dir, f"{label}.build.log"), launcher=launcher,
                    into=inside(build_dir, label) if build_dir is not None else None)
            except (ArenaError, OSError) as exc:
                built[manifest.folder] = str(exc)
        outcome = built[manifest.folder]
        if isinstance(outcome, str):
            errors[index] = outcome
            runnable.append(manifest)
        else:
            runnable.append(outcome)
    return runnable, errors


def raise_open_files_limit() -> int:
    """Raise this process's soft RLIMIT_NOFILE to its hard limit (cheap insurance for a
    referee; bots get their own limit, :class:`ResourceLimits`). Returns the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (OSError, ValueError):
            pass
    return soft


class BotPool:
    """Entrants by index: each gets its own process, started on first use and reused.

    A bot whose build fails is kept in the pool as broken: each of its games is
    recorded as a start failure, so the rest of a match or tournament carries on.

    ``launcher`` starts every bot (default: level none); it is checked first (raises
    SandboxError if its level cannot be provided here), and ``limits`` replaces its
    per-process limits. Each bot gets a launcher of its own (:meth:`Launcher.claim`: under
    strict, a uid of its own, for the pool's lifetime). Under strict each bot is built
    confined in a private copy: in ``build_dir/<label>``, or in a temporary folder removed
    when the pool closes. Sandboxed bots are frozen off their turn (when the host has a
    cgroup freezer) unless ``pondering``.
    """

    def __init__(self, manifests: list[Manifest], log_dir: Path, *, labels: list[str] | None = None,
                 limits: ResourceLimits | None = None, do_build: bool = True,
                 broken: dict[int, str] | None = None, launcher: Launcher | None = None,
                 build_dir: Path | None = None, pondering: bool = False) -> None:
        self.log_dir = log_dir
        log_dir.mkdir(parents=True, exist_ok=True)
        raise_open_files_limit()
        load_schemas()  # read the schema files now, never on a bot's clock
        launcher = launcher or UnconfinedLauncher()
        if limits is not None:
            launcher = launcher.with_limits(limits)
        launcher.check(pondering=pondering)
        self.launcher = launcher
        self.labels = labels or unique_labels([m.name for m in manifests])
        self._claimed: list[Launcher] = []
        for _ in manifests:
            self._claimed.append(launcher.claim())
        self.handles = [BotHandle(m, log_dir=log_dir, launcher=claimed, label=label, pondering=pondering)
                        for m, label, claimed in zip(manifests, self.labels, self._claimed, strict=True)]
        self.build_errors: dict[int, str] = {}
        self._build_dir: Path | None = None
        scratch_folders.remove_stale()  # of a check or a play killed before it could (kill -9)
        if do_build:
            if build_dir is None and any(m.builds_in_copy(launcher) for m in manifests):
                self._build_dir = build_dir = scratch_folders.make_folder("builds")
            try:
                built, self.build_errors = build_all(manifests, log_dir, self.labels, launcher=launcher,
                                                     build_dir=build_dir)
            except BaseException:  # Ctrl-C during a build: the copies and uids go now
                self.close()
                raise
            for handle, manifest in zip(self.handles, built, strict=True):
                handle.manifest = manifest  # the built copy, under a sandbox
        self.build_errors.update(broken or {})
        for index, error in self.build_errors.items():
            self.handles[index].broken = error

    def play(self, seat0: int, seat1: int, *, seed: int, edition: str = "revised",
             first_player: int = 0, time_control: TimeControl = DEFAULT_TIME_CONTROL,
             game_id: str = "game", on_move: MoveCallback | None = None,
             ruleset: Ruleset | None = None, measure: bool = False,
             hidden_seed: int | None = None) -> GameResult:
        bots = (self.handles[seat0], self.handles[seat1])
        return play_game(bots, seed=seed, edition=edition, first_player=first_player,
                         time_control=time_control, game_id=game_id, on_move=on_move, ruleset=ruleset,
                         measure=measure, hidden_seed=hidden_seed)

    def start_time(self, index: int) -> float:
        """Start entrant ``index`` (if needed) and return how long the handshake took."""
        handle = self.handles[index]
        started = time.monotonic()
        handle.ensure_started()
        return time.monotonic() - started

    def close(self) -> None:
        """Close every bot (shutdown to all, one grace period, then a kill of what is left),
        give back every claim, remove the build copies: each step is
        taken even when one before it fails or is interrupted (Ctrl-C, a SIGTERM unwinding),
        which is raised once all are done."""
        steps: list[Callable[[], object]] = [handle.ask_to_leave for handle in self.handles]
        steps.append(functools.partial(wait_to_leave, self.handles))
        steps += [handle.kill for handle in self.handles]
        steps += [claimed.release for claimed in self._claimed]
        steps.append(self._remove_build_dir)
        failure: BaseException | None = None
        for step in steps:
            try:
                step()
            except BaseException as exc:  # noqa: BLE001 - the rest is closed first, then it is raised
                failure = failure or exc
        if failure is not None:
            raise failure

    def _remove_build_dir(self) -> None:
        if self._build_dir is not None:
            remove_tree(self._build_dir)
            self._build_dir = None

    def __enter__(self) -> BotPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def load_manifests(paths: list[Path]) -> list[Manifest]:
    return [Manifest.load(path) for path in paths]


__all__ = ["BotPool", "BotStartError", "load_manifests", "sample_bots_dir", "unique_labels"]
