"""The numbers of a tournament report (pure: frames in, frames out; no files, no plots).

Inputs are the frames of :class:`arena.tournament.storage.ResultStore`: the games frame
(``games_frame()``, optionally with a ``first_player`` column taken from the records; 0 is
assumed without it, as in every tournament game) and the moves frame (``moves_frame()``).

Conventions, stated once here and in the report:

- Every stored game counts for results and ratings: a forfeit (timeout, crash, ...) is
  a loss for the bot that failed, as in the TrueSkill table.
- Scores, score margins and the seat advantage use only the games that ended by the
  rules (reason ``normal``): the scores of a forfeited game are those of the position
  when it was cut off, and who moved first has nothing to do with a crash.
- 95% intervals: Wilson score intervals for proportions; bootstrap percentiles for
  Bradley-Terry ratings.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from arena.clock import TimeControl
from arena.tournament.ratings import environment, rate, rating_history

ELO_PER_NAT = 400 / math.log(10)
"""Elo points per unit of Bradley-Terry log-strength (a 400-point gap is 10:1 odds)."""

ENDING_CATEGORY = {
    "normal": "normal",
    "timeout": "timeout",
    "crash": "crash",
    "illegal_move": "illegal move",
    "malformed": "protocol error",
    "schema": "protocol error",
    "oversize": "protocol error",
    "protocol": "protocol error",
    "start_failure": "start failure",
    "interrupted": "interrupted",
}
"""How the report groups the record's ``reason`` values."""

ROW_BOT = "row bot"
"""The first column of a bot-by-bot matrix (likelihood of superiority, wins): the other columns
are named after the bots, and no bot name holds a space (a bot named "name" clashed)."""
FAILURE_CATEGORIES = ("timeout", "crash", "illegal move", "protocol error", "start failure", "interrupted")
ALWAYS_SHOWN_FAILURES = ("timeout", "crash", "illegal move", "protocol error")
"""Failure columns the endings table always has (the others only when they occurred)."""

PER_BOT_COLUMNS = ("idx", "game_id", "pair", "name", "opponent", "seat", "first", "won", "score",
                   "opponent_score", "margin", "reason", "category", "normal", "failed", "opponent_failed")


def entrant_order(games: pd.DataFrame, names: Iterable[str] = ()) -> list[str]:
    """The bots of a report: ``names`` (the entrants, in config order) then anyone else who
    appears in the games, in order of first appearance."""
    empty = pd.Series(dtype=object)
    return _order(names, pd.concat([games.get("seat0", empty), games.get("seat1", empty)]).tolist())


def _order(names: Iterable[str], present: Iterable[Any]) -> list[str]:
    """``names``, then the other names in ``present`` in order of appearance."""
    return list(dict.fromkeys([*names, *(n for n in present if isinstance(n, str))]))


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (NaN, NaN without trials)."""
    if trials <= 0:
        return (math.nan, math.nan)
    from scipy.stats import binomtest

    ci = binomtest(int(successes), int(trials)).proportion_ci(confidence_level=confidence, method="wilson")
    return (float(ci.low), float(ci.high))


def per_bot_games(games: pd.DataFrame) -> pd.DataFrame:
    """Two rows per game, one from each bot's side: idx, game_id, pair, name, opponent, seat,
    first (the bot moved first), won, score, opponent_score, margin (score minus the
    opponent's), reason, category (see ENDING_CATEGORY), normal (ended by the rules),
    failed (this bot forfeited), opponent_failed."""
    if games.empty:
        types = {"idx": "int64", "pair": "int64", "seat": "int64", "score": "int64",
                 "opponent_score": "int64", "margin": "int64", "first": bool, "won": bool, "normal": bool,
                 "failed": bool, "opponent_failed": bool}
        return pd.DataFrame({c: pd.Series(dtype=types.get(c, object)) for c in PER_BOT_COLUMNS})
    first = games["first_player"] if "first_player" in games.columns else pd.Series(0, index=games.index)
    pair = games["pair"] if "pair" in games.columns else games["idx"]
    loser = games["loser"].astype("Int64") if "loser" in games.columns else pd.Series(
        pd.NA, index=games.index, dtype="Int64")
    normal = games["reason"] == "normal"
    sides = []
    for seat in (0, 1):
        own, other = (games["score0"], games["score1"]) if seat == 0 else (games["score1"], games["score0"])
        failed = (~normal) & (loser.fillna(1 - games["winner"]) == seat)
        sides.append(pd.DataFrame({
            "idx": games["idx"].astype("int64"),
            "game_id": games["game_id"],
            "pair": pair.astype("int64"),
            "name": games[f"seat{seat}"],
            "opponent": games[f"seat{1 - seat}"],
            "seat": seat,
            "first": first.astype("int64") == seat,
            "won": games["winner"].astype("int64") == seat,
            "score": own.astype("int64"),
            "opponent_score": other.astype("int64"),
            "margin": (own - other).astype("int64"),
            "reason": games["reason"],
            "category": games["reason"].map(ENDING_CATEGORY).fillna("protocol error"),
            "normal": normal,
            "failed": failed.astype(bool),
            "opponent_failed": ((~normal) & ~failed).astype(bool),
        }))
    frame = pd.concat(sides, ignore_index=True)
    return frame.sort_values(["idx", "seat"], kind="stable").reset_index(drop=True)


# ------------------------------------------------------------------ standings
def standings(games: pd.DataFrame, names: Iterable[str] = ()) -> pd.DataFrame:
    """The TrueSkill table (see :func:`arena.tournament.ratings.rate`) with more columns:
    win_low, win_high (95% Wilson interval of the win rate), normal_games, mean_score and
    mean_margin (over the games that ended by the rules; NaN without any)."""
    order = entrant_order(games, names)
    table = rate(games, order)
    sides = per_bot_games(games)
    normal = sides[sides["normal"]]
    by_bot = normal.groupby("name")
    extra = pd.DataFrame({
        "normal_games": by_bot.size(),
        "mean_score": by_bot["score"].mean(),
        "mean_margin": by_bot["margin"].mean(),
    })
    table = table.merge(extra, left_on="name", right_index=True, how="left")
    table["normal_games"] = table["normal_games"].fillna(0).astype("int64")
    bounds = [wilson_interval(w, g) for w, g in zip(table["wins"], table["games"], strict=True)]
    table["win_low"] = [b[0] for b in bounds]
    table["win_high"] = [b[1] for b in bounds]
    columns = ["rank", "name", "mu", "sigma", "conservative", "games", "wins", "losses", "win_rate",
               "win_low", "win_high", "normal_games", "mean_score", "mean_margin", "failures"]
    return table[columns].reset_index(drop=True)


# ------------------------------------------------------------------ Bradley-Terry
@dataclass
class BradleyTerry:
    """Ratings from all games at once.

    ``table``: rank, name, elo, elo_sd, elo_low, elo_high (elo -+ 1.96 sd), games, wins.
    ``los``: the likelihood of superiority, ``los.loc[a, b]`` = the probability that a is
    stronger than b (NaN on the diagonal). ``samples``: the simulated Elo ratings
    (replicates x bots). ``notes``: caveats worth printing (e.g. groups that never met)."""

    table: pd.DataFrame
    los: pd.DataFrame
    samples: pd.DataFrame
    prior: float
    replicates: int
    notes: list[str] = field(default_factory=list)


def bradley_terry(games: pd.DataFrame, names: Iterable[str] = (), *, replicates: int = 1000,
                  prior: float = 1.0, seed: int = 0) -> BradleyTerry:
    """Fit a Bradley-Terry model to every game (a win is a win, forfeits included), with
    bootstrap error bars, the way Ordo and BayesElo rate chess engines.

    The fit is choix's ILSR maximum-likelihood estimate on the win-count matrix, with
    ``prior`` virtual wins each way added to every pairing that met (BayesElo's default
    prior of two virtual draws per pairing, which keeps a bot that won or lost every game at
    a finite rating). Ratings are on the Elo scale, relative to the average bot (0). Bots
    that are not connected by games (two groups that never met) are rated per group, each
    group around 0, and their likelihood of superiority across groups is NaN.

    Error bars come from a parametric bootstrap, as Ordo's simulations: ``replicates``
    tournaments with the same pairings and numbers of games are drawn from the fitted
    winning chances and refitted (by a vectorised Newton solver for the same likelihood,
    warm-started at the estimate). A rating's interval is elo -+ 1.96 standard deviations of
    its replicates; the likelihood of superiority of a over b is Phi(d / sd(d)) with d the
    rating difference and sd(d) that of the replicates' differences (which accounts for the
    ratings' correlation). Unlike resampling the games, this gives honest intervals when a
    bot won or lost every game. ``seed`` makes it reproducible.
    """
    present = set(games["seat0"]) | set(games["seat1"]) if not games.empty else set()
    bots = [n for n in entrant_order(games, names) if n in present]
    if len(bots) < 2:
        empty = pd.DataFrame({"rank": pd.Series(dtype="int64"), "name": pd.Series(dtype=object),
                              **{c: pd.Series(dtype="float64") for c in ("elo", "elo_sd", "elo_low",
                                                                         "elo_high")},
                              "games": pd.Series(dtype="int64"), "wins": pd.Series(dtype="int64")})
        return BradleyTerry(empty, pd.DataFrame(dtype="float64"), pd.DataFrame(dtype="float64"), prior, 0,
                            ["fewer than two bots have played: nothing to rate"] if bots else [])
    index = {name: i for i, name in enumerate(bots)}
    n = len(bots)
    wins = np.zeros((n, n))
    winners = np.where(games["winner"].astype("int64") == 0, games["seat0"], games["seat1"])
    losers = np.where(games["winner"].astype("int64") == 0, games["seat1"], games["seat0"])
    np.add.at(wins, ([index[w] for w in winners], [index[lo] for lo in losers]), 1)
    return bradley_terry_wins(bots, wins, replicates=replicates, prior=prior, seed=seed)


def bradley_terry_wins(bots: Sequence[str], wins: np.ndarray, *, replicates: int = 1000, prior: float = 1.0,
                       seed: int = 0) -> BradleyTerry:
    """:func:`bradley_terry` from the win counts alone: ``wins[i, j]`` games ``bots[i]`` won
    against ``bots[j]`` (`arena serve` counts them in SQL, not game by game)."""
    bots = list(bots)
    index = {name: i for i, name in enumerate(bots)}
    n = len(bots)
    played = wins + wins.T
    met = played > 0
    groups = _components(met)
    notes: list[str] = []
    if groups.max() > 0:
        notes.append(f"the bots form {groups.max() + 1} groups that never played each other: each group is "
                     "rated around 0 and ratings are comparable only within a group")
    rng = np.random.default_rng(seed)
    point = np.zeros(n)
    samples = np.zeros((replicates, n))
    for group in range(groups.max() + 1):
        members = np.flatnonzero(groups == group)
        sub_played, sub_met = played[np.ix_(members, members)], met[np.ix_(members, members)]
        theta = _fit(wins[np.ix_(members, members)] + prior * sub_met)
        point[members] = theta
        rows, cols = np.nonzero(np.triu(sub_met))
        chance = 1 / (1 + np.exp(-(theta[rows] - theta[cols])))
        simulated = rng.binomial(sub_played[rows, cols].astype(np.int64), chance,
                                 size=(replicates, len(rows)))
        sim = np.zeros((replicates, len(members), len(members)))
        sim[:, rows, cols] = simulated
        sim[:, cols, rows] = sub_played[rows, cols] - simulated
        if replicates:
            samples[:, members] = _fit_many(sim + prior * sub_met, theta)
    elo = point * ELO_PER_NAT
    samples *= ELO_PER_NAT
    sd = samples.std(axis=0, ddof=1) if replicates > 1 else np.full(n, np.nan)
    table = pd.DataFrame({"name": bots, "elo": elo, "elo_sd": sd, "elo_low": elo - 1.96 * sd,
                          "elo_high": elo + 1.96 * sd,
                          "games": (wins + wins.T).sum(axis=1).astype("int64"),
                          "wins": wins.sum(axis=1).astype("int64")})
    table = table.sort_values(["elo", "name"], ascending=[False, True], kind="stable").reset_index(drop=True)
    # Bots the fit cannot tell apart (the same Elo to a tenth: two copies of one bot with the same
    # record) share a rank, 1, 2, 2, 4: an organizer posting standings must not show an order there.
    shown_elo = table["elo"].round(1)
    table.insert(0, "rank", shown_elo.rank(method="min", ascending=False).astype("int64"))
    ranked = table["name"].tolist()
    order = [index[name] for name in ranked]
    diff = elo[:, None] - elo[None, :]
    if replicates > 1:
        diff_sd = (samples[:, :, None] - samples[:, None, :]).std(axis=0, ddof=1)
    else:
        diff_sd = np.full((n, n), np.nan)
    diff_sd[groups[:, None] != groups[None, :]] = np.nan
    los_values = _superiority(diff, diff_sd)[np.ix_(order, order)]
    np.fill_diagonal(los_values, np.nan)
    los = pd.DataFrame(los_values, index=pd.Index(ranked, name=ROW_BOT), columns=ranked)
    sample_frame = pd.DataFrame(samples, columns=bots)[ranked]
    return BradleyTerry(table, los, sample_frame, prior, replicates, notes)


def _superiority(diff: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """P(true difference > 0) under a normal approximation; certain when sd is 0."""
    from scipy.stats import norm

    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sd > 0, diff / np.where(sd > 0, sd, 1), np.sign(diff) * np.inf)
    out = norm.cdf(z)
    return np.where(np.isnan(sd), np.nan, out)


def _fit(wins: np.ndarray) -> np.ndarray:
    """Bradley-Terry maximum likelihood (choix ILSR) from a win-count matrix of connected
    bots whose every pairing has a win each way (the prior): log-strengths with mean 0."""
    import choix

    params = choix.ilsr_pairwise_dense(wins, max_iter=10_000, tol=1e-10)
    return params - params.mean()


def _fit_many(wins: np.ndarray, start: np.ndarray, *, max_iter: int = 100, tol: float = 1e-9) -> np.ndarray:
    """The same maximum likelihood for a stack of win-count matrices (replicates x n x n) at
    once: damped Newton steps on the concave log-likelihood, from ``start``; mean 0."""
    count, n, _ = wins.shape
    games = wins + wins.transpose(0, 2, 1)
    won = wins.sum(axis=2)
    theta = np.broadcast_to(start, (count, n)).copy()
    centre = np.full((n, n), 1.0 / n)  # pins the free shift of the ratings
    diagonal = np.arange(n)
    for _ in range(max_iter):
        chance = 1 / (1 + np.exp(-(theta[:, :, None] - theta[:, None, :])))
        gradient = won - (games * chance).sum(axis=2)
        weight = games * chance * (1 - chance)
        information = -weight
        information[:, diagonal, diagonal] = weight.sum(axis=2)
        step = np.linalg.solve(information + centre, gradient[:, :, None])[:, :, 0]
        step = np.clip(step, -1.0, 1.0)
        theta += step
        theta -= theta.mean(axis=1, keepdims=True)
        if np.abs(step).max() < tol:
            break
    return theta


def _components(met: np.ndarray) -> np.ndarray:
    """The group label of each bot (bots joined by games are in one group)."""
    from scipy.sparse.csgraph import connected_components

    _, labels = connected_components(met.astype(int), directed=False)
    return np.asarray(labels)


# ------------------------------------------------------------------ head to head
def head_to_head(games: pd.DataFrame, names: Iterable[str] = ()) -> pd.DataFrame:
    """One row per ordered pair of bots that met: name, opponent, games, wins, losses,
    win_rate, normal_games, mean_margin, min_margin, max_margin (margins: the bot's score
    minus the opponent's, over games that ended by the rules), failures (games the bot
    forfeited), opponent_failures."""
    sides = per_bot_games(games)
    columns = ["name", "opponent", "games", "wins", "losses", "win_rate", "normal_games", "mean_margin",
               "min_margin", "max_margin", "failures", "opponent_failures"]
    if sides.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
    grouped = sides.groupby(["name", "opponent"])
    table = grouped.agg(games=("won", "size"), wins=("won", "sum"), failures=("failed", "sum"),
                        opponent_failures=("opponent_failed", "sum")).reset_index()
    normal = sides[sides["normal"]].groupby(["name", "opponent"])["margin"].agg(
        normal_games="size", mean_margin="mean", min_margin="min", max_margin="max").reset_index()
    table = table.merge(normal, on=["name", "opponent"], how="left")
    table["normal_games"] = table["normal_games"].fillna(0).astype("int64")
    table["losses"] = table["games"] - table["wins"]
    table["win_rate"] = table["wins"] / table["games"]
    order = {name: i for i, name in enumerate(entrant_order(games, names))}
    table = table.sort_values(["name", "opponent"], key=lambda s: s.map(order), kind="stable")
    return table[columns].astype({"games": "int64", "wins": "int64", "losses": "int64",
                                  "failures": "int64", "opponent_failures": "int64"}).reset_index(drop=True)


def win_matrix(h2h: pd.DataFrame, names: Sequence[str], value: str = "wins") -> pd.DataFrame:
    """A square matrix from :func:`head_to_head`: ``matrix.loc[row, col]`` is ``value`` of row
    against col (NaN where they did not meet and on the diagonal)."""
    matrix = pd.DataFrame(np.nan, index=pd.Index(list(names), name=ROW_BOT), columns=list(names))
    for row in h2h.itertuples(index=False):
        if row.name in matrix.index and row.opponent in matrix.columns:
            matrix.loc[row.name, row.opponent] = getattr(row, value)
    return matrix


def pairing_margins(games: pd.DataFrame, names: Iterable[str] = ()) -> pd.DataFrame:
    """Score margins per pairing (games ended by the rules): pairing ("a vs b"), a, b, idx,
    margin (a's score minus b's), a_first (a moved first). In each pairing ``a`` is the bot
    listed first in ``names``."""
    columns = ["pairing", "a", "b", "idx", "margin", "a_first"]
    sides = per_bot_games(games)
    order = {name: i for i, name in enumerate(entrant_order(games, names))}
    if sides.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
    mine = sides[sides["normal"] & (sides["name"].map(order) < sides["opponent"].map(order))]
    frame = pd.DataFrame({"pairing": mine["name"] + " vs " + mine["opponent"], "a": mine["name"],
                          "b": mine["opponent"], "idx": mine["idx"], "margin": mine["margin"],
                          "a_first": mine["first"]})
    frame = frame.assign(_a=frame["a"].map(order), _b=frame["b"].map(order))
    return frame.sort_values(["_a", "_b", "idx"]).drop(columns=["_a", "_b"]).reset_index(drop=True)


# ------------------------------------------------------------------ seat advantage
def seat_advantage(games: pd.DataFrame, names: Iterable[str] = ()) -> pd.DataFrame:
    """How often the first player wins, over the games that ended by the rules. The first row
    (name ``"all games"``) counts each game once: games, first_wins, first_win_rate and its
    95% interval (first_low, first_high). Then one row per bot: its games as first player
    (first_games, first_wins, first_win_rate) and as second (second_games, second_wins,
    second_win_rate), and first_win_rate minus second_win_rate (seat_gain)."""
    sides = per_bot_games(games)
    normal = sides[sides["normal"]] if not sides.empty else sides
    first_rows = normal[normal["first"]] if not normal.empty else normal
    total = len(first_rows)
    first_wins = int(first_rows["won"].sum()) if total else 0
    low, high = wilson_interval(first_wins, total)
    rows: list[dict[str, Any]] = [{
        "name": "all games", "games": total, "first_games": total, "first_wins": first_wins,
        "first_win_rate": first_wins / total if total else math.nan, "first_low": low, "first_high": high,
        "second_games": total, "second_wins": total - first_wins,
        "second_win_rate": (total - first_wins) / total if total else math.nan}]
    for name in entrant_order(games, names):
        mine = normal[normal["name"] == name] if not normal.empty else normal
        as_first = mine[mine["first"]] if not mine.empty else mine
        as_second = mine[~mine["first"].astype(bool)] if not mine.empty else mine
        fw, sw = int(as_first["won"].sum()) if len(as_first) else 0, int(as_second["won"].sum()) if len(
            as_second) else 0
        low, high = wilson_interval(fw, len(as_first))
        rows.append({"name": name, "games": len(mine), "first_games": len(as_first), "first_wins": fw,
                     "first_win_rate": fw / len(as_first) if len(as_first) else math.nan,
                     "first_low": low, "first_high": high,
                     "second_games": len(as_second), "second_wins": sw,
                     "second_win_rate": sw / len(as_second) if len(as_second) else math.nan})
    table = pd.DataFrame(rows)
    table["seat_gain"] = table["first_win_rate"] - table["second_win_rate"]
    return table


# ------------------------------------------------------------------ endings
def endings(games: pd.DataFrame, names: Iterable[str] = ()) -> pd.DataFrame:
    """How each bot's games ended: name, games, normal (ended by the rules), opponent_failed
    (won because the opponent forfeited), one column per failure category this bot caused
    (timeout, crash, illegal move, protocol error always; start failure, interrupted when
    they occurred), failures (their sum)."""
    sides = per_bot_games(games)
    present = set(sides["category"]) if not sides.empty else set()
    categories = [c for c in FAILURE_CATEGORIES if c in ALWAYS_SHOWN_FAILURES or c in present]
    rows = []
    for name in entrant_order(games, names):
        mine = sides[sides["name"] == name] if not sides.empty else sides
        row: dict[str, Any] = {"name": name, "games": len(mine),
                               "normal": int(mine["normal"].sum()) if len(mine) else 0,
                               "opponent_failed": int(mine["opponent_failed"].sum()) if len(mine) else 0}
        failed = mine[mine["failed"].astype(bool)] if len(mine) else mine
        for category in categories:
            row[category] = int((failed["category"] == category).sum()) if len(failed) else 0
        row["failures"] = len(failed)
        rows.append(row)
    columns = ["name", "games", "normal", "opponent_failed", *categories, "failures"]
    return pd.DataFrame(rows, columns=columns)


def abnormal_games(games: pd.DataFrame) -> pd.DataFrame:
    """The games that did not end by the rules: idx, game_id, seat0, seat1, reason, category,
    failed (the bot that forfeited), winner_name, moves, detail."""
    columns = ["idx", "game_id", "seat0", "seat1", "reason", "category", "failed", "winner_name", "moves",
               "detail"]
    bad = games[games["reason"] != "normal"] if not games.empty else games
    if bad.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
    loser = bad["loser"].astype("Int64").fillna(1 - bad["winner"].astype("int64"))
    failed = np.where(loser == 0, bad["seat0"], bad["seat1"])
    frame = bad.assign(category=bad["reason"].map(ENDING_CATEGORY).fillna("protocol error"), failed=failed)
    return frame[columns].reset_index(drop=True)


# ------------------------------------------------------------------ think time
def think_times(moves: pd.DataFrame, names: Iterable[str] = ()) -> pd.DataFrame:
    """Per bot: moves (with a measured time), mean_ms, median_ms, p90_ms, p99_ms, max_ms,
    total_s (all its thinking)."""
    timed = moves.dropna(subset=["time_ms"]) if "time_ms" in moves.columns else moves
    rows = []
    for name in _order(names, timed.get("name", ())):
        times = (timed.loc[timed["name"] == name, "time_ms"].to_numpy(dtype=float) if len(timed)
                 else np.array([]))
        if len(times):
            rows.append({"name": name, "moves": len(times), "mean_ms": times.mean(),
                         "median_ms": float(np.median(times)), "p90_ms": float(np.percentile(times, 90)),
                         "p99_ms": float(np.percentile(times, 99)), "max_ms": times.max(),
                         "total_s": times.sum() / 1000})
        else:
            rows.append({"name": name, "moves": 0, "mean_ms": math.nan, "median_ms": math.nan,
                         "p90_ms": math.nan, "p99_ms": math.nan, "max_ms": math.nan, "total_s": 0.0})
    return pd.DataFrame(rows, columns=["name", "moves", "mean_ms", "median_ms", "p90_ms", "p99_ms", "max_ms",
                                       "total_s"])


def slowest_moves(moves: pd.DataFrame, count: int = 10) -> pd.DataFrame:
    """The ``count`` slowest moves: name, time_ms, game_id, idx, move (1-based), action, patch."""
    columns = ["name", "time_ms", "game_id", "idx", "move", "action", "patch"]
    if moves.empty or "time_ms" not in moves.columns:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
    top = moves.dropna(subset=["time_ms"]).sort_values("time_ms", ascending=False, kind="stable").head(count)
    return top.assign(move=top["ply"] + 1)[columns].reset_index(drop=True)


def bank_use(moves: pd.DataFrame, time_control: dict[str, int]) -> pd.DataFrame:
    """Time-bank use per bot and game: idx, game_id, name, moves, over_limit (moves that took
    longer than their per-move limit), bank_ms (drawn from the bank: the sum of the overruns),
    bank_share (bank_ms over the bank). A bot's first move of a game has the larger
    first-move limit, as the referee counts it."""
    columns = ["idx", "game_id", "name", "moves", "over_limit", "bank_ms", "bank_share"]
    if moves.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
    ordered = moves.sort_values(["idx", "ply"], kind="stable")
    first = ordered.groupby(["game_id", "player"]).cumcount() == 0
    tc = TimeControl.from_json(time_control)  # the limits as the referee counts them (arena.clock)
    limit = np.array([tc.limit_ms(first_move=bool(f)) for f in first], dtype=float)
    overrun = (ordered["time_ms"].fillna(0).to_numpy(float) - limit).clip(min=0)
    frame = ordered.assign(overrun=overrun, over=overrun > 0)
    table = frame.groupby(["idx", "game_id", "name"], sort=False).agg(
        moves=("ply", "size"), over_limit=("over", "sum"), bank_ms=("overrun", "sum")).reset_index()
    bank = time_control["bank_ms"]
    table["bank_share"] = table["bank_ms"] / bank if bank else np.where(table["bank_ms"] > 0, np.inf, 0.0)
    return table[columns]


def bank_summary(per_game: pd.DataFrame, names: Iterable[str] = ()) -> pd.DataFrame:
    """Per bot, from :func:`bank_use`: games, games_using_bank, moves_over_limit, mean_bank_ms
    (per game), max_bank_ms (in one game), max_bank_share."""
    rows = []
    for name in _order(names, per_game.get("name", ())):
        mine = per_game[per_game["name"] == name] if len(per_game) else per_game
        rows.append({"name": name, "games": len(mine),
                     "games_using_bank": int((mine["bank_ms"] > 0).sum()) if len(mine) else 0,
                     "moves_over_limit": int(mine["over_limit"].sum()) if len(mine) else 0,
                     "mean_bank_ms": float(mine["bank_ms"].mean()) if len(mine) else math.nan,
                     "max_bank_ms": float(mine["bank_ms"].max()) if len(mine) else math.nan,
                     "max_bank_share": float(mine["bank_share"].max()) if len(mine) else math.nan})
    return pd.DataFrame(rows, columns=["name", "games", "games_using_bank", "moves_over_limit",
                                       "mean_bank_ms", "max_bank_ms", "max_bank_share"])


# ------------------------------------------------------------------ scores and lengths
def score_table(games: pd.DataFrame, names: Iterable[str] = ()) -> pd.DataFrame:
    """Final scores per bot over the games that ended by the rules: name, games, mean, std,
    min, median, max, mean_margin."""
    sides = per_bot_games(games)
    normal = sides[sides["normal"]] if not sides.empty else sides
    rows = []
    for name in entrant_order(games, names):
        s = normal.loc[normal["name"] == name, "score"].to_numpy(float) if len(normal) else np.array([])
        m = normal.loc[normal["name"] == name, "margin"].to_numpy(float) if len(normal) else np.array([])
        rows.append({"name": name, "games": len(s),
                     "mean": s.mean() if len(s) else math.nan,
                     "std": s.std(ddof=1) if len(s) > 1 else math.nan,
                     "min": s.min() if len(s) else math.nan,
                     "median": float(np.median(s)) if len(s) else math.nan,
                     "max": s.max() if len(s) else math.nan,
                     "mean_margin": m.mean() if len(m) else math.nan})
    return pd.DataFrame(rows, columns=["name", "games", "mean", "std", "min", "median", "max", "mean_margin"])


def game_lengths(games: pd.DataFrame) -> pd.DataFrame:
    """Per game: idx, game_id, moves (decisions, special placements included), duration_s,
    normal; and a summary is ``.describe()`` away."""
    columns = ["idx", "game_id", "moves", "duration_s", "normal"]
    if games.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
    return games.assign(normal=games["reason"] == "normal")[columns].reset_index(drop=True)


# ------------------------------------------------------------------ rating progression
def rating_progression(games: pd.DataFrame, names: Iterable[str] = ()) -> pd.DataFrame:
    """TrueSkill mu and sigma of every bot after each of its games: name, played (games
    played so far, 0 = the initial rating), idx (the game, -1 for the start), mu, sigma."""
    columns = ["name", "played", "idx", "mu", "sigma"]
    env = environment()
    start = [{"name": name, "played": 0, "idx": -1, "mu": env.mu, "sigma": env.sigma}
             for name in entrant_order(games, names)]
    if games.empty:
        return pd.DataFrame(start, columns=columns)
    history = rating_history(games, env=env)
    history["played"] = history.groupby("name").cumcount() + 1
    frame = pd.concat([pd.DataFrame(start, columns=columns), history[columns]], ignore_index=True)
    return frame.astype({"played": "int64", "idx": "int64"})


# ------------------------------------------------------------------ replays
def replay_selection(games: pd.DataFrame, sample: int = 6) -> pd.DataFrame:
    """The games to link a replay for: every game that ended abnormally, and ``sample``
    normal ones: first normal games of pairings chosen so that every bot plays in one when
    ``sample`` allows (pairings are in name order: the first six were all the alphabetically
    first bot's), then the other pairings' first games in schedule order, then evenly spread
    others. Columns: idx, game_id, seat0, seat1, reason, winner_name, score0, score1, moves,
    detail, why ("abnormal" or "sample")."""
    columns = ["idx", "game_id", "seat0", "seat1", "reason", "winner_name", "score0", "score1", "moves",
               "detail", "why"]
    if games.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
    ordered = games.sort_values("idx", kind="stable")
    bad = ordered[ordered["reason"] != "normal"].assign(why="abnormal")
    normal = ordered[ordered["reason"] == "normal"]
    chosen: list[int] = []
    if sample > 0 and len(normal):
        pairing = normal.apply(lambda r: tuple(sorted((r["seat0"], r["seat1"]))), axis=1)
        firsts = normal.loc[~pairing.duplicated()].index.tolist()
        covered: set[str] = set()
        for new_bots in (2, 1):  # games of two bots not yet shown first, then of one
            for i in firsts:
                seats = {normal.at[i, "seat0"], normal.at[i, "seat1"]}
                if len(chosen) < sample and i not in chosen and len(seats - covered) >= new_bots:
                    chosen.append(i)
                    covered |= seats
        chosen += [i for i in firsts if i not in chosen][:sample - len(chosen)]
        if len(chosen) < sample:
            rest = [i for i in normal.index if i not in set(chosen)]
            want = min(sample - len(chosen), len(rest))
            picks = np.linspace(0, len(rest) - 1, want).round().astype(int) if want else np.array([], int)
            chosen += [rest[int(p)] for p in picks]
    picked = normal.loc[sorted(set(chosen))].assign(why="sample")
    frame = pd.concat([bad, picked]).sort_values("idx", kind="stable")
    return frame[columns].reset_index(drop=True)


__all__ = ["ALWAYS_SHOWN_FAILURES", "ELO_PER_NAT", "ENDING_CATEGORY", "FAILURE_CATEGORIES", "BradleyTerry",
           "abnormal_games", "bank_summary", "bank_use", "bradley_terry", "endings", "entrant_order",
           "game_lengths", "head_to_head", "pairing_margins", "per_bot_games", "rating_progression",
           "replay_selection", "score_table", "seat_advantage", "slowest_moves", "standings", "think_times",
           "wilson_interval", "win_matrix"]
