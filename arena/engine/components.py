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
from functools import cache, lru_cache
from importlib import resources
from typing import Literal

import numpy as np

from arena.engine.moves import Move
from arena.errors import ConfigError

Edition = Literal["revised", "original"]
EDITIONS: tuple[Edition, ...] = ("revised", "original")
GameName = Literal["patchwork", "stack-n-stuff"]
GAME_EDITIONS: dict[str, tuple[str, ...]] = {"patchwork": EDITIONS, "stack-n-stuff": ("standard",)}
"""The games arena plays and their editions (the first one is the default): the one list the
CLI's --game choices, the tournament schema's ``game`` values, the protocol's ``ruleset``
type and every edition check come from (the shipped JSON schemas are checked against it)."""
GAMES: tuple[str, ...] = tuple(GAME_EDITIONS)
UNVERIFIED_NOTE = ("Stack'n Stuff components are UNVERIFIED: the official tile list is not published; "
                   "this is Patchwork Express data from one public source, used as a proxy.")

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
    json: np.ndarray = field(repr=False)  # object array of each move's compact JSON text, the same order


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
    texts = np.empty(len(masks), dtype=object)
    texts[:] = [move_text(move, cols) for move in moves]
    return PlacementTable(tuple(masks), tuple(buttons), index, low, high, moves, texts)


def move_text(move: Move, cols: int) -> str:
    """A move's JSON as the referee sends it (compact, keys in ``Move.to_json``'s order):
    encoded once per table, so a request's legal moves are joined, not encoded again."""
    return json.dumps(move.to_json(cols), separators=(",", ":"))


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
    bonus_square: int  # 0: no bonus tile
    bonus_points: int
    empty_penalty: int
    components: dict = field(repr=False, compare=False)
    late_patch_ids: tuple[int, ...] = ()  # join the circle, shuffled, behind the token ...
    late_join_at: int = 0  # ... as soon as only this many of the others are left in it
    special_removable: bool = False  # a special patch may be removed from play instead of placed
    take_every_special: bool = False  # a move takes every special space it passes, not at most one
    currency: str = "buttons"
    unverified: str = ""  # a warning to show wherever these components are used

    @property
    def initial_patch_ids(self) -> tuple[int, ...]:
        """The patches in the circle at setup (all but the late ones)."""
        late = set(self.late_patch_ids)
        return tuple(p.id for p in self.patches if p.id not in late)

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


def stack_n_stuff(components: dict | None = None) -> Ruleset:
    """The Stack'n Stuff ruleset from a component table (default: the shipped proxy data,
    unverified). A user's table (a file, a record, a stored config) is checked first by
    :func:`arena.schemas.components.check_components` (the engine does no checking of files:
    the callers that read a table check it first)."""
    data = components if components is not None else _load_json("stack-n-stuff.json")
    return _stack_n_stuff(data)


def _stack_n_stuff(data: dict) -> Ruleset:
    """Build the ruleset from a table that passed ``check_components`` (or the shipped one)."""
    patches: list[Patch] = []
    late: list[int] = []
    for group in ("stack_tiles", "stuff_tiles"):
        for tile in data[group]:
            patches.append(Patch(tile["id"], tuple(tile["shape"]), tile["cost"], tile["time"],
                                 tile["income"]))
            if group == "stuff_tiles":
                late.append(tile["id"])
    patches.sort(key=lambda p: p.id)
    board, time_board = data["board"], data["time_board"]
    return Ruleset(
        name="stack-n-stuff", edition="standard", rows=board["rows"], cols=board["cols"],
        starting_buttons=data["starting_coins"], final_space=time_board["final_space"],
        income_spaces=tuple(sorted(time_board["income_spaces"])),
        special_spaces=tuple(sorted(time_board["box_spaces"])),
        patches=tuple(patches), last_patch_id=data["smallest_stack_tile_id"], bonus_square=0,
        bonus_points=0, empty_penalty=2, components=data, late_patch_ids=tuple(late),
        late_join_at=data["stuff_tiles_join_when_stack_tiles_left"],
        special_removable=True, take_every_special=True, currency="coins",
        unverified=UNVERIFIED_NOTE if "UNVERIFIED" in str(data.get("about", ""))
        else "Stack'n Stuff components supplied by the user (not verified by patchwork-arena).")


def ruleset_for(game: str = "patchwork", edition: str | None = None,
                components: dict | None = None) -> Ruleset:
    """The ruleset of a game by name; ``components`` replaces the shipped component table
    (Stack'n Stuff only: Patchwork's components are verified and fixed)."""
    if game == "patchwork":
        if components is not None:
            raise ConfigError("custom components are supported for stack-n-stuff only")
        return patchwork(edition or "revised")
    if game == "stack-n-stuff":
        if edition not in (None, *GAME_EDITIONS[game]):
            raise ConfigError(f"stack-n-stuff has no edition {edition!r} (only 'standard')")
        if components is None:
            return _default_stack_n_stuff()
        return _custom_stack_n_stuff(json.dumps(components, sort_keys=True))
    raise ConfigError(f"unknown game {game!r}: expected one of {', '.join(GAMES)}")


@cache
def _default_stack_n_stuff() -> Ruleset:
    return stack_n_stuff()


@lru_cache(maxsize=16)
def _custom_stack_n_stuff(table: str) -> Ruleset:
    """A user's table (as canonical JSON text), checked and built once: the records of a
    tournament all carry the same table, and the schema check takes milliseconds."""
    return stack_n_stuff(json.loads(table))


def ruleset_from_wire(name: str, edition: str, table: dict) -> Ruleset:
    """Rebuild a ruleset from the protocol's component table (``new_game.components``,
    built by ``arena.protocol.messages.components``): how a bot gets custom components."""
    quilt, board = table["quilt_board"], table["time_board"]
    return Ruleset(
        name=name, edition=edition, rows=quilt["rows"], cols=quilt["cols"],
        starting_buttons=table["starting_buttons"], final_space=board["final_space"],
        income_spaces=tuple(board["button_income_spaces"]),
        special_spaces=tuple(board["special_patch_spaces"]),
        patches=tuple(Patch(p["id"], tuple(p["shape"]), p["buttons_cost"], p["time_cost"], p["income"])
                      for p in sorted(table["patches"], key=lambda p: p["id"])),
        last_patch_id=table["smallest_patch_id"], bonus_square=table["bonus_tile"]["square"],
        bonus_points=table["bonus_tile"]["points"], empty_penalty=table["empty_square_penalty"],
        components=table, late_patch_ids=tuple(table.get("late_patch_ids", ())),
        late_join_at=table.get("late_join_at", 0),
        special_removable=table.get("special_removable", False),
        take_every_special=table.get("take_every_special", False),
        currency=table.get("currency", "buttons"), unverified=table.get("unverified", ""))


@dataclass(frozen=True)
class Tables:
    """Precomputed lookups for one ruleset (built once, shared by every state)."""

    placements: tuple[PlacementTable, ...]
    special_moves: tuple[Move, ...]  # placing a 1x1 special patch on cell i
    bonus_masks: tuple[int, ...]
    income_crossed: tuple[int, ...]  # number of income spaces <= position
    special_texts: tuple[str, ...] = ()  # each special move's JSON text (move_text)


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
        special_texts=tuple(move_text(Move("special", None, 1 << i), cols) for i in range(rows * cols)),
        bonus_masks=tuple(bonus_masks) if square else (),
        income_crossed=tuple(crossed),
    )
