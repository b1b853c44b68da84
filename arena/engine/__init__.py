"""The Patchwork rules engine: pure, seeded, exact (the rules: docs/RULES.md).

>>> from arena.engine import GameState
>>> state = GameState.new(seed=7)
>>> move = state.legal_moves()[0]
>>> state.apply(move)
"""

from arena.engine.components import EDITIONS, Patch, Ruleset, patchwork
from arena.engine.moves import ADVANCE, Move
from arena.engine.state import MAIN, SPECIAL, GameState, Outcome, Termination

__all__ = ["ADVANCE", "EDITIONS", "MAIN", "SPECIAL", "GameState", "Move", "Outcome", "Patch",
           "Ruleset", "Termination", "patchwork"]
