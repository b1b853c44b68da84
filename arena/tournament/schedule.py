"""The schedule: every game of a tournament, in a fixed order, from plain values (pure).

A :class:`Plan` holds all it needs: the entrant names, the games per pairing, the seed and
the challengers (none: a round robin). ``TournamentConfig.plan`` builds one; this module
imports nothing of the config, the sandbox, the manifests or any I/O.

A *pairing* is two entrants: in a round robin every unordered pair of names (sorted),
in a gauntlet each challenger (in config order) against every entrant that is not a
challenger (sorted; challengers do not play each other). Each pairing plays
``games // 2`` *pairs*: two games on the same seed (the same patch circle) with the
seats swapped, seat 0 moving first, so neither bot gains from the draw of the circle
or from moving first.

The seed of pair ``k`` of a pairing is a hash of (tournament seed, the two names, k):
different pairings see different circles, and a rerun (or a resumed run) sees the same
ones. Pairings are interleaved (pair 0 of every pairing, then pair 1, ...) so that a
tournament stopped after a whole round has balanced results (within a round the pairings
go in name order; reordering them would change the game ids a resume relies on). Games
``2p`` and ``2p + 1`` of the schedule are the two games of global pair ``p``.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

SEED_BITS = 31
"""Game seeds are below 2**31 so that any bot can hold them in a 32-bit signed integer."""


@dataclass(frozen=True)
class Plan:
    """What to schedule: ``names`` of the entrants, ``games`` per pairing (even), the
    tournament ``seed``, and the ``challengers`` of a gauntlet (empty: a round robin)."""

    names: tuple[str, ...]
    games: int
    seed: int
    challengers: tuple[str, ...] = ()
    format: str = "round-robin"  # or "gauntlet", "swiss", "knockout" (arena.tournament.scheduler)
    rounds: int = 0  # swiss only


@dataclass(frozen=True)
class GameSpec:
    """One scheduled game. ``index`` is its position in the schedule (from 0), ``pair`` the
    global number of its seat-swapped pair (``index // 2``), ``seat0`` moves first."""

    index: int
    game_id: str
    seat0: str
    seat1: str
    seed: int
    pair: int


def pairings(plan: Plan) -> list[tuple[str, str]]:
    """The pairings in schedule order; the first name sits in seat 0 in the first game of a pair."""
    if plan.challengers:
        others = sorted(n for n in plan.names if n not in plan.challengers)
        return [(c, o) for c in plan.challengers for o in others]
    return list(itertools.combinations(sorted(plan.names), 2))


def pair_seed(base: int, pairing: tuple[str, str], k: int) -> int:
    """The seed of pair ``k`` of ``pairing`` (deterministic across runs and platforms)."""
    text = "\x1f".join((str(base), pairing[0], pairing[1], str(k)))
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % (1 << SEED_BITS)


HIDDEN_KEY_BYTES = 32
"""The size of a run's secret key, from which every hidden draw of its games derives."""


def hidden_seed(key: bytes, spec: GameSpec) -> int:
    """The seed of a game's hidden draw (the order Stack'n Stuff's stuff tiles join in): a keyed
    hash of the game's index and id. Without the key, which no bot ever sees, it cannot be
    computed, whereas :func:`pair_seed` can from public names; and each game has its own, the
    two of a seat-swapped pair included, so the first game of a pair tells nothing of the
    second's order. Below 2**63 (an SQLite integer)."""
    text = f"{spec.index}\x1f{spec.game_id}".encode("utf-8", "surrogateescape")
    digest = hashlib.blake2b(text, key=key, digest_size=8, person=b"arena-hidden").digest()
    return int.from_bytes(digest, "big") >> 1


def schedule_size(plan: Plan) -> int:
    """How many games the tournament has (without building them): for a knockout, without
    the extra pairs its tied matches may need."""
    if plan.format == "swiss":
        return plan.rounds * (len(plan.names) // 2) * 2
    if plan.format == "knockout":
        return (len(plan.names) - 1) * plan.games
    return len(pairings(plan)) * (plan.games // 2) * 2


def iter_schedule(plan: Plan, completed: Collection[str] = ()) -> Iterator[GameSpec]:
    """The games of :func:`schedule`, one at a time: a run of millions of games starts at
    once instead of building them all first."""
    order = pairings(plan)
    width = max(4, len(str(max(schedule_size(plan) - 1, 0))))
    done = set(completed)
    index = 0
    for k in range(plan.games // 2):
        for pairing in order:
            seed = pair_seed(plan.seed, pairing, k)
            pair = index // 2
            for seat0, seat1 in (pairing, pairing[::-1]):
                game_id, uncut = _game_id(f"{index:0{width}d}", seat0, seat1, f"p{pair}")
                if game_id not in done and uncut not in done:  # uncut: a folder resumed from before
                    yield GameSpec(index, game_id, seat0, seat1, seed, pair)
                index += 1


def schedule(plan: Plan, completed: Collection[str] = ()) -> list[GameSpec]:
    """Every game of the tournament in play order (see the module docstring).

    Games whose ids are in ``completed`` (e.g. ``ResultStore.completed_ids()``) are left
    out, so a resumed run plays exactly the rest; indexes and ids do not change.
    """
    return list(iter_schedule(plan, completed))


# ------------------------------------------------------------------ the other commands' schedules
# `arena play`, check-bot, `arena sprt` and bench-bots play seat-swapped pairs too (two games
# on one seed, seat 0 first, then the seats swapped), through the same series runner.


def match_schedule(a: str, b: str, games: int, seed: int, prefix: str) -> Iterator[GameSpec]:
    """``games`` games of ``a`` against ``b`` (`arena play`, check-bot): game ``n`` (from 0)
    uses seed ``seed + n // 2`` with ``a`` in seat 0 when ``n`` is even; ids ``<prefix>-<n+1>``."""
    for n in range(games):
        seats = (a, b) if n % 2 == 0 else (b, a)
        yield GameSpec(n, f"{prefix}-{n + 1}", seats[0], seats[1], seed + n // 2, n // 2)


def sprt_schedule(new: str, old: str, seed: int, max_games: int) -> Iterator[GameSpec]:
    """The pairs of `arena sprt`: pair ``k`` on :func:`pair_seed` (seed, (new, old), k), NEW in
    seat 0 first; ids ``sprt-<k>-0`` (NEW in seat 0) and ``sprt-<k>-1``. Whole pairs only."""
    for k in range(max_games // 2):
        game_seed = pair_seed(seed, (new, old), k)
        yield GameSpec(2 * k, f"sprt-{k}-0", new, old, game_seed, k)
        yield GameSpec(2 * k + 1, f"sprt-{k}-1", old, new, game_seed, k)


def gauntlet_schedule(bot: str, opponents: Sequence[str], games: int, seed: int) -> Iterator[GameSpec]:
    """``games`` games (whole pairs) of ``bot`` against each opponent (bench-bots): pair ``k``
    uses seed ``seed + k`` against every opponent in turn, ``bot`` in seat 0 first, so a run
    cut short is balanced. Ids ``bench-<seed>-<bot's seat>`` (repeated across opponents)."""
    index = 0
    for k in range(games // 2):
        for opponent in opponents:
            for seat in (0, 1):
                seats = (bot, opponent) if seat == 0 else (opponent, bot)
                yield GameSpec(index, f"bench-{seed + k}-{seat}", seats[0], seats[1], seed + k, index // 2)
                index += 1


def _slug(name: str) -> str:
    """A name made safe for ids and file names (the index keeps ids unique anyway)."""
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", name)


GAME_ID_MAX = 128  # the protocol's limit (protocol/schemas/common.json)


def _game_id(number: str, seat0: str, seat1: str, pair: str) -> tuple[str, str]:
    """``<number>-<seat0>-vs-<seat1>-<pair>``, and the same uncut. When two long names (up to
    64 characters each) would make it longer than the protocol allows, each name is cut to
    what fits (the number keeps it unique). A folder stored before ids were cut holds the
    uncut id of such a game: a resume must know it as played."""
    slugs = [_slug(seat0), _slug(seat1)]
    uncut = game_id = f"{number}-{slugs[0]}-vs-{slugs[1]}-{pair}"
    if len(game_id) > GAME_ID_MAX:
        room = max(1, (GAME_ID_MAX - len(f"{number}--vs--{pair}")) // 2)
        game_id = f"{number}-{slugs[0][:room]}-vs-{slugs[1][:room]}-{pair}"
    return game_id, uncut


__all__ = ["HIDDEN_KEY_BYTES", "SEED_BITS", "GameSpec", "Plan", "gauntlet_schedule", "hidden_seed",
           "iter_schedule", "match_schedule", "pair_seed", "pairings", "schedule", "schedule_size",
           "sprt_schedule"]
