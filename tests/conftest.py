"""Shared fixtures.

Sections: engine states, engine moves, independent geometry. Factories are session-scoped
fixtures returning plain functions, so hypothesis tests may use them too (hypothesis refuses
function-scoped fixtures). Add new sections (results folders, sample bots, ...) below.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

from arena.engine import GameState, Move, patchwork

SEED = 7
"""The seed of the ``state`` fixture."""

Cells = Iterable[tuple[int, int]] | Iterable[list[int]]


# ------------------------------------------------------------------ engine states
@pytest.fixture
def state() -> GameState:
    """A new revised-edition game from ``SEED``, player 0 to start."""
    return GameState.new(SEED)


@pytest.fixture(scope="session")
def game() -> Callable[..., GameState]:
    """Factory for a concrete position: ``game(choices, edition=, first_player=, **fields)``.

    ``choices`` are the first patch ids of the circle (the next patches on offer); the other
    ids follow in id order, the 1x2 (id 0) last unless it is a choice. Keyword fields
    (positions, buttons, income, quilts, on_top, ...) are set on the state as given.
    """

    def make(choices: Iterable[int] = (), *, edition: str = "revised", first_player: int = 0,
             **fields: Any) -> GameState:
        first = list(choices)
        rest = [i for i in range(1, len(patchwork(edition).patches)) if i not in first]
        circle = first + rest + ([] if 0 in first else [0])
        state = GameState.from_circle(circle, first_player=first_player, edition=edition)
        for name, value in fields.items():
            if not hasattr(state, name):
                raise AttributeError(f"GameState has no field {name!r}")
            setattr(state, name, value)
        return state

    return make


# ------------------------------------------------------------------ engine moves
@pytest.fixture(scope="session")
def buy() -> Callable[[int, Cells], Move]:
    """``buy(patch_id, cells)``: the buy move for a patch on the given [row, col] cells."""

    def make(patch_id: int, cells: Cells) -> Move:
        return Move.from_json({"action": "buy", "patch": patch_id,
                               "cells": [[int(r), int(c)] for r, c in cells]})

    return make


@pytest.fixture(scope="session")
def special() -> Callable[[int, int], Move]:
    """``special(row, col)``: the move placing a 1x1 special patch."""

    def make(row: int, col: int) -> Move:
        return Move.from_json({"action": "special", "cells": [[row, col]]})

    return make


# ------------------------------------------------------------------ independent geometry
# Cell sets computed from the shape strings alone, never from the engine's placement tables,
# so tests can check those tables against them.
@pytest.fixture(scope="session")
def patch_cells() -> Callable[..., list[tuple[int, int]]]:
    """``patch_cells(patch_id, top=0, left=0)``: the cells of the patch as drawn in the data
    (no rotation), shifted to the given offset."""

    def cells(patch_id: int, top: int = 0, left: int = 0) -> list[tuple[int, int]]:
        shape = patchwork().patch(patch_id).shape
        return [(top + r, left + c) for r, row in enumerate(shape)
                for c, ch in enumerate(row) if ch != "."]

    return cells


def normalize(cells: Iterable[tuple[int, int]]) -> frozenset[tuple[int, int]]:
    """The cell set shifted so that its smallest row and column are 0."""
    cells = list(cells)
    top = min(r for r, _ in cells)
    left = min(c for _, c in cells)
    return frozenset((r - top, c - left) for r, c in cells)


@pytest.fixture(scope="session")
def orientations() -> Callable[[Iterable[tuple[int, int]]], set[frozenset[tuple[int, int]]]]:
    """``orientations(cells)``: the distinct normalized images of a cell set under the 8
    symmetries of the square (4 rotations, each optionally mirrored)."""

    def images(cells: Iterable[tuple[int, int]]) -> set[frozenset[tuple[int, int]]]:
        base = list(cells)
        out = set()
        for mirror in (False, True):
            current = [(r, -c) for r, c in base] if mirror else base
            for _ in range(4):
                current = [(c, -r) for r, c in current]  # a quarter turn
                out.add(normalize(current))
        return out

    return images
