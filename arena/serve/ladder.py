"""Choosing the ladder's next pairing (pure: no I/O, no clock, a seeded random source).

Each pairing is picked for what it teaches, inside hard bounds, and comes with the reason
it was picked (the pairing log shows it):

1. **Nobody starves.** No version goes ``wait_bound`` pairings without a game (default:
   as many pairings as there are versions, twice the average wait): from half that, the
   longest-waiting versions play first, two of them together when two wait.
2. **New versions are placed.** A version with fewer than ``placement_games`` pairings
   plays next, against opponents spread over the rating range (median, bottom, top,
   quartiles, in turn), so its first games already span the ladder.
3. **Otherwise, the most informative pairing**: TrueSkill's match quality (the chance of a
   draw if draws existed: high when the outcome is uncertain) plus a bonus for uncertain
   ratings (sigma), minus a penalty for pairs that have met more often than the least-met
   pair. Two bots of one author may meet only while their pair has met no more often than
   the average pair, so an author cannot farm rating from their own bots.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

BETA = 25 / 6  # TrueSkill's default beta (mu 25, sigma 25/3)
SIGMA0 = 25 / 3
PLACEMENT_GAMES = 5  # pairings (of two games each) a new version plays against a spread of ratings
_SPREAD = (0.5, 0.0, 1.0, 0.25, 0.75)
SIGMA_WEIGHT = 0.5
REPEAT_WEIGHT = 0.3
FAILING_STREAK = 10  # games lost in a row by its own fault that retire a playing version


@dataclass(frozen=True)
class Entrant:
    label: str
    author: str
    mu: float = 25.0
    sigma: float = SIGMA0
    pairings: int = 0  # pairings scheduled so far (stored and in flight)

    @property
    def conservative(self) -> float:
        return self.mu - 3 * self.sigma


@dataclass(frozen=True)
class Choice:
    seat0: str
    seat1: str
    reason: str


def pair_key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)


def quality(a: Entrant, b: Entrant) -> float:
    """TrueSkill's 1-vs-1 match quality (what ``trueskill.quality_1vs1`` gives), closed form."""
    c2 = 2 * BETA**2 + a.sigma**2 + b.sigma**2
    return math.sqrt(2 * BETA**2 / c2) * math.exp(-((a.mu - b.mu) ** 2) / (2 * c2))


def choose(
    entrants: Sequence[Entrant],
    met: Mapping[tuple[str, str], int],
    waited: Mapping[str, int],
    rng: random.Random,
    *,
    wait_bound: int | None = None,
    placement_games: int = PLACEMENT_GAMES,
) -> Choice | None:
    """The next pairing among ``entrants`` (None with fewer than two). ``met`` counts the
    pairings of each pair (by :func:`pair_key`), ``waited`` the pairings scheduled since
    each label last played (or since it entered)."""
    if len(entrants) < 2:
        return None
    bound = wait_bound if wait_bound is not None else max(2, len(entrants))
    by_label = {e.label: e for e in entrants}
    # Served from half the bound on, the longest-waiting first and two at a time when two
    # wait: so nobody reaches the bound itself (the tests check it over long runs).
    starving = sorted(
        (e for e in entrants if waited.get(e.label, 0) >= bound // 2),
        key=lambda e: (-waited.get(e.label, 0), e.pairings, e.label),
    )
    if starving:
        first = starving[0]
        others = [e for e in starving[1:] if _may_meet(first, e, met)]
        other = others[0] if others else _best_opponent(first, entrants, met, rng)
        return _seated(
            first,
            other,
            rng,
            f"{first.label} waited {waited.get(first.label, 0)} pairings "
            f"(served from {bound // 2}, bound {bound})",
        )
    placing = [e for e in entrants if e.pairings < placement_games]
    if placing:
        first = min(placing, key=lambda e: (e.pairings, e.label))
        others = sorted(
            (e for e in entrants if e.label != first.label), key=lambda e: (e.conservative, e.label)
        )
        allowed = [e for e in others if _may_meet(first, e, met)] or others
        q = _SPREAD[first.pairings % len(_SPREAD)]
        other = allowed[round(q * (len(allowed) - 1))]
        rank = len(others) - others.index(other)
        return _seated(
            first,
            other,
            rng,
            f"placement {first.pairings + 1}/{placement_games} of "
            f"{first.label}: against rating rank {rank} of {len(others)}",
        )
    best: tuple[float, str, str] | None = None
    fewest = min(
        (met.get(pair_key(a.label, b.label), 0) for i, a in enumerate(entrants) for b in entrants[i + 1 :]),
        default=0,
    )
    for i, a in enumerate(entrants):
        for b in entrants[i + 1 :]:
            if not _may_meet(a, b, met):
                continue
            score = _score(a, b, met, fewest) + rng.random() * 1e-6
            if best is None or score > best[0]:
                best = (score, a.label, b.label)
    if best is None:  # only one author's bots: they meet as any pair would
        a, b = sorted(entrants, key=lambda e: (e.pairings, e.label))[:2]
        return _seated(a, b, rng, "the only possible pairing")
    a, b = by_label[best[1]], by_label[best[2]]
    return _seated(
        a,
        b,
        rng,
        f"match quality {quality(a, b):.2f}, sigma {a.sigma:.1f} and {b.sigma:.1f}, "
        f"met {met.get(pair_key(a.label, b.label), 0)} times before",
    )


def _score(a: Entrant, b: Entrant, met: Mapping[tuple[str, str], int], fewest: int) -> float:
    repeats = met.get(pair_key(a.label, b.label), 0) - fewest
    return (
        quality(a, b)
        + SIGMA_WEIGHT * (a.sigma + b.sigma) / (2 * SIGMA0)
        - REPEAT_WEIGHT * repeats / (1 + fewest)
    )


def _may_meet(a: Entrant, b: Entrant, met: Mapping[tuple[str, str], int]) -> bool:
    """Bots of one author meet only while their pair has met no more than the average pair."""
    if a.author != b.author:
        return True
    counts = list(met.values())
    average = sum(counts) / len(counts) if counts else 0.0
    return met.get(pair_key(a.label, b.label), 0) <= average


def _best_opponent(
    first: Entrant, entrants: Sequence[Entrant], met: Mapping[tuple[str, str], int], rng: random.Random
) -> Entrant:
    others = [e for e in entrants if e.label != first.label]
    allowed = [e for e in others if _may_meet(first, e, met)] or others
    fewest = min(met.get(pair_key(first.label, e.label), 0) for e in allowed)
    return max(allowed, key=lambda e: (_score(first, e, met, fewest), rng.random()))


def _seated(a: Entrant, b: Entrant, rng: random.Random, reason: str) -> Choice:
    """Seats are swapped within the pair anyway; who sits first in its first game is random."""
    return Choice(a.label, b.label, reason) if rng.random() < 0.5 else Choice(b.label, a.label, reason)


__all__ = ["PLACEMENT_GAMES", "Choice", "Entrant", "choose", "pair_key", "quality"]
