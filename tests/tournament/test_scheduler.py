"""The schedulers (pure): what they give, when they wait, and that ids do not depend on the
order results come in, so a resumed run replays to the same state."""

from __future__ import annotations

import hashlib
import itertools
import random
from collections import Counter
from pathlib import Path

import pytest

from arena.errors import ArenaError
from arena.tournament.schedule import GameSpec, Plan, iter_schedule
from arena.tournament.scheduler import (
    BYE_WINS,
    DONE,
    WAIT,
    Gauntlet,
    Knockout,
    Replay,
    RoundRobin,
    Scheduler,
    Swiss,
    bracket_order,
    make_scheduler,
    replay,
    swiss_pairings,
)
from arena.tournament.series import STUCK, InProcess, Lineup

NAMES = tuple(f"bot{i}" for i in range(7))


def coin(game: GameSpec) -> int:
    """A fixed winner per game (as a deterministic bot pair would give)."""
    return hashlib.sha256(f"{game.seed}{game.seat0}".encode()).digest()[0] % 2


def drive(scheduler: Scheduler, rng: random.Random, slots: int = 3,
          winner=coin) -> list[tuple[int, str, str, str, int]]:  # type: ignore[no-untyped-def]
    """Play everything with ``slots`` games in flight, finishing them in a random order."""
    played, flight = [], []
    while True:
        while len(flight) < slots:
            game = scheduler.next()
            if not isinstance(game, GameSpec):
                break
            flight.append(game)
        if not flight:
            assert scheduler.next() is DONE
            return sorted(played)
        game = flight.pop(rng.randrange(len(flight)))
        scheduler.record(game, winner(game))
        played.append((game.index, game.game_id, game.seat0, game.seat1, game.seed))


def test_round_robin_and_gauntlet_give_the_schedule_s_games_and_never_wait() -> None:
    plan = Plan(NAMES[:4], 4, 9)
    rr = RoundRobin(plan, completed={"0001-bot1-vs-bot0-p0"})
    games = list(iter(rr.next, DONE))
    assert games == list(iter_schedule(plan, {"0001-bot1-vs-bot0-p0"})) and rr.total == 24
    gauntlet = make_scheduler(Plan(NAMES[:4], 2, 9, ("bot2",)))
    assert isinstance(gauntlet, Gauntlet)
    assert list(iter(gauntlet.next, DONE)) == list(iter_schedule(Plan(NAMES[:4], 2, 9, ("bot2",))))


@pytest.mark.parametrize("count", [2, 3, 6, 7])
def test_swiss_is_the_same_whatever_order_results_come_in(count: int) -> None:
    runs = [drive(Swiss(NAMES[:count], 4, 5), random.Random(i), slots) for i, slots in
            ((1, 1), (2, 3), (3, 8))]
    assert runs[0] == runs[1] == runs[2]
    assert len(runs[0]) == 4 * (count // 2) * 2 == Swiss(NAMES[:count], 4, 5).total
    assert len({game[1] for game in runs[0]}) == len(runs[0])  # unique ids
    assert [game[0] for game in runs[0]] == list(range(len(runs[0])))


def test_a_swiss_round_waits_for_its_last_result_then_pairs_by_wins() -> None:
    swiss = Swiss(NAMES[:4], 2, 1)
    first = [swiss.next() for _ in range(4)]
    assert all(isinstance(g, GameSpec) for g in first)
    assert swiss.next() is WAIT
    # bot0 and bot2 win both their games: they meet in round 2
    for game in first:
        assert isinstance(game, GameSpec)
        swiss.record(game, (game.seat0, game.seat1).index("bot0" if "bot0" in (game.seat0, game.seat1)
                                                          else "bot2"))
        if game is not first[-1]:
            assert swiss.next() is WAIT
    second = swiss.next()
    assert isinstance(second, GameSpec) and {second.seat0, second.seat1} == {"bot0", "bot2"}
    assert swiss.history[0].standings == (("bot0", 2), ("bot2", 2), ("bot1", 0), ("bot3", 0))
    assert swiss.history[1].pairings == (("bot0", "bot2"), ("bot1", "bot3"))
    # each pairing: two games on one seed, seats swapped
    third = swiss.next()
    assert isinstance(third, GameSpec)
    assert (third.seat0, third.seat1, third.seed) == (second.seat1, second.seat0, second.seed)


def _matchings(names: list[str]) -> list[list[frozenset[str]]]:
    """Every way to pair ``names`` (brute force)."""
    if not names:
        return [[]]
    return [[frozenset((names[0], other)), *rest] for i, other in enumerate(names[1:], 1)
            for rest in _matchings(names[1:i] + names[i + 1:])]


@pytest.mark.parametrize("seed", range(6))
def test_each_swiss_round_repeats_no_more_pairings_than_it_must(seed: int) -> None:
    swiss = Swiss(NAMES[:6], 7, seed)
    drive(swiss, random.Random(seed), winner=lambda g: random.Random(g.game_id).randrange(2))
    met: set[frozenset[str]] = set()
    for r in swiss.history:
        pairs = [frozenset(p) for p in r.pairings]
        fewest = min(sum(p in met for p in m) for m in _matchings(list(NAMES[:6])))
        assert sum(p in met for p in pairs) == fewest, r
        assert sorted(n for p in pairs for n in p) == sorted(NAMES[:6])
        met.update(pairs)
    assert len(swiss.history) == 7


def test_swiss_pairings_backtrack_rather_than_repeat() -> None:
    # greedy a-b leaves c-d, which met already; backtracking finds a-c, b-d
    met = {frozenset("cd")}
    assert swiss_pairings(list("abcd"), met) == [("a", "c"), ("b", "d")]
    # nothing avoids a repeat: adjacent names
    assert swiss_pairings(["a", "b"], {frozenset("ab")}) == [("a", "b")]


def test_an_odd_swiss_field_gives_each_bye_once_and_it_scores_a_win() -> None:
    swiss = Swiss(NAMES[:5], 5, 3)
    drive(swiss, random.Random(4))
    byes = [r.bye for r in swiss.history]
    assert sorted(byes) == sorted(NAMES[:5])  # 5 rounds: everyone once
    games = Counter()
    for r in swiss.history:
        for a, b in r.pairings:
            games[a] += 2
            games[b] += 2
    total_wins = sum(wins for _, wins in swiss.standings())
    assert total_wins == sum(games.values()) // 2 + 5 * BYE_WINS


def test_the_bracket_order_keeps_the_top_seeds_apart() -> None:
    assert bracket_order(8) == [1, 8, 4, 5, 2, 7, 3, 6]
    assert bracket_order(2) == [1, 2]


def test_a_knockout_gives_the_top_seeds_byes_and_ends_with_a_champion() -> None:
    ko = Knockout(NAMES[:5], 2, 1)
    first = ko.bracket[0]
    assert [m.seeds for m in first] == [(1, 8 if False else None), (4, 5), (2, None), (3, None)]
    assert [m.by for m in first if m.names[1] is None] == ["bye"] * 3
    played = drive(ko, random.Random(0), winner=lambda g: 0)  # seat 0 always wins: every match ties
    # every match tied 1-1, then 1-1 again in its extra pair: the better seed goes through
    assert ko.champion == "bot0"
    assert all(m.by == "seed" and m.extra for rnd in ko.bracket for m in rnd if m.names[1] is not None)
    assert len(played) == 4 * 4 == ko.total  # 4 matches, 2 games + an extra pair each
    assert [len(r) for r in ko.bracket] == [4, 2, 1]


def test_a_knockout_match_goes_to_the_bot_with_more_wins() -> None:
    def stronger(game: GameSpec) -> int:  # the higher number wins
        return int(game.seat1 > game.seat0)

    ko = Knockout(NAMES[:4], 4, 1)
    drive(ko, random.Random(1), winner=stronger)
    assert ko.champion == "bot3" and ko.total == 12
    assert [m.by for rnd in ko.bracket for m in rnd] == ["games"] * 3


@pytest.mark.parametrize("kind", ["swiss", "knockout", "round-robin"])
def test_a_replay_of_any_stored_part_plays_exactly_the_missing_games(kind: str) -> None:
    plan = Plan(NAMES[:6], 2, 7, format=kind, rounds=3)
    straight = drive(make_scheduler(plan), random.Random(0))
    for cut in (0, 1, 5, 9, len(straight) - 1, len(straight)):
        rng = random.Random(cut)
        stored_part = rng.sample(straight, cut) if kind == "round-robin" else straight[:cut]
        winners = {}
        for index, game_id, seat0, seat1, seed in stored_part:
            winners[game_id] = coin(GameSpec(index, game_id, seat0, seat1, seed, 0))
        if kind == "round-robin":
            fed = Replay(make_scheduler(plan, set(winners)), winners)
        else:
            fed = Replay(make_scheduler(plan), winners)
        rest = drive(fed, rng)
        assert sorted(rest + stored_part) == straight
        assert not set(g[1] for g in rest) & set(winners)


def test_replay_rebuilds_the_swiss_history_from_stored_winners() -> None:
    plan = Plan(NAMES[:5], 2, 3, format="swiss", rounds=3)
    live = make_scheduler(plan)
    drive(live, random.Random(2))
    stored = {}
    scheduler = make_scheduler(plan)
    while isinstance(game := scheduler.next(), GameSpec):  # one at a time, in order
        stored[game.game_id] = coin(game)
        scheduler.record(game, coin(game))
    rebuilt = replay(plan, stored)
    assert isinstance(rebuilt, Swiss) and isinstance(live, Swiss)
    assert rebuilt.history == live.history


def test_recording_a_game_never_given_is_refused() -> None:
    swiss = Swiss(NAMES[:2], 1, 1)
    game = swiss.next()
    assert isinstance(game, GameSpec)
    swiss.record(game, 0)
    with pytest.raises(ValueError, match="not given out"):
        swiss.record(game, 0)


class _Stuck:
    """A scheduler that waits with nothing in flight (a broken format)."""

    def next(self) -> object:
        return WAIT

    def record(self, game: GameSpec, winner: int) -> None:  # pragma: no cover - never called
        pass

    total = 0


def test_an_executor_with_a_scheduler_that_waits_forever_says_so(tmp_path: Path) -> None:
    executor = InProcess(Lineup((), ()), tmp_path)
    with pytest.raises(ArenaError, match="no game is in flight"):
        next(executor.run(_Stuck()))  # type: ignore[arg-type]
    assert "scheduler" in STUCK


def test_every_pairing_of_six_entrants_appears_within_five_swiss_rounds() -> None:
    swiss = Swiss(NAMES[:6], 5, 11)
    drive(swiss, random.Random(5), slots=2)
    met = {frozenset(p) for r in swiss.history for p in r.pairings}
    assert met == {frozenset(p) for p in itertools.combinations(NAMES[:6], 2)}
