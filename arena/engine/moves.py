"""Moves: immutable values with a JSON form any language can produce.

``{"action": "advance"}``, ``{"action": "buy", "patch": ID, "cells": [[row, col], ...]}``
and ``{"action": "special", "cells": [[row, col]]}``, and in Stack'n Stuff ``{"action": "remove"}``
(a box taken out of play instead of placed). Cells are 0-based and may come
in any order; internally a move carries the cells as a bitboard mask.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal, NamedTuple

from arena.errors import MoveFormatError

Action = Literal["advance", "buy", "special", "remove"]
ACTIONS: tuple[str, ...] = ("advance", "buy", "special", "remove")


class Move(NamedTuple):
    """A move. ``patch`` is set only for ``buy``; ``mask`` is the covered cells.

    A NamedTuple rather than a dataclass: move generation builds many of them and
    tuples are the cheapest immutable value Python has.
    """

    action: str
    patch: int | None = None
    mask: int = 0

    @classmethod
    def advance(cls) -> Move:
        return ADVANCE

    def cells(self, cols: int = 9) -> list[list[int]]:
        """The covered cells as sorted [row, col] pairs."""
        return mask_cells(self.mask, cols)

    def to_json(self, cols: int = 9) -> dict[str, Any]:
        if self.action in ("advance", "remove"):
            return {"action": self.action}
        if self.action == "buy":
            return {"action": "buy", "patch": self.patch, "cells": self.cells(cols)}
        return {"action": "special", "cells": self.cells(cols)}

    @classmethod
    def from_json(cls, data: Any, rows: int = 9, cols: int = 9) -> Move:
        """Parse the JSON form; raises MoveFormatError saying what is wrong with the shape.

        Only the form is checked here; whether the move is legal is the state's business.
        """
        if not isinstance(data, dict):
            raise MoveFormatError(f"a move must be a JSON object, got {_short(data)}")
        action = data.get("action")
        if action not in ACTIONS:
            raise MoveFormatError(
                f"unknown action {_short(action)}: expected advance, buy, special or remove")
        expected = _FIELDS[action]
        extra = data.keys() - expected - _RECORD_FIELDS
        if extra:
            raise MoveFormatError(f"{action} move has unexpected field(s): {', '.join(sorted(extra))}")
        missing = expected - data.keys()
        if missing:
            raise MoveFormatError(f"{action} move lacks field(s): {', '.join(sorted(missing))}")
        if action == "advance":
            return ADVANCE
        if action == "remove":
            return REMOVE
        patch = None
        if action == "buy":
            patch = data["patch"]
            if not isinstance(patch, int) or isinstance(patch, bool):
                raise MoveFormatError(f"buy move: patch must be an integer id, got {_short(patch)}")
        return cls(action, patch, _cells_to_mask(data["cells"], rows, cols))


def mask_cells(mask: int, cols: int = 9) -> list[list[int]]:
    """The set bits of a bitboard as sorted [row, col] pairs (lowest bit first)."""
    return [[row, col] for row, col in _cell_pairs(mask, cols)]


@lru_cache(maxsize=1 << 16)
def _cell_pairs(mask: int, cols: int) -> tuple[tuple[int, int], ...]:
    # Cached: the same placements are turned into JSON at every move of a refereed game.
    out = []
    while mask:
        low = mask & -mask
        bit = low.bit_length() - 1
        out.append((bit // cols, bit % cols))
        mask ^= low
    return tuple(out)


def _cells_to_mask(cells: Any, rows: int, cols: int) -> int:
    if not isinstance(cells, list) or not cells:
        raise MoveFormatError(f"cells must be a non-empty list of [row, col] pairs, got {_short(cells)}")
    mask = 0
    for cell in cells:
        if type(cell) is not list or len(cell) != 2 or type(cell[0]) is not int or type(cell[1]) is not int:
            raise MoveFormatError(f"a cell must be a [row, col] pair of integers, got {_short(cell)}")
        row, col = cell
        if not (0 <= row < rows and 0 <= col < cols):
            raise CellsOffQuiltError(f"cell [{row}, {col}] is off the {rows}x{cols} quilt: "
                                     f"{cell_convention(rows, cols)}")
        bit = 1 << (row * cols + col)
        if mask & bit:
            raise MoveFormatError(f"cell [{row}, {col}] is listed twice")
        mask |= bit
    return mask


class CellsOffQuiltError(MoveFormatError):
    """A move's cell is off the quilt; :meth:`GameState.apply_json` adds how many cells the
    patch covers."""


def cell_convention(rows: int, cols: int) -> str:
    """How cells are written, told with a cell off the quilt or cells that are not the
    patch's shape: a bot counting from 1, or writing [col, row], gets one of these."""
    return f"cells are [row, col], 0-based, row 0 at the top (rows 0-{rows - 1}, columns 0-{cols - 1})"


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


ADVANCE = Move("advance")
REMOVE = Move("remove")  # Stack'n Stuff: take a box out of play instead of placing it
_FIELDS = {"advance": frozenset({"action"}), "remove": frozenset({"action"}),
           "buy": frozenset({"action", "patch", "cells"}), "special": frozenset({"action", "cells"})}
_RECORD_FIELDS = frozenset({"player", "time_ms", "info"})  # what a game record adds to a move
