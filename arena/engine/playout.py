"""Uniformly random self-play (pure: the randomness comes from the seed passed in)."""

from __future__ import annotations

import random

from arena.engine.components import Ruleset
from arena.engine.moves import Move
from arena.engine.state import GameState


def random_playout(state: GameState, rng: random.Random) -> list[tuple[int, Move]]:
    """Play uniformly random legal moves (advance included) until the end, in place.

    Returns the (player, move) pairs played, special placements included.
    """
    played: list[tuple[int, Move]] = []
    while True:
        player = state.to_move()
        if player is None:
            return played
        move = rng.choice(state.legal_moves())
        state.apply_unchecked(move)
        played.append((player, move))


def random_game(seed: int, edition: str = "revised", first_player: int = 0,
                ruleset: Ruleset | None = None) -> tuple[GameState, list[tuple[int, Move]], GameState]:
    """A whole random game from ``seed`` (circle and moves): (initial, moves, final)."""
    initial = GameState.new(seed, edition, first_player, ruleset=ruleset)
    final = initial.clone()
    moves = random_playout(final, random.Random(seed))
    return initial, moves, final
