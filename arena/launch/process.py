"""One bot subprocess, and the guarantee that it and all its descendants die.

A bot runs in its own session and process group, with a scrubbed environment, its
own working folder and resource limits (CPU seconds, address space, file size, open
files, no core dumps). Its stderr (and its stdout too, unless it talks over pipes)
goes to a per-bot log file, capped in size.

Finding the whole tree: a bot may fork, and a grandchild may call ``setsid()`` and be
reparented to init, leaving both the process group and the parent chain. So every bot
gets a random marker in its environment, ``ARENA_BOT_MARKER=<uuid>``, inherited by
everything it starts; :meth:`BotProcess.tree_pids` scans ``/proc`` for the bot's
session, the parent-chain closure from there, and any process whose
``/proc/<pid>/environ`` carries the marker. A descendant that both leaves the session
*and* execs with a fresh environment *and* is orphaned is out of reach of ``/proc``;
under a strict sandbox (:mod:`arena.launch.bubblewrap`) the bot's cgroup lists it anyway,
and its pid namespace dies with the bot.

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
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from arena.errors import BotStartError, ConfigError

if TYPE_CHECKING:
    from arena.launch.bubblewrap import Sandbox
    from arena.launch.cgroup import BotCgroup

log = logging.getLogger(__name__)

MARKER_VAR = "ARENA_BOT_MARKER"
BOT_PATH = "/usr/local/bin:/usr/bin:/bin"

_DRAIN_CHUNK = 1 << 16
_FREEZE_BUDGET_S = 1.0  # after this, kill what we found even if it is not all stopped yet
_MOP_UP_BUDGET_S = 2.0  # keep killing stragglers (e.g. stuck in a syscall) for this long
_REAP_TIMEOUT_S = 5.0
_DRAIN_JOIN_TIMEOUT_S = 2.0
_CLK_TCK = os.sysconf("SC_CLK_TCK")


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
    """A started bot subprocess; use :meth:`start`, and always end with :meth:`kill_tree`
    (or a ``with`` block), which also reaps it."""

    pid: int
    marker: str
    stdin: IO[bytes] | None
    stdout: IO[bytes] | None

    def __init__(self, popen: subprocess.Popen[bytes], marker: str,
                 drain: threading.Thread | None, born_ticks: int,
                 sandbox: Sandbox | None = None, cgroup: BotCgroup | None = None) -> None:
        self._popen = popen
        self.sandbox = sandbox
        self.cgroup = cgroup
        self._born_ticks = born_ticks
        self.pid = popen.pid
        self.marker = marker
        self._marker_entry = f"{MARKER_VAR}={marker}".encode()
        self.stdin = popen.stdin
        self.stdout = popen.stdout
        self._drain = drain
        self._returncode: int | None = None
        self._reaped = False
        self._killed = False
        self._frozen = False
        self._lock = threading.Lock()

    @classmethod
    def start(cls, argv: list[str], *, cwd: Path, env: Mapping[str, str] | None = None,
              limits: ResourceLimits = ResourceLimits(), stderr_log: Path | None = None,
              stderr_cap_bytes: int = 1 << 20, pipes: bool = False,
              sandbox: Sandbox | None = None) -> BotProcess:
        """Start ``argv`` in a new session, in ``cwd`` (created if missing).

        The environment is :func:`bot_environment`: PATH, HOME=cwd, LANG, TMPDIR=cwd,
        then ``env``, then the marker. With ``pipes`` the bot's stdin and stdout are
        unbuffered pipes (``stdin.write`` sends at once; ``select`` on ``stdout.fileno()``
        sees every byte); otherwise stdin is /dev/null and stdout joins stderr. Stderr is
        appended to ``stderr_log``, at most ``stderr_cap_bytes`` per run, then one
        truncation line and the rest is drained and dropped; without a log it is dropped.

        With a ``sandbox`` the command runs confined (:meth:`Sandbox.wrap`), in a cgroup of
        its own when the host offers cgroups.

        Raises BotStartError when the program cannot be started.
        """
        if not argv:
            raise BotStartError("cannot start a bot: empty command line")
        cwd = Path(cwd).resolve()
        marker = uuid.uuid4().hex
        log_file: IO[bytes] | None = None
        read_fd = write_fd = -1
        cgroup = None
        max_processes = None
        pass_fds: tuple[int, ...] = ()  # the seccomp filter for bwrap, closed once it started
        if sandbox is not None:
            from arena.launch.seccomp import filter_fd

            pass_fds = (filter_fd(),)
            try:
                argv = sandbox.wrap(argv, folder=cwd, seccomp_fd=pass_fds[0])
                cgroup = sandbox.make_cgroup()
            except BaseException:
                os.close(pass_fds[0])
                raise
            max_processes = sandbox.process_rlimit()
            limits = sandbox.process_limits(limits, cgroup)
        try:
            cwd.mkdir(parents=True, exist_ok=True)
            if stderr_log is not None:
                stderr_log.parent.mkdir(parents=True, exist_ok=True)
                log_file = open(stderr_log, "ab")  # closed by the drain thread
                read_fd, write_fd = os.pipe()
            born_ticks = _boot_ticks() - 1  # every process of the bot starts after this
            err_target: int = write_fd if log_file is not None else subprocess.DEVNULL
            popen = subprocess.Popen(
                argv, cwd=cwd, env=bot_environment(cwd, env, marker), bufsize=0,
                stdin=subprocess.PIPE if pipes else subprocess.DEVNULL,
                stdout=subprocess.PIPE if pipes else err_target,
                stderr=err_target, close_fds=True, pass_fds=pass_fds, start_new_session=True,
                preexec_fn=_child_setup(limits, cgroup.procs_files if cgroup else (), max_processes))
        except (OSError, subprocess.SubprocessError) as exc:
            for fd in pass_fds:
                os.close(fd)
            for fd in (read_fd, write_fd):
                if fd >= 0:
                    os.close(fd)
            if log_file is not None:
                log_file.close()
            if cgroup is not None:
                cgroup.remove(timeout_s=0)
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise BotStartError(f"cannot start {argv[0]!r} in {str(cwd)!r}: {reason}") from exc
        for fd in pass_fds:
            os.close(fd)
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
        return cls(popen, marker, drain, born_ticks, sandbox, cgroup)

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

    def describe_exit(self) -> str:
        """``"running"``, ``"exit code 3"`` or ``"killed by signal 9 (SIGKILL)"``, and
        whether the bot went over its memory limit."""
        code = self.poll()
        if code is None:
            return "running"
        if self.sandbox is not None and code > 128:
            code = 128 - code  # bwrap exits with 128 + the signal that killed the bot
        if code >= 0:
            text = f"exit code {code}"
        else:
            try:
                text = f"killed by signal {-code} ({signal.Signals(-code).name})"
            except ValueError:
                text = f"killed by signal {-code}"
        if self.cgroup is not None and self.cgroup.oom_kills():
            assert self.sandbox is not None
            text += (f", out of memory (a process of the bot went over its "
                     f"{self.sandbox.limits.memory_bytes >> 20} MiB memory limit)")
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
        return set(self._scan())

    def cpu_seconds(self) -> float:
        """The most CPU time (user + system) that any one live process of the bot has
        used: what RLIMIT_CPU, which counts each process on its own, is measured against."""
        return max((stat.cpu for stat in self._scan().values()), default=0) / _CLK_TCK

    def _scan(self) -> dict[int, _Stat]:
        """Live members of the tree, each with its ``/proc/<pid>/stat`` fields.

        Only processes started since the bot are considered: older ones cannot be its
        descendants, and skipping them keeps the scan cheap (no environ reads).
        """
        if not self._reaped:
            # The bot is the oldest process of its tree; trust its own start time over
            # the clock reading taken in start().
            root_stat = _read_stat(str(self.pid))
            if root_stat is not None:
                self._born_ticks = min(self._born_ticks, root_stat.start)
        procs: dict[int, _Stat] = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                stat = _read_stat(name)
                if stat is not None and stat.start >= self._born_ticks:
                    procs[int(name)] = stat
        members: set[int] = set()
        root = self.pid
        if not self._reaped:  # the unreaped child pins its pid, so the session id is ours
            members.update(pid for pid, stat in procs.items() if stat.sid == root or pid == root)
        if self.cgroup is not None:
            members.update(pid for pid in self.cgroup.pids() if pid in procs)
        for pid in procs.keys() - members:
            if _has_marker(pid, self._marker_entry):
                members.add(pid)
        children: dict[int, list[int]] = {}
        for pid, stat in procs.items():
            children.setdefault(stat.ppid, []).append(pid)
        todo = list(members)
        while todo:
            for child in children.get(todo.pop(), ()):
                if child not in members:
                    members.add(child)
                    todo.append(child)
        members.discard(os.getpid())
        members.discard(1)
        return {pid: procs[pid] for pid in members if procs[pid].is_alive()}

    def holds_pipe(self, inode: int) -> bool:
        """Whether a process of the bot still has the pipe ``inode`` open, not counting
        bwrap's own two processes (its monitor, our child, and the sandbox's init, the
        monitor's child), which keep a copy of every descriptor they pass on."""
        procs = {pid: _read_stat(str(pid)) for pid in
                 (self.cgroup.pids() if self.cgroup is not None else self.tree_pids())}
        needle = f"pipe:[{inode}]"
        for pid, stat in procs.items():
            if pid == self.pid or stat is None or stat.ppid == self.pid:
                continue
            try:
                fds = os.listdir(f"/proc/{pid}/fd")
            except OSError:
                continue
            for fd in fds:
                try:
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == needle:
                        return True
                except OSError:
                    pass
        return False

    def kill_tree(self, grace_s: float = 0.2) -> None:
        """Kill the bot and every descendant, then reap the bot. Idempotent.

        SIGTERM to everything found, up to ``grace_s`` seconds to exit, then SIGSTOP
        everything and rescan until every member is stopped and no new one appears (a
        stopped process cannot fork), then SIGKILL them all. A frozen bot is thawed first:
        a task held by a cgroup v1 freezer acts on no signal, not even SIGKILL.
        """
        with self._lock:
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
                found_none = self._terminate(grace_s) if grace_s > 0 else False
                self._freeze_and_kill(empty_scans=1 if found_none else 0)
            finally:
                self._reap()
                if self.cgroup is not None and not self.cgroup.remove():
                    log.warning("bot %d: cgroup %s not empty after the kill", self.pid, self.cgroup)

    def _terminate(self, grace_s: float) -> bool:
        """SIGTERM and wait; True if the scan found nothing to terminate."""
        members = self._scan()
        if not members:
            return True
        for pid in members:
            _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        pause = 0.001
        while time.monotonic() < deadline:
            if all(_is_gone(pid) for pid in members):
                break
            time.sleep(min(pause, max(deadline - time.monotonic(), 0)))
            pause = min(pause * 2, 0.02)
        return False

    def _freeze_and_kill(self, empty_scans: int) -> None:
        stopped: set[int] = set()
        deadline = time.monotonic() + _FREEZE_BUDGET_S
        while True:
            members = self._scan()
            new = members.keys() - stopped
            for pid in new:
                _signal(pid, signal.SIGSTOP)
            stopped |= new
            if not members:
                # A process that forked and exited between our listdir and its stat leaves
                # a child we may have missed: only two empty scans in a row mean empty.
                empty_scans += 1
                if empty_scans >= 2:
                    break
            elif not new and all(_is_frozen(pid, stat) for pid, stat in members.items()):
                break
            if time.monotonic() > deadline:
                log.warning("bot %d: tree not frozen after %.1f s, killing what was found",
                            self.pid, _FREEZE_BUDGET_S)
                break
            if not new:
                time.sleep(0.0005)
        for pid in members:
            _signal(pid, signal.SIGKILL)
        # Anything stopped but no longer counted as ours (only a reused pid could be):
        # let it go on.
        for pid in stopped - members.keys():
            if not _is_gone(pid):
                _signal(pid, signal.SIGCONT)
        deadline = time.monotonic() + _MOP_UP_BUDGET_S
        while members:
            members = self._scan()
            for pid in members:
                _signal(pid, signal.SIGKILL)
            if members and time.monotonic() > deadline:
                log.warning("bot %d: processes %s survive SIGKILL", self.pid, sorted(members))
                break
            if members:
                time.sleep(0.002)

    def _reap(self) -> None:
        try:
            self._popen.wait(timeout=_REAP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log.warning("bot %d: not reaped %.0f s after SIGKILL", self.pid, _REAP_TIMEOUT_S)
        else:
            self._reaped = True
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


def _read(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # FileNotFoundError, PermissionError: the process is gone or not ours
        return None
    try:
        parts = []
        while chunk := os.read(fd, 1 << 16):
            parts.append(chunk)
        return b"".join(parts)
    except OSError:  # ProcessLookupError (ESRCH) when it exits while we read
        return None
    finally:
        os.close(fd)


class _Stat(NamedTuple):
    state: str  # R, S, D, T (stopped), Z (zombie), ...
    ppid: int
    sid: int
    start: int  # clock ticks since boot
    threads: int
    cpu: int  # user + system time, clock ticks

    def is_alive(self) -> bool:
        # A thread-group leader that called pthread_exit() shows as a zombie while its
        # other threads run on: still alive, and a kill() of its pid reaches them.
        return self.state not in "ZX" or self.threads > 1


def _read_stat(pid: str) -> _Stat | None:
    """The fields of ``/proc/<pid>/stat`` we use, or None if the process is gone."""
    data = _read(f"/proc/{pid}/stat")
    if data is None:
        return None
    # The command name in parentheses may itself contain spaces and parentheses.
    fields = data[data.rfind(b")") + 2:].split()
    try:
        return _Stat(fields[0].decode(), int(fields[1]), int(fields[3]), int(fields[19]),
                     int(fields[17]), int(fields[11]) + int(fields[12]))
    except (IndexError, ValueError):
        return None


def _tasks(pid: int) -> list[str]:
    try:
        return os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []


def _is_frozen(pid: int, stat: _Stat) -> bool:
    if stat.state in "Tt":
        return True
    if stat.state not in "ZX":
        return False
    for tid in _tasks(pid):  # a zombie leader: look at the threads that are left
        data = _read(f"/proc/{pid}/task/{tid}/stat")
        if data is not None and data[data.rfind(b")") + 2:][:1] not in b"TtZX":
            return False
    return True


def _has_marker(pid: int, entry: bytes) -> bool:
    data = _read(f"/proc/{pid}/environ")
    if data is None:  # a zombie leader has no environ of its own; its threads do
        for tid in _tasks(pid):
            data = _read(f"/proc/{pid}/task/{tid}/environ")
            if data is not None:
                break
    return data is not None and entry in data.split(b"\0")


def _boot_ticks() -> int:
    """Now, in the clock of ``/proc/<pid>/stat`` starttime (ticks since boot)."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * _CLK_TCK)


def _is_gone(pid: int) -> bool:
    stat = _read_stat(str(pid))
    return stat is None or not stat.is_alive()


def _signal(pid: int, sig: signal.Signals) -> None:
    if pid <= 1 or pid == os.getpid():
        return
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


STDERR_LOG_MAX_BYTES = 16 << 20
"""A bot's stderr log file stops growing at this size, however many times the bot starts."""


def _drain(fd: int, out: IO[bytes], cap: int) -> None:
    """Copy the pipe to ``out`` up to ``cap`` bytes, then keep reading to EOF so the
    bot never blocks on a full pipe."""
    written = 0
    last = b"\n"
    full = cap <= 0  # the log is full already: nothing more, not even the truncation line
    try:
        while True:
            try:
                chunk = os.read(fd, _DRAIN_CHUNK)
            except OSError:
                break
            if not chunk:
                break
            if full:
                continue
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
                    out.write(prefix + f"[arena: stderr truncated after {cap} bytes]\n".encode())
                    full = True
                out.flush()
            except OSError as exc:  # disk full, file size limit: stop logging, keep draining
                log.warning("stderr log write failed: %s", exc)
                full = True
    finally:
        os.close(fd)
        try:
            out.close()
        except OSError:
            pass
