"""A move request with its legal moves joined from the engine's pre-encoded texts is the very
text the encoder gave for the whole message (issue 34): thousands of positions of both games,
special patches and Stack'n Stuff's removals included."""

from __future__ import annotations

import random

import pytest

from arena.engine import GameState
from arena.engine.components import ruleset_for
from arena.protocol import messages
from arena.protocol.codec import encode_trusted

CLOCKS = [messages.clock(1000, 10_000), messages.clock(1000, 9_512)]


@pytest.mark.parametrize("game", ["patchwork", "stack-n-stuff"])
def test_the_joined_request_is_the_encoded_one(game: str) -> None:
    rules = ruleset_for(game)
    positions = 0
    seen_special = False
    for seed in range(60):
        state = GameState.new(seed, first_player=seed % 2, ruleset=rules)
        rng = random.Random(seed)
        ply = 0
        while not state.is_terminal():
            expected = encode_trusted(
                messages.move_request(ply, f"g-{seed}", state, CLOCKS, legal_moves=True)
            )
            assert messages.move_request_text(ply, f"g-{seed}", state, CLOCKS, legal_moves=True) == expected
            assert messages.move_request_text(ply, f"g-{seed}", state, CLOCKS) == encode_trusted(
                messages.move_request(ply, f"g-{seed}", state, CLOCKS)
            )
            seen_special |= state.pending_special is not None
            positions += 1
            state.apply_unchecked(rng.choice(state.legal_moves()))
            ply += 1
    assert positions > 1500 and seen_special


def test_a_non_ascii_game_id_still_matches() -> None:
    state = GameState.new(3)
    expected = encode_trusted(messages.move_request(1, "partie-é", state, CLOCKS, legal_moves=True))
    assert messages.move_request_text(1, "partie-é", state, CLOCKS, legal_moves=True) == expected
    assert expected.isascii()
