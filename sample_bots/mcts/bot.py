"""The mcts sample bot: Monte Carlo tree search on the SDK's engine (search.py).

How it spends its time (``think_budget``): the referee grants a per-move limit, more for
a bot's first move of a game, and a bank that absorbs overruns. This bot thinks for
90% of the per-move limit minus 50 ms (minus 30% of the limit when that is less than
50 ms; what is left covers the reply's way back and a busy machine), and checks the
clock after every search iteration. When the search is still undecided at that point
(the two most visited actions close), it carries on for up to 8% of the bank left (at
most half a per-move limit), so the bank drains slowly and only on close calls. A
decision with only one sensible answer (only advance is possible, or placing a special
patch, which the placement heuristic decides) is answered at once.

Determinism: tournaments want a resumed run to equal an uninterrupted one, so the
playouts' random numbers are seeded from the position (game seed and ply). A search
cut off by the clock is still not reproducible: how many iterations fit in the time
depends on the machine and its load. For reproducible games give a fixed number of
iterations in the manifest, ``command = "python bot.py --iterations 3000"``: the bot
then plays the same move in the same position on any machine, at any speed (stopping
early only if the referee's hard deadline is near, to never lose on time). The
default is time-based: stronger, because it uses whatever the referee grants.

Options: ``--iterations N`` (fixed search size), ``--name NAME``.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time

from heuristics import knowledge, special_move
from search import Search, Settings

from arena.engine import EDITIONS, GameState, Move, patchwork
from arena.sdk import Clock, run

SAFETY_SHARE = 0.10  # of the per-move limit, kept back ...
SAFETY_S = 0.05  # ... plus this (at most SAFETY_CAP of the limit), for the reply's trip
SAFETY_CAP = 0.3  # and scheduling hiccups
BANK_SHARE = 0.08  # of the bank left, spent on a close call ...
BANK_CAP = 0.5  # ... but at most this share of a per-move limit
CLOSE_CALL = 1.3  # "close": the most visited action has < 1.3 x the runner-up's visits
HARD_SHARE = 0.5  # fixed-iteration mode stops at the per-move limit + half the bank
DEFAULT_SETTINGS = Settings()


def think_budget(clock: Clock) -> tuple[float, float]:
    """Seconds to think (from the request's arrival), and the extra allowed on a close call."""
    limit = clock.per_move_ms / 1000.0
    base = limit * (1.0 - SAFETY_SHARE) - min(SAFETY_S, SAFETY_CAP * limit)
    extra = min(BANK_SHARE * clock.bank_ms, BANK_CAP * clock.per_move_ms) / 1000.0
    return max(base, 0.0), max(extra, 0.0)


def position_rng(state: GameState) -> random.Random:
    """Random numbers that depend only on the position (game seed and ply)."""
    return random.Random((state.seed or 0) * 1_000_003 + state.ply)


def is_close_call(search: Search) -> bool:
    children = sorted(search.root.children, key=lambda c: c.visits, reverse=True)
    return len(children) > 1 and children[0].visits < CLOSE_CALL * children[1].visits


def make_choose(iterations: int | None = None, settings: Settings = DEFAULT_SETTINGS):  # type: ignore[no-untyped-def]
    """The SDK callback; ``iterations`` fixes the search size instead of the clock."""
    for edition in EDITIONS:
        knowledge(patchwork(edition))  # build the tables now, not on a move's clock
    previous: list[Search] = []

    def choose(state: GameState, legal_moves: list[Move], clock: Clock) -> tuple[Move, str]:
        # Freeing the last move's tree takes tens of milliseconds: done now, before the
        # clock is checked, rather than after the search, when it would delay the reply.
        previous.clear()
        if not gc.isenabled():
            gc.collect()  # cheap now the tree is gone (see main)
        player = state.to_move()
        assert player is not None
        if state.decision() == "special":
            return special_move(state, player, legal_moves), "special: most enclosed cell"
        search = Search(state, position_rng(state), settings)
        previous.append(search)
        if len(search.root.untried or ()) == 1:
            return search.root.untried[0], "only move"  # type: ignore[index]
        base, extra = think_budget(clock)
        monotonic = time.monotonic
        if iterations is not None:
            hard = clock.received + (clock.per_move_ms + HARD_SHARE * clock.bank_ms) / 1000.0 - 0.1
            search.run(lambda n: n >= iterations or monotonic() >= hard)
        else:
            search.run(lambda _n: monotonic() >= clock.received + base)
            if extra > 0 and is_close_call(search):
                search.run(lambda _n: monotonic() >= clock.received + base + extra)
        return search.best_move(), search.summary(clock.elapsed_s())

    return choose


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=None,
                        help="a fixed number of search iterations (reproducible) instead of the clock")
    parser.add_argument("--name", default="mcts")
    args = parser.parse_args(argv)
    if args.iterations is not None and args.iterations < 1:
        parser.error("--iterations must be at least 1")
    choose = make_choose(args.iterations)
    # A search tree is hundreds of thousands of objects without reference cycles: the
    # cyclic collector would only pause the search (tens of ms, at random moments, on the
    # clock). It stays off; choose() collects between moves. Freezing moves the tables
    # built above out of its way.
    gc.freeze()
    gc.disable()
    run(choose, name=args.name, version="1.0")


if __name__ == "__main__":
    main(sys.argv[1:])
