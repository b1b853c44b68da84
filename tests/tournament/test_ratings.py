"""TrueSkill ratings from stored games (no draws, deterministic) and the SPRT."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pandas as pd
import pytest
import trueskill

from arena.engine.playout import random_game
from arena.errors import ConfigError
from arena.records import make_record, normal_result
from arena.tournament.config import Entrant, TournamentConfig
from arena.tournament.ratings import (
    HISTORY_COLUMNS,
    TABLE_COLUMNS,
    OnlineRatings,
    ScheduleOrderTally,
    environment,
    rate,
    rating_history,
    win_1vs1,
)
from arena.tournament.schedule import schedule
from arena.tournament.sprt import SPRT, _gsprt_llr, expected_score, game_counts, pair_counts
from arena.tournament.storage import ResultStore


def games(rows: list[tuple[str, str, int]], reasons: dict[int, str] | None = None,
          scores: tuple[int, int] = (10, 5)) -> pd.DataFrame:
    """A games frame from (seat0, seat1, winner seat) rows, idx = row number, pair = idx // 2."""
    reasons = reasons or {}
    return pd.DataFrame({
        "idx": range(len(rows)), "pair": [i // 2 for i in range(len(rows))],
        "seat0": [r[0] for r in rows], "seat1": [r[1] for r in rows], "winner": [r[2] for r in rows],
        "winner_name": [r[r[2]] for r in rows], "score0": scores[0], "score1": scores[1],
        "reason": [reasons.get(i, "normal") for i in range(len(rows))]})


def tournament(rounds: int = 5) -> pd.DataFrame:
    """strong beats everyone, weak loses to everyone, mid in between; seats alternate."""
    order = {"strong": 0, "mid": 1, "weak": 2}
    rows = []
    for _ in range(rounds):
        for a, b in (("mid", "strong"), ("strong", "weak"), ("mid", "weak")):
            for seat0, seat1 in ((a, b), (b, a)):
                rows.append((seat0, seat1, 0 if order[seat0] < order[seat1] else 1))
    return games(rows)


def test_a_bot_that_always_wins_ranks_above_one_that_always_loses() -> None:
    table = rate(tournament())
    assert list(table.columns) == list(TABLE_COLUMNS)
    assert list(table["name"]) == ["strong", "mid", "weak"]
    assert list(table["rank"]) == [1, 2, 3]
    strong = table.iloc[0]
    assert (strong["games"], strong["wins"], strong["losses"], strong["win_rate"]) == (20, 20, 0, 1.0)
    assert table.iloc[2]["win_rate"] == 0.0
    assert table["conservative"].tolist() == pytest.approx((table["mu"] - 3 * table["sigma"]).tolist())
    assert table["conservative"].is_monotonic_decreasing


@pytest.mark.parametrize("order", ["in order", "shuffled", "reversed"])
def test_games_coming_in_any_order_give_exactly_the_stored_table(order: str) -> None:
    import random

    plain = tournament(4)
    frame = games(list(zip(plain["seat0"], plain["seat1"], plain["winner"], strict=True)),
                  reasons={3: "timeout", 8: "crash"})
    rows = list(frame[["idx", "seat0", "seat1", "winner", "reason"]].itertuples(index=False))
    if order == "shuffled":
        random.Random(7).shuffle(rows)
    elif order == "reversed":
        rows.reverse()
    tally = ScheduleOrderTally(len(rows), ["idle"])
    assert tally.leader() is None  # no game yet: no leader (it named the first entrant)
    for i, row in enumerate(rows):
        assert tally.table() is None  # not all in yet
        tally.add_game(*row)
        assert tally.rated <= i + 1
    pd.testing.assert_frame_equal(tally.table(), rate(frame, ["idle"]), check_exact=True)
    assert tally.leader() == ("strong", pytest.approx(tally.table()["conservative"].iloc[0]))


def test_a_tally_without_every_game_or_with_one_off_the_schedule_has_no_final_table() -> None:
    tally = ScheduleOrderTally(3)
    tally.add_game(0, "a", "b", 0, "normal")
    tally.add_game(2, "a", "b", 1, "normal")
    assert tally.rated == 1 and tally.table() is None and not tally.complete
    tally.add_game(1, "b", "a", 1, "normal")
    assert tally.complete and tally.table() is not None
    tally.add_game(5, "a", "b", 0, "normal")  # not in the schedule: the stored table differs
    assert tally.table() is None


def test_online_ratings_game_by_game_equal_the_table_and_name_its_leader() -> None:
    frame = tournament(3)
    online = OnlineRatings(["idle"])
    assert online.leader() == ("idle", pytest.approx(0.0, abs=1e-9))  # mu 25 - 3 * 25/3
    for seat0, seat1, winner in zip(frame["seat0"], frame["seat1"], frame["winner"], strict=True):
        seats = (seat0, seat1)
        online.add(seats[int(winner)], seats[1 - int(winner)])
    table = rate(frame, ["idle"]).set_index("name")
    for name, rating in online.ratings.items():
        assert (rating.mu, rating.sigma) == (table.loc[name, "mu"], table.loc[name, "sigma"])
    assert online.leader() == ("strong", table.loc["strong", "conservative"])


def test_no_draws_equal_scores_are_a_win_for_the_recorded_winner() -> None:
    frame = games([("a", "b", 1), ("b", "a", 1)], scores=(7, 7))
    table = rate(frame).set_index("name")
    assert (table.loc["a", "wins"], table.loc["a", "losses"]) == (1, 1)
    assert (table["wins"] + table["losses"] == table["games"]).all()
    assert table["wins"].sum() == len(frame)
    assert "draws" not in table.columns
    # a draw would leave two equal ratings at the same mu; a win moves them apart
    once = rate(games([("a", "b", 0)], scores=(3, 3))).set_index("name")
    assert once.loc["a", "mu"] > 25 > once.loc["b", "mu"]


def test_ratings_are_deterministic_and_follow_schedule_order() -> None:
    frame = tournament()
    first = rate(frame)
    pd.testing.assert_frame_equal(first, rate(frame))
    shuffled = frame.sample(frac=1.0, random_state=3)  # completion order is not schedule order
    pd.testing.assert_frame_equal(first, rate(shuffled))
    pd.testing.assert_frame_equal(rating_history(frame), rating_history(shuffled))


def test_failures_count_games_lost_by_forfeit() -> None:
    frame = games([("a", "b", 0), ("b", "a", 1), ("a", "b", 1)], reasons={0: "timeout", 2: "crash"})
    table = rate(frame).set_index("name")
    assert table.loc["b", "failures"] == 1
    assert table.loc["a", "failures"] == 1
    assert table["failures"].sum() == 2


def test_history_has_both_players_after_every_game() -> None:
    frame = tournament(rounds=2)
    history = rating_history(frame)
    assert list(history.columns) == list(HISTORY_COLUMNS)
    assert len(history) == 2 * len(frame)
    assert list(history["idx"]) == [i for i in range(len(frame)) for _ in range(2)]
    final = history.groupby("name").last()
    table = rate(frame).set_index("name")
    for name in table.index:
        assert final.loc[name, "mu"] == table.loc[name, "mu"]
        assert final.loc[name, "sigma"] == table.loc[name, "sigma"]


def test_unplayed_entrants_and_empty_tables() -> None:
    table = rate(games([("a", "b", 0)]), names=["c", "a"])
    c = table.set_index("name").loc["c"]
    assert (c["games"], c["mu"]) == (0, 25.0) and math.isnan(c["win_rate"])
    assert rate(games([])).empty
    assert list(rate(games([]), names=["x"])["name"]) == ["x"]
    with pytest.raises(ValueError, match="lacks column"):
        rate(pd.DataFrame({"idx": [0]}))


def test_rating_the_stored_games_of_a_results_folder(tmp_path: Path) -> None:
    config = TournamentConfig(name="t", entrants=tuple(Entrant(n, tmp_path / n) for n in ("x", "y", "z")),
                              games=2)
    with ResultStore(tmp_path / "res", create=True) as store:
        for spec in schedule(config.plan):
            initial, moves, final = random_game(spec.seed)
            record = make_record(initial, (spec.seat0, spec.seat1),
                                 [{"player": p, **m.to_json()} for p, m in moves], normal_result(final))
            store.store_game(spec, record, 0.1)
        frame = store.games_frame()
    table = rate(frame)
    assert sorted(table["name"]) == ["x", "y", "z"]
    assert table["games"].tolist() == [4, 4, 4]
    assert table["wins"].sum() == len(frame) == 6


# ------------------------------------------------------------------ SPRT
def bernoulli_llr(wins: int, losses: int, elo0: float, elo1: float) -> float:
    p0 = 1 / (1 + 10 ** (-elo0 / 400))
    p1 = 1 / (1 + 10 ** (-elo1 / 400))
    return wins * math.log(p1 / p0) + losses * math.log((1 - p1) / (1 - p0))


def test_sprt_bounds_and_llr_follow_the_formulas() -> None:
    test = SPRT(0, 20, 0.05, 0.1)
    assert test.bounds() == (pytest.approx(math.log(0.1 / 0.95)), pytest.approx(math.log(0.9 / 0.05)))
    assert test.llr(60, 20) == pytest.approx(bernoulli_llr(60, 20, 0, 20))
    assert test.llr(60, 20) == pytest.approx(2.17011, abs=1e-5)
    assert test.llr(0, 0) == 0.0
    assert expected_score(0) == 0.5 and expected_score(400) == pytest.approx(10 / 11)


def test_sprt_decisions() -> None:
    # 60-20 with elo0=0, elo1=20: LLR 2.170 passes ln(0.8 / 0.1) = 2.079 (alpha 0.1, beta 0.2) ...
    assert bernoulli_llr(60, 20, 0, 20) > math.log(0.8 / 0.1)
    assert SPRT(0, 20, alpha=0.1, beta=0.2).status(60, 20) == "accept H1"
    # ... but not ln(0.95 / 0.05) = 2.944 at alpha = beta = 0.05: 80-20 (LLR 3.288) is needed there
    strict = SPRT(0, 20, alpha=0.05, beta=0.05)
    assert strict.status(60, 20) == "continue"
    assert strict.status(80, 20) == "accept H1"
    assert bernoulli_llr(10, 70, 0, 20) < math.log(0.05 / 0.95)
    assert strict.status(10, 70) == "accept H0"
    assert strict.status(40, 40) == "continue"
    assert strict.status(20, 60) == "continue"  # LLR -2.44 is not yet below -2.944


def test_sprt_rejects_bad_parameters() -> None:
    with pytest.raises(ConfigError, match="elo1 must be greater"):
        SPRT(10, 0)
    with pytest.raises(ConfigError, match="alpha"):
        SPRT(0, 10, alpha=0.0)


def test_pair_model() -> None:
    test = SPRT(0, 20, 0.05, 0.05)
    # with two outcomes the generalized LLR is exactly the Bernoulli one
    assert _gsprt_llr((20, 60), (0.0, 1.0), test.p0, test.p1) == pytest.approx(test.llr(60, 20), rel=1e-9)
    assert test.llr_pairs(0, 0, 0) == 0.0
    assert test.llr_pairs(2, 10, 30) > 0 > test.llr_pairs(30, 10, 2)
    assert test.status_pairs(2, 10, 60) == "accept H1"
    assert test.status_pairs(60, 10, 2) == "accept H0"
    assert test.status_pairs(10, 40, 10) == "continue"


def test_counts_from_a_games_frame() -> None:
    frame = games([("new", "base", 0), ("base", "new", 0),  # pair 0: split
                   ("new", "base", 0), ("base", "new", 1),  # pair 1: new wins both
                   ("new", "other", 0), ("other", "new", 0),  # another opponent: ignored
                   ("base", "new", 0)])  # pair 3, only one game: left out of pairs
    assert game_counts(frame, "new", "base") == (3, 2)
    assert pair_counts(frame, "new", "base") == (0, 1, 1)


@pytest.mark.parametrize("draw_probability", [0.0, 0.1])
def test_the_closed_form_update_is_trueskills_rate_1vs1(draw_probability: float) -> None:
    """win_1vs1 against the package's factor graph, over ratings from fresh to settled and
    far apart, including the ones where both give up (FloatingPointError)."""
    env = trueskill.TrueSkill(draw_probability=draw_probability)
    rnd = random.Random(7)
    raised = 0
    pairs = [(trueskill.Rating(rnd.uniform(-20, 70), rnd.uniform(0.05, 9)),
              trueskill.Rating(rnd.uniform(-20, 70), rnd.uniform(0.05, 9))) for _ in range(3000)]
    pairs += [(trueskill.Rating(0, 1), trueskill.Rating(gap, 1)) for gap in range(0, 1000, 25)]
    for a, b in pairs:
        try:
            expected = trueskill.rate_1vs1(a, b, env=env)
        except FloatingPointError:
            raised += 1
            with pytest.raises(FloatingPointError):
                win_1vs1(a, b, env)
            continue
        for want, got in zip(expected, win_1vs1(a, b, env), strict=True):
            assert got.mu == pytest.approx(want.mu, rel=1e-6, abs=1e-6)
            assert got.sigma == pytest.approx(want.sigma, rel=1e-6)
    assert raised > 0  # the far-apart cases were drawn


def test_a_long_tournament_rated_in_closed_form_ends_where_the_package_does() -> None:
    env = environment()
    mine = OnlineRatings(["a", "b", "c", "d"], env)
    theirs = {name: env.create_rating() for name in "abcd"}
    rnd = random.Random(3)
    for _ in range(3000):
        winner, loser = rnd.sample("abcd", 2)
        mine.add(winner, loser)
        theirs[winner], theirs[loser] = trueskill.rate_1vs1(theirs[winner], theirs[loser], env=env)
    for name in "abcd":
        assert mine.ratings[name].mu == pytest.approx(theirs[name].mu, abs=1e-6)
        assert mine.ratings[name].sigma == pytest.approx(theirs[name].sigma, abs=1e-6)
