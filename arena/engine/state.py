"""The game state: mutable, cheap to clone, pure (no I/O, no clocks, no global RNG).

Rules follow docs/RULES.md; the numbers in comments refer to its numbered Patchwork rules,
"SnS" to its Stack'n Stuff section.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import Enum
from functools import cache
from typing import Any

import numpy as np

from arena.engine.components import Ruleset, Tables, move_text, patchwork, ruleset_for, tables
from arena.engine.moves import ADVANCE, REMOVE, CellsOffQuiltError, Move, cell_convention, mask_cells
from arena.errors import ArenaError, IllegalMoveError, MoveFormatError

MAIN = "main"
SPECIAL = "special"

_LOW64 = (1 << 64) - 1
_ADVANCE_TEXT = move_text(ADVANCE, 9)  # no cells: the same text on every board
_REMOVE_TEXT = move_text(REMOVE, 9)


class Termination(Enum):
    """How a game ended. NORMAL is "by the rules"; the rest are cut off from outside."""

    NORMAL = "normal"
    TIMEOUT = "timeout"
    CRASH = "crash"
    MALFORMED = "malformed"
    SCHEMA = "schema"
    ILLEGAL_MOVE = "illegal_move"
    OVERSIZE = "oversize"
    PROTOCOL = "protocol"
    START_FAILURE = "start_failure"
    INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class Outcome:
    termination: Termination
    winner: int
    scores: tuple[int, int]


class GameState:
    """A Patchwork position.

    Create with :meth:`new`; ask :meth:`to_move`, :meth:`decision`, :meth:`legal_moves`;
    change with :meth:`apply` (checked, raises :class:`IllegalMoveError` saying why) or
    :meth:`apply_unchecked` (fast, for search: the move must come from legal_moves).
    """

    __slots__ = (
        "ruleset", "_tables", "seed", "first_player", "ply", "positions", "buttons", "income",
        "quilts", "button_cells", "placed", "circle", "special_spaces_left", "bonus_owner",
        "on_top", "first_to_finish", "pending_special", "specials_pending", "reserve", "_placed_json",
        "_rows_json",
    )

    ruleset: Ruleset
    _tables: Tables
    _placed_json: tuple[list[tuple[tuple[int | None, int], dict[str, Any]]], ...]
    _rows_json: list[tuple[int, int, tuple[str, ...]] | None]
    seed: int | None
    first_player: int
    ply: int
    positions: list[int]
    buttons: list[int]
    income: list[int]
    quilts: list[int]
    button_cells: list[int]
    placed: list[list[tuple[int | None, int]]]
    circle: list[int]
    special_spaces_left: list[int]
    bonus_owner: int | None
    on_top: int
    first_to_finish: int | None
    pending_special: int | None  # the seat that must place (or remove) a special patch / box
    specials_pending: int  # how many it still has to decide, this one included (SnS: > 1 possible)
    reserve: list[int]  # late patches (Stack'n Stuff) waiting to join the circle, in order

    # ---------------------------------------------------------------- creation
    @classmethod
    def new(cls, seed: int, edition: str = "revised", first_player: int = 0,
            ruleset: Ruleset | None = None, hidden_seed: int | None = None) -> GameState:
        """A new game: the circle shuffled from ``seed`` with the smallest patch last (6).

        The order in which late patches (Stack'n Stuff) join is drawn from ``hidden_seed``:
        a refereed game passes one derived from a secret no bot sees, since ``seed`` is public
        (guessable) and so must not decide what the players may not know. Without it the
        order comes from ``seed`` (random games, the engine's own tests, old records)."""
        rules = ruleset or patchwork(edition)
        if first_player not in (0, 1):
            raise ValueError(f"first_player must be 0 or 1, got {first_player!r}")
        rng = random.Random(seed)
        ids = [pid for pid in rules.initial_patch_ids if pid != rules.last_patch_id]
        rng.shuffle(ids)
        late = list(rules.late_patch_ids)
        # their order is fixed at setup (the visible circle is shuffled first, so it is the
        # same whichever seed draws the hidden order)
        (rng if hidden_seed is None else random.Random(hidden_seed)).shuffle(late)
        return cls.from_circle(ids + [rules.last_patch_id], first_player=first_player,
                               ruleset=rules, seed=seed, reserve=late)

    @classmethod
    def from_circle(cls, circle: list[int], first_player: int = 0, edition: str = "revised",
                    ruleset: Ruleset | None = None, seed: int | None = None,
                    reserve: list[int] | None = None) -> GameState:
        """A new game with a given circle (clockwise from the neutral token) and, for
        Stack'n Stuff, the order in which the late patches will join it."""
        rules = ruleset or patchwork(edition)
        reserve = list(reserve or [])
        if sorted(circle) != sorted(rules.initial_patch_ids):
            raise ValueError("the circle must hold every patch id of the setup exactly once")
        if sorted(reserve) != sorted(rules.late_patch_ids):
            raise ValueError("the reserve must hold every late patch id exactly once")
        state = cls.__new__(cls)
        state.ruleset = rules
        state._tables = tables(rules)
        state.seed = seed
        state.first_player = first_player
        state.ply = 0
        state.positions = [0, 0]
        state.buttons = [rules.starting_buttons] * 2
        state.income = [0, 0]
        state.quilts = [0, 0]
        state.button_cells = [0, 0]
        state.placed = [[], []]
        state.circle = list(circle)
        state.special_spaces_left = list(rules.special_spaces)
        state.bonus_owner = None
        state.on_top = first_player  # 7: at the start the starting player moves first
        state.first_to_finish = None
        state.pending_special = None
        state.specials_pending = 0
        state.reserve = reserve
        state._placed_json = ([], [])
        state._rows_json = [None, None]
        return state

    def clone(self) -> GameState:
        other = GameState.__new__(GameState)
        other.ruleset = self.ruleset
        other._tables = self._tables
        other.seed = self.seed
        other.first_player = self.first_player
        other.ply = self.ply
        other.positions = self.positions[:]
        other.buttons = self.buttons[:]
        other.income = self.income[:]
        other.quilts = self.quilts[:]
        other.button_cells = self.button_cells[:]
        other.placed = [self.placed[0][:], self.placed[1][:]]
        other.circle = self.circle[:]
        other.special_spaces_left = self.special_spaces_left[:]
        other.bonus_owner = self.bonus_owner
        other.on_top = self.on_top
        other.first_to_finish = self.first_to_finish
        other.pending_special = self.pending_special
        other.specials_pending = self.specials_pending
        other.reserve = self.reserve[:]
        other._placed_json = ([], [])  # caches of to_json(), rebuilt on demand
        other._rows_json = [None, None]
        return other

    # ---------------------------------------------------------------- queries
    def is_terminal(self) -> bool:
        """10: the game ends when both tokens are on the final space (and nothing is pending)."""
        final = self.ruleset.final_space
        return (self.pending_special is None
                and self.positions[0] == final and self.positions[1] == final)

    def to_move(self) -> int | None:
        """The seat that decides next, or None when the game is over (7, 8)."""
        if self.pending_special is not None:
            return self.pending_special
        p0, p1 = self.positions
        if p0 < p1:
            return 0
        if p1 < p0:
            return 1
        if p0 == self.ruleset.final_space:
            return None
        return self.on_top

    def decision(self) -> str | None:
        """'special' while a special patch waits to be placed, 'main' otherwise, None at the end."""
        if self.pending_special is not None:
            return SPECIAL
        return None if self.is_terminal() else MAIN

    def choices(self) -> list[int]:
        """The patch ids that may be bought now: the (up to) 3 after the neutral token (5)."""
        return self.circle[:3]

    def empty_cells(self, player: int) -> int:
        return self.ruleset.cells - self.quilts[player].bit_count()

    def score(self, player: int) -> int:
        """10: buttons + bonus - 2 per empty square (may be negative)."""
        rules = self.ruleset
        bonus = rules.bonus_points if self.bonus_owner == player else 0
        return self.buttons[player] + bonus - rules.empty_penalty * self.empty_cells(player)

    def scores(self) -> tuple[int, int]:
        return (self.score(0), self.score(1))

    def winner(self) -> int | None:
        """The winner of a finished game: higher score, ties to the first to finish (10)."""
        if not self.is_terminal():
            return None
        s0, s1 = self.scores()
        if s0 != s1:
            return 0 if s0 > s1 else 1
        assert self.first_to_finish is not None
        return self.first_to_finish

    def outcome(self) -> Outcome | None:
        winner = self.winner()
        if winner is None:
            return None
        return Outcome(Termination.NORMAL, winner, self.scores())

    def legal_moves(self) -> list[Move]:
        """Every legal move of the current decision (empty when the game is over)."""
        return self._legal(False)

    def legal_moves_text(self) -> list[str]:
        """The JSON text of every legal move, in :meth:`legal_moves`' order (encoded once per
        ruleset: a request with 1,345 legal moves is joined, not encoded, on every move)."""
        return self._legal(True)

    def _legal(self, texts: bool) -> list[Any]:
        """The legal moves, or their texts: one walk of the placement tables for both."""
        player = self.to_move()
        if player is None:
            return []
        quilt = self.quilts[player]
        if self.pending_special is not None:
            specials = self._tables.special_texts if texts else self._tables.special_moves
            moves = [specials[i] for i in range(self.ruleset.cells) if not quilt >> i & 1]
            if self.ruleset.special_removable:
                moves.append(_REMOVE_TEXT if texts else REMOVE)
            return moves
        moves = [_ADVANCE_TEXT if texts else ADVANCE]
        buttons = self.buttons[player]
        patches = self.ruleset.patches
        q_low = np.uint64(quilt & _LOW64)
        q_high = np.uint64(quilt >> 64)
        for patch_id in self.circle[:3]:
            if patches[patch_id].buttons_cost > buttons:
                continue
            table = self._tables.placements[patch_id]
            column = table.json if texts else table.moves
            moves.extend(column[((table.low & q_low) | (table.high & q_high)) == 0].tolist())
        return moves

    def legal_move_count(self) -> int:
        return len(self.legal_moves())

    # ---------------------------------------------------------------- changes
    def apply(self, move: Move) -> None:
        """Apply a move after checking it; raises IllegalMoveError with the reason."""
        reason = self.why_illegal(move)
        if reason is not None:
            raise IllegalMoveError(reason)
        self.apply_unchecked(move)

    def apply_json(self, data: Any) -> Move:
        """Parse and apply a move in its JSON form (checked). Returns the parsed move."""
        try:
            move = Move.from_json(data, self.ruleset.rows, self.ruleset.cols)
        except CellsOffQuiltError as exc:
            raise CellsOffQuiltError(f"{exc}; {self._cells_covered(data)}") from None
        self.apply(move)
        return move

    def _cells_covered(self, data: dict[str, Any]) -> str:
        """How many cells the patch of a buy (or a special) with a cell off the quilt covers."""
        if data.get("action") == "special":
            return "a special patch covers 1 cell"
        patch_id = data.get("patch")
        if isinstance(patch_id, int) and 0 <= patch_id < len(self.ruleset.patches):
            return f"patch {patch_id} covers {self.ruleset.patch(patch_id).size} cells"
        return f"there is no patch with id {patch_id!r}"

    def why_illegal(self, move: Move) -> str | None:
        """None if ``move`` is legal here, else a sentence saying why not."""
        player = self.to_move()
        if player is None:
            return "the game is over"
        rules = self.ruleset
        if not isinstance(move, Move):
            return f"not a Move: {move!r}"
        if move.mask & ~rules.full_mask:
            return "the move covers cells off the quilt"
        quilt = self.quilts[player]
        if self.pending_special is not None:
            if move.action == "remove":
                return None if rules.special_removable else (
                    f"player {player} must place the special patch it just took: only a Stack'n Stuff "
                    "box may be removed")
            if move.action != "special":
                return (f"player {player} must first place the special patch it just took, "
                        f"not {move.action}")
            if move.mask.bit_count() != 1:
                return f"a special patch covers exactly 1 cell, not {move.mask.bit_count()}"
            if quilt & move.mask:
                return f"cell {_cell_text(move, rules.cols)} is already covered"
            return None
        if move.action == "remove":
            if not rules.special_removable:
                return "remove is a Stack'n Stuff action: Patchwork has no boxes to remove"
            return (f"no box is waiting: remove is only allowed right after player {player} "
                    "reaches or passes a box space, instead of placing that box")
        if move.action == "special":
            return ("no box is waiting to be placed" if rules.special_removable
                    else "no special patch is waiting to be placed")
        if move.action == "advance":
            return None
        if move.action != "buy":
            return f"unknown action {move.action!r}"
        if move.patch is None or not 0 <= move.patch < len(rules.patches):
            return f"there is no patch with id {move.patch!r}"
        choices = self.choices()
        if move.patch not in choices:
            return (f"patch {move.patch} is not one of the next choices "
                    f"{', '.join(map(str, choices))}")
        patch = rules.patch(move.patch)
        if patch.buttons_cost > self.buttons[player]:
            return (f"patch {move.patch} costs {patch.buttons_cost} buttons but player {player} "
                    f"has {self.buttons[player]}")
        if move.mask not in self._tables.placements[move.patch].index:
            return (f"cells {_cell_text(move, rules.cols)} are not a placement of patch "
                    f"{move.patch} (shape {'/'.join(patch.shape)}, {patch.size} cells; "
                    f"{move.mask.bit_count()} given): {cell_convention(rules.rows, rules.cols)}")
        if quilt & move.mask:
            overlap = Move("buy", move.patch, quilt & move.mask)
            return f"patch {move.patch} would overlap covered cells {_cell_text(overlap, rules.cols)}"
        return None

    def apply_unchecked(self, move: Move) -> None:
        """Apply a move from :meth:`legal_moves` without checking it (fast path for search)."""
        player = self.pending_special if self.pending_special is not None else self.to_move()
        assert player is not None
        self.ply += 1
        action = move.action
        if action in ("special", "remove"):
            if action == "special":
                self._place(player, None, move.mask, 0)
            self.specials_pending -= 1
            if self.specials_pending <= 0 or self.quilts[player] == self.ruleset.full_mask:
                self.pending_special = None  # SnS: boxes left over for a full board are discarded
                self.specials_pending = 0
            return
        if action == "advance":
            # 4: move to just in front of the opponent, 1 button per space actually moved.
            target = min(self.positions[1 - player] + 1, self.ruleset.final_space)
            self.buttons[player] += target - self.positions[player]
            self._move_token(player, target)
            return
        patch_id = move.patch
        assert patch_id is not None
        patch = self.ruleset.patches[patch_id]
        # 5: the neutral token moves to the bought patch; the next choices follow it.
        index = self.circle.index(patch_id)
        self.circle = self.circle[index + 1:] + self.circle[:index]
        if self.reserve and len(self.circle) <= self.ruleset.late_join_at:
            self.circle.extend(self.reserve)  # they join directly behind the neutral token
            self.reserve = []
        self.buttons[player] -= patch.buttons_cost
        table = self._tables.placements[patch_id]
        buttons_mask = table.button_masks[table.index[move.mask]]
        self._place(player, patch_id, move.mask, buttons_mask)
        self.income[player] += patch.income  # 3: placing comes before moving
        self._move_token(player, self.positions[player] + patch.time_cost)

    def _place(self, player: int, patch_id: int | None, mask: int, buttons_mask: int) -> None:
        quilt = self.quilts[player] | mask
        self.quilts[player] = quilt
        self.button_cells[player] |= buttons_mask
        self.placed[player].append((patch_id, mask))
        if self.bonus_owner is None:  # 9: checked after every placement, specials included
            for square in self._tables.bonus_masks:
                if quilt & square == square:
                    self.bonus_owner = player
                    break

    def _move_token(self, player: int, target: int) -> None:
        rules = self.ruleset
        start = self.positions[player]
        target = min(target, rules.final_space)
        self.positions[player] = target
        self.on_top = player  # 7: the token that arrives last is on top
        # 2: events fire for every marked space m with start < m <= target.
        crossed = self._tables.income_crossed
        self.buttons[player] += (crossed[target] - crossed[start]) * self.income[player]
        taken = 0
        for space in self.special_spaces_left[:]:  # kept sorted, so the first crossed comes first
            if space > target:
                break
            if start < space:
                self.special_spaces_left.remove(space)
                taken += 1
                if not rules.take_every_special:
                    break  # 8: at most one per move (SnS: every box passed, one decision each)
        if taken and self.quilts[player] != rules.full_mask:
            self.pending_special = player
            self.specials_pending = taken
        if target == rules.final_space and self.first_to_finish is None:
            self.first_to_finish = player

    # ---------------------------------------------------------------- JSON
    def to_json(self) -> dict[str, Any]:
        """The complete state as JSON-ready data (also the protocol's ``state`` object)."""
        rules = self.ruleset
        return {
            "ruleset": rules.name,
            "edition": rules.edition,
            "seed": self.seed,
            "first_player": self.first_player,
            "ply": self.ply,
            "to_move": self.to_move(),
            "decision": self.decision(),
            "positions": self.positions[:],
            "buttons": self.buttons[:],
            "income": self.income[:],
            "quilts": [self.quilt_rows(p) for p in (0, 1)],
            "placed": [self._placed_entries(p) for p in (0, 1)],
            "circle": self.circle[:],
            "special_spaces_left": self.special_spaces_left[:],
            "bonus_owner": self.bonus_owner,
            "on_top": self.on_top,
            "first_to_finish": self.first_to_finish,
            **({"reserve": self.reserve[:]} if rules.late_patch_ids else {}),
            **({"specials_pending": self.specials_pending} if rules.take_every_special else {}),
        }

    def public_json(self) -> dict[str, Any]:
        """The state as a player may see it (the protocol's ``state``): :meth:`to_json`, but in
        a game with late patches (Stack'n Stuff) the order in which they will join the circle
        is a chance event still to come, so the ``reserve`` is sent sorted by id and the
        ``seed`` (which would reproduce the order) is null. Records keep both."""
        data = self.to_json()
        if self.ruleset.late_patch_ids:
            data["seed"] = None
            data["reserve"] = sorted(self.reserve)
        return data

    def _placed_entries(self, player: int) -> list[dict[str, Any]]:
        """The JSON of a player's placed patches. Placements only ever get appended, so the
        entries are cached and each call converts only the new ones (the referee serialises
        the state at every move). The cell lists are shared between calls: read-only."""
        placed, cache = self.placed[player], self._placed_json[player]
        if len(cache) > len(placed) or (cache and cache[-1][0] != placed[len(cache) - 1]):
            cache.clear()  # the placements were replaced from outside: start again
        cols = self.ruleset.cols
        for pid, mask in placed[len(cache):]:
            cache.append(((pid, mask), {"patch": pid, "cells": mask_cells(mask, cols)}))
        return [dict(entry) for _, entry in cache]

    def quilt_rows(self, player: int) -> list[str]:
        """The quilt as strings: '.' empty, '#' covered, 'o' a covered cell with a button.

        A quilt changes on few moves, and the referee serialises the state at every move:
        the rows of the last quilt seen are kept, keyed by the quilt's bits."""
        quilt, buttons = self.quilts[player], self.button_cells[player]
        cached = self._rows_json[player]
        if cached is None or cached[0] != quilt or cached[1] != buttons:
            cols = self.ruleset.cols
            row_mask = (1 << cols) - 1
            cached = (quilt, buttons, tuple(_row_text(quilt >> shift & row_mask, buttons >> shift & row_mask,
                                                      cols) for shift in range(0, self.ruleset.cells, cols)))
            self._rows_json[player] = cached
        return list(cached[2])

    @classmethod
    def from_json(cls, data: dict[str, Any], ruleset: Ruleset | None = None) -> GameState:
        """Rebuild a state from :meth:`to_json` output (``ruleset`` for custom components).
        Raises MoveFormatError or ValueError when the data is inconsistent."""
        if ruleset is None:
            try:
                rules = ruleset_for(str(data.get("ruleset")), data.get("edition"))
            except ArenaError as exc:
                raise ValueError(str(exc)) from None
        else:
            rules = ruleset
        state = cls.from_circle(list(rules.initial_patch_ids), data["first_player"],
                                ruleset=rules, seed=data.get("seed"), reserve=list(rules.late_patch_ids))
        state.circle = [int(i) for i in data["circle"]]
        if "reserve" in data:
            state.reserve = [int(i) for i in data["reserve"]]
        else:  # a state without it: the late patches wait unless one is already in play
            seen = set(state.circle) | {e["patch"] for side in data["placed"] for e in side}
            state.reserve = [] if seen & set(rules.late_patch_ids) else sorted(rules.late_patch_ids)
        state.ply = int(data["ply"])
        state.positions = [int(v) for v in data["positions"]]
        state.buttons = [int(v) for v in data["buttons"]]
        state.income = [int(v) for v in data["income"]]
        tabs = state._tables
        for player in (0, 1):
            for entry in data["placed"][player]:
                mask = _cells_mask(entry["cells"], rules.rows, rules.cols)
                pid = entry["patch"]
                buttons_mask = 0
                if pid is not None:
                    table = tabs.placements[pid]
                    if mask not in table.index:
                        raise ValueError(f"player {player}: cells are not a placement of patch {pid}")
                    buttons_mask = table.button_masks[table.index[mask]]
                if state.quilts[player] & mask:
                    raise ValueError(f"player {player}: placed patches overlap")
                state.quilts[player] |= mask
                state.button_cells[player] |= buttons_mask
                state.placed[player].append((pid, mask))
        state.special_spaces_left = [int(v) for v in data["special_spaces_left"]]
        state.bonus_owner = data["bonus_owner"]
        state.on_top = int(data["on_top"])
        state.first_to_finish = data["first_to_finish"]
        state.pending_special = data["to_move"] if data["decision"] == SPECIAL else None
        state.specials_pending = (int(data.get("specials_pending", 1)) if state.pending_special is not None
                                  else 0)
        return state

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GameState) and self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"<GameState ply={self.ply} to_move={self.to_move()} decision={self.decision()} "
                f"positions={self.positions} buttons={self.buttons}>")


def _cells_mask(cells: list[list[int]], rows: int, cols: int) -> int:
    """A bitboard from [row, col] pairs; ValueError if a cell is off the board or repeated."""
    mask = 0
    for row, col in cells:
        if not (0 <= row < rows and 0 <= col < cols):
            raise ValueError(f"cell [{row}, {col}] is off the {rows}x{cols} quilt")
        mask |= 1 << (row * cols + col)
    if mask.bit_count() != len(cells):
        raise ValueError("a cell is listed twice")
    return mask


@cache
def _row_text(covered: int, buttons: int, cols: int) -> str:
    """One quilt row as text; cached because the same rows recur all game long."""
    return "".join("o" if buttons >> c & 1 else "#" if covered >> c & 1 else "."
                   for c in range(cols))


def _cell_text(move: Move, cols: int) -> str:
    return " ".join(f"[{r}, {c}]" for r, c in move.cells(cols))


__all__ = ["GameState", "MAIN", "SPECIAL", "Outcome", "Termination", "MoveFormatError"]
