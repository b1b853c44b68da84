"""TrueSkill ratings: recomputed from the stored games (pure: tables in, tables out), and
online, game by game (:class:`OnlineRatings`, the runner's live leader), by the same update.

Patchwork has no draws (equal scores go to the player who finished first), so the
TrueSkill environment has ``draw_probability=0`` and every game is rated as a win for
its recorded winner, whatever the scores. Games are rated in schedule (``idx``) order,
never completion order, so a resumed tournament gets exactly the table of an
uninterrupted one, whatever the concurrency.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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


class OnlineRatings:
    """TrueSkill ratings updated one game at a time: the one place a game changes a rating
    (``rate`` and ``rating_history`` replay stored games through it)."""

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
        self.ratings[winner], self.ratings[loser] = trueskill.rate_1vs1(
            self.enter(winner), self.enter(loser), drawn=False, env=self.env)

    def add_record(self, record: Mapping[str, Any]) -> None:
        """Rate a game record (its ``players`` and ``result.winner``)."""
        winner = record["result"]["winner"]
        self.add(record["players"][winner], record["players"][1 - winner])

    def leader(self) -> tuple[str, float] | None:
        """The best conservative rating (mu - 3 sigma; ties by name) and whose it is."""
        if not self.ratings:
            return None
        name, rating = max(self.ratings.items(), key=lambda kv: (kv[1].mu - 3 * kv[1].sigma, kv[0]))
        return name, rating.mu - 3 * rating.sigma


def rate(games: pd.DataFrame, names: Iterable[str] = (), *,
         env: trueskill.TrueSkill | None = None) -> pd.DataFrame:
    """The rating table from a games frame (``ResultStore.games_frame()``; needs idx, seat0,
    seat1, winner, reason).

    Columns: rank, name, mu, sigma, conservative (mu - 3 sigma), games, wins, losses,
    win_rate, failures (games lost with a reason other than "normal": timeouts, crashes,
    illegal moves, ...). Sorted by conservative rating, best first (ties by name).
    ``names`` adds entrants that have not played yet (at the initial rating).
    """
    ratings, stats, _ = _replay(games, names, env or environment(), history=False)
    rows = []
    for name, rating in ratings.items():
        s = stats[name]
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


def rating_history(games: pd.DataFrame, *, env: trueskill.TrueSkill | None = None) -> pd.DataFrame:
    """The two players' ratings after each game: columns idx, name, mu, sigma (idx order, seat 0
    first), for plots of ratings over a tournament."""
    _, _, history = _replay(games, (), env or environment(), history=True)
    frame = pd.DataFrame(history, columns=list(HISTORY_COLUMNS))
    return frame.astype({"idx": "int64", "mu": "float64", "sigma": "float64"})


def _replay(games: pd.DataFrame, names: Iterable[str], env: trueskill.TrueSkill,
            history: bool) -> tuple[dict[str, trueskill.Rating], dict[str, dict[str, int]], list[Any]]:
    missing = [c for c in REQUIRED if c not in games.columns]
    if missing:
        raise ValueError(f"the games frame lacks column(s) {', '.join(missing)}; "
                         f"expected {', '.join(REQUIRED)}")
    online = OnlineRatings(env=env)
    ratings = online.ratings
    stats: dict[str, dict[str, int]] = {}

    def enter(name: str) -> None:
        online.enter(name)
        stats.setdefault(name, {"wins": 0, "losses": 0, "failures": 0})

    for name in names:
        enter(name)
    trail: list[Any] = []
    ordered = games.sort_values("idx", kind="stable")
    for idx, seat0, seat1, winner, reason in zip(ordered["idx"], ordered["seat0"], ordered["seat1"],
                                                 ordered["winner"], ordered["reason"], strict=True):
        if int(winner) not in (0, 1):
            raise ValueError(f"game {idx}: winner must be 0 or 1, got {winner!r}")
        seats = (str(seat0), str(seat1))
        won, lost = seats[int(winner)], seats[1 - int(winner)]
        enter(won)
        enter(lost)
        online.add(won, lost)
        stats[won]["wins"] += 1
        stats[lost]["losses"] += 1
        if reason != "normal":
            stats[lost]["failures"] += 1
        if history:
            trail.extend((int(idx), name, ratings[name].mu, ratings[name].sigma) for name in seats)
    return ratings, stats, trail


__all__ = ["HISTORY_COLUMNS", "TABLE_COLUMNS", "OnlineRatings", "environment", "rate", "rating_history"]
