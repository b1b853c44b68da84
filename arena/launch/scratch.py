"""Temporary folders the harness makes outside a results folder: each bot's HOME and
TMPDIR under ``none`` (which a ZeroMQ bridge's socket shares), the private build copies of
``strict``; and submit's staging copy inside an entrants folder (hidden: a dot first).

The process that makes one removes it when it is done; a process killed first (kill -9,
a worker killed by a bot that may signal it) cannot, and its folders stayed in /tmp, one
per bot per lost game. Each folder's name therefore holds the process id of its owner,
``arena-p<pid>-<label>-XXXXXXXX``, and :func:`remove_stale` removes the folders whose owner
is gone. A live owner's folders are never touched (another run on the same machine
keeps its own); a dead owner whose pid was reused keeps its folders until that pid ends.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from pathlib import Path

from arena.launch.proctree import kill_by_environment
from arena.untrusted import file_name, remove_tree

LABEL_CHARS = 16
"""Of a label (a bot's name) in a folder's name: a ZeroMQ bridge puts its socket in a bot's
folder, and a socket path has at most 107 bytes."""

_BATCH = 1000  # stale folders swept at a time (one /proc scan for their processes)
_OWNED = re.compile(r"arena-p(\d+)-")
_OWNED_HIDDEN = re.compile(r"\.arena-p(\d+)-")  # in a folder of bot folders: never a bot's name


def make_folder(label: str, parent: Path | None = None, *, hidden: bool = False) -> Path:
    """A new private folder (0700) in ``parent`` (by default the temporary folder), owned by
    this process; ``hidden``: its name begins with a dot (what lists bot folders skips it)."""
    prefix = f"{'.' if hidden else ''}arena-p{os.getpid()}-{file_name(label, limit=LABEL_CHARS)}-"
    return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))


def remove_stale(parent: Path | None = None, *, hidden: bool = False) -> int:
    """Remove the folders of :func:`make_folder` (in ``parent``, by default the temporary
    folder and /tmp) whose owner process is gone and that belong to our uid; returns how many.
    ``hidden``: only those made hidden (in an entrants folder, where ``arena-p1-x`` may be
    a bot's name: a red team's entrant of that name was swept away)."""
    if parent is None:  # and /tmp, where a ZeroMQ bridge puts its socket when TMPDIR is too long
        default = Path(tempfile.gettempdir())
        return sum(remove_stale(folder) for folder in {default, Path("/tmp")})
    owned = _OWNED_HIDDEN if hidden else _OWNED
    stale: list[str] = []
    removed = 0

    def remove() -> None:
        nonlocal removed
        if not hidden:
            # A bot of a harness process killed first (a worker, kill -9) may still run with the
            # folder as its TMPDIR: its root died with that process (PR_SET_PDEATHSIG), its
            # children did not, and under none nothing else would kill them.
            kill_by_environment({f"TMPDIR={path}".encode() for path in stale})
        for path in stale:
            remove_tree(path)
        removed += len(stale)
        stale.clear()

    try:
        entries = os.scandir(parent)
    except OSError:
        return 0
    with entries:  # read as it goes: a /tmp of 1.5 million names took 355 MB as a list
        for entry in entries:
            owner = owned.match(entry.name)
            if owner is None or _alive(int(owner.group(1))):
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid():
                stale.append(entry.path)
                if len(stale) >= _BATCH:
                    remove()
    if stale:
        remove()
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # someone else's process, or not a pid: not ours to judge
    return True
