"""The mcts sample bot: Monte Carlo tree search on the SDK's engine (search.py).

How it spends its time (``think_budget``): the referee grants a per-move limit, more for
a bot's first move of a game, and a bank that absorbs overruns. This bot thinks for
90% of the per-move limit minus a margin, and checks the clock after every search
iteration. The margin covers what the bot's own clock cannot see (the request's and the
reply's way, the scheduler of a busy machine): 50 ms (30% of the limit when that is
less), or twice the latency the bot has observed lately if that is more. The bot
learns that latency from its bank: the referee takes from it what it counted beyond the
limit, so bank drawn minus the bot's own overrun is time the bot never saw. When the
search is still undecided at that point (the two most visited actions close), it
carries on for up to 8% of the bank above a reserve (half the bank it started the game
with; at most half a per-move limit), so the bank drains slowly, only on close calls,
and never below what a stall of a few seconds would need. A decision with only one
sensible answer (only advance is possible, or placing a special patch, which the
placement heuristic decides) is answered at once.

Start-up: the hello goes out before anything heavy is imported (``run(setup=...)``; the
referee waits 20 s for it, a busy machine can take seconds to import numpy), and numpy
is told to use one thread (a bot is capped at one core: a thread pool only competes with
the search for it).

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

import os

# Before numpy is imported (after the hello): one thread, whatever numpy was linked with.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402 - after the environment above, on purpose
import gc  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from typing import TYPE_CHECKING  # noqa: E402

from arena.sdk import Clock, run  # noqa: E402 - light: the SDK imports the engine after the hello

if TYPE_CHECKING:
    from search import Search, Settings

    from arena.engine import GameState, Move

SAFETY_SHARE = 0.10  # of the per-move limit, kept back ...
SAFETY_S = 0.05  # ... plus this (at most SAFETY_CAP of the limit), for the reply's trip
SAFETY_CAP = 0.3  # and scheduling hiccups
LATENCY_FACTOR = 2.0  # ... or this many times the latency observed lately, if more
LATENCY_CAP = 0.5  # (at most this share of the limit, unless the bank is below the reserve)
LATENCY_DECAY = 0.9  # per move, of the latency estimate while nothing new is seen
BANK_SHARE = 0.08  # of the bank above the reserve, spent on a close call ...
BANK_CAP = 0.5  # ... but at most this share of a per-move limit
RESERVE_SHARE = 0.5  # of the bank a game starts with: never spent on close calls
CLOSE_CALL = 1.3  # "close": the most visited action has < 1.3 x the runner-up's visits
HARD_SHARE = 0.5  # fixed-iteration mode stops at the per-move limit + half the bank


def think_budget(clock: Clock, latency_s: float = 0.0,
                 full_bank_ms: int | None = None) -> tuple[float, float]:
    """Seconds to think (from the request's arrival), and the extra allowed on a close call.

    ``latency_s``: time the referee counts that the bot's clock does not see (observed
    lately); ``full_bank_ms``: the bank a game starts with (default: the bank left).
    """
    limit = clock.per_move_ms / 1000.0
    reserve = RESERVE_SHARE * (full_bank_ms if full_bank_ms is not None else clock.bank_ms)
    latency_margin = LATENCY_FACTOR * latency_s
    if clock.bank_ms >= reserve:
        latency_margin = min(latency_margin, LATENCY_CAP * limit)
    margin = max(min(SAFETY_S, SAFETY_CAP * limit), latency_margin)
    base = limit * (1.0 - SAFETY_SHARE) - margin
    extra = min(BANK_SHARE * (clock.bank_ms - reserve), BANK_CAP * clock.per_move_ms) / 1000.0
    return max(base, 0.0), max(extra, 0.0)


class Latency:
    """What the referee counts beyond the bot's own clock, learnt from the bank.

    After each move the bot notes its limit, the bank and its own time; the next
    request's bank tells what the referee drew for that move: its time minus the limit.
    When something was drawn, the referee's time minus the bot's own is the latency.
    When nothing was, the latency was at most limit minus own time, so the estimate
    decays. A new game (the bank refilled) teaches nothing.
    """

    def __init__(self) -> None:
        self.estimate_s = 0.0
        self.full_bank_ms = 0  # the largest bank seen: what a game starts with
        self._last: tuple[int, int, float] | None = None  # limit ms, bank ms, own time s

    def observe(self, clock: Clock) -> None:
        """Learn from a new request's bank; call before planning the move."""
        self.full_bank_ms = max(self.full_bank_ms, clock.bank_ms)
        if self._last is not None:
            limit_ms, bank_ms, own_s = self._last
            drawn_ms = bank_ms - clock.bank_ms
            seen = (limit_ms + drawn_ms) / 1000.0 - own_s if drawn_ms > 0 else 0.0
            self.estimate_s = max(seen, self.estimate_s * LATENCY_DECAY)
        self._last = None

    def answered(self, clock: Clock) -> None:
        """Note the move just answered (its own time as measured now, at the reply)."""
        self._last = (clock.per_move_ms, clock.bank_ms, clock.elapsed_s())


def position_rng(state: GameState) -> random.Random:
    """Random numbers that depend only on the position (game seed and ply)."""
    return random.Random((state.seed or 0) * 1_000_003 + state.ply)


def is_close_call(search: Search) -> bool:
    """Are the two most visited actions close (worth thinking on)?"""
    children = sorted(search.root.children, key=lambda c: c.visits, reverse=True)
    return len(children) > 1 and children[0].visits < CLOSE_CALL * children[1].visits


def make_choose(iterations: int | None = None, settings: Settings | None = None):  # type: ignore[no-untyped-def]
    """The SDK callback; ``iterations`` fixes the search size instead of the clock.

    Imports the search (numpy) and builds its tables: the bot passes this to
    ``run(setup=...)``, so that happens after the hello."""
    from heuristics import knowledge, special_move
    from search import Search, Settings

    from arena.engine import EDITIONS, patchwork

    if settings is None:
        settings = Settings()
    for edition in EDITIONS:
        knowledge(patchwork(edition))  # build the tables now, not on a move's clock
    previous: list[Search] = []
    latency = Latency()

    def choose(state: GameState, legal_moves: list[Move], clock: Clock) -> tuple[Move, str]:
        latency.observe(clock)
        move, info = decide(state, legal_moves, clock)
        latency.answered(clock)
        return move, info

    def decide(state: GameState, legal_moves: list[Move], clock: Clock) -> tuple[Move, str]:
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
        base, extra = think_budget(clock, latency.estimate_s, latency.full_bank_ms)
        monotonic = time.monotonic
        if iterations is not None:
            hard = (clock.received + (clock.per_move_ms + HARD_SHARE * clock.bank_ms) / 1000.0
                    - 0.1 - LATENCY_FACTOR * latency.estimate_s)
            search.run(lambda n: n >= iterations or monotonic() >= hard)
        else:
            search.run(lambda _n: monotonic() >= clock.received + base)
            if extra > 0 and is_close_call(search):
                search.run(lambda _n: monotonic() >= clock.received + base + extra)
        info = search.summary(clock.elapsed_s())
        if latency.estimate_s > 0.001:
            info += f"; latency {latency.estimate_s * 1000:.0f} ms"
        return search.best_move(), info

    return choose


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=None,
                        help="a fixed number of search iterations (reproducible) instead of the clock")
    parser.add_argument("--name", default="mcts")
    args = parser.parse_args(argv)
    if args.iterations is not None and args.iterations < 1:
        parser.error("--iterations must be at least 1")

    def setup():  # type: ignore[no-untyped-def]
        choose = make_choose(args.iterations)
        # A search tree is hundreds of thousands of objects without reference cycles: the
        # cyclic collector would only pause the search (tens of ms, at random moments, on
        # the clock). It stays off; choose() collects between moves. Freezing moves the
        # tables built above out of its way.
        gc.freeze()
        gc.disable()
        return choose

    run(setup=setup, name=args.name, version="1.0")


if __name__ == "__main__":
    main(sys.argv[1:])
