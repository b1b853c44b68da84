"""Cheap knowledge for the search: where to put a patch, which patch to buy, who is ahead.

Three pieces, each a few microseconds, because the search calls them thousands of
times per move:

- **Placement**: of all the places a patch fits, prefer the one whose cells touch the
  most filled cells and quilt edges (greedy's rule, which keeps the quilt compact and
  its holes few). Every placement's neighbours in the four directions are precomputed
  as bitboards, so the touching count of all placements of a patch is one vectorised
  popcount (``numpy.bitwise_count``) instead of a loop over cells.
- **Purchase** (the playout policy): greedy's patch value, what a patch pays back per
  space of time it costs, against advancing's one button per space.
- **Evaluation**: the final score each player is heading for with no further
  purchases (buttons, income still to come, bonus, minus the empty squares), plus a
  value for the time each has left to use.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from arena.engine import GameState, Move
from arena.engine.components import Ruleset, tables

_LOW64 = (1 << 64) - 1
_U64 = np.uint64


@dataclass(frozen=True)
class PlacementFeatures:
    """The placements of one piece (a patch, or the 1x1 special patch), set up so that
    scoring all of them against a quilt is three numpy operations.

    Row d of ``parts`` (one column per placement) holds, for directions d = 0..3, the
    low and high words of the cells next to the placement in that direction; rows 8-9
    the placement itself; row 10 one bit per side of it on the quilt's border. Masked
    with the quilt (row 10 with all ones) and popcounted, then weighted by ``weights``:
    touching sides, minus a large amount if it overlaps the quilt.
    """

    parts: np.ndarray  # uint64, shape (11, n)
    moves: np.ndarray  # object: the engine's Move for each placement


_WEIGHTS = np.array([1.0] * 8 + [-1000.0, -1000.0, 1.0], dtype=np.float32)


@dataclass(frozen=True)
class Knowledge:
    """Everything precomputed for one ruleset (built once per process)."""

    patches: tuple[PlacementFeatures, ...]
    special: PlacementFeatures
    income_left: tuple[int, ...]  # income spaces strictly ahead of each position


def _features(masks: list[int], moves: np.ndarray, rows: int, cols: int) -> PlacementFeatures:
    full = (1 << (rows * cols)) - 1
    not_first_col = not_last_col = 0
    for r in range(rows):
        not_first_col |= ((1 << cols) - 2) << (r * cols)
        not_last_col |= ((1 << (cols - 1)) - 1) << (r * cols)
    parts = np.zeros((11, len(masks)), dtype=_U64)
    for i, mask in enumerate(masks):
        # The cells next to the mask in each direction, staying on the board: the upper
        # neighbour of bit b is b - cols; the left one b - 1 unless b is in column 0.
        shifted = (mask >> cols, (mask << cols) & full, (mask & not_first_col) >> 1,
                   (mask & not_last_col) << 1)
        edge = 0
        for d, cells in enumerate(shifted):
            parts[2 * d, i] = cells & _LOW64
            parts[2 * d + 1, i] = cells >> 64
            edge += mask.bit_count() - cells.bit_count()  # sides that fell off the board
        parts[8, i] = mask & _LOW64
        parts[9, i] = mask >> 64
        parts[10, i] = (1 << edge) - 1
    return PlacementFeatures(parts, moves)


@cache
def knowledge(ruleset: Ruleset) -> Knowledge:
    tabs = tables(ruleset)
    rows, cols = ruleset.rows, ruleset.cols
    patches = tuple(_features(list(t.masks), t.moves, rows, cols) for t in tabs.placements)
    specials = np.empty(len(tabs.special_moves), dtype=object)
    for i, move in enumerate(tabs.special_moves):
        specials[i] = move  # one by one: a Move is a tuple, numpy would unpack a list of them
    special = _features([m.mask for m in tabs.special_moves], specials, rows, cols)
    income_left = tuple(sum(1 for s in ruleset.income_spaces if s > pos)
                        for pos in range(ruleset.final_space + 1))
    return Knowledge(patches, special, income_left)


def _touching(features: PlacementFeatures, quilt: int) -> np.ndarray:
    """Per placement: sides touching the quilt or its border; negative if it does not fit."""
    low, high = quilt & _LOW64, quilt >> 64
    words = np.array([low, high, low, high, low, high, low, high, low, high, _LOW64], dtype=_U64)
    return _WEIGHTS @ np.bitwise_count(features.parts & words[:, None])


def ranked_placements(features: PlacementFeatures, quilt: int, limit: int) -> list[Move]:
    """Up to ``limit`` placements that fit ``quilt``, the most touching first (ties: table order)."""
    touching = _touching(features, quilt)
    order = np.argsort(-touching, kind="stable")[:limit]
    return [features.moves[i] for i in order if touching[i] >= 0]


def best_placement(features: PlacementFeatures, quilt: int) -> Move | None:
    """The most touching placement that fits ``quilt``, or None if none does."""
    touching = _touching(features, quilt)
    best = int(touching.argmax())
    return features.moves[best] if touching[best] >= 0 else None


def special_move(state: GameState, player: int, legal_moves: list[Move] | None = None) -> Move:
    """The move for a pending special patch: the most enclosed empty cell (a hole to plug)."""
    move = best_placement(knowledge(state.ruleset).special, state.quilts[player])
    if move is not None:
        return move
    moves = legal_moves if legal_moves is not None else state.legal_moves()
    return moves[0]  # nowhere to put it: whatever the rules allow (e.g. removing it)


def patch_value(state: GameState, player: int, patch_id: int, income_left: tuple[int, ...]) -> float:
    """Greedy's value of buying a patch, per space of time it costs (advancing earns 1).

    It pays back its income on every income space still ahead after the purchase, and
    each of its squares stops costing 2 points at the end; a purchase that leaves
    almost no buttons is discounted while income is low.
    """
    rules = state.ruleset
    patch = rules.patches[patch_id]
    end = min(state.positions[player] + patch.time_cost, rules.final_space)
    value = (patch.income * income_left[end] + rules.empty_penalty * patch.size
             - patch.buttons_cost)
    left = state.buttons[player] - patch.buttons_cost
    if left < 3 and state.income[player] < 3:
        value -= 3 - left
    return value / max(patch.time_cost, 1)


def projected_score(state: GameState, player: int, income_left: tuple[int, ...],
                    time_value: float) -> float:
    """The final score ``player`` is heading for: income still to come, and
    ``time_value`` per space of time left (what that time is likely to earn)."""
    rules = state.ruleset
    pos = state.positions[player]
    score = (state.buttons[player] + state.income[player] * income_left[pos]
             - rules.empty_penalty * (rules.cells - state.quilts[player].bit_count())
             + time_value * (rules.final_space - pos))
    if state.bonus_owner == player:
        score += rules.bonus_points
    return score
