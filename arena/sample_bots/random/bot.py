"""The random sample bot: a uniformly random legal move, seeded by the position.

Seeding from (game seed, ply) keeps tournaments reproducible: the same game
replayed gives the same moves.
"""

import random

from arena.sdk import run


def choose(state, legal_moves, clock):
    rng = random.Random((state.seed or 0) * 1009 + state.ply)
    return rng.choice(legal_moves)


if __name__ == "__main__":
    run(choose, name="random", version="1.0")
