"""TrueSkill ratings: recomputed from the stored games (pure: tables in, tables out), and
online, game by game, by the same update (:class:`OnlineRatings`, counted with wins and
losses by :class:`Tally`); a running tournament feeds a :class:`ScheduleOrderTally`, which
rates its games in schedule order as they come in, so its final table is the stored one.

Patchwork has no draws (equal scores go to the player who finished first), so the
TrueSkill environment has ``draw_probability=0`` and every game is rated as a win for
its recorded winner, whatever the scores. Games are rated in schedule (``idx``) order,
never completion order, so a resumed tournament gets exactly the table of an
uninterrupted one, whatever the concurrency.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import pandas as pd
import trueskill

REQUIRED = ("idx", "seat0", "seat1", "winner", "reason")
TABLE_COLUMNS = ("rank", "name", "mu", "sigma", "conservative", "games", "wins", "losses", "win_rate",
                 "failures")
HISTORY_COLUMNS = ("idx", "name", "mu", "sigma")


def environment() -> trueskill.TrueSkill:
    """The TrueSkill environment: the package's defaults (mu 25, sigma 25/3) without draws."""
    return trueskill.TrueSkill(draw_probability=0.0)


def win_1vs1(winner: trueskill.Rating, loser: trueskill.Rating,
             env: trueskill.TrueSkill) -> tuple[trueskill.Rating, trueskill.Rating]:
    """The ratings after ``winner`` beat ``loser``: what ``trueskill.rate_1vs1`` computes,
    in the closed form that its factor graph reaches for two players (Herbrich et al.
    2007, with the package's own v and w functions and draw margin). ``rate_1vs1`` builds
    and runs that graph for every game: 94 against 4 us, a quarter of the coordinator's
    CPU per game. Agrees with it to rounding in the tests; raises FloatingPointError where
    it does (a win too unlikely for floats)."""
    tau2 = env.tau ** 2
    var_w, var_l = winner.sigma ** 2 + tau2, loser.sigma ** 2 + tau2  # the dynamics factor first
    c2 = 2 * env.beta ** 2 + var_w + var_l
    c = math.sqrt(c2)
    t, margin = (winner.mu - loser.mu) / c, trueskill.calc_draw_margin(env.draw_probability, 2, env) / c
    v, w = env.v_win(t, margin), env.w_win(t, margin)
    return (trueskill.Rating(winner.mu + var_w / c * v, math.sqrt(var_w * (1 - var_w / c2 * w))),
            trueskill.Rating(loser.mu - var_l / c * v, math.sqrt(var_l * (1 - var_l / c2 * w))))


class OnlineRatings:
    """TrueSkill ratings updated one game at a time: the one place a game changes a rating
    (:class:`Tally`, ``rate`` and ``rating_history`` go through it)."""

    def __init__(self, names: Iterable[str] = (), env: trueskill.TrueSkill | None = None) -> None:
        self.env = env or environment()
        self.ratings: dict[str, trueskill.Rating] = {}
        for name in names:
            self.enter(name)

    def enter(self, name: str) -> trueskill.Rating:
        """``name``'s rating, the initial one if it has not played yet."""
        if name not in self.ratings:
            self.ratings[name] = self.env.create_rating()
        return self.ratings[name]

    def add(self, winner: str, loser: str) -> None:
        """Rate one game (no draws in Patchwork)."""
        self.ratings[winner], self.ratings[loser] = win_1vs1(self.enter(winner), self.enter(loser), self.env)

    def leader(self) -> tuple[str, float] | None:
        """The best conservative rating (mu - 3 sigma; ties by name) and whose it is."""
        if not self.ratings:
            return None
        name, rating = max(self.ratings.items(), key=lambda kv: (kv[1].mu - 3 * kv[1].sigma, kv[0]))
        return name, rating.mu - 3 * rating.sigma


class Tally:
    """Ratings plus wins, losses and failures, one game at a time: the table :func:`rate`
    prints. Games must be added in schedule (idx) order for the table to be the stored one."""

    def __init__(self, names: Iterable[str] = (), env: trueskill.TrueSkill | None = None) -> None:
        self.online = OnlineRatings(env=env)
        self.stats: dict[str, dict[str, int]] = {}
        for name in names:
            self.enter(name)

    def enter(self, name: str) -> None:
        self.online.enter(name)
        self.stats.setdefault(name, {"wins": 0, "losses": 0, "failures": 0})

    def add_game(self, idx: Any, seat0: Any, seat1: Any, winner: Any, reason: Any) -> tuple[str, str]:
        """Rate one game; returns its two seats' names. Raises ValueError for a winner not 0 or 1."""
        if int(winner) not in (0, 1):
            raise ValueError(f"game {idx}: winner must be 0 or 1, got {winner!r}")
        seats = (str(seat0), str(seat1))
        won, lost = seats[int(winner)], seats[1 - int(winner)]
        self.enter(won)
        self.enter(lost)
        self.online.add(won, lost)
        self.stats[won]["wins"] += 1
        self.stats[lost]["losses"] += 1
        if reason != "normal":
            self.stats[lost]["failures"] += 1
        return seats

    def table(self) -> pd.DataFrame:
        """The rating table (see :func:`rate`)."""
        rows = []
        for name, rating in self.online.ratings.items():
            s = self.stats[name]
            played = s["wins"] + s["losses"]
            rows.append({"name": name, "mu": rating.mu, "sigma": rating.sigma,
                         "conservative": rating.mu - 3 * rating.sigma, "games": played, "wins": s["wins"],
                         "losses": s["losses"], "win_rate": s["wins"] / played if played else float("nan"),
                         "failures": s["failures"]})
        rows.sort(key=lambda r: (-r["conservative"], r["name"]))
        for rank, row in enumerate(rows, start=1):
            row["rank"] = rank
        table = pd.DataFrame(rows, columns=list(TABLE_COLUMNS))
        return table.astype({"rank": "int64", "mu": "float64", "sigma": "float64", "conservative": "float64",
                             "games": "int64", "wins": "int64", "losses": "int64", "win_rate": "float64",
                             "failures": "int64"})


class ScheduleOrderTally:
    """A tournament's :class:`Tally` fed as games finish, in any order: a game is rated once
    every game scheduled before it is in (the others wait, a few at most when they finish
    nearly in order). Once all ``total`` games are in, :meth:`table` is exactly what
    :func:`rate` computes from the stored games, so the run's final table needs no second
    pass over them; the live leader is the one of the games rated so far."""

    def __init__(self, total: int, names: Iterable[str] = (), env: trueskill.TrueSkill | None = None) -> None:
        self.total = total
        self.tally = Tally(names, env)
        self.rated = 0  # games 0 .. rated-1 are in the tally
        self._waiting: dict[int, tuple[Any, Any, Any, Any]] = {}

    def add_game(self, idx: int, seat0: Any, seat1: Any, winner: Any, reason: Any) -> None:
        self._waiting[int(idx)] = (seat0, seat1, winner, reason)
        while self.rated in self._waiting:
            self.tally.add_game(self.rated, *self._waiting.pop(self.rated))
            self.rated += 1

    @property
    def complete(self) -> bool:
        return self.rated >= self.total

    def leader(self) -> tuple[str, float] | None:
        """The leader once a game is rated (before, every entrant ties: the first name led)."""
        if not any(stats["wins"] for stats in self.tally.stats.values()):
            return None
        return self.tally.online.leader()

    def table(self) -> pd.DataFrame | None:
        """The final table once every scheduled game is in (and no game outside the schedule
        came), else None: then rate the stored games."""
        return self.tally.table() if self.complete and not self._waiting else None


def rate(games: pd.DataFrame, names: Iterable[str] = (), *,
         env: trueskill.TrueSkill | None = None) -> pd.DataFrame:
    """The rating table from a games frame (``ResultStore.games_frame()``; needs idx, seat0,
    seat1, winner, reason).

    Columns: rank, name, mu, sigma, conservative (mu - 3 sigma), games, wins, losses,
    win_rate, failures (games lost with a reason other than "normal": timeouts, crashes,
    illegal moves, ...). Sorted by conservative rating, best first (ties by name).
    ``names`` adds entrants that have not played yet (at the initial rating).
    """
    tally, _ = _replay(games, names, env or environment(), history=False)
    return tally.table()


def rating_history(games: pd.DataFrame, *, env: trueskill.TrueSkill | None = None) -> pd.DataFrame:
    """The two players' ratings after each game: columns idx, name, mu, sigma (idx order, seat 0
    first), for plots of ratings over a tournament."""
    _, history = _replay(games, (), env or environment(), history=True)
    frame = pd.DataFrame(history, columns=list(HISTORY_COLUMNS))
    return frame.astype({"idx": "int64", "mu": "float64", "sigma": "float64"})


def _replay(games: pd.DataFrame, names: Iterable[str], env: trueskill.TrueSkill,
            history: bool) -> tuple[Tally, list[Any]]:
    missing = [c for c in REQUIRED if c not in games.columns]
    if missing:
        raise ValueError(f"the games frame lacks column(s) {', '.join(missing)}; "
                         f"expected {', '.join(REQUIRED)}")
    tally = Tally(names, env)
    ratings = tally.online.ratings
    trail: list[Any] = []
    ordered = games.sort_values("idx", kind="stable")
    for idx, seat0, seat1, winner, reason in zip(ordered["idx"], ordered["seat0"], ordered["seat1"],
                                                 ordered["winner"], ordered["reason"], strict=True):
        seats = tally.add_game(idx, seat0, seat1, winner, reason)
        if history:
            trail.extend((int(idx), name, ratings[name].mu, ratings[name].sigma) for name in seats)
    return tally, trail


__all__ = ["HISTORY_COLUMNS", "TABLE_COLUMNS", "OnlineRatings", "ScheduleOrderTally", "Tally", "environment",
           "rate", "rating_history"]
