"""Property tests over random games (hypothesis draws the seed, edition and first player).

A game is played with uniformly random legal moves from ``random.Random(seed)``; each test
walks every ply of it and checks one invariant. Examples are few (games are long), so the
file stays fast.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator

from hypothesis import given, settings
from hypothesis import strategies as st

from arena.engine import GameState, Move, patchwork
from arena.errors import IllegalMoveError

FINAL = 53
FULL = (1 << 81) - 1
MAX_DECISIONS = 200

games = st.tuples(st.integers(0, 2**32 - 1), st.sampled_from(["revised", "original"]),
                  st.integers(0, 1))
few = settings(max_examples=40, deadline=None)
fewer = settings(max_examples=25, deadline=None)  # for the tests that compare JSON at every ply


def walk(seed: int, edition: str, first_player: int) -> Iterator[tuple[GameState, Move, GameState]]:
    """Yield (before, move, after) for every ply of a random game. ``before`` is a copy;
    ``after`` is the live game, changed by the next ply (clone it to keep it)."""
    rng = random.Random(seed)
    state = GameState.new(seed, edition, first_player)
    for _ in range(MAX_DECISIONS):
        if state.is_terminal():
            return
        move = rng.choice(state.legal_moves())
        before = state.clone()
        state.apply_unchecked(move)
        yield before, move, state
    raise AssertionError(f"seed {seed}: no end after {MAX_DECISIONS} decisions")


def fields(state: GameState) -> dict[str, object]:
    """Every field of the state (deep copies), a stricter and faster ``==`` than to_json;
    the private slots are tables and caches, not state."""
    return {name: copy.deepcopy(getattr(state, name)) for name in GameState.__slots__
            if name != "ruleset" and not name.startswith("_")} | {"edition": state.ruleset.edition}


def play(seed: int, edition: str, first_player: int) -> tuple[list[Move], GameState]:
    steps = list(walk(seed, edition, first_player))
    return [move for _, move, _ in steps], steps[-1][2]


@few
@given(games)
def test_placed_patches_lie_inside_the_quilt_and_never_overlap(game) -> None:
    rules = patchwork(game[1])
    for _, _, state in walk(*game):
        for player in (0, 1):
            union = 0
            for patch_id, mask in state.placed[player]:
                assert mask and mask & ~FULL == 0
                assert union & mask == 0
                size = 1 if patch_id is None else rules.patch(patch_id).size
                assert mask.bit_count() == size
                union |= mask
            assert union == state.quilts[player]


@few
@given(games)
def test_buttons_never_go_negative(game) -> None:
    for _, _, state in walk(*game):
        assert min(state.buttons) >= 0


@few
@given(games)
def test_income_is_the_sum_of_the_placed_patches(game) -> None:
    rules = patchwork(game[1])
    for _, _, state in walk(*game):
        for player in (0, 1):
            expected = sum(rules.patch(pid).income for pid, _ in state.placed[player] if pid is not None)
            assert state.income[player] == expected
            assert state.button_cells[player].bit_count() == expected


@few
@given(games)
def test_buttons_change_by_the_rules(game) -> None:
    """An independent account of rules 2-4: spaces moved, price, income per space crossed."""
    rules = patchwork(game[1])
    for before, move, after in walk(*game):
        player = before.to_move()
        start, end = before.positions[player], after.positions[player]
        crossed = sum(start < m <= end for m in rules.income_spaces)
        delta = after.buttons[player] - before.buttons[player]
        if move.action == "advance":
            assert end == min(before.positions[1 - player] + 1, FINAL)
            assert delta == (end - start) + crossed * before.income[player]
        elif move.action == "buy":
            patch = rules.patch(move.patch)
            assert end == min(start + patch.time_cost, FINAL)
            assert delta == -patch.buttons_cost + crossed * after.income[player]
        else:
            assert (start, delta) == (end, 0)
        assert after.buttons[1 - player] == before.buttons[1 - player]


@few
@given(games)
def test_whose_turn_and_special_patches(game) -> None:
    for before, move, after in walk(*game):
        player = before.to_move()
        if before.decision() == "special":
            assert move.action == "special"
            assert after.decision() == "main" or after.is_terminal()
            continue
        p, q = before.positions
        assert player == (0 if p < q else 1 if q < p else before.on_top)
        start, end = before.positions[player], after.positions[player]
        passed = [s for s in before.special_spaces_left if start < s <= end]
        taken = passed[:1]  # at most one per move, the first passed
        assert after.special_spaces_left == [s for s in before.special_spaces_left if s not in taken]
        pending = bool(taken) and after.quilts[player] != FULL
        assert (after.decision() == "special") is pending
        if pending:
            assert after.to_move() == player


@few
@given(games)
def test_the_bonus_goes_to_the_first_7x7(game) -> None:
    squares = [sum(1 << ((top + r) * 9 + left + c) for r in range(7) for c in range(7))
               for top in range(3) for left in range(3)]
    owner = None
    for _, _, state in walk(*game):
        if owner is None:
            for player in (0, 1):
                if any(state.quilts[player] & s == s for s in squares):
                    owner = player
        assert state.bonus_owner == owner


@few
@given(games)
def test_the_circle_loses_exactly_the_bought_patch(game) -> None:
    for before, move, after in walk(*game):
        if move.action == "buy":
            i = before.circle.index(move.patch)
            assert i < 3
            assert after.circle == before.circle[i + 1:] + before.circle[:i]
        else:
            assert after.circle == before.circle


@fewer
@given(games)
def test_one_state_serialised_at_every_move_matches_a_fresh_copy(game) -> None:
    # The referee serialises one state object at every move: its caches of the JSON (placed
    # patches, quilt rows) must follow every move, and the JSON handed out must be a copy.
    state = GameState.new(*game)
    while state.to_move() is not None:
        sent = state.public_json()
        assert sent == state.clone().public_json()
        sent["quilts"][0][0] = "tampered"
        sent["placed"][0].append({"patch": -1, "cells": []})
        assert state.public_json() == state.clone().public_json()
        state.apply_unchecked(state.legal_moves()[0] if state.ply % 3 else state.legal_moves()[-1])


@fewer
@given(games)
def test_json_round_trip_at_every_ply(game) -> None:
    initial = GameState.new(*game)
    states = [initial] + [after.clone() for _, _, after in walk(*game)]
    for state in states:
        data = json.loads(json.dumps(state.to_json()))
        copy = GameState.from_json(data)
        assert copy == state
        assert copy.to_json() == data
        assert copy.legal_moves() == state.legal_moves()
        assert copy.to_move() == state.to_move() and copy.decision() == state.decision()


@fewer
@given(games)
def test_clone_then_apply_equals_apply_and_leaves_the_original(game) -> None:
    for before, move, after in walk(*game):
        snapshot = fields(before)
        child = before.clone()
        child.apply(move)
        assert fields(child) == fields(after)
        assert fields(before) == snapshot
    assert child == after


@few
@given(games)
def test_the_same_seed_gives_the_same_game(game) -> None:
    moves_a, final_a = play(*game)
    moves_b, final_b = play(*game)
    assert moves_a == moves_b
    assert final_a == final_b


@fewer
@given(games)
def test_checked_apply_accepts_every_legal_move(game) -> None:
    for before, _, _ in walk(*game):
        moves = before.legal_moves()
        assert len(set(moves)) == len(moves)
        for move in moves:
            assert before.why_illegal(move) is None, move
        for move in random.Random(before.ply).sample(moves, min(5, len(moves))):
            child = before.clone()
            child.apply(move)  # raises IllegalMoveError if refused
            again = before.clone()
            again.apply_json(move.to_json())
            assert fields(again) == fields(child)


@fewer
@given(games)
def test_moves_not_in_legal_moves_are_refused(game) -> None:
    rng = random.Random(game[0])
    for before, _, _ in walk(*game):
        legal = set(before.legal_moves())
        player = before.to_move()
        snapshot = fields(before)
        candidates = [Move("advance"), Move("special", None, 1 << rng.randrange(81))]
        for patch_id in rng.sample(range(33), 3):
            candidates.append(Move("buy", patch_id, 1 << rng.randrange(80) | 1 << 80))
        for move in candidates:
            if move in legal:
                continue
            reason = before.why_illegal(move)
            assert reason, (move, player)
            child = before.clone()
            try:
                child.apply(move)
            except IllegalMoveError as err:
                assert str(err) == reason
            else:
                raise AssertionError(f"{move} was accepted")
            assert fields(child) == snapshot


@few
@given(games)
def test_the_game_ends_with_both_on_53(game) -> None:
    steps = list(walk(*game))
    state = steps[-1][2]
    assert len(steps) <= MAX_DECISIONS
    assert state.positions == [FINAL, FINAL]
    assert state.is_terminal() and state.to_move() is None and state.decision() is None
    assert state.legal_moves() == []
    assert state.first_to_finish in (0, 1)
    scores = state.scores()
    winner = state.winner()
    assert winner is not None
    if scores[0] != scores[1]:
        assert winner == (0 if scores[0] > scores[1] else 1)
    else:
        assert winner == state.first_to_finish
    rules = patchwork(game[1])
    for player in (0, 1):
        empty = 81 - state.quilts[player].bit_count()
        bonus = 7 if state.bonus_owner == player else 0
        assert scores[player] == state.buttons[player] + bonus - 2 * empty
    assert rules.final_space == FINAL
