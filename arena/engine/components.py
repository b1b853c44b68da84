"""Game components as data, and the placement tables built from them once.

A quilt is a Python int used as a bitboard: cell (row, col) is bit ``row * cols + col``.
Every patch gets the list of all its distinct placements (orientation x offset) as
masks, so "does it fit" is ``quilt & mask == 0``. The tables are mirrored into two
numpy uint64 arrays (low 64 bits, the rest) so move generation filters hundreds of
placements in a few vectorised operations.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Literal

import numpy as np

from arena.engine.moves import Move
from arena.errors import ConfigError

Edition = Literal["revised", "original"]
EDITIONS: tuple[Edition, ...] = ("revised", "original")

_LOW64 = (1 << 64) - 1


@dataclass(frozen=True)
class Patch:
    """One patch: its canonical id, shape and price. ``shape`` rows use '#' for a cell
    and 'o' for a cell carrying a button, '.' for a hole."""

    id: int
    shape: tuple[str, ...]
    buttons_cost: int
    time_cost: int
    income: int

    @property
    def size(self) -> int:
        return sum(row.count("#") + row.count("o") for row in self.shape)


def _orientations(shape: tuple[str, ...]) -> list[tuple[str, ...]]:
    """All distinct rotations and mirror images of a shape (up to 8)."""
    seen: list[tuple[str, ...]] = []
    current = shape
    for _ in range(2):
        for _ in range(4):
            if current not in seen:
                seen.append(current)
            current = tuple("".join(row[c] for row in reversed(current)) for c in range(len(current[0])))
        current = tuple(row[::-1] for row in current)
    return seen


@dataclass(frozen=True)
class PlacementTable:
    """Every distinct placement of one patch on an empty board.

    ``masks[i]`` covers the cells, ``button_masks[i]`` the button cells of the first
    orientation that produced that cell set (a symmetric patch placed on the same
    cells in two orientations is one move; where its buttons are drawn is cosmetic).
    """

    masks: tuple[int, ...]
    button_masks: tuple[int, ...]
    index: dict[int, int] = field(repr=False)
    low: np.ndarray = field(repr=False)
    high: np.ndarray = field(repr=False)
    moves: np.ndarray = field(repr=False)  # object array of the prebuilt buy Moves


def _placements(patch_id: int, shape: tuple[str, ...], rows: int, cols: int) -> PlacementTable:
    masks: list[int] = []
    buttons: list[int] = []
    index: dict[int, int] = {}
    for orient in _orientations(shape):
        height, width = len(orient), len(orient[0])
        cells = [(r, c, ch) for r, row in enumerate(orient) for c, ch in enumerate(row) if ch != "."]
        for top in range(rows - height + 1):
            for left in range(cols - width + 1):
                mask = button_mask = 0
                for r, c, ch in cells:
                    bit = 1 << ((top + r) * cols + left + c)
                    mask |= bit
                    if ch == "o":
                        button_mask |= bit
                if mask not in index:
                    index[mask] = len(masks)
                    masks.append(mask)
                    buttons.append(button_mask)
    low = np.array([m & _LOW64 for m in masks], dtype=np.uint64)
    high = np.array([m >> 64 for m in masks], dtype=np.uint64)
    moves = np.empty(len(masks), dtype=object)
    moves[:] = [Move("buy", patch_id, m) for m in masks]
    return PlacementTable(tuple(masks), tuple(buttons), index, low, high, moves)


@dataclass(frozen=True)
class Ruleset:
    """Everything that differs between games and editions, as data."""

    name: str
    edition: str
    rows: int
    cols: int
    starting_buttons: int
    final_space: int
    income_spaces: tuple[int, ...]
    special_spaces: tuple[int, ...]
    patches: tuple[Patch, ...]
    last_patch_id: int
    bonus_square: int
    bonus_points: int
    empty_penalty: int
    components: dict = field(repr=False, compare=False)

    @property
    def cells(self) -> int:
        return self.rows * self.cols

    @property
    def full_mask(self) -> int:
        return (1 << self.cells) - 1

    def patch(self, patch_id: int) -> Patch:
        return self.patches[patch_id]


def _load_json(name: str) -> dict:
    text = resources.files("arena.engine").joinpath("data", name).read_text(encoding="utf-8")
    data: dict = json.loads(text)
    return data


@cache
def patchwork(edition: str = "revised") -> Ruleset:
    """The Patchwork ruleset for an edition ('revised', the default, or 'original')."""
    if edition not in EDITIONS:
        raise ConfigError(f"unknown edition {edition!r}: expected one of {', '.join(EDITIONS)}")
    data = _load_json("patchwork.json")
    board = data["time_board"]
    patches = tuple(
        Patch(p["id"], tuple(p["shape"]), p["buttons_cost"], p["time_cost"], p["income"])
        for p in sorted(data["patches"], key=lambda p: p["id"])
    )
    assert [p.id for p in patches] == list(range(len(patches))), "patch ids must be 0..n-1"
    return Ruleset(
        name="patchwork",
        edition=edition,
        rows=data["quilt_board"]["rows"],
        cols=data["quilt_board"]["cols"],
        starting_buttons=data["starting_buttons"],
        final_space=board["final_space"],
        income_spaces=tuple(board["button_income_spaces"]),
        special_spaces=tuple(board["special_patch_spaces"][edition]),
        patches=patches,
        last_patch_id=data["smallest_patch_id"],
        bonus_square=data["bonus_tile"]["square"],
        bonus_points=data["bonus_tile"]["points"],
        empty_penalty=data["empty_square_penalty"],
        components=data,
    )


@dataclass(frozen=True)
class Tables:
    """Precomputed lookups for one ruleset (built once, shared by every state)."""

    placements: tuple[PlacementTable, ...]
    special_moves: tuple[Move, ...]  # placing a 1x1 special patch on cell i
    bonus_masks: tuple[int, ...]
    income_crossed: tuple[int, ...]  # number of income spaces <= position


@cache
def tables(ruleset: Ruleset) -> Tables:
    rows, cols = ruleset.rows, ruleset.cols
    square = ruleset.bonus_square
    bonus_masks = []
    for top in range(rows - square + 1):
        for left in range(cols - square + 1):
            mask = 0
            for r in range(square):
                for c in range(square):
                    mask |= 1 << ((top + r) * cols + left + c)
            bonus_masks.append(mask)
    crossed = [0] * (ruleset.final_space + 1)
    for pos in range(1, ruleset.final_space + 1):
        crossed[pos] = crossed[pos - 1] + (pos in ruleset.income_spaces)
    return Tables(
        placements=tuple(_placements(p.id, p.shape, rows, cols) for p in ruleset.patches),
        special_moves=tuple(Move("special", None, 1 << i) for i in range(rows * cols)),
        bonus_masks=tuple(bonus_masks) if square else (),
        income_crossed=tuple(crossed),
    )
