"""The launcher: how every bot process (and every build) is started, for one sandbox level.

A :class:`Launcher` is built once, from the level the user asked for
(:meth:`Launcher.for_level`), and handed down to whatever starts processes: the pool, each
bot's handle, the build step, tournament workers (it is a small picklable value; the heavy
resources, the seccomp filter, cgroups and uid claims, are made in the process that starts
the bot). Nothing else looks at the level.

* :class:`UnconfinedLauncher` (level ``none``): the resource limits and process-tree
  control of :mod:`arena.launch.process`, a private temporary HOME per bot, builds in the
  bot's own folder with the harness's environment (a bot author's own machine).
* :class:`BubblewrapLauncher` (level ``strict``): the command wrapped by bubblewrap
  (:class:`~arena.launch.bubblewrap.Sandbox`) under the seccomp filter, a uid of the bot's
  own (:meth:`Launcher.claim`), a cgroup of its own, HOME in the sandbox's private /tmp;
  builds confined in a private copy. It also undoes bubblewrap's quirks: bwrap reports a
  bot killed by signal n as exit status 128 + n, and keeps a copy of the bot's stdout, so
  the bot closing it shows no EOF.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import stat
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, TypeVar

from arena.errors import ConfigError
from arena.launch import scratch as scratch_folders
from arena.launch import seccomp
from arena.launch.bubblewrap import (
    SANDBOX_TMP,
    UID_BASE,
    Sandbox,
    SandboxLimits,
    UidClaim,
    check_strict_available,
    runtime_paths,
)
from arena.launch.cgroup import remove_stale_groups
from arena.launch.levels import LEVELS
from arena.launch.levels import Sandbox as Level
from arena.launch.process import BotProcess, ResourceLimits
from arena.launch.proctree import pipe_holders, read_stat
from arena.untrusted import walk_at

C = TypeVar("C")


@dataclass(frozen=True)
class Launcher:
    """Starts bot processes at one sandbox level; see the module docs. Build one with
    :meth:`for_level`."""

    limits: ResourceLimits = ResourceLimits()  # per process, for every bot it starts
    level: ClassVar[Level]
    copies_builds: ClassVar[bool] = False
    """True: a build runs in a private copy of the bot's folder (see :meth:`building`)."""
    strict: ClassVar[bool] = False
    """True: bots run confined (read-only folder, a uid of their own, only their folder and
    the system's visible): what a failure's hint says depends on it."""

    @property
    def sandbox_limits(self) -> SandboxLimits:
        """The strict sandbox's limits: this launcher's, or those a strict tournament would give."""
        return SandboxLimits()

    def memory_limit(self) -> str:
        """A bot's memory limit, in a hint's words."""
        return f"{self.limits.address_space_bytes >> 20} MiB of address space under --sandbox {self.level}"

    def shows(self, path: str, *, folder: Path) -> bool:
        """Whether a bot running in ``folder`` sees the absolute ``path`` (a hint's question,
        decided on the path's text)."""
        return True

    @staticmethod
    def for_level(level: Level | str, *, limits: ResourceLimits | None = None,
                  sandbox_limits: SandboxLimits | None = None, use_cgroups: bool = True) -> Launcher:
        """The launcher for ``level`` (a :class:`~arena.launch.levels.Sandbox`, or its value
        ``"none"`` or ``"strict"``); raises ConfigError for any other. Nothing is checked
        yet: :meth:`check` says whether the level can be had here."""
        limits = limits or ResourceLimits()
        if level == UnconfinedLauncher.level:
            return UnconfinedLauncher(limits)
        if level == BubblewrapLauncher.level:
            return BubblewrapLauncher(limits, sandbox_limits or SandboxLimits(), use_cgroups)
        raise ConfigError(f"sandbox: expected one of {', '.join(LEVELS)}, got {level!r}")

    def with_limits(self, limits: ResourceLimits) -> Launcher:
        """This launcher with other per-process limits."""
        return dataclasses.replace(self, limits=limits)

    def check(self, *, pondering: bool = False) -> list[str]:
        """The confinement in force, one line each (nothing for none). Raises SandboxError
        when this level cannot be provided here."""
        return []

    def claim(self) -> Launcher:
        """A launcher for one bot, holding what must not be shared between bots running at
        once (a uid) until :meth:`release`. Not to be pickled."""
        return self

    def release(self) -> None:
        """Give back what :meth:`claim` took (idempotent)."""

    def start(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None,
              limits: ResourceLimits | None = None, stderr_log: Path | None = None,
              pipes: bool = False) -> BotProcess:
        """Start ``argv`` in ``cwd`` at this level (see :meth:`BotProcess.start` for the
        rest). Raises BotStartError when it cannot be started."""
        return BotProcess.start(argv, cwd=cwd, env=env, limits=limits or self.limits,
                                stderr_log=stderr_log, pipes=pipes)

    def start_bot(self, argv: Sequence[str], *, folder: Path, name: str, stderr_log: Path,
                  limits: ResourceLimits | None = None) -> BotProcess:
        """Start a bot speaking over pipes, in its folder, with a HOME and TMPDIR of its own."""
        scratch = scratch_folders.make_folder(name)
        env = {"HOME": str(scratch), "TMPDIR": str(scratch)}
        return BotProcess.start(argv, cwd=folder, env=env, limits=limits or self.limits,
                                stderr_log=stderr_log, pipes=True, scratch=scratch)

    def open_bot(self, argv: Sequence[str], *, folder: Path, name: str, stderr_log: Path,
                 limits: ResourceLimits | None, channel: Callable[[BotProcess], C]) -> tuple[BotProcess, C]:
        """Start a bot (:meth:`start_bot`) and open its ``channel`` over its pipes (a channel
        class of :mod:`arena.channel.transport`, given by the caller: this layer knows no
        framing): what :class:`~arena.bots.session.BotHandle` runs over. The process is
        killed if the channel cannot be opened."""
        process = self.start_bot(argv, folder=folder, name=name, stderr_log=stderr_log, limits=limits)
        try:
            return process, channel(process)
        except BaseException:
            process.kill_tree()
            raise

    def build_environment(self) -> dict[str, str]:
        """The environment of a build: the harness's own, as a build run by hand would have;
        without a TMPDIR there, the system's temporary folder (not the bot's folder, which
        bot_environment's default would make it: `go build` then ignored the bot's go.mod)."""
        return {"TMPDIR": tempfile.gettempdir(), **os.environ}

    @contextmanager
    def building(self, folder: Path) -> Iterator[Launcher]:
        """The launcher a build in ``folder`` runs under, for the duration of the build."""
        yield self

    def remove_stale(self) -> None:
        """Clean up after harness processes that died holding bots: their cgroups, their
        bots' scratch folders and build copies (:mod:`arena.launch.scratch`)."""
        scratch_folders.remove_stale()


@dataclass(frozen=True)
class UnconfinedLauncher(Launcher):
    """Level ``none``: resource limits and process-tree control only."""

    level: ClassVar[Level] = Level.NONE


_MAX_SIGNAL = 64  # SIGRTMAX on Linux


class _BubblewrapProcess(BotProcess):
    """A bot started under bwrap, whose two processes stand between us and the bot: its
    monitor (our direct child) and the sandbox's init (the monitor's child)."""

    output_copy_held = True  # both keep a copy of every descriptor they pass on

    def decode_status(self, code: int) -> int:
        """bwrap exits with 128 + the bot's signal n; signals stop at 64, so a status above
        128 + 64 is the bot's own (an exit(200)). One from 129 to 192 is read as the signal,
        as shells do: a bot's own exit(139) cannot be told from a SIGSEGV (README, crash)."""
        return 128 - code if 128 < code <= 128 + _MAX_SIGNAL else code

    def bot_holds_output(self, inode: int) -> bool:
        candidates = self.cgroup.pids() if self.cgroup is not None else self.tree.pids()
        bwrap = {self.pid} | {pid for pid in candidates
                              if (s := read_stat(str(pid))) is not None and s.ppid == self.pid}
        return bool(pipe_holders(inode, candidates - bwrap, first=True))


@dataclass(frozen=True)
class BubblewrapLauncher(Launcher):
    """Level ``strict``: every process confined by bubblewrap (see the module docs)."""

    sandbox_limits: SandboxLimits = SandboxLimits()
    use_cgroups: bool = True  # False: rlimits only, as on a host without cgroups
    uid: int = UID_BASE  # the bot's own once claimed (see claim)
    writable_folder: bool = False  # a build's: see building
    _claim: UidClaim | None = field(default=None, compare=False, repr=False)
    level: ClassVar[Level] = Level.STRICT
    copies_builds: ClassVar[bool] = True
    strict: ClassVar[bool] = True

    @property
    def sandbox(self) -> Sandbox:
        """The bwrap command line's maker, with this machine's Python paths (made where it
        is used: a launcher pickled to a Dask worker finds that machine's)."""
        return Sandbox(uid=self.uid, limits=self.sandbox_limits, exposed=_runtime_paths(),
                       use_cgroups=self.use_cgroups, writable_folder=self.writable_folder)

    def memory_limit(self) -> str:
        return f"{self.sandbox_limits.memory_bytes >> 20} MiB under --sandbox strict"

    def shows(self, path: str, *, folder: Path) -> bool:
        return self.sandbox.shows(path, folder=folder)

    def check(self, *, pondering: bool = False) -> list[str]:
        return check_strict_available(self.sandbox_limits, use_cgroups=self.use_cgroups,
                                      pondering=pondering)

    def claim(self) -> BubblewrapLauncher:
        uid = UidClaim()
        return dataclasses.replace(self, uid=uid.uid, _claim=uid)

    def release(self) -> None:
        if self._claim is not None:
            self._claim.release()

    def start(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None,
              limits: ResourceLimits | None = None, stderr_log: Path | None = None,
              pipes: bool = False) -> BotProcess:
        cwd = Path(cwd).resolve()
        sandbox = self.sandbox
        filter_fd = seccomp.filter_fd()  # bwrap reads it at start; closed once it started
        try:
            wrapped = sandbox.wrap(argv, folder=cwd, seccomp_fd=filter_fd)
            cgroup = sandbox.make_cgroup()
            return _BubblewrapProcess.start(
                wrapped, cwd=cwd, env=env, stderr_log=stderr_log, pipes=pipes, pass_fds=(filter_fd,),
                limits=sandbox.process_limits(limits or self.limits, cgroup), cgroup=cgroup,
                max_processes=sandbox.process_rlimit())
        finally:
            os.close(filter_fd)

    def start_bot(self, argv: Sequence[str], *, folder: Path, name: str, stderr_log: Path,
                  limits: ResourceLimits | None = None) -> BotProcess:
        env = {"HOME": SANDBOX_TMP, "TMPDIR": SANDBOX_TMP}  # a private tmpfs inside the sandbox
        return self.start(argv, cwd=folder, env=env, limits=limits, stderr_log=stderr_log, pipes=True)

    def build_environment(self) -> dict[str, str]:
        """A bot's scrubbed environment (:func:`~arena.launch.process.bot_environment`),
        HOME in the sandbox's private /tmp."""
        return {"HOME": SANDBOX_TMP, "TMPDIR": SANDBOX_TMP}

    @contextmanager
    def building(self, folder: Path) -> Iterator[Launcher]:
        """Under a uid of the build's own, with ``folder`` (a private copy) handed to it and
        bound read-write; afterwards the copy is handed back to root (:func:`_hand_back`),
        once the build and everything it started are dead."""
        claim = UidClaim()
        try:
            builder = dataclasses.replace(self, uid=claim.uid, writable_folder=True, _claim=None)
            _hand_to(folder, claim.uid)
            try:
                yield builder
            finally:
                _hand_back(folder)
        finally:
            claim.release()

    def remove_stale(self) -> None:
        remove_stale_groups()
        super().remove_stale()


@functools.cache
def _runtime_paths() -> tuple[Path, ...]:
    return runtime_paths()


def _hand_to(folder: Path, uid: int) -> None:
    """Make the copy the build's own (it is reachable only inside the build's sandbox)."""
    os.chown(folder, uid, uid, follow_symlinks=False)
    for dir_fd, name, info in walk_at(folder):
        if info is not None:
            os.chown(name, uid, uid, dir_fd=dir_fd, follow_symlinks=False)


def _hand_back(folder: Path) -> None:
    """After the build (and everything it started) is dead: give the copy back to root,
    readable by every bot uid and writable by none, without setuid/setgid bits; anything
    but folders, regular files and symlinks (a FIFO, a socket) is removed. By descriptor,
    at any depth (walk_at): a build nesting folders past PATH_MAX stopped a walk by path
    half-way, leaving setuid and world-writable files of the build's uid behind."""
    os.chown(folder, 0, 0, follow_symlinks=False)
    os.chmod(folder, 0o755)
    for dir_fd, name, info in walk_at(folder):
        if info is None:
            continue
        if stat.S_ISLNK(info.st_mode):
            os.chown(name, 0, 0, dir_fd=dir_fd, follow_symlinks=False)
        elif stat.S_ISDIR(info.st_mode):
            os.chown(name, 0, 0, dir_fd=dir_fd, follow_symlinks=False)
            os.chmod(name, 0o755, dir_fd=dir_fd)
        elif stat.S_ISREG(info.st_mode):
            os.chown(name, 0, 0, dir_fd=dir_fd, follow_symlinks=False)
            os.chmod(name, 0o755 if info.st_mode & 0o111 else 0o644, dir_fd=dir_fd)
        else:
            os.unlink(name, dir_fd=dir_fd)


__all__ = ["BubblewrapLauncher", "Launcher", "UnconfinedLauncher"]
