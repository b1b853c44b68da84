"""One test per rule of docs/RULES.md (Patchwork part), each from a concrete position.

Positions are built by setting the state's plain fields directly (positions, buttons,
income, quilts, ...); the ``game`` fixture puts chosen patches at the front of the circle.
Patch facts used below (id: cost buttons/time, income): 0: 2/1 1x2; 4: 6/5 +2 (2x2);
10: 1/2; 16: 0/3 +1; 25: 3/1 (3-cell L); 26: 1/3 (3-cell L); 9, 32: 8/6 +3, 10/4 +3.
"""

from __future__ import annotations

import random

import pytest

from arena.engine import ADVANCE, GameState, Move, patchwork
from arena.errors import IllegalMoveError, MoveFormatError

FULL = (1 << 81) - 1


def mask(cells) -> int:
    out = 0
    for r, c in cells:
        out |= 1 << (r * 9 + c)
    return out


def square(top: int, left: int, size: int = 7) -> int:
    return mask((top + r, left + c) for r in range(size) for c in range(size))


# ------------------------------------------------------------------ 1. time board
def test_time_board_spaces_of_both_editions() -> None:
    for edition in ("revised", "original"):
        rules = patchwork(edition)
        assert rules.final_space == 53
        assert rules.income_spaces == (5, 11, 17, 23, 29, 35, 41, 47, 53)
    assert patchwork("revised").special_spaces == (26, 32, 38, 44, 50)
    assert patchwork("original").special_spaces == (20, 26, 32, 44, 50)
    assert patchwork().edition == "revised"
    assert GameState.new(1).special_spaces_left == [26, 32, 38, 44, 50]
    assert GameState.new(1, edition="original").special_spaces_left == [20, 26, 32, 44, 50]


@pytest.mark.parametrize(("edition", "space", "taken"), [
    ("revised", 20, False), ("revised", 38, True),
    ("original", 20, True), ("original", 38, False),
])
def test_special_spaces_differ_by_edition(game, edition, space, taken) -> None:
    state = game(edition=edition, positions=[space - 1, space])
    state.apply(ADVANCE)  # space - 1 -> space + 1
    assert (state.decision() == "special") is taken
    spaces = list(patchwork(edition).special_spaces)
    assert state.special_spaces_left == ([s for s in spaces if s != space] if taken else spaces)


# ------------------------------------------------------------------ 2. onto or past
def test_advance_crossing_two_income_spaces_pays_income_twice(game) -> None:
    state = game(positions=[4, 10], buttons=[5, 5], income=[3, 0])
    state.apply(ADVANCE)  # 4 -> 11 crosses 5 and 11
    assert state.positions == [11, 10]
    assert state.buttons == [5 + 7 + 2 * 3, 5]


def test_landing_exactly_on_an_income_space_pays(game) -> None:
    state = game(positions=[3, 4], buttons=[5, 5], income=[2, 0])
    state.apply(ADVANCE)  # 3 -> 5
    assert state.buttons[0] == 5 + 2 + 2


def test_leaving_an_income_space_does_not_pay_again(game) -> None:
    state = game(positions=[5, 6], buttons=[5, 5], income=[2, 0])
    state.apply(ADVANCE)  # 5 -> 7: p < m <= q excludes the start space
    assert state.buttons[0] == 5 + 2


def test_income_is_paid_only_to_the_player_moving(game) -> None:
    state = game(positions=[4, 8], buttons=[5, 5], income=[1, 4])
    state.apply(ADVANCE)
    assert state.buttons == [5 + 5 + 1, 5]


# ------------------------------------------------------------------ 3. income
def test_income_includes_the_patch_just_placed(game, buy, patch_cells) -> None:
    state = game([4], positions=[3, 10], buttons=[10, 5], income=[0, 0])
    state.apply(buy(4, patch_cells(4)))  # 2x2 with 2 buttons, time 5: 3 -> 8 crosses 5
    assert state.income == [2, 0]
    assert state.positions == [8, 10]
    assert state.buttons == [10 - 6 + 2, 5]


def test_special_patches_carry_no_income(game, special) -> None:
    state = game(positions=[25, 30], buttons=[5, 5], income=[1, 0])
    state.apply(ADVANCE)  # 25 -> 31: crosses 26 (special) and 29 (income)
    assert state.buttons[0] == 5 + 6 + 1
    state.apply(special(4, 4))
    assert state.income == [1, 0]


# ------------------------------------------------------------------ 4. advance
def test_advance_moves_just_past_the_opponent_and_pays_per_space(game) -> None:
    state = game(positions=[6, 9], buttons=[0, 5])
    assert ADVANCE in state.legal_moves()  # always allowed, even with no buttons
    state.apply(ADVANCE)
    assert state.positions == [10, 9]
    assert state.buttons == [4, 5]
    assert state.to_move() == 1


def test_advance_capped_at_53_pays_only_the_spaces_moved(game) -> None:
    state = game(positions=[50, 53], buttons=[5, 5], income=[2, 0], first_to_finish=1)
    state.apply(ADVANCE)  # to 53, not 54: 3 spaces, and income once for space 53
    assert state.positions == [53, 53]
    assert state.buttons == [5 + 3 + 2, 5]
    assert state.is_terminal()


def test_buy_capped_at_53(game, buy, patch_cells) -> None:
    state = game([4], positions=[51, 53], buttons=[6, 5], income=[0, 0], first_to_finish=1)
    state.apply(buy(4, patch_cells(4)))  # time 5 from 51 stops on 53
    assert state.positions == [53, 53]
    assert state.buttons == [0 + 2, 5]  # income 2 at space 53, once


# ------------------------------------------------------------------ 5. buy
def test_only_the_three_next_patches_can_be_bought(game, buy, patch_cells) -> None:
    state = game([10, 16, 26, 25], buttons=[20, 20])
    assert state.choices() == [10, 16, 26]
    assert {m.patch for m in state.legal_moves() if m.action == "buy"} == {10, 16, 26}
    with pytest.raises(IllegalMoveError, match="not one of the next choices 10, 16, 26"):
        state.apply(buy(25, patch_cells(25)))


def test_buying_needs_enough_buttons(game, buy, patch_cells) -> None:
    state = game([4, 16, 0], positions=[5, 20], buttons=[5, 5])  # 5 -> 10 crosses no income
    assert {m.patch for m in state.legal_moves() if m.action == "buy"} == {16, 0}
    with pytest.raises(IllegalMoveError, match="costs 6 buttons but player 0 has 5"):
        state.apply(buy(4, patch_cells(4)))
    state.buttons = [6, 5]
    state.apply(buy(4, patch_cells(4)))  # exactly affordable: down to 0, never negative
    assert state.buttons[0] == 0


def test_a_free_patch_can_be_bought_with_no_buttons(game, buy, patch_cells) -> None:
    state = game([16], buttons=[0, 0])
    state.apply(buy(16, patch_cells(16)))
    assert state.buttons[0] == 0 and state.income[0] == 1


def test_the_patch_must_fit(game, buy, patch_cells) -> None:
    quilt = FULL & ~mask([(0, 0), (0, 1), (1, 0)])  # room for a 3-cell L, not a 2x2
    state = game([4, 25, 10], buttons=[20, 20], quilts=[quilt, 0])
    moves = [m for m in state.legal_moves() if m.action == "buy"]
    assert moves == [Move("buy", 25, ~quilt & FULL)]
    with pytest.raises(IllegalMoveError, match=r"would overlap covered cells \[1, 1\]"):
        state.apply(buy(4, patch_cells(4)))


def test_cells_off_the_quilt_are_refused(game, patch_cells) -> None:
    state = game([0])
    convention = r"cells are \[row, col\], 0-based, row 0 at the top \(rows 0-8, columns 0-8\)"
    with pytest.raises(MoveFormatError, match=rf"off the 9x9 quilt: {convention}; patch 0 covers 2 cells$"):
        state.apply_json({"action": "buy", "patch": 0, "cells": [[8, 8], [8, 9]]})
    # a buy spilling over the right edge would wrap to the next row as bits: not a placement
    with pytest.raises(IllegalMoveError, match=rf"not a placement of patch 0 \(shape ##, 2 cells; 2 given\): "
                                               rf"{convention}$"):
        state.apply_json({"action": "buy", "patch": 0, "cells": [[0, 8], [1, 0]]})
    with pytest.raises(IllegalMoveError, match=r"\(shape ##, 2 cells; 3 given\)"):
        state.apply_json({"action": "buy", "patch": 0, "cells": [[0, 0], [0, 1], [0, 2]]})


@pytest.mark.parametrize(("patch_id", "count"), [(9, 8), (29, 8), (32, 4), (25, 4), (0, 2), (21, 1)])
def test_every_orientation_is_accepted(game, buy, patch_cells, orientations, patch_id, count) -> None:
    images = orientations(patch_cells(patch_id))  # rotations and mirror images, deduplicated
    assert len(images) == count
    results = set()
    for cells in images:
        state = game([patch_id], buttons=[20, 20])
        shifted = [(r + 2, c + 3) for r, c in cells]
        state.apply(buy(patch_id, shifted))
        assert state.quilts[0] == mask(shifted)
        results.add(state.quilts[0])
    assert len(results) == count


def test_cells_in_any_order_are_accepted(game, buy, patch_cells) -> None:
    cells = patch_cells(23, 4, 2)
    reference = game([23], buttons=[9, 9])
    reference.apply(buy(23, sorted(cells)))
    for seed in range(5):
        shuffled = cells[:]
        random.Random(seed).shuffle(shuffled)
        state = game([23], buttons=[9, 9])
        state.apply(buy(23, shuffled))
        assert state == reference


def test_buying_moves_the_neutral_token_and_skipped_patches_stay(game, buy, patch_cells) -> None:
    state = game([10, 16, 26, 25, 5], buttons=[20, 20])
    before = state.circle[:]
    state.apply(buy(26, patch_cells(26)))  # skips 10 and 16
    assert state.circle == before[3:] + [10, 16]
    assert state.choices() == [25, 5, before[5]]
    assert len(state.circle) == 32
    state.apply(buy(25, patch_cells(25, 5, 5)))  # player 1 buys the first choice: nothing skipped
    assert state.circle == before[4:] + [10, 16]


def test_buying_pays_and_moves_the_time_token(game, buy, patch_cells) -> None:
    state = game([32], positions=[0, 0], buttons=[12, 5])
    state.apply(buy(32, patch_cells(32)))
    assert state.buttons == [2, 5]
    assert state.positions == [4, 0]
    assert state.income == [3, 0]
    assert state.placed[0] == [(32, mask(patch_cells(32)))]


def test_the_last_patches_of_the_circle(game, buy, patch_cells) -> None:
    state = game([26, 25], buttons=[20, 20], circle=[26, 25])
    assert state.choices() == [26, 25]
    state.apply(buy(25, patch_cells(25)))
    assert state.circle == [26]
    state.apply(buy(26, patch_cells(26)))
    assert state.circle == []
    assert state.legal_moves() == [ADVANCE]


# ------------------------------------------------------------------ 6. setup
def test_setup_circle_is_shuffled_from_the_seed_with_the_1x2_last() -> None:
    circles = [GameState.new(seed).circle for seed in range(20)]
    for circle in circles:
        assert sorted(circle) == list(range(33))
        assert circle[-1] == 0
    assert len({tuple(c) for c in circles}) == 20  # the seed matters
    assert len({tuple(c[:3]) for c in circles}) > 10  # and the first choices really vary
    assert GameState.new(5).circle == GameState.new(5).circle  # same seed, same circle
    assert GameState.new(5, first_player=1).circle == GameState.new(5).circle
    assert GameState.new(5).choices() == GameState.new(5).circle[:3]


def test_setup_tokens_and_buttons() -> None:
    state = GameState.new(3)
    assert state.positions == [0, 0]
    assert state.buttons == [5, 5]
    assert state.income == [0, 0]
    assert state.quilts == [0, 0]
    assert state.bonus_owner is None and state.first_to_finish is None
    assert state.decision() == "main"


@pytest.mark.parametrize("first_player", [0, 1])
def test_the_caller_chooses_the_starting_player(first_player) -> None:
    state = GameState.new(3, first_player=first_player)
    assert state.to_move() == first_player
    state.apply(ADVANCE)  # 0 -> 1: now the other player is behind
    assert state.to_move() == 1 - first_player


def test_an_invalid_starting_player_is_refused() -> None:
    with pytest.raises(ValueError, match="first_player"):
        GameState.new(3, first_player=2)


# ------------------------------------------------------------------ 7. whose turn
def test_the_player_behind_moves_even_several_times(game, buy, patch_cells) -> None:
    state = game([0, 10, 26], positions=[2, 20], buttons=[20, 5])
    state.apply(buy(0, patch_cells(0)))  # 2 -> 3, still behind
    assert state.to_move() == 0
    state.apply(buy(10, patch_cells(10, 3, 3)))  # 3 -> 5
    assert state.to_move() == 0


def test_landing_on_the_opponents_space_gives_another_turn(game, buy, patch_cells) -> None:
    state = game([10], positions=[8, 10], buttons=[5, 5], on_top=1)
    state.apply(buy(10, patch_cells(10)))  # time 2: 8 -> 10, on top of player 1
    assert state.positions == [10, 10]
    assert state.on_top == 0
    assert state.to_move() == 0


def test_on_the_same_space_the_token_on_top_moves(game) -> None:
    assert game(positions=[12, 12], on_top=1).to_move() == 1
    assert game(positions=[12, 12], on_top=0).to_move() == 0


def test_a_player_on_53_takes_no_more_turns(game) -> None:
    state = game(positions=[53, 40], on_top=0, first_to_finish=0, special_spaces_left=[])
    assert state.to_move() == 1
    state.apply(ADVANCE)  # 40 -> 53, lands on the same space
    assert state.to_move() is None and state.is_terminal()


# ------------------------------------------------------------------ 8. special patch
def test_special_patch_is_placed_at_once_even_when_ahead(game, special) -> None:
    state = game(positions=[24, 27], buttons=[5, 5])
    state.apply(ADVANCE)  # 24 -> 28 passes 26, now ahead of player 1
    assert state.positions == [28, 27]
    assert state.to_move() == 0
    assert state.decision() == "special"
    moves = state.legal_moves()
    assert len(moves) == 81 and all(m.action == "special" for m in moves)
    assert state.special_spaces_left == [32, 38, 44, 50]
    state.apply(special(4, 4))
    assert state.quilts[0] == mask([(4, 4)])
    assert state.placed[0] == [(None, mask([(4, 4)]))]
    assert state.to_move() == 1 and state.decision() == "main"


def test_special_patch_goes_to_the_first_player_only(game, special) -> None:
    state = game(positions=[24, 25], buttons=[5, 5])
    state.apply(ADVANCE)  # 24 -> 26, onto the space: taken
    state.apply(special(0, 0))
    state.apply(ADVANCE)  # player 1: 25 -> 27, the patch is gone
    assert state.decision() == "main"
    assert state.quilts[1] == 0


def test_special_patch_is_discarded_when_the_quilt_is_full(game) -> None:
    state = game(positions=[24, 27], buttons=[5, 5], quilts=[FULL, 0])
    state.apply(ADVANCE)
    assert state.decision() == "main"
    assert state.to_move() == 1
    assert state.special_spaces_left == [32, 38, 44, 50]  # discarded, not left for player 1


def test_special_patch_can_fill_the_last_empty_cell(game, special) -> None:
    state = game(positions=[24, 27], quilts=[FULL & ~mask([(8, 8)]), 0])
    state.apply(ADVANCE)
    assert state.legal_moves() == [special(8, 8)]
    state.apply(special(8, 8))
    assert state.quilts[0] == FULL


def test_at_most_one_special_patch_per_move(game, special) -> None:
    state = game(positions=[25, 31], buttons=[5, 5])
    state.apply(ADVANCE)  # 25 -> 32 passes 26 and lands on 32: takes only the first
    assert state.decision() == "special"
    assert state.special_spaces_left == [32, 38, 44, 50]
    state.apply(special(0, 0))
    assert state.decision() == "main" and state.to_move() == 1
    state.apply(ADVANCE)  # player 1: 31 -> 33 passes 32, still there
    assert state.decision() == "special" and state.to_move() == 1
    state.apply(special(0, 0))
    assert state.special_spaces_left == [38, 44, 50]
    assert state.quilts == [1, 1]


def test_a_buy_passing_a_special_space_places_the_patch_then_the_special(
        game, buy, patch_cells, special) -> None:
    state = game([32], positions=[23, 30], buttons=[10, 5])
    state.apply(buy(32, patch_cells(32)))  # time 4: 23 -> 27, passes 26
    assert state.decision() == "special" and state.to_move() == 0
    assert special(0, 2) not in state.legal_moves()  # covered by patch 32
    with pytest.raises(IllegalMoveError, match="already covered"):
        state.apply(special(0, 2))
    state.apply(special(5, 5))


# ------------------------------------------------------------------ 9. bonus tile
@pytest.mark.parametrize(("top", "left"), [(0, 0), (2, 2), (1, 2), (2, 0)])
def test_bonus_for_a_7x7_square_anywhere(game, buy, top, left) -> None:
    hole = [(top + 6, left + 5), (top + 6, left + 6)]
    state = game([0], buttons=[5, 5], quilts=[square(top, left) & ~mask(hole), 0])
    state.apply(buy(0, hole))
    assert state.bonus_owner == 0
    assert state.score(0) == 3 + 7 - 2 * (81 - 49)


def test_bonus_goes_only_to_the_first(game, buy) -> None:
    hole = [(6, 5), (6, 6)]
    corner = [(8, 8), (8, 7), (7, 7)]
    state = game([0, 10, 26], positions=[0, 0], buttons=[5, 5],
                 quilts=[square(0, 0) & ~mask(hole), square(2, 2) & ~mask(corner)])
    assert state.bonus_owner is None
    state.apply(buy(0, hole))
    assert state.bonus_owner == 0
    state.quilts[0] = 0  # even if the first quilt no longer qualified, the tile stays
    state.apply(buy(26, corner))  # player 1 completes its square later
    assert state.quilts[1] & square(2, 2) == square(2, 2)
    assert state.bonus_owner == 0


def test_a_special_patch_completing_the_square_earns_the_bonus(game, special) -> None:
    state = game(positions=[24, 27], quilts=[square(1, 1) & ~mask([(4, 4)]), 0])
    state.apply(ADVANCE)
    assert state.bonus_owner is None
    state.apply(special(4, 4))
    assert state.bonus_owner == 0


def test_an_almost_complete_square_earns_no_bonus(game, buy) -> None:
    state = game([0], quilts=[square(0, 0) & ~mask([(3, 3)]), 0])
    state.apply(buy(0, [(8, 0), (8, 1)]))
    assert state.bonus_owner is None
    assert state.score(0) == 3 - 2 * (81 - 50)


# ------------------------------------------------------------------ 10. end
def test_the_game_ends_when_both_are_on_53(game) -> None:
    state = game(positions=[53, 53], first_to_finish=1)
    assert state.is_terminal()
    assert state.to_move() is None and state.decision() is None
    assert state.legal_moves() == []
    with pytest.raises(IllegalMoveError, match="game is over"):
        state.apply(ADVANCE)
    assert not game(positions=[53, 52]).is_terminal()


def test_equal_scores_go_to_the_first_to_reach_53(game) -> None:
    state = game(positions=[52, 50], buttons=[12, 10], on_top=0)
    state.apply(ADVANCE)  # player 1: 50 -> 53, first to finish
    assert state.first_to_finish == 1
    state.apply(ADVANCE)  # player 0: 52 -> 53
    assert state.is_terminal()
    assert state.buttons == [13, 13]
    assert state.scores() == (13 - 162, 13 - 162)  # negative scores happen
    assert state.winner() == 1


def test_a_higher_score_wins_regardless_of_who_finished_first(game) -> None:
    state = game(positions=[53, 53], buttons=[20, 19], first_to_finish=1)
    assert state.winner() == 0


def test_scoring_example_of_the_rulebook(game) -> None:
    doris = FULL & ~mask([(8, c) for c in range(5)])
    andrea = FULL & ~mask([(0, 0), (4, 4)])
    state = game(positions=[53, 53], buttons=[14, 18], quilts=[doris, andrea], bonus_owner=0,
                 first_to_finish=0)
    assert state.scores() == (14 + 7 - 2 * 5, 18 - 2 * 2) == (11, 14)
    assert state.winner() == 1
    outcome = state.outcome()
    assert outcome is not None and outcome.scores == (11, 14) and outcome.winner == 1


# ------------------------------------------------------------------ illegal moves
@pytest.mark.parametrize(("move_json", "reason"), [
    ({"action": "buy", "patch": 25, "cells": [[0, 1], [1, 0], [1, 1]]}, "not one of the next choices"),
    ({"action": "buy", "patch": 4, "cells": [[2, 2], [2, 3], [3, 2], [3, 3]]}, "costs 6 buttons"),
    ({"action": "buy", "patch": 10, "cells": [[0, 0], [0, 2], [1, 0], [1, 1], [1, 2]]}, "overlap"),
    ({"action": "buy", "patch": 10, "cells": [[5, 0], [5, 1], [5, 2], [6, 0], [6, 1]]},
     "not a placement"),
    ({"action": "buy", "patch": 99, "cells": [[5, 0]]}, "no patch with id 99"),
    ({"action": "special", "cells": [[5, 5]]}, "no special patch is waiting"),
    ({"action": "remove"}, "Patchwork has no boxes to remove"),
])
def test_illegal_moves_say_why_and_leave_the_state_unchanged(game, move_json, reason) -> None:
    state = game([10, 4, 16], positions=[3, 6], buttons=[5, 5], quilts=[mask([(0, 0)]), 0])
    before = state.to_json()
    move = Move.from_json(move_json)
    assert reason in (state.why_illegal(move) or "")
    with pytest.raises(IllegalMoveError, match=reason):
        state.apply(move)
    with pytest.raises(IllegalMoveError, match=reason):
        state.apply_json(move_json)
    assert state.to_json() == before


@pytest.mark.parametrize("move_json", [
    {"action": "advance"},
    {"action": "buy", "patch": 10, "cells": [[5, 0], [5, 2], [6, 0], [6, 1], [6, 2]]},
])
def test_a_pending_special_patch_must_be_placed_first(game, move_json) -> None:
    state = game([10], positions=[24, 27])
    state.apply(ADVANCE)
    before = state.to_json()
    with pytest.raises(IllegalMoveError, match="must first place the special patch"):
        state.apply_json(move_json)
    assert state.to_json() == before


def test_a_special_patch_covers_one_free_cell(game) -> None:
    state = game(positions=[24, 27], quilts=[mask([(0, 0)]), 0])
    state.apply(ADVANCE)
    before = state.to_json()
    with pytest.raises(IllegalMoveError, match="exactly 1 cell, not 2"):
        state.apply_json({"action": "special", "cells": [[3, 3], [3, 4]]})
    with pytest.raises(IllegalMoveError, match=r"cell \[0, 0\] is already covered"):
        state.apply_json({"action": "special", "cells": [[0, 0]]})
    assert state.to_json() == before


@pytest.mark.parametrize(("move_json", "reason"), [
    ({"action": "pass"}, "unknown action"),
    ({"action": "buy", "patch": 10}, "lacks field"),
    ({"action": "buy", "patch": 10, "cells": [[0, 0], [0, 0]]}, "listed twice"),
    ("advance", "must be a JSON object"),
])
def test_malformed_moves_are_refused_before_the_rules(game, move_json, reason) -> None:
    state = game([10])
    before = state.to_json()
    with pytest.raises(MoveFormatError, match=reason):
        state.apply_json(move_json)
    assert state.to_json() == before


def test_a_patchwork_special_patch_cannot_be_removed(game) -> None:
    state = game(positions=[24, 27])
    state.apply(ADVANCE)  # 24 -> 28 passes 26
    with pytest.raises(IllegalMoveError, match="must place the special patch it just took: only a Stack'n"):
        state.apply_json({"action": "remove"})
