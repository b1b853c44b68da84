"""A bot's process tree, found, measured and killed through ``/proc``.

A bot may fork, and a grandchild may call ``setsid()`` and be reparented to init, leaving
both the process group and the parent chain. So every bot gets a random marker in its
environment, ``ARENA_BOT_MARKER=<uuid>``, inherited by everything it starts; a
:class:`ProcessTree` is the bot's session, the parent-chain closure from there, any process
whose ``/proc/<pid>/environ`` carries the marker, and everything in the bot's cgroup when it
has one. A descendant that both leaves the session *and* execs with a fresh environment
*and* is orphaned is out of reach of ``/proc``; under a strict sandbox the bot's cgroup
lists it anyway, and its pid namespace dies with the bot.

Only processes started since the bot are considered: older ones cannot be its
descendants, and skipping them keeps a scan cheap (no environ reads). A scan still reads
every ``/proc/<pid>/stat`` of the machine (about 2 ms with a few hundred processes), so
the per-game CPU check (:meth:`ProcessTree.cpu_over`) scans only when the bot could have
used that much CPU by now.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from arena.launch.cgroup import BotCgroup

log = logging.getLogger(__name__)

MARKER_VAR = "ARENA_BOT_MARKER"

_FREEZE_BUDGET_S = 1.0  # after this, kill what we found even if it is not all stopped yet
_MOP_UP_BUDGET_S = 2.0  # keep killing stragglers (e.g. stuck in a syscall) for this long
_CLK_TCK = os.sysconf("SC_CLK_TCK")
# The machine's CPUs, not this process's affinity: cpu_over needs an upper bound on the CPU
# time a bot can gain, and a bot may widen its own affinity (sched_setaffinity) past ours.
_CPUS = os.cpu_count() or 1


class Stat(NamedTuple):
    """The fields of ``/proc/<pid>/stat`` the tree code uses."""

    state: str  # R, S, D, T (stopped), Z (zombie), ...
    ppid: int
    pgrp: int
    sid: int
    start: int  # clock ticks since boot
    threads: int
    cpu: int  # user + system time, clock ticks

    def is_alive(self) -> bool:
        # A thread-group leader that called pthread_exit() shows as a zombie while its
        # other threads run on: still alive, and a kill() of its pid reaches them.
        return self.state not in "ZX" or self.threads > 1


class ProcessTree:
    """The processes of one bot: the root (our direct child), its session, its marker and
    its cgroup. The owner sets :attr:`root_pinned` to False once it has reaped the root."""

    def __init__(self, root: int, marker: str, born_ticks: int,
                 cgroup: BotCgroup | None = None, *, started_at: float | None = None) -> None:
        """``born_ticks``: a ``/proc`` start time no process of the tree is older than;
        ``started_at``: a ``time.monotonic()`` reading taken before the root started."""
        self.root = root
        self.marker = marker
        self.cgroup = cgroup
        self.root_pinned = True  # unreaped: its pid, so the session id, cannot be reused
        self._marker_entry = f"{MARKER_VAR}={marker}".encode()
        self._born_ticks = born_ticks
        # The CPU bound of cpu_over: no process of the tree had used more than
        # _cpu_seen ticks at monotonic time _cpu_seen_at (none existed before the start).
        self._cpu_seen = 0
        self._cpu_seen_at = time.monotonic() if started_at is None else started_at

    def pids(self) -> set[int]:
        """Every live (not zombie) process that belongs to the bot."""
        return set(self.scan())

    def cpu_seconds(self) -> float:
        """The most CPU time (user + system) that any one live process of the bot has
        used: what RLIMIT_CPU, which counts each process on its own, is measured against."""
        now = time.monotonic()
        most = max((stat.cpu for stat in self.scan().values()), default=0)
        self._cpu_seen, self._cpu_seen_at = most, now
        return most / _CLK_TCK

    def cpu_over(self, seconds: float) -> bool:
        """Whether a live process of the bot has used ``seconds`` of CPU time or more.

        No process gains more CPU time than the machine's cores give it, so until the
        last scan's figure plus that much since could reach ``seconds`` the answer is no
        without reading ``/proc``: a bot reused game after game is scanned once every
        several minutes, not at every game."""
        elapsed = time.monotonic() - self._cpu_seen_at
        if self._cpu_seen / _CLK_TCK + elapsed * _CPUS < seconds:
            return False
        return self.cpu_seconds() >= seconds

    def scan(self) -> dict[int, Stat]:
        """Live members of the tree, each with its ``/proc/<pid>/stat`` fields."""
        if self.root_pinned:
            # The root is the oldest process of its tree; trust its own start time over
            # the clock reading taken before it started.
            root_stat = read_stat(str(self.root))
            if root_stat is not None:
                self._born_ticks = min(self._born_ticks, root_stat.start)
        procs: dict[int, Stat] = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                stat = read_stat(name)
                if stat is not None and stat.start >= self._born_ticks:
                    procs[int(name)] = stat
        members: set[int] = set()
        root = self.root
        if self.root_pinned:
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

    def kill(self, grace_s: float = 0.2) -> None:
        """Kill every process of the tree (the root is left a zombie, for its owner to reap).

        SIGTERM to everything found, up to ``grace_s`` seconds to exit, then SIGSTOP
        everything and rescan until every member is stopped and no new one appears (a
        stopped process cannot fork), then SIGKILL them all. A bot held by a cgroup
        freezer must be thawed first: a task frozen by cgroup v1 acts on no signal.
        """
        found_none = self._terminate(grace_s) if grace_s > 0 else False
        self._freeze_and_kill(empty_scans=1 if found_none else 0)

    def _terminate(self, grace_s: float) -> bool:
        """SIGTERM and wait; True if the scan found nothing to terminate."""
        members = self.scan()
        if not members:
            return True
        for pid in members:
            send_signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        pause = 0.001
        while time.monotonic() < deadline:
            if all(is_gone(pid) for pid in members):
                break
            time.sleep(min(pause, max(deadline - time.monotonic(), 0)))
            pause = min(pause * 2, 0.02)
        return False

    def _signal_groups(self, members: dict[int, Stat], sig: signal.Signals) -> None:
        """Signal each process group of the bot's session at once: the root's, and any other
        a member is in. A chain of processes that each fork and exit at once outruns the
        /proc scan (each is gone before it is found, a red team's lived on after the kill),
        but stays in its group, and a group signal reaches every member, forks under way
        included. Only while the root is unreaped: then its session, and so every group in
        it, can only be the bot's."""
        if not self.root_pinned:
            return
        for group in {self.root} | {stat.pgrp for stat in members.values() if stat.sid == self.root}:
            try:
                os.killpg(group, sig)
            except OSError:  # gone already (or never was: the root is not a group leader)
                pass

    def _freeze_and_kill(self, empty_scans: int) -> None:
        stopped: set[int] = set()
        deadline = time.monotonic() + _FREEZE_BUDGET_S
        while True:
            members = self.scan()
            new = members.keys() - stopped
            if new:
                self._signal_groups(members, signal.SIGSTOP)
            for pid in new:
                send_signal(pid, signal.SIGSTOP)
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
                            self.root, _FREEZE_BUDGET_S)
                break
            if not new:
                time.sleep(0.0005)
        self._signal_groups(members, signal.SIGKILL)
        for pid in members:
            send_signal(pid, signal.SIGKILL)
        # Anything stopped but no longer counted as ours (only a reused pid could be):
        # let it go on.
        for pid in stopped - members.keys():
            if not is_gone(pid):
                send_signal(pid, signal.SIGCONT)
        deadline = time.monotonic() + _MOP_UP_BUDGET_S
        while members:
            members = self.scan()
            for pid in members:
                send_signal(pid, signal.SIGKILL)
            if members and time.monotonic() > deadline:
                log.warning("bot %d: processes %s survive SIGKILL", self.root, sorted(members))
                break
            if members:
                time.sleep(0.002)


def pipe_holders(inode: int, pids: set[int], *, first: bool = False) -> set[int]:
    """Which of ``pids`` have the pipe ``inode`` open now; with ``first``, only the first
    found (oldest pid first: a bot's own process, usually), the others unscanned."""
    needle = f"pipe:[{inode}]"
    found: set[int] = set()
    for pid in sorted(pids):
        if first and found:
            break
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == needle:
                    found.add(pid)
                    break
            except OSError:
                pass
    return found


def boot_ticks() -> int:
    """Now, in the clock of ``/proc/<pid>/stat`` starttime (ticks since boot)."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * _CLK_TCK)


def read_stat(pid: str) -> Stat | None:
    """The fields of ``/proc/<pid>/stat`` we use, or None if the process is gone."""
    data = _read(f"/proc/{pid}/stat")
    if data is None:
        return None
    # The command name in parentheses may itself contain spaces and parentheses.
    fields = data[data.rfind(b")") + 2:].split()
    try:
        return Stat(fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19]),
                    int(fields[17]), int(fields[11]) + int(fields[12]))
    except (IndexError, ValueError):
        return None


def is_gone(pid: int) -> bool:
    """Whether ``pid`` has exited (gone, or a zombie with no thread left)."""
    stat = read_stat(str(pid))
    return stat is None or not stat.is_alive()


def send_signal(pid: int, sig: signal.Signals) -> None:
    """``kill(pid, sig)``, never to init or ourselves, quiet if it is gone."""
    if pid <= 1 or pid == os.getpid():
        return
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


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


def _tasks(pid: int) -> list[str]:
    try:
        return os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []


def _is_frozen(pid: int, stat: Stat) -> bool:
    if stat.state in "Tt":
        return True
    if stat.state not in "ZX":
        return False
    for tid in _tasks(pid):  # a zombie leader: look at the threads that are left
        data = _read(f"/proc/{pid}/task/{tid}/stat")
        if data is not None and data[data.rfind(b")") + 2:][:1] not in b"TtZX":
            return False
    return True


def kill_by_environment(entries: set[bytes], budget_s: float = _MOP_UP_BUDGET_S) -> int:
    """Kill every process (that we may signal) whose environment holds one of ``entries``:
    each stopped then killed as found, scan after scan until one finds none (they may fork
    meanwhile) or ``budget_s`` is spent. Returns how many were killed. For the bots of a
    harness process killed before it could kill them, whose TMPDIR names a folder of their
    dead owner (:func:`arena.launch.scratch.remove_stale`): under none nothing else would."""
    killed: set[int] = set()
    deadline = time.monotonic() + budget_s
    while time.monotonic() < deadline:
        found = [int(name) for name in os.listdir("/proc")  # (send_signal spares init and us)
                 if name.isdigit() and not is_gone(int(name))
                 and not entries.isdisjoint(_environment(int(name)))]
        if not found:
            break
        for pid in found:
            send_signal(pid, signal.SIGSTOP)
        for pid in found:
            send_signal(pid, signal.SIGKILL)
        killed.update(found)
        time.sleep(0.002)
    return len(killed)


def _has_marker(pid: int, entry: bytes) -> bool:
    return entry in _environment(pid)


def _environment(pid: int) -> list[bytes]:
    """The entries (NAME=value) of a process's environment; none when it is gone or not ours."""
    data = _read(f"/proc/{pid}/environ")
    if data is None:  # a zombie leader has no environ of its own; its threads do
        for tid in _tasks(pid):
            data = _read(f"/proc/{pid}/task/{tid}/environ")
            if data is not None:
                break
    return data.split(b"\0") if data is not None else []


__all__ = ["MARKER_VAR", "ProcessTree", "Stat", "boot_ticks", "is_gone", "kill_by_environment",
           "pipe_holders", "read_stat", "send_signal"]
