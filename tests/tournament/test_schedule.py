"""The schedule: pairings, seat-swapped pairs on equal seeds, interleaving, determinism."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from arena.tournament.config import Entrant, TournamentConfig
from arena.tournament.schedule import GameSpec, Plan, pair_seed, pairings, schedule

NAMES = ("delta", "alpha", "charlie", "bravo")


def config(games: int = 4, fmt: str = "round-robin", challengers: tuple[str, ...] = (),
           seed: int = 1, names: tuple[str, ...] = NAMES) -> Plan:
    """The plan of a tournament: plain values, no config, no files."""
    return Plan(names, games, seed, challengers if fmt == "gauntlet" else ())


def test_a_config_gives_its_plan() -> None:
    # folders that do not exist: the schedule never looks at them
    entrants = tuple(Entrant(n, Path("/nonexistent") / n) for n in NAMES)
    gauntlet = TournamentConfig(name="t", entrants=entrants, format="gauntlet", challengers=("bravo",),
                                games=4, seed=9)
    assert gauntlet.plan == Plan(NAMES, 4, 9, ("bravo",))
    assert TournamentConfig(name="t", entrants=entrants, games=6).plan == Plan(NAMES, 6, 1, ())


def test_the_scheduler_imports_nothing_of_the_config_sandbox_or_manifests() -> None:
    code = ("import sys, arena.tournament.schedule; "
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('arena'))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.split() == ["arena", "arena.tournament", "arena.tournament.schedule"], loaded


def check_pairs(specs: list[GameSpec]) -> None:
    """Games 2p and 2p + 1 form pair p: same seed, seats swapped."""
    assert [s.index for s in specs] == list(range(len(specs)))
    assert len(specs) % 2 == 0
    for first, second in zip(specs[::2], specs[1::2], strict=True):
        assert first.pair == second.pair == first.index // 2
        assert first.seed == second.seed
        assert (first.seat0, first.seat1) == (second.seat1, second.seat0)


@pytest.mark.parametrize("games", [2, 4, 6])
def test_round_robin_every_pairing_plays_games_times(games: int) -> None:
    specs = schedule(config(games))
    assert len(specs) == 6 * games
    unordered = Counter(frozenset((s.seat0, s.seat1)) for s in specs)
    assert unordered == {frozenset(p): games for p in itertools.combinations(NAMES, 2)}
    ordered = Counter((s.seat0, s.seat1) for s in specs)
    assert set(ordered.values()) == {games // 2}  # each bot sits in each seat equally often
    check_pairs(specs)


def test_pairings_are_sorted_unordered_pairs() -> None:
    assert pairings(config()) == [("alpha", "bravo"), ("alpha", "charlie"), ("alpha", "delta"),
                                  ("bravo", "charlie"), ("bravo", "delta"), ("charlie", "delta")]


def test_pairings_are_interleaved() -> None:
    specs = schedule(config(games=6))
    for round_ in range(3):
        chunk = specs[round_ * 12:(round_ + 1) * 12]
        assert [(s.seat0, s.seat1) for s in chunk[::2]] == pairings(config())


def test_seeds_differ_between_pairings_and_pairs_but_not_between_runs() -> None:
    specs = schedule(config(games=6))
    assert specs == schedule(config(games=6))
    seeds = [s.seed for s in specs[::2]]
    assert len(set(seeds)) == len(seeds)
    assert all(0 <= s.seed < 2 ** 31 for s in specs)
    assert specs[0].seed == pair_seed(1, ("alpha", "bravo"), 0)
    assert [s.seed for s in schedule(config(games=6, seed=2))] != [s.seed for s in specs]
    # a pairing's circles do not depend on who else plays
    fewer = schedule(config(games=6, names=("alpha", "bravo", "zulu")))
    assert [s.seed for s in fewer if {s.seat0, s.seat1} == {"alpha", "bravo"}] == \
        [s.seed for s in specs if {s.seat0, s.seat1} == {"alpha", "bravo"}]


def test_game_ids_are_readable_unique_and_stable() -> None:
    specs = schedule(config(games=4))
    assert specs[7].game_id == f"0007-{specs[7].seat0}-vs-{specs[7].seat1}-p3"
    assert specs[0].game_id == "0000-alpha-vs-bravo-p0"
    assert specs[1].game_id == "0001-bravo-vs-alpha-p0"
    assert len({s.game_id for s in specs}) == len(specs)
    assert all(re.fullmatch(r"\d{4}-[a-z]+-vs-[a-z]+-p\d+", s.game_id) for s in specs)


def test_odd_names_are_made_safe_in_ids() -> None:
    specs = schedule(config(games=2, names=("my bot/v2", "b")))
    assert specs[0].game_id == "0000-b-vs-my_bot_v2-p0"
    assert specs[0].seat1 == "my bot/v2"


def test_gauntlet_challengers_play_everyone_else() -> None:
    specs = schedule(config(games=4, fmt="gauntlet", challengers=("delta", "bravo")))
    assert pairings(config(fmt="gauntlet", challengers=("delta", "bravo"))) == [
        ("delta", "alpha"), ("delta", "charlie"), ("bravo", "alpha"), ("bravo", "charlie")]
    assert len(specs) == 2 * 2 * 4
    counts = Counter(frozenset((s.seat0, s.seat1)) for s in specs)
    assert counts == {frozenset(p): 4 for p in itertools.product(("delta", "bravo"), ("alpha", "charlie"))}
    assert all(len({s.seat0, s.seat1} & {"delta", "bravo"}) == 1 for s in specs)
    check_pairs(specs)


def test_completed_games_are_left_out_without_renumbering() -> None:
    specs = schedule(config(games=2))
    done = {specs[0].game_id, specs[3].game_id}
    rest = schedule(config(games=2), completed=done)
    assert rest == [s for s in specs if s.game_id not in done]
    assert rest[0].index == 1


def test_game_ids_of_the_longest_names_fit_the_protocol_and_short_ones_are_unchanged() -> None:
    """Two 64-character names made 140-character ids; the protocol's game_id has at most 128."""
    long_names = ("a" * 64, "b" * 64, "a" * 63 + "c")
    specs = schedule(Plan(long_names, 200, 1, ()))
    assert max(len(s.game_id) for s in specs) <= 128
    assert len({s.game_id for s in specs}) == len(specs)
    assert schedule(config(2))[0].game_id == "0000-alpha-vs-bravo-p0"
