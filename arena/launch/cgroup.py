"""Control groups for sandboxed bots: memory, process-count and CPU limits, membership, freezing.

Every sandboxed bot gets a group of its own in each hierarchy that offers a controller
we use (``memory``, ``pids``, ``cpu``, ``freezer``), made inside the harness's own group there:
``<hierarchy>/<our group>/arena-<harness pid>-<n>``. The bot's first process joins it
before exec, so everything it ever starts is in it: the group is the one list of a
bot's processes that no ``setsid()``, double fork or ``exec`` with a fresh environment
can leave, and the kernel enforces the limits on the group as a whole.

Both cgroup v1 (a hierarchy per controller) and v2 (one hierarchy) are handled. On v2
a controller is usable only when it is enabled in our group's ``cgroup.subtree_control``
(a delegated group); we never move processes around to make that so. A controller that
cannot be used is reported with the reason (see :func:`detect`), and the sandbox says so
at start-up and falls back to per-process limits.

The freezer stops every process of a bot at once (:meth:`BotCgroup.freeze`), so that a
bot computes only on its own turn. On v1 it is the ``freezer`` hierarchy
(``freezer.state``: FROZEN / THAWED, FREEZING while tasks are still on their way); on v2
it is built into every group (``cgroup.freeze``, and ``frozen 1`` in ``cgroup.events``).
A frozen task on v1 does not act on SIGKILL until it is thawed: whoever kills a bot, or
cleans up after a dead harness (:func:`remove_stale_groups`), thaws first.
"""

from __future__ import annotations

import errno
import functools
import itertools
import logging
import os
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

CONTROLLERS = ("memory", "pids", "cpu", "freezer")
CPU_PERIOD_US = 100_000
FREEZE_TIMEOUT_S = 1.0  # a freeze not complete by then is reported (it still completes later)
STALE_KILL_TIMEOUT_S = 2.0
_PREFIX = "arena-"
_names = itertools.count(1)
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Hierarchy:
    """Where bot groups for one controller are made."""

    controller: str
    parent: Path  # the harness's own group in this hierarchy
    version: int  # 1 or 2


@dataclass(frozen=True)
class CgroupSupport:
    """What this host offers: a hierarchy per usable controller, a reason per missing one."""

    hierarchies: tuple[Hierarchy, ...]
    missing: tuple[tuple[str, str], ...]  # (controller, why it cannot be used)

    def has(self, controller: str) -> bool:
        return any(h.controller == controller for h in self.hierarchies)

    def describe(self, controller: str) -> str:
        """``"cgroup v1"``, or why the controller is missing."""
        for h in self.hierarchies:
            if h.controller == controller:
                return f"cgroup v{h.version}"
        return dict(self.missing).get(controller, "not offered by the kernel")


@functools.cache
def detect() -> CgroupSupport:
    """Find the usable controllers (once per process), and remove bot groups left empty by
    harness processes that died."""
    memberships = _memberships()
    mounts = _cgroup_mounts()
    found: list[Hierarchy] = []
    missing: list[tuple[str, str]] = []
    for controller in CONTROLLERS:
        try:
            hierarchy = _locate(controller, memberships, mounts)
            _probe(hierarchy)
        except OSError as exc:
            missing.append((controller, f"cgroup {controller}: {exc.strerror or exc}"))
        except LookupError as exc:
            missing.append((controller, str(exc)))
        else:
            found.append(hierarchy)
    _remove_stale(sorted({h.parent for h in found}))
    return CgroupSupport(tuple(found), tuple(missing))


def remove_stale_groups() -> None:
    """Remove the bot groups of harness processes that are gone (e.g. tournament workers
    that were killed before they could clean up): thaw them, kill what still runs in them
    (bots whose harness died, held by a v1 freezer), then remove them."""
    _remove_stale(_parents())


def stale_groups() -> list[Path]:
    """The bot groups, in every usable hierarchy, whose harness process no longer exists."""
    return [folder for parent in _parents() for folder in _stale(parent)]


def _parents() -> list[Path]:
    """Our group in each usable hierarchy (once: on v2 the controllers share one)."""
    return sorted({hierarchy.parent for hierarchy in detect().hierarchies})


class BotCgroup:
    """One bot's groups (one folder per hierarchy; on v2 a single folder)."""

    def __init__(self, folders: dict[str, Path], version: dict[str, int], memory_bytes: int = 0) -> None:
        self.folders = folders  # controller -> folder
        self.memory_bytes = memory_bytes  # the memory limit asked for (in force with "memory")
        self._version = version
        self._freezer_fd = -1  # freezer.state (v1, read-write) or cgroup.freeze (v2), kept open
        self._events_fd = -1  # v2: cgroup.events

    @property
    def procs_files(self) -> tuple[str, ...]:
        """The ``cgroup.procs`` files a process writes its pid to, to join every group."""
        return tuple(sorted({str(f / "cgroup.procs") for f in self.folders.values()}))

    @classmethod
    def create(cls, support: CgroupSupport, *, memory_bytes: int, processes: int,
               cpus: float) -> BotCgroup | None:
        """Make the groups and set the limits; None when the host offers no controller.

        Raises OSError if a group cannot be made (what was made is removed again).
        """
        if not support.hierarchies:
            return None
        name = f"{_PREFIX}{os.getpid()}-{next(_names)}"
        folders: dict[str, Path] = {}
        version: dict[str, int] = {}
        group = cls(folders, version, memory_bytes)
        try:
            for h in support.hierarchies:
                folder = h.parent / name
                if folder not in folders.values():
                    folder.mkdir()
                folders[h.controller] = folder
                version[h.controller] = h.version
                _write_limits(h, folder, memory_bytes, processes, cpus)
        except OSError:
            group.remove(timeout_s=0)
            raise
        return group

    def pids(self) -> set[int]:
        """Every process in the groups now (pids as this process sees them)."""
        found: set[int] = set()
        for path in self.procs_files:
            try:
                found.update(int(line) for line in Path(path).read_text().split())
            except OSError:
                pass
        return found

    @property
    def can_freeze(self) -> bool:
        """Whether the host gave this bot a freezer."""
        return "freezer" in self.folders

    def freeze(self, timeout_s: float = FREEZE_TIMEOUT_S) -> bool:
        """Stop every process of the bot at once; True when the kernel says all are frozen.

        Once the write returns, every task of the group is marked: a running one is
        interrupted and none runs another instruction of its own code, but each still has to
        be scheduled once to park itself, which on a loaded machine takes milliseconds. So
        ``timeout_s`` 0 returns at once (True only if already all frozen); otherwise this
        waits up to ``timeout_s`` for the kernel to report the group frozen. False without a
        freezer, or when some task is still on its way (one in an uninterruptible sleep,
        say): it freezes as soon as it can, nothing more to do.
        """
        return self._set_frozen(True, timeout_s)

    def thaw(self, timeout_s: float = FREEZE_TIMEOUT_S) -> bool:
        """Let every process of the bot run again; True once the kernel says so (False
        without a freezer)."""
        return self._set_frozen(False, timeout_s)

    def _set_frozen(self, frozen: bool, timeout_s: float) -> bool:
        if not self._open_freezer():
            return False
        fd = self._freezer_fd
        if self._version["freezer"] == 1:
            state = b"FROZEN" if frozen else b"THAWED"
            os.write(fd, state)
            return _wait_for(lambda: os.pread(fd, 16, 0) == state + b"\n", timeout_s)
        os.write(fd, b"1" if frozen else b"0")
        events, wanted = self._events_fd, b"frozen 1" if frozen else b"frozen 0"
        return _wait_for(lambda: wanted in os.pread(events, 256, 0), timeout_s)

    def _open_freezer(self) -> bool:
        """Open the freezer's control files once (on the hot path, an open costs more than
        the freeze itself); False without a freezer."""
        if self._freezer_fd >= 0:
            return True
        folder = self.folders.get("freezer")
        if folder is None:
            return False
        if self._version["freezer"] == 1:
            self._freezer_fd = os.open(folder / "freezer.state", os.O_RDWR | os.O_CLOEXEC)
        else:
            self._events_fd = os.open(folder / "cgroup.events", os.O_RDONLY | os.O_CLOEXEC)
            self._freezer_fd = os.open(folder / "cgroup.freeze", os.O_WRONLY | os.O_CLOEXEC)
        return True

    def _close_freezer(self) -> None:
        for fd in (self._freezer_fd, self._events_fd):
            if fd >= 0:
                os.close(fd)
        self._freezer_fd = self._events_fd = -1

    def frozen(self) -> bool:
        """Whether the groups are frozen (or freezing) now."""
        folder = self.folders.get("freezer")
        if folder is None:
            return False
        if self._version["freezer"] == 1:
            return _read(folder / "freezer.state").strip() in (b"FROZEN", b"FREEZING")
        return _read(folder / "cgroup.freeze").strip() == b"1"

    def oom_kills(self) -> int:
        """How many processes the kernel killed for going over the memory limit."""
        folder = self.folders.get("memory")
        if folder is None:
            return 0
        name = "memory.oom_control" if self._version["memory"] == 1 else "memory.events"
        try:
            for line in (folder / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def remove(self, timeout_s: float = 2.0) -> bool:
        """Remove the groups (they must be empty: kill the processes first); True if all went.

        A group stays busy for a moment after its last process is reaped, so retry.
        """
        self._close_freezer()
        deadline = time.monotonic() + timeout_s
        left = set(self.folders.values())
        while True:
            for folder in list(left):
                try:
                    folder.rmdir()
                except FileNotFoundError:
                    pass
                except OSError as exc:
                    if exc.errno != errno.EBUSY:
                        left.discard(folder)  # not ours to fix; keep going
                    continue
                left.discard(folder)
            if not left or time.monotonic() >= deadline:
                return not left
            time.sleep(0.005)

    def __repr__(self) -> str:
        return f"<BotCgroup {sorted(map(str, set(self.folders.values())))}>"


# -- finding the hierarchies ----------------------------------------------------------


def _memberships() -> dict[str, str]:
    """Controller -> our group's path in its hierarchy; ``""`` is the v2 hierarchy."""
    groups: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return groups
    for line in lines:
        hierarchy_id, controllers, path = line.split(":", 2)
        if hierarchy_id == "0" and not controllers:
            groups[""] = path
        for controller in controllers.split(","):
            if controller:
                groups[controller] = path
    return groups


def _cgroup_mounts() -> list[tuple[str, str, Path, set[str]]]:
    """(fstype, root inside the hierarchy, mount point, super options) of cgroup mounts."""
    mounts: list[tuple[str, str, Path, set[str]]] = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return mounts
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            mounts.append((tail[0], fields[3], Path(fields[4]), set(tail[2].split(","))))
    return mounts


def _inside(mount_point: Path, root: str, path: str) -> Path:
    # With a cgroup namespace the paths in /proc/self/cgroup are already relative to the
    # mount; otherwise strip the part of the hierarchy above the mount's root.
    if root != "/" and (path == root or path.startswith(root + "/")):
        path = path[len(root):]
    return mount_point / path.lstrip("/")


def _locate(controller: str, memberships: dict[str, str],
            mounts: list[tuple[str, str, Path, set[str]]]) -> Hierarchy:
    for fstype, root, point, options in mounts:
        if fstype == "cgroup" and controller in options and controller in memberships:
            return Hierarchy(controller, _inside(point, root, memberships[controller]), 1)
    for fstype, root, point, _ in mounts:
        if fstype == "cgroup2" and "" in memberships:
            parent = _inside(point, root, memberships[""])
            try:
                enabled = (parent / "cgroup.subtree_control").read_text().split()
            except OSError:
                continue
            if controller in enabled or controller == "freezer":  # v2: built into every group
                return Hierarchy(controller, parent, 2)
            available = (point / "cgroup.controllers").read_text().split()
            if controller in available:
                raise LookupError(f"cgroup v2 {controller}: not delegated to {parent} (enable it in "
                                  "the parent's cgroup.subtree_control and run the harness in a "
                                  "child group)")
    raise LookupError(f"cgroup {controller}: no hierarchy offers it")


def _probe(h: Hierarchy) -> None:
    """Make and remove a group, so an unusable hierarchy (read-only, no rights) shows now."""
    folder = h.parent / f"{_PREFIX}probe-{os.getpid()}"
    folder.mkdir(exist_ok=True)
    try:
        if not (folder / _limit_files(h.controller, h.version)[0]).exists():
            raise LookupError(f"cgroup {h.controller}: {folder} has no limit file")
    finally:
        folder.rmdir()


def _stale(parent: Path) -> list[Path]:
    try:
        entries = list(parent.iterdir())
    except OSError:
        return []
    stale = []
    for folder in entries:
        owner = folder.name[len(_PREFIX):].split("-", 1)[0]
        if folder.name.startswith(_PREFIX) and owner.isdigit() and not Path(f"/proc/{owner}").exists():
            stale.append(folder)
    return stale


def _remove_stale(parents: Iterable[Path]) -> None:
    """Remove the bot groups of harness processes that no longer exist, in all hierarchies
    at once: a frozen v1 group must be thawed before its processes can die of SIGKILL and
    leave the groups of the other hierarchies."""
    stale = [folder for parent in parents for folder in _stale(parent)]
    if not stale:
        return
    for folder in stale:
        for name, version in (("freezer.state", 1), ("cgroup.freeze", 2)):
            if (folder / name).exists():
                try:
                    _thaw(folder, version, 0.1)
                except OSError:
                    pass
    deadline = time.monotonic() + STALE_KILL_TIMEOUT_S
    left = stale
    while True:
        busy = []
        for folder in left:
            try:
                folder.rmdir()
            except FileNotFoundError:
                pass
            except OSError as exc:
                if exc.errno == errno.EBUSY:
                    busy.append(folder)
        left = busy
        if not left or time.monotonic() >= deadline:
            break
        for folder in left:  # bots of a dead harness: nobody will ever talk to them again
            for pid in _read(folder / "cgroup.procs").split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, PermissionError, ValueError):
                    pass
        time.sleep(0.01)
    if left:
        log.warning("stale bot cgroups still busy after %.0f s: %s", STALE_KILL_TIMEOUT_S,
                    ", ".join(map(str, left)))


def _read(path: Path) -> bytes:
    """A control file's content (b"" when it cannot be read: the group is gone)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return b""
    try:
        return os.read(fd, 4096)
    except OSError:
        return b""
    finally:
        os.close(fd)


def _write(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _thaw(folder: Path, version: int, timeout_s: float) -> bool:
    if version == 1:
        state = folder / "freezer.state"
        _write(state, b"THAWED")
        return _wait_for(lambda: _read(state) == b"THAWED\n", timeout_s)
    _write(folder / "cgroup.freeze", b"0")
    events = folder / "cgroup.events"
    return _wait_for(lambda: b"frozen 0" in _read(events), timeout_s)


def _wait_for(done: Callable[[], bool], timeout_s: float) -> bool:
    """Poll ``done`` until it holds or ``timeout_s`` passes: a few quick looks first (a
    freeze usually completes within microseconds), then short sleeps."""
    if done():
        return True
    if timeout_s <= 0:
        return False
    deadline = time.monotonic() + timeout_s
    pause = 0.0
    while True:
        time.sleep(pause)
        if done():
            return True
        if time.monotonic() >= deadline:
            return False
        pause = min(max(pause * 2, 0.00005), 0.002)


def _limit_files(controller: str, version: int) -> tuple[str, ...]:
    if version == 1:
        return {"memory": ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"),
                "pids": ("pids.max",),
                "cpu": ("cpu.cfs_quota_us", "cpu.cfs_period_us"), "freezer": ("freezer.state",)}[controller]
    return {"memory": ("memory.max", "memory.swap.max"), "pids": ("pids.max",),
            "cpu": ("cpu.max",), "freezer": ("cgroup.freeze",)}[controller]


def _write_limits(h: Hierarchy, folder: Path, memory_bytes: int, processes: int, cpus: float) -> None:
    quota = max(1000, int(cpus * CPU_PERIOD_US))
    if h.controller == "memory":
        (folder / _limit_files("memory", h.version)[0]).write_text(str(memory_bytes))
        try:  # no swap on top of the limit (the file is absent without swap accounting)
            (folder / _limit_files("memory", h.version)[1]).write_text(
                str(memory_bytes) if h.version == 1 else "0")
        except OSError:
            pass
    elif h.controller == "pids":
        (folder / "pids.max").write_text(str(processes))
    elif h.controller == "freezer":
        pass  # a new group starts thawed
    elif h.version == 1:
        (folder / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
        (folder / "cpu.cfs_quota_us").write_text(str(quota))
    else:
        (folder / "cpu.max").write_text(f"{quota} {CPU_PERIOD_US}")
