"""Control groups for sandboxed bots: memory, process-count and CPU limits, and membership.

Every sandboxed bot gets a group of its own in each hierarchy that offers a controller
we use (``memory``, ``pids``, ``cpu``), made inside the harness's own group there:
``<hierarchy>/<our group>/arena-<harness pid>-<n>``. The bot's first process joins it
before exec, so everything it ever starts is in it: the group is the one list of a
bot's processes that no ``setsid()``, double fork or ``exec`` with a fresh environment
can leave, and the kernel enforces the limits on the group as a whole.

Both cgroup v1 (a hierarchy per controller) and v2 (one hierarchy) are handled. On v2
a controller is usable only when it is enabled in our group's ``cgroup.subtree_control``
(a delegated group); we never move processes around to make that so. A controller that
cannot be used is reported with the reason (see :func:`detect`), and the sandbox says so
at start-up and falls back to per-process limits.
"""

from __future__ import annotations

import errno
import functools
import itertools
import os
import time
from dataclasses import dataclass
from pathlib import Path

CONTROLLERS = ("memory", "pids", "cpu")
CPU_PERIOD_US = 100_000
_PREFIX = "arena-"
_names = itertools.count(1)


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
            _remove_stale(hierarchy.parent)
    return CgroupSupport(tuple(found), tuple(missing))


def remove_stale_groups() -> None:
    """Remove the empty bot groups of harness processes that are gone (e.g. tournament
    workers that were killed before they could clean up)."""
    for parent in _parents():
        _remove_stale(parent)


def stale_groups() -> list[Path]:
    """The bot groups, in every usable hierarchy, whose harness process no longer exists."""
    return [folder for parent in _parents() for folder in _stale(parent)]


def _parents() -> list[Path]:
    """Our group in each usable hierarchy (once: on v2 the controllers share one)."""
    return sorted({hierarchy.parent for hierarchy in detect().hierarchies})


class BotCgroup:
    """One bot's groups (one folder per hierarchy; on v2 a single folder)."""

    def __init__(self, folders: dict[str, Path], version: dict[str, int]) -> None:
        self.folders = folders  # controller -> folder
        self._version = version

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
        group = cls(folders, version)
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
            if controller in enabled:
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


def _remove_stale(parent: Path) -> None:
    """Remove empty bot groups of harness processes that no longer exist."""
    for folder in _stale(parent):
        try:
            folder.rmdir()  # fails (EBUSY) if anything still runs in it
        except OSError:
            pass


def _limit_files(controller: str, version: int) -> tuple[str, ...]:
    if version == 1:
        return {"memory": ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"),
                "pids": ("pids.max",),
                "cpu": ("cpu.cfs_quota_us", "cpu.cfs_period_us")}[controller]
    return {"memory": ("memory.max", "memory.swap.max"), "pids": ("pids.max",),
            "cpu": ("cpu.max",)}[controller]


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
    elif h.version == 1:
        (folder / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
        (folder / "cpu.cfs_quota_us").write_text(str(quota))
    else:
        (folder / "cpu.max").write_text(f"{quota} {CPU_PERIOD_US}")
