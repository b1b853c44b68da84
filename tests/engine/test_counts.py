"""Counts of placements and legal moves, perft-style (python-chess examples/perft).

Every engine count is checked twice: against a recorded number (a regression value) and
against an independent brute force that knows only the shape strings and the rules: it
builds cell sets by rotating and mirroring, never reads the engine's placement tables, and
plays the first two plies with its own tiny model of the game.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from arena.engine import ADVANCE, GameState, Move, patchwork

RULES = patchwork()
SIZE = 9
INCOME_SPACES = (5, 11, 17, 23, 29, 35, 41, 47, 53)

# Distinct placements of each patch on an empty 9x9 quilt (regression values, also checked
# against the brute force below).
PLACEMENTS = {
    0: 144, 1: 126, 2: 108, 3: 90, 4: 64, 5: 448, 6: 384, 7: 192, 8: 192, 9: 392,
    10: 224, 11: 192, 12: 196, 13: 224, 14: 196, 15: 168, 16: 168, 17: 448, 18: 448,
    19: 384, 20: 384, 21: 49, 22: 70, 23: 84, 24: 98, 25: 256, 26: 256, 27: 224, 28: 224,
    29: 384, 30: 168, 31: 168, 32: 196,
}

# Perft from the start of a seeded game (revised edition, player 0 first). Seed 37 offers
# 11 (1 button, 5 time, +1 income: its buyer passes income space 5 with it), 16 (free) and
# 9 (8 buttons: unaffordable). Seed 2 is a larger engine-only regression.
PERFT_SEED = 37
PERFT = {1: 361, 2: 32_977}
PERFT_DISTINCT_POSITIONS_2 = 32_977  # no two move pairs reach the same position after 2 plies
PERFT_LARGE = (2, {1: 705, 2: 159_105})
START_MOVES = {7: 993, 1: 869, 4: 385, 37: 361}  # legal moves at the start, by seed


def bits(cells) -> int:
    out = 0
    for r, c in cells:
        out |= 1 << (r * SIZE + c)
    return out


@pytest.fixture(scope="module")
def brute_placements(orientations: Callable) -> dict[int, set[int]]:
    """patch id -> the masks of every placement, by brute force over cell sets."""
    out = {}
    for patch in RULES.patches:
        cells = [(r, c) for r, row in enumerate(patch.shape) for c, ch in enumerate(row) if ch != "."]
        masks = set()
        for image in orientations(cells):
            height = max(r for r, _ in image) + 1
            width = max(c for _, c in image) + 1
            for top in range(SIZE - height + 1):
                for left in range(SIZE - width + 1):
                    masks.add(bits((top + r, left + c) for r, c in image))
        out[patch.id] = masks
    return out


def engine_placements(patch_id: int) -> set[int]:
    """The engine's placements of a patch on an empty quilt, through its public API."""
    rest = [i for i in range(33) if i != patch_id]
    state = GameState.from_circle([patch_id, *rest])
    state.buttons = [99, 99]
    moves = [m for m in state.legal_moves() if m.action == "buy"]
    assert {m.patch for m in moves} == {patch_id, *rest[:2]}
    return {m.mask for m in moves if m.patch == patch_id}


# ------------------------------------------------------------------ placements
@pytest.mark.parametrize("patch_id", range(33))
def test_placements_on_an_empty_quilt(brute_placements, patch_id) -> None:
    engine = engine_placements(patch_id)
    assert engine == brute_placements[patch_id]
    assert len(engine) == PLACEMENTS[patch_id]


def test_placement_extremes(brute_placements) -> None:
    counts = {pid: len(masks) for pid, masks in brute_placements.items()}
    assert counts == PLACEMENTS
    assert counts[0] == 144  # the 1x2: 2 orientations x 72 offsets
    assert max(counts.values()) == 448  # 8 orientations x 56 offsets of a 2x3 box
    assert sorted(pid for pid, n in counts.items() if n == 448) == [5, 17, 18]


def test_the_largest_decision_has_1345_moves() -> None:
    """1 advance + 3 x 448 placements, the published maximum."""
    state = GameState.from_circle([5, 17, 18] + [i for i in range(33) if i not in (5, 17, 18)])
    state.buttons = [10, 10]
    assert len(state.legal_moves()) == 1345


def test_placements_shrink_on_a_partly_covered_quilt(brute_placements) -> None:
    covered = bits([(4, 4), (0, 8)])
    state = GameState.from_circle(list(range(1, 33)) + [0])  # choices 1, 2, 3
    state.buttons = [99, 99]
    state.quilts = [covered, 0]
    moves = state.legal_moves()
    expected = {pid: {m for m in brute_placements[pid] if not m & covered} for pid in (1, 2, 3)}
    for pid in (1, 2, 3):
        assert {m.mask for m in moves if m.patch == pid} == expected[pid]
    assert len(moves) == 1 + sum(len(v) for v in expected.values())


# ------------------------------------------------------------------ start of a game
@pytest.mark.parametrize("seed", sorted(START_MOVES))
def test_legal_moves_at_the_start(brute_placements, seed) -> None:
    state = GameState.new(seed)
    moves = state.legal_moves()
    assert len(moves) == START_MOVES[seed]
    affordable = [p for p in state.circle[:3] if RULES.patch(p).buttons_cost <= 5]
    assert len(moves) == 1 + sum(len(brute_placements[p]) for p in affordable)
    assert moves[0] == ADVANCE
    assert len(set(moves)) == len(moves)


# ------------------------------------------------------------------ perft
# The independent model: (positions, buttons, income, quilts, circle, on_top), tuples only.
def model_new(circle: list[int]) -> tuple:
    return ((0, 0), (5, 5), (0, 0), (0, 0), tuple(circle), 0)


def model_to_move(s: tuple) -> int:
    (p0, p1), on_top = s[0], s[5]
    return 0 if p0 < p1 else 1 if p1 < p0 else on_top


def model_moves(s: tuple, placements: dict[int, set[int]]) -> list[tuple]:
    player = model_to_move(s)
    moves: list[tuple] = [("advance",)]
    for pid in s[4][:3]:
        if RULES.patch(pid).buttons_cost <= s[1][player]:
            moves.extend(("buy", pid, m) for m in placements[pid] if not m & s[3][player])
    return moves


def model_apply(s: tuple, move: tuple) -> tuple:
    positions, buttons, income, quilts, circle, _ = (list(x) if isinstance(x, tuple) else x for x in s)
    player = model_to_move(s)
    start = positions[player]
    if move[0] == "advance":
        target = min(positions[1 - player] + 1, 53)
        buttons[player] += target - start
    else:
        _, pid, mask = move
        patch = RULES.patch(pid)
        i = circle.index(pid)
        circle = circle[i + 1:] + circle[:i]
        buttons[player] -= patch.buttons_cost
        income[player] += patch.income
        quilts[player] |= mask
        target = min(start + patch.time_cost, 53)
    assert not any(start < m <= target for m in RULES.special_spaces)  # not modelled
    buttons[player] += income[player] * sum(start < m <= target for m in INCOME_SPACES)
    positions[player] = target
    return (tuple(positions), tuple(buttons), tuple(income), tuple(quilts), tuple(circle), player)


def engine_key(state: GameState) -> tuple:
    return (tuple(state.positions), tuple(state.buttons), tuple(state.income),
            tuple(state.quilts), tuple(state.circle), state.on_top)


def engine_perft(state: GameState, depth: int) -> int:
    if depth == 1:
        return len(state.legal_moves())
    total = 0
    for move in state.legal_moves():
        child = state.clone()
        child.apply_unchecked(move)
        total += engine_perft(child, depth - 1)
    return total


@pytest.mark.parametrize(("seed", "expected"), [(PERFT_SEED, PERFT), PERFT_LARGE])
def test_perft_engine_regression(seed, expected) -> None:
    state = GameState.new(seed)
    for depth, count in expected.items():
        assert engine_perft(state, depth) == count


def test_perft_agrees_with_brute_force(brute_placements) -> None:
    state = GameState.new(PERFT_SEED)
    assert state.choices() == [11, 16, 9]
    root = model_new(state.circle)
    assert engine_key(state) == root

    model_children = {}
    for move in model_moves(root, brute_placements):
        model_children[move] = model_apply(root, move)
    assert len(model_children) == PERFT[1]
    engine_moves = state.legal_moves()
    as_model = {("advance",) if m == ADVANCE else ("buy", m.patch, m.mask) for m in engine_moves}
    assert as_model == set(model_children)

    model_leaves = 0
    model_positions = set()
    for child in model_children.values():
        grandchildren = model_moves(child, brute_placements)
        model_leaves += len(grandchildren)
        model_positions.update(model_apply(child, m) for m in grandchildren)
    assert model_leaves == PERFT[2]
    assert len(model_positions) == PERFT_DISTINCT_POSITIONS_2

    engine_positions = set()
    for move in engine_moves:
        child = state.clone()
        child.apply(move)
        key = ("advance",) if move == ADVANCE else ("buy", move.patch, move.mask)
        assert engine_key(child) == model_children[key]
        for reply in child.legal_moves():
            grandchild = child.clone()
            grandchild.apply_unchecked(reply)
            engine_positions.add(engine_key(grandchild))
    assert engine_positions == model_positions


def test_move_from_json_round_trip_over_all_start_moves() -> None:
    state = GameState.new(PERFT_SEED)
    for move in state.legal_moves():
        assert Move.from_json(move.to_json()) == move
