"""The ladder's pairing choice (pure): bounds first, then what a game teaches."""

from __future__ import annotations

import random
from collections import Counter

from arena.serve.ladder import PLACEMENT_GAMES, Entrant, choose, pair_key


def simulate(
    entrants: list[Entrant],
    rounds: int,
    seed: int = 1,
    *,
    skill: dict[str, float] | None = None,
    wait_bound: int | None = None,
) -> tuple[Counter[tuple[str, str]], int, list[str]]:
    """Run ``rounds`` pairings, updating pairing counts (ratings fixed): the pair counts,
    the longest wait seen, and the reasons."""
    rng = random.Random(seed)
    met: Counter[tuple[str, str]] = Counter()
    waited: Counter[str] = Counter()
    played = Counter({e.label: e.pairings for e in entrants})
    longest = 0
    reasons = []
    for _ in range(rounds):
        now = [
            Entrant(e.label, e.author, (skill or {}).get(e.label, e.mu), e.sigma, played[e.label])
            for e in entrants
        ]
        choice = choose(now, met, waited, rng, wait_bound=wait_bound)
        assert choice is not None and choice.seat0 != choice.seat1
        reasons.append(choice.reason)
        for e in entrants:
            waited[e.label] += 1
        waited[choice.seat0] = waited[choice.seat1] = 0
        longest = max(longest, *waited.values())
        met[pair_key(choice.seat0, choice.seat1)] += 1
        played[choice.seat0] += 1
        played[choice.seat1] += 1
    return met, longest, reasons


def field(n: int, authors: int | None = None) -> list[Entrant]:
    return [Entrant(f"b{i}.v1", f"a{i % (authors or n)}", 25.0 + i, 2.0, pairings=50) for i in range(n)]


def test_nobody_waits_as_long_as_the_bound() -> None:
    # b0 and b1 are close in rating and most informative; the rest would starve without the bound
    for n, seed in ((3, 1), (8, 2), (8, 3), (25, 4)):
        entrants = field(n, authors=3)
        skill = {"b0.v1": 30.0, "b1.v1": 30.0}
        _, longest, reasons = simulate(entrants, 40 * n, seed, skill=skill)
        assert longest < max(2, n)  # the bound: as many pairings as there are versions
        assert any("waited" in reason for reason in reasons)


def test_a_new_version_first_plays_a_spread_of_ratings() -> None:
    entrants = field(9) + [Entrant("new.v1", "z", 25.0, 25 / 3, pairings=0)]
    rng = random.Random(3)
    met: Counter[tuple[str, str]] = Counter()
    opponents = []
    played = 0
    for _ in range(PLACEMENT_GAMES):
        now = [e if e.label != "new.v1" else Entrant("new.v1", "z", 25.0, 25 / 3, played) for e in entrants]
        choice = choose(now, met, Counter(), rng)
        assert choice is not None and "new.v1" in (choice.seat0, choice.seat1)
        assert choice.reason.startswith("placement")
        opponents.append(choice.seat1 if choice.seat0 == "new.v1" else choice.seat0)
        played += 1
    ranks = sorted(int(o[1]) for o in opponents)
    assert ranks[0] == 0 and ranks[-1] == 8  # the bottom and the top of the ladder
    assert len(set(opponents)) == PLACEMENT_GAMES


def test_one_authors_bots_meet_no_more_than_other_pairs() -> None:
    # two bots of one author are the closest pair: they must not farm each other
    entrants = [
        Entrant("x1.v1", "same", 25.0, 1.0, 50),
        Entrant("x2.v1", "same", 25.0, 1.0, 50),
        Entrant("y.v1", "other", 35.0, 1.0, 50),
        Entrant("z.v1", "third", 15.0, 1.0, 50),
    ]
    met, _, _ = simulate(entrants, 600)
    same = met[pair_key("x1.v1", "x2.v1")]
    average = sum(met.values()) / len(met)
    assert same <= average + 1


def test_fewer_than_two_entrants_gives_no_pairing() -> None:
    assert choose([Entrant("a.v1", "a")], Counter(), Counter(), random.Random(0)) is None


def test_every_pairing_has_a_reason() -> None:
    _, _, reasons = simulate(field(5), 50)
    assert all(reasons) and any(r.startswith("match quality") for r in reasons)
