"""Sequential probability ratio test: is NEW stronger than BASE by ``elo1`` rather than ``elo0``?

Model. Patchwork has no draws, so a game is a Bernoulli trial: NEW wins with
probability ``p = 1 / (1 + 10 ** (-elo / 400))`` (the logistic Elo curve). The two
hypotheses are H0: elo = elo0 and H1: elo = elo1 (H1 = "NEW is stronger by elo1"), and
after W wins and L losses of NEW the log-likelihood ratio is

    LLR = W ln(p1 / p0) + L ln((1 - p1) / (1 - p0)).

Wald's test stops with "accept H1" once LLR >= ln((1 - beta) / alpha), with "accept H0"
once LLR <= ln(beta / (1 - alpha)), and says "continue" in between; alpha is the chance
of accepting H1 when H0 holds, beta that of accepting H0 when H1 holds.

Game pairs. Tournament games come in pairs on the same patch circle with the seats
swapped, so the two games of a pair are not independent (a circle may favour one
style). :meth:`SPRT.llr_pairs` treats each pair as one trial with three outcomes (NEW
won 0, 1 or 2 games: the pentanomial model of chess testing without draws, so a
trinomial) and uses the generalized SPRT of fishtest (M. Van den Bergh): the trinomial
is fitted by maximum likelihood under the constraint "mean score per game = p0"
(resp. p1) and the LLR is the log ratio of the two fitted likelihoods. It needs no
assumption about how correlated the two games of a pair are, and with two outcomes it
reduces exactly to the Bernoulli formula above. Use :meth:`llr` when games are
independent, :meth:`llr_pairs` for complete pairs (a pair with one game played is left out).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from arena.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd

Status = Literal["accept H1", "accept H0", "continue"]
_REGULARIZE = 1e-3  # stands in for an outcome never seen, so the constrained fit exists


def expected_score(elo: float) -> float:
    """The logistic Elo curve: the probability of winning with an Elo advantage of ``elo``."""
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


@dataclass(frozen=True)
class SPRT:
    """H0: NEW is ``elo0`` stronger than BASE; H1: ``elo1`` stronger (``elo1 > elo0``)."""

    elo0: float = 0.0
    elo1: float = 10.0
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self) -> None:
        if not self.elo1 > self.elo0:
            raise ConfigError(f"SPRT: elo1 must be greater than elo0, got elo0={self.elo0}, elo1={self.elo1}")
        for key in ("alpha", "beta"):
            value = getattr(self, key)
            if not 0.0 < value < 0.5:
                raise ConfigError(f"SPRT: {key} must be between 0 and 0.5, got {value}")

    @property
    def p0(self) -> float:
        return expected_score(self.elo0)

    @property
    def p1(self) -> float:
        return expected_score(self.elo1)

    def bounds(self) -> tuple[float, float]:
        """(lower, upper) = (ln(beta / (1 - alpha)), ln((1 - beta) / alpha))."""
        return math.log(self.beta / (1.0 - self.alpha)), math.log((1.0 - self.beta) / self.alpha)

    def llr(self, wins: int, losses: int) -> float:
        """The Bernoulli log-likelihood ratio of H1 over H0 after NEW's wins and losses."""
        p0, p1 = self.p0, self.p1
        return wins * math.log(p1 / p0) + losses * math.log((1.0 - p1) / (1.0 - p0))

    def status(self, wins: int, losses: int) -> Status:
        return self._decide(self.llr(wins, losses))

    def llr_pairs(self, none: int, one: int, both: int) -> float:
        """The generalized log-likelihood ratio from game pairs: how many pairs NEW won none,
        one or both games of (see the module docstring)."""
        return _gsprt_llr((none, one, both), (0.0, 0.5, 1.0), self.p0, self.p1)

    def status_pairs(self, none: int, one: int, both: int) -> Status:
        return self._decide(self.llr_pairs(none, one, both))

    def _decide(self, llr: float) -> Status:
        lower, upper = self.bounds()
        if llr >= upper:
            return "accept H1"
        if llr <= lower:
            return "accept H0"
        return "continue"


def _gsprt_llr(counts: tuple[int, ...], scores: tuple[float, ...], s0: float, s1: float) -> float:
    """sum_i n_i ln(q1_i / q0_i), q_s the maximum-likelihood distribution with mean score s."""
    total = sum(counts)
    if total == 0:
        return 0.0
    filled = [c if c > 0 else _REGULARIZE for c in counts]
    phat = [c / sum(filled) for c in filled]
    q0 = _fit(phat, scores, s0)
    q1 = _fit(phat, scores, s1)
    return sum(n * math.log(a / b) for n, a, b in zip(counts, q1, q0, strict=True) if n > 0)


def _fit(phat: list[float], scores: tuple[float, ...], s: float) -> list[float]:
    """argmax_q sum phat_i ln q_i subject to sum q_i x_i = s: q_i = phat_i / (1 + lam (x_i - s)),
    lam the root of sum phat_i (x_i - s) / (1 + lam (x_i - s)), which decreases in lam."""
    d = [x - s for x in scores]
    lo = -1.0 / max(d)  # keeps every 1 + lam d_i > 0 (needs min(d) < 0 < max(d))
    hi = -1.0 / min(d)

    def f(lam: float) -> float:
        return sum(p * di / (1.0 + lam * di) for p, di in zip(phat, d, strict=True))

    a, b = lo, hi
    for _ in range(200):
        mid = (a + b) / 2.0
        if mid in (a, b):
            break
        if f(mid) > 0:
            a = mid
        else:
            b = mid
    lam = (a + b) / 2.0
    q = [p / (1.0 + lam * di) for p, di in zip(phat, d, strict=True)]
    norm = sum(q)
    return [x / norm for x in q]


def game_counts(games: pd.DataFrame, new: str, base: str) -> tuple[int, int]:
    """(wins, losses) of ``new`` in its games against ``base`` (columns seat0, seat1, winner_name)."""
    mask = (((games["seat0"] == new) & (games["seat1"] == base))
            | ((games["seat0"] == base) & (games["seat1"] == new)))
    won = int((games.loc[mask, "winner_name"] == new).sum())
    return won, int(mask.sum()) - won


def pair_counts(games: pd.DataFrame, new: str, base: str) -> tuple[int, int, int]:
    """How many complete pairs against ``base`` ``new`` won none, one or both games of
    (columns pair, seat0, seat1, winner_name); pairs with one game stored are left out."""
    mask = (((games["seat0"] == new) & (games["seat1"] == base))
            | ((games["seat0"] == base) & (games["seat1"] == new)))
    chosen = games.loc[mask]
    per_pair = (chosen["winner_name"] == new).groupby(chosen["pair"]).agg(["sum", "count"])
    complete = per_pair[per_pair["count"] == 2]["sum"]
    return (int((complete == 0).sum()), int((complete == 1).sum()), int((complete == 2).sum()))


__all__ = ["SPRT", "Status", "expected_score", "game_counts", "pair_counts"]
