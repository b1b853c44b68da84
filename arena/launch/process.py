"""One bot subprocess, and the guarantee that it and all its descendants die.

A bot runs in its own session and process group, with a scrubbed environment, its
own working folder and resource limits (CPU seconds, address space, file size, open
files, no core dumps). Its stderr (and its stdout too, unless it talks over pipes)
goes to a per-bot log file, capped in size.

This module starts a command as it is given: what wraps it (bubblewrap), its uid, its
cgroup and its environment are the launcher's (:mod:`arena.launch.launcher`). Finding,
measuring and killing the whole tree through ``/proc`` is :mod:`arena.launch.proctree`.

The direct child is not reaped until :meth:`BotProcess.kill_tree`: :meth:`poll` looks
at its exit status with ``waitid(WNOWAIT)``. The zombie keeps its pid, and so the
session id, from being reused by an unrelated process while we still match on it.

>>> with BotProcess.start(["/bin/sleep", "100"], cwd=Path("/tmp")) as bot:
...     bot.is_alive()
True
"""

from __future__ import annotations

import ctypes
import logging
import os
import resource
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from arena.errors import BotStartError, ConfigError
from arena.launch.proctree import MARKER_VAR, ProcessTree, boot_ticks, pipe_holders
from arena.signals import deferred_interrupts
from arena.untrusted import remove_tree

if TYPE_CHECKING:
    from arena.launch.cgroup import BotCgroup

log = logging.getLogger(__name__)

BOT_PATH = "/usr/local/bin:/usr/bin:/bin"

_DRAIN_CHUNK = 1 << 16
DISCARD_BYTES_PER_S = 64 << 20  # of a bot's stderr past its log cap (see _discard)
# After a read of less than _DRAIN_PAUSE_BELOW bytes, the drain waits _DRAIN_PAUSE_S: a bot
# writing stderr a byte at a time made it read once per byte (5.9 s of harness CPU in an 8.9 s
# game). A trickle is now read at most 200 times a second (a log line reaches the log 5 ms
# later at most); a stream comes in reads of 16 KiB or more, each worth its system call.
_DRAIN_PAUSE_S = 0.005
_DRAIN_PAUSE_BELOW = 16 << 10
_REAP_TIMEOUT_S = 5.0
STDERR_CAP_BYTES = 1 << 20  # of a bot's stderr kept in its log per run (the rest is dropped)
_DRAIN_JOIN_TIMEOUT_S = 2.0
LOG_SETTLE_S = 0.5  # a log tail read after a bot's exit waits this long, at most, for its log


@dataclass(frozen=True)
class ResourceLimits:
    """Per-process resource limits for a bot (inherited by its descendants).

    The CPU limit is soft at ``cpu_seconds`` (SIGXCPU) and hard one second later
    (SIGKILL). Core dumps are always disabled. A limit above the arena's own hard limit
    is lowered to it: a bot never gets more than the arena has.
    """

    cpu_seconds: int = 3600
    address_space_bytes: int = 4 * 2**30
    file_size_bytes: int = 64 * 2**20
    open_files: int = 256

    def __post_init__(self) -> None:
        for name in ("cpu_seconds", "address_space_bytes", "file_size_bytes", "open_files"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"resource limit {name} must be a positive integer, got {value!r}")

    def rlimits(self) -> list[tuple[int, tuple[int, int]]]:
        """``(RLIMIT_*, (soft, hard))`` pairs, clamped to this process's hard limits."""
        wanted = [
            (resource.RLIMIT_CPU, (self.cpu_seconds, self.cpu_seconds + 1)),
            (resource.RLIMIT_AS, (self.address_space_bytes, self.address_space_bytes)),
            (resource.RLIMIT_FSIZE, (self.file_size_bytes, self.file_size_bytes)),
            (resource.RLIMIT_NOFILE, (self.open_files, self.open_files)),
            (resource.RLIMIT_CORE, (0, 0)),
        ]
        result = []
        for which, (soft, hard) in wanted:
            ceiling = resource.getrlimit(which)[1]
            if ceiling != resource.RLIM_INFINITY:
                soft, hard = min(soft, ceiling), min(hard, ceiling)
            result.append((which, (soft, hard)))
        return result


_PR_SET_PDEATHSIG = 1
_prctl: Any
try:
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # pragma: no cover - not Linux
    _prctl = None


def _child_setup(limits: ResourceLimits, cgroup_procs: Sequence[str] = (),
                 max_processes: int | None = None) -> Callable[[], None]:
    # Runs in the forked child before exec, possibly while other threads of the parent
    # held locks: everything is computed here, the child only makes system calls.
    pairs = limits.rlimits()
    if max_processes is not None:
        pairs.append((resource.RLIMIT_NPROC, (max_processes, max_processes)))
    setrlimit = resource.setrlimit

    def apply() -> None:
        for path in cgroup_procs:  # join the bot's cgroups: all it starts will be in them
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, str(os.getpid()).encode())
            finally:
                os.close(fd)
        for which, value in pairs:
            setrlimit(which, value)
        if _prctl is not None:  # die with the arena process even if it is SIGKILLed
            _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

    return apply


def bot_environment(cwd: Path, env: Mapping[str, str] | None, marker: str) -> dict[str, str]:
    """The whole environment of a bot: nothing is inherited from the arena."""
    result = {"PATH": BOT_PATH, "HOME": str(cwd), "LANG": "C.UTF-8", "TMPDIR": str(cwd)}
    result.update(env or {})
    result[MARKER_VAR] = marker
    return result


class BotProcess:
    """A started bot subprocess; use :meth:`start` (or a launcher's ``start``), and always
    end with :meth:`kill_tree` (or a ``with`` block), which also reaps it."""

    pid: int
    marker: str
    stdin: IO[bytes] | None
    stdout: IO[bytes] | None
    output_copy_held = False
    """True when something besides the bot keeps a copy of its stdout pipe (bwrap does), so
    the bot closing it never shows as EOF: then ask :meth:`bot_holds_output`."""

    def __init__(self, popen: subprocess.Popen[bytes], tree: ProcessTree,
                 drain: threading.Thread | None, scratch: Path | None = None) -> None:
        self._popen = popen
        self.tree = tree
        self.cgroup = tree.cgroup
        self.scratch = scratch  # a folder of the bot's own, removed once it is dead
        self.pid = popen.pid
        self.marker = tree.marker
        self.stdin = popen.stdin
        self.stdout = popen.stdout
        self._drain = drain
        self._log_settled = False  # settle_log has waited once already
        self._returncode: int | None = None
        self._reaped = False
        self._killed = False
        self._frozen = False
        self._lock = threading.Lock()

    @classmethod
    def start(cls, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None,
              limits: ResourceLimits = ResourceLimits(), stderr_log: Path | None = None,
              stderr_cap_bytes: int = STDERR_CAP_BYTES, pipes: bool = False, pass_fds: Sequence[int] = (),
              cgroup: BotCgroup | None = None, max_processes: int | None = None,
              scratch: Path | None = None) -> BotProcess:
        """Start ``argv`` as it is, in a new session, in ``cwd`` (created if missing).

        The environment is :func:`bot_environment`: PATH, HOME=cwd, LANG, TMPDIR=cwd,
        then ``env``, then the marker. With ``pipes`` the bot's stdin and stdout are
        unbuffered pipes (``stdin.write`` sends at once; ``select`` on ``stdout.fileno()``
        sees every byte); otherwise stdin is /dev/null and stdout joins stderr. Stderr is
        appended to ``stderr_log``, at most ``stderr_cap_bytes`` per run, then one
        truncation line and the rest is drained and dropped; without a log it is dropped.

        ``pass_fds`` are inherited (the caller closes them), the process joins ``cgroup``
        before exec (the process owns it from then on: it is removed after the kill, or at
        once if the start fails), ``max_processes`` is its RLIMIT_NPROC, and ``scratch`` is
        removed after the kill. A launcher (:mod:`arena.launch.launcher`) fills these in.

        Raises BotStartError when the program cannot be started (its cgroup and scratch
        folder are removed first). A Ctrl-C or termination signal that comes meanwhile is
        acted on once the process is started and known, or killed.
        """
        started: BotProcess | None = None
        try:
            with deferred_interrupts():
                started = cls._spawn(argv, cwd=cwd, env=env, limits=limits, stderr_log=stderr_log,
                                     stderr_cap_bytes=stderr_cap_bytes, pipes=pipes, pass_fds=pass_fds,
                                     cgroup=cgroup, max_processes=max_processes, scratch=scratch)
        except BaseException:
            if started is not None:  # interrupted as it returned: nobody would ever kill it
                started.kill_tree()
            raise
        return started

    @classmethod
    def _spawn(cls, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None,
               limits: ResourceLimits, stderr_log: Path | None, stderr_cap_bytes: int, pipes: bool,
               pass_fds: Sequence[int], cgroup: BotCgroup | None, max_processes: int | None,
               scratch: Path | None) -> BotProcess:
        if not argv:
            raise BotStartError("cannot start a bot: empty command line")
        argv = list(argv)
        cwd = Path(cwd).resolve()
        marker = uuid.uuid4().hex
        log_file: IO[bytes] | None = None
        read_fd = write_fd = -1
        try:
            cwd.mkdir(parents=True, exist_ok=True)
            if stderr_log is not None:
                stderr_log.parent.mkdir(parents=True, exist_ok=True)
                log_file = open(stderr_log, "ab")  # closed by the drain thread
                read_fd, write_fd = os.pipe()
            born_ticks = boot_ticks() - 1  # every process of the bot starts after this
            born_at = time.monotonic()  # and has used no CPU before this
            err_target: int = write_fd if log_file is not None else subprocess.DEVNULL
            popen = subprocess.Popen(
                argv, cwd=cwd, env=bot_environment(cwd, env, marker), bufsize=0,
                stdin=subprocess.PIPE if pipes else subprocess.DEVNULL,
                stdout=subprocess.PIPE if pipes else err_target,
                stderr=err_target, close_fds=True, pass_fds=tuple(pass_fds), start_new_session=True,
                preexec_fn=_child_setup(limits, cgroup.procs_files if cgroup else (), max_processes))
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            # ValueError: Popen refuses a word holding a NUL (or one it cannot encode). The
            # manifest refuses such words at load; this keeps any other caller safe too.
            for fd in (read_fd, write_fd):
                if fd >= 0:
                    os.close(fd)
            if log_file is not None:
                log_file.close()
            if cgroup is not None:
                cgroup.remove(timeout_s=0)
            if scratch is not None:
                remove_tree(scratch)
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise BotStartError(f"cannot start {argv[0]!r} in {str(cwd)!r}: {reason}") from exc
        drain = None
        if log_file is not None:
            os.close(write_fd)  # the bot holds the only write end: EOF once it and its tree die
            # The cap is per run, and a bot that dies at every start runs once per game: the
            # log as a whole is capped too (a bot wrote 1 MiB per game, 2.5 MiB/s, to disk).
            room = max(0, min(stderr_cap_bytes, STDERR_LOG_MAX_BYTES - log_file.tell()))
            drain = threading.Thread(target=_drain, args=(read_fd, log_file, room),
                                     name=f"bot-stderr-{popen.pid}", daemon=True)
            drain.start()
        log.debug("started pid %d: %s", popen.pid, argv)
        tree = ProcessTree(popen.pid, marker, born_ticks, cgroup, started_at=born_at)
        return cls(popen, tree, drain, scratch)

    # -- state of the direct child ---------------------------------------------------

    def poll(self) -> int | None:
        """The return code (negative: killed by that signal), or None while running.

        Does not reap the child (see the module docstring); :meth:`kill_tree` does.
        """
        if self._returncode is not None:
            return self._returncode
        if self._reaped:
            self._returncode = self._popen.returncode
            return self._returncode
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # reaped behind our back (e.g. someone called waitpid(-1))
            self._returncode = self._popen.poll()
            return self._returncode
        if info is None or info.si_pid == 0:
            return None
        if info.si_code == os.CLD_EXITED:
            self._returncode = info.si_status
        else:  # CLD_KILLED or CLD_DUMPED
            self._returncode = -info.si_status
        return self._returncode

    def is_alive(self) -> bool:
        """Whether the direct child is still running (its descendants may outlive it)."""
        return self.poll() is None

    def exit_code(self) -> int | None:
        """:meth:`poll`, with a wrapper's way of reporting a signal undone (see
        :meth:`decode_status`)."""
        code = self.poll()
        return None if code is None else self.decode_status(code)

    def settle_log(self, timeout_s: float = LOG_SETTLE_S) -> None:
        """Once the bot has exited, wait (at most ``timeout_s``, once) for its stderr to reach
        its log: the drain thread may still be copying what the bot wrote just before it
        died, and a log tail read meanwhile missed it. While it runs, what it wrote reaches the
        log within the drain's pause after a short read: wait that long (a failure's hint only)."""
        if self._drain is None:
            return
        if self.poll() is None:
            time.sleep(3 * _DRAIN_PAUSE_S)
            return
        if self._log_settled:
            return
        self._log_settled = True
        self._drain.join(timeout_s)

    def decode_status(self, code: int) -> int:
        """The bot's own exit status from the direct child's; a launcher whose wrapper
        reports signals as statuses overrides it."""
        return code

    def describe_exit(self) -> str:
        """``"running"``, ``"exit code 3"`` or ``"killed by signal 9 (SIGKILL)"``, and
        whether the bot went over its memory limit."""
        code = self.exit_code()
        if code is None:
            return "running"
        if code >= 0:
            text = f"exit code {code}"
        else:
            try:
                text = f"killed by signal {-code} ({signal.Signals(-code).name})"
            except ValueError:
                text = f"killed by signal {-code}"
        if self.cgroup is not None and self.cgroup.oom_kills():
            text += (f", out of memory (a process of the bot went over its "
                     f"{self.cgroup.memory_bytes >> 20} MiB memory limit)")
        return text

    # -- freezing (cgroup freezer) -----------------------------------------------------

    @property
    def can_freeze(self) -> bool:
        """Whether :meth:`freeze` can stop this bot (it runs in a cgroup with a freezer)."""
        return self.cgroup is not None and self.cgroup.can_freeze

    @property
    def frozen(self) -> bool:
        return self._frozen

    def freeze(self, timeout_s: float = 0.0) -> bool:
        """Stop every process of the bot (cgroup freezer) until :meth:`thaw`. A no-op
        without a freezer, or once the bot is being killed.

        With ``timeout_s`` 0 (the referee's hot path) it does not wait for the kernel to
        report the group frozen (see :meth:`BotCgroup.freeze`); True if it did report it."""
        with self._lock:
            if self._killed or self.cgroup is None or not self.cgroup.can_freeze:
                return False
            if self._frozen and timeout_s <= 0:
                return False
            self._frozen = True
            try:
                done = self.cgroup.freeze(timeout_s)
            except OSError as exc:  # the group went away: nothing runs in it any more
                log.warning("bot %d: cannot freeze %s: %s", self.pid, self.cgroup, exc)
                return False
            if not done and timeout_s > 0:
                log.warning("bot %d: not all processes frozen after %.1f s", self.pid, timeout_s)
            return done

    def thaw(self) -> None:
        """Let the bot's processes run again; returns once the kernel has thawed them."""
        with self._lock:
            if self._frozen and self.cgroup is not None:
                self._frozen = False
                try:
                    self.cgroup.thaw()
                except OSError as exc:
                    log.warning("bot %d: cannot thaw %s: %s", self.pid, self.cgroup, exc)

    # -- the tree ---------------------------------------------------------------------

    def tree_pids(self) -> set[int]:
        """Every live (not zombie) process that belongs to this bot, found in ``/proc``."""
        return self.tree.pids()

    def cpu_seconds(self) -> float:
        """The most CPU time any one live process of the bot has used (see
        :meth:`ProcessTree.cpu_seconds`)."""
        return self.tree.cpu_seconds()

    def cpu_over(self, seconds: float) -> bool:
        """Whether a process of the bot has used ``seconds`` of CPU; cheap while it
        cannot have (see :meth:`ProcessTree.cpu_over`)."""
        return self.tree.cpu_over(seconds)

    def bot_holds_output(self, inode: int) -> bool:
        """Whether a process of the bot still has its stdout, the pipe ``inode``, open.
        Asked only when :attr:`output_copy_held` (a launcher keeps a copy of the pipe)."""
        return bool(pipe_holders(inode, self.tree.pids(), first=True))

    def kill_tree(self, grace_s: float = 0.2) -> None:
        """Kill the bot and every descendant, then reap the bot. Idempotent.

        A frozen bot is thawed first (a task held by a cgroup v1 freezer acts on no
        signal, not even SIGKILL); then :meth:`ProcessTree.kill`.
        """
        with self._lock:
            with deferred_interrupts():  # half a kill would leave the TERM-deaf alive
                if self._killed:
                    return
                self._killed = True
                try:
                    if self.cgroup is not None and self.cgroup.can_freeze:
                        self._frozen = False
                        try:  # always: a freeze may have been under way when we were interrupted
                            self.cgroup.thaw()
                        except OSError as exc:
                            log.warning("bot %d: cannot thaw %s: %s", self.pid, self.cgroup, exc)
                    self.tree.kill(grace_s)
                finally:
                    self._reap()
                    if self.cgroup is not None and not self.cgroup.remove():
                        log.warning("bot %d: cgroup %s not empty after the kill", self.pid, self.cgroup)
            # Not deferred: a bot's 150,000 files held a Ctrl-C 2.8 s; what an interrupt leaves
            # of the folder, the next run removes (arena.launch.scratch).
            if self.scratch is not None:
                remove_tree(self.scratch)

    def _reap(self) -> None:
        try:
            self._popen.wait(timeout=_REAP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log.warning("bot %d: not reaped %.0f s after SIGKILL", self.pid, _REAP_TIMEOUT_S)
        else:
            self._reaped = True
            self.tree.root_pinned = False
            if self._returncode is None:
                self._returncode = self._popen.returncode
        for stream in (self.stdin, self.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        if self._drain is not None:
            self._drain.join(_DRAIN_JOIN_TIMEOUT_S)

    def __enter__(self) -> BotProcess:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.kill_tree()

    def __repr__(self) -> str:
        return f"<BotProcess pid={self.pid} {self.describe_exit()}>"


STDERR_LOG_MAX_BYTES = 16 << 20
"""A bot's stderr log file stops growing at this size, however many times the bot starts."""
_TRUNCATED = b"[arena: stderr truncated after "  # the line that ends a run's log at its cap


def log_is_full(stderr_log: Path) -> bool:
    """Whether the bot's log has reached STDERR_LOG_MAX_BYTES: nothing more is written to it."""
    try:
        return os.stat(stderr_log).st_size >= STDERR_LOG_MAX_BYTES
    except OSError:
        return False


def log_was_cut(stderr_log: Path, *, since: int = 0) -> bool:
    """Whether a run of the bot reached its stderr cap (the log holds the truncation line
    after byte ``since``), or the log its size limit. Reads the log: for a report, not per
    move."""
    if log_is_full(stderr_log):
        return True
    try:
        with open(stderr_log, "rb") as handle:
            handle.seek(since)
            return _TRUNCATED in handle.read(STDERR_LOG_MAX_BYTES)
    except OSError:
        return False


def _drain(fd: int, out: IO[bytes], cap: int) -> None:
    """Copy the pipe to ``out`` up to ``cap`` bytes, then drop the rest until EOF (see
    :func:`_discard`) so the bot never blocks on a full pipe for long."""
    written = 0
    last = b"\n"
    full = cap <= 0  # the log is full already: nothing more, not even the truncation line
    try:
        while True:
            if full:
                _discard(fd)
                break
            try:
                chunk = os.read(fd, _DRAIN_CHUNK)
            except OSError:
                break
            if not chunk:
                break
            try:
                room = cap - written
                if len(chunk) <= room:
                    out.write(chunk)
                    written += len(chunk)
                    last = chunk[-1:]
                else:
                    if room:
                        out.write(chunk[:room])
                        last = chunk[room - 1:room]
                    written = cap
                    prefix = b"" if last == b"\n" else b"\n"
                    out.write(prefix + _TRUNCATED + f"{cap} bytes]\n".encode())
                    full = True
                out.flush()
            except OSError as exc:  # disk full, file size limit: stop logging, keep draining
                log.warning("stderr log write failed: %s", exc)
                full = True
            if len(chunk) < _DRAIN_PAUSE_BELOW:
                time.sleep(_DRAIN_PAUSE_S)  # let a trickle gather (see _DRAIN_PAUSE_S)
    finally:
        os.close(fd)
        try:
            out.close()
        except OSError:
            pass


def _discard(fd: int) -> None:
    """Drop what comes through the pipe until EOF, at most DISCARD_BYTES_PER_S: a bot
    spamming stderr past its log cap made the harness spend 5.2 s of CPU in 12.6 s reading
    it, outside the bot's cgroup. Past the rate the bot waits on its full pipe, on its own
    clock; a bot that logs less than that never notices. The bytes go to /dev/null by
    splice, without a copy."""
    started = time.monotonic()
    dropped = 0
    with open(os.devnull, "wb") as null:
        while True:
            try:
                moved = os.splice(fd, null.fileno(), _DRAIN_CHUNK)
            except OSError:
                try:
                    moved = len(os.read(fd, _DRAIN_CHUNK))
                except OSError:
                    return
            if not moved:
                return
            dropped += moved
            ahead = dropped / DISCARD_BYTES_PER_S - (time.monotonic() - started)
            if ahead > 0.01:
                time.sleep(ahead)
            elif moved < _DRAIN_PAUSE_BELOW:
                time.sleep(_DRAIN_PAUSE_S)
