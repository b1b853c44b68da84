"""Plans of games for the commands that are not tournaments (pure; see also :mod:`schedule`).

A plan is a lazy sequence of :class:`GameSpec` (seats by name, seed, id, pair number) that
:func:`arena.tournament.series.run_series` plays. Every plan plays seat-swapped pairs: two
games on one seed (the same patch circle), seat 0 moving first, the seats swapped in the
second game. A tournament's plan is :func:`arena.tournament.schedule.iter_schedule`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from arena.tournament.schedule import GameSpec, pair_seed


def match_plan(a: str, b: str, games: int, seed: int, prefix: str) -> Iterator[GameSpec]:
    """``games`` games of ``a`` against ``b`` (`arena play`, check-bot): game ``n`` (from 0)
    uses seed ``seed + n // 2`` with ``a`` in seat 0 when ``n`` is even; ids ``<prefix>-<n+1>``."""
    for n in range(games):
        seats = (a, b) if n % 2 == 0 else (b, a)
        yield GameSpec(n, f"{prefix}-{n + 1}", seats[0], seats[1], seed + n // 2, n // 2)


def sprt_plan(new: str, old: str, seed: int, max_games: int) -> Iterator[GameSpec]:
    """The pairs of `arena sprt`: pair ``k`` on :func:`pair_seed` (seed, (new, old), k), NEW in
    seat 0 first; ids ``sprt-<k>-0`` (NEW in seat 0) and ``sprt-<k>-1``. Whole pairs only."""
    for k in range(max_games // 2):
        game_seed = pair_seed(seed, (new, old), k)
        yield GameSpec(2 * k, f"sprt-{k}-0", new, old, game_seed, k)
        yield GameSpec(2 * k + 1, f"sprt-{k}-1", old, new, game_seed, k)


def gauntlet_plan(bot: str, opponents: Sequence[str], games: int, seed: int) -> Iterator[GameSpec]:
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


__all__ = ["gauntlet_plan", "match_plan", "sprt_plan"]
