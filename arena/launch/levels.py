"""The sandbox levels, as ``--sandbox``, a tournament config's ``sandbox`` key and a stored
config spell them: the one definition (a small module, so that the config and the command
line name a level without importing the launcher)."""

from __future__ import annotations

import enum


class Sandbox(enum.StrEnum):
    """How bots are confined (docs/sandbox.md). A str: ``Sandbox.STRICT == "strict"``, and
    it is written to JSON and shown as its value."""

    NONE = "none"  # resource limits and process-tree control only
    STRICT = "strict"  # bubblewrap, seccomp, a uid and a cgroup per bot


LEVELS: tuple[str, ...] = tuple(level.value for level in Sandbox)
"""The levels' names, in the order ``--sandbox`` lists them."""

__all__ = ["LEVELS", "Sandbox"]
