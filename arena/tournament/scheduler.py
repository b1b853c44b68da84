"""Schedulers: formats that hear results (pure: no I/O, no config, no clock).

A :class:`Scheduler` is asked for the next game with :meth:`~Scheduler.next`, which answers a
:class:`~arena.tournament.schedule.GameSpec`, :data:`WAIT` (nothing to give until more
results are in: a Swiss round waiting for its last games) or :data:`DONE`; every finished
game is handed back with :meth:`~Scheduler.record` before the next request (the executors
do it: see :mod:`arena.tournament.series`). This is fastchess's scheduler design, which its
Swiss and knockout formats need: a format that cannot see results cannot pair by them.

- :class:`RoundRobin` and :class:`Gauntlet` play :func:`~arena.tournament.schedule.iter_schedule`
  (same ids and seeds as ever: old results folders resume); they never wait.
- :class:`Swiss`: ``rounds`` rounds paired by score, each pairing a seat-swapped pair.
- :class:`Knockout`: a seeded single-elimination bracket of seat-swapped matches.

Ids, seeds and indexes depend only on the results recorded, never on the order in which
games finished: within a round every game is given out in board order, and a round is
paired only once all of the previous one is recorded. So a resumed run rebuilds the same
state by :class:`Replay`: the stored games are recorded in the order the scheduler asks
for them, and only the missing ones are played.
"""

from __future__ import annotations

import enum
import math
from collections import deque
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from arena.tournament.schedule import GameSpec, Plan, _game_id, iter_schedule, pair_seed, schedule_size

BYE_WINS = 1
"""What a Swiss bye scores: one win (no game is played)."""


class Status(enum.Enum):
    WAIT = "wait"
    DONE = "done"


WAIT = Status.WAIT
"""``next()``: no game can be given until more results are recorded."""
DONE = Status.DONE
"""``next()``: every game has been given (the last ones may still be playing)."""

Next = GameSpec | Status


@runtime_checkable
class Scheduler(Protocol):
    """Gives games and hears their results (see the module docstring)."""

    def next(self) -> Next: ...

    def record(self, game: GameSpec, winner: int) -> None:
        """``game`` was played and seat ``winner`` (0 or 1) won it."""

    @property
    def total(self) -> int:
        """The games scheduled so far and still to come, as far as known (a knockout's grows
        by two with each extra pair)."""


class Fixed:
    """A scheduler over a fixed sequence of games: results change nothing, it never waits."""

    def __init__(self, specs: Iterable[GameSpec], total: int = 0) -> None:
        self._specs: Iterator[GameSpec] = iter(specs)
        self._total = total

    def next(self) -> Next:
        return next(self._specs, DONE)

    def record(self, game: GameSpec, winner: int) -> None:
        pass

    @property
    def total(self) -> int:
        return self._total


class RoundRobin(Fixed):
    """Every pairing of a round robin, ``plan.games`` games each (:func:`iter_schedule`);
    games whose ids are in ``completed`` are left out."""

    def __init__(self, plan: Plan, completed: Collection[str] = ()) -> None:
        super().__init__(iter_schedule(plan, completed), schedule_size(plan))


class Gauntlet(RoundRobin):
    """Each of ``plan.challengers`` against every other entrant (:func:`iter_schedule`)."""


def as_scheduler(source: Scheduler | Iterable[GameSpec]) -> Scheduler:
    """``source`` itself if it is a scheduler, else a fixed one over its games."""
    if isinstance(source, Scheduler):
        return source
    return Fixed(source)


class Replay:
    """A resumed run's scheduler: ``inner``'s stored games (``stored``: game id -> winning seat)
    are recorded as soon as it gives them, so it rebuilds its state in its own order and
    only the missing games come out of :meth:`next`."""

    def __init__(self, inner: Scheduler, stored: Mapping[str, int]) -> None:
        self.inner = inner
        self.stored = stored
        self.replayed = 0

    def next(self) -> Next:
        game = self.inner.next()
        while isinstance(game, GameSpec) and game.game_id in self.stored:
            self.inner.record(game, self.stored[game.game_id])
            self.replayed += 1
            game = self.inner.next()
        return game

    def record(self, game: GameSpec, winner: int) -> None:
        self.inner.record(game, winner)

    @property
    def total(self) -> int:
        return self.inner.total


class Ahead:
    """``scheduler`` with its first answer, ``first``, already asked for (the runner asks to
    know whether anything is left to play before it builds the bots)."""

    def __init__(self, first: Next, scheduler: Scheduler) -> None:
        self._first: Next | None = first
        self.scheduler = scheduler

    def next(self) -> Next:
        if self._first is not None:
            first, self._first = self._first, None
            return first
        return self.scheduler.next()

    def record(self, game: GameSpec, winner: int) -> None:
        self.scheduler.record(game, winner)

    @property
    def total(self) -> int:
        return self.scheduler.total


class _Rounds:
    """What Swiss and knockout share: a queue of the round's games, the ones given and not yet
    recorded, and the counters that make indexes, pair numbers and ids."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._queue: deque[GameSpec] = deque()
        self._out: set[str] = set()
        self._index = 0
        self._pair = 0

    def _add_pair(self, label: str, a: str, b: str, seed_k: int) -> None:
        """Queue a seat-swapped pair of ``a`` and ``b`` (``a`` in seat 0 first); ``label`` makes
        the ids unique (``r2-b1``: round 2, board 1)."""
        game_seed = pair_seed(self.seed, (a, b), seed_k)
        for g, (s0, s1) in enumerate(((a, b), (b, a))):
            game_id, _ = _game_id(f"{label}-{g}", s0, s1, f"p{self._pair}")
            self._queue.append(GameSpec(self._index, game_id, s0, s1, game_seed, self._pair))
            self._index += 1
        self._pair += 1

    def _take(self) -> GameSpec | None:
        if not self._queue:
            return None
        game = self._queue.popleft()
        self._out.add(game.game_id)
        return game

    def _hear(self, game: GameSpec) -> None:
        if game.game_id not in self._out:
            raise ValueError(f"game {game.game_id} was not given out (or was recorded twice)")
        self._out.discard(game.game_id)

    @property
    def _round_over(self) -> bool:
        return not self._queue and not self._out


@dataclass(frozen=True)
class SwissRound:
    """One Swiss round: its pairings (higher-placed first), the bye (None: even count) and the
    standings after it (name, wins), best first."""

    number: int
    pairings: tuple[tuple[str, str], ...]
    bye: str | None
    standings: tuple[tuple[str, int], ...] = ()


class Swiss(_Rounds):
    """``rounds`` rounds; each pairs the entrants by wins so far (ties: entrant order), the
    highest-placed with the next one it has not met yet (a repeat only when no pairing of
    the whole field avoids one). An odd field gives the lowest-placed entrant without a bye
    a bye, worth :data:`BYE_WINS`. Each pairing is two games on one seed, seats swapped."""

    def __init__(self, names: Sequence[str], rounds: int, seed: int) -> None:
        super().__init__(seed)
        if len(names) < 2:
            raise ValueError("a Swiss tournament needs at least 2 entrants")
        self.names = tuple(names)
        self.rounds = rounds
        self.wins: dict[str, int] = dict.fromkeys(self.names, 0)
        self.met: set[frozenset[str]] = set()
        self.byes: list[str] = []
        self.history: list[SwissRound] = []  # the rounds paired so far; standings once over

    def standings(self) -> list[tuple[str, int]]:
        """(name, wins), best first; equal wins in entrant order."""
        order = {name: i for i, name in enumerate(self.names)}
        return sorted(self.wins.items(), key=lambda item: (-item[1], order[item[0]]))

    def next(self) -> Next:
        game = self._take()
        if game is not None:
            return game
        if self._out:
            return WAIT
        if len(self.history) >= self.rounds:
            return DONE
        self._pair_round()
        return self._take() or DONE

    def record(self, game: GameSpec, winner: int) -> None:
        self._hear(game)
        self.wins[(game.seat0, game.seat1)[winner]] += 1
        if self._round_over:
            self._close_round()

    @property
    def total(self) -> int:
        return self.rounds * (len(self.names) // 2) * 2

    def _pair_round(self) -> None:
        number = len(self.history) + 1
        order = [name for name, _ in self.standings()]
        bye = None
        if len(order) % 2:
            bye = next((n for n in reversed(order) if n not in self.byes), order[-1])
            order.remove(bye)
            self.byes.append(bye)
            self.wins[bye] += BYE_WINS
        pairings = swiss_pairings(order, self.met)
        for board, (a, b) in enumerate(pairings, 1):
            self.met.add(frozenset((a, b)))
            self._add_pair(f"r{number}-b{board}", a, b, number)
        self.history.append(SwissRound(number, tuple(pairings), bye))
        if not pairings:  # pragma: no cover - 2+ entrants always make a pairing
            self._close_round()

    def _close_round(self) -> None:
        last = self.history[-1]
        self.history[-1] = SwissRound(last.number, last.pairings, last.bye, tuple(self.standings()))


MAX_PAIRING_STEPS = 200_000
"""The search for a round without repeats gives up after this many steps (then repeats are allowed)."""


def swiss_pairings(order: Sequence[str], met: Collection[frozenset[str]]) -> list[tuple[str, str]]:
    """Pair ``order`` (an even number of names, best first) with as few repeats of ``met``
    pairings as possible: each unpaired name, from the top, with the next one it has not met,
    backtracking when that leaves the rest unpairable; only when no pairing of the whole
    field avoids them are repeats allowed, one more at a time. A search that runs too long
    (a big field) ends with adjacent names paired."""
    steps = 0

    def search(rest: list[str], repeats: int) -> list[tuple[str, str]] | None:
        nonlocal steps
        if not rest:
            return []
        top = rest[0]
        for i in range(1, len(rest)):
            steps += 1
            if steps > MAX_PAIRING_STEPS:
                return None
            again = frozenset((top, rest[i])) in met
            if again and not repeats:
                continue
            tail = search(rest[1:i] + rest[i + 1:], repeats - again)
            if tail is not None:
                return [(top, rest[i]), *tail]
        return None

    for allowed in range(len(order) // 2 + 1):
        found = search(list(order), allowed)
        if found is not None:
            return found
        if steps > MAX_PAIRING_STEPS:
            break
    return [(order[i], order[i + 1]) for i in range(0, len(order) - 1, 2)]


@dataclass
class Match:
    """A knockout match: seeds (1 is the best) and names, ``None`` for a bye; wins so far, an
    extra pair played or not, and the winner once decided (``by``: how)."""

    seeds: tuple[int, int | None]
    names: tuple[str, str | None]
    wins: list[int] = field(default_factory=lambda: [0, 0])
    extra: bool = False
    winner: str | None = None
    by: str = ""  # "games", "extra pair", "seed", "bye"


def bracket_order(size: int) -> list[int]:
    """The seeds of a bracket of ``size`` (a power of two) in slot order: 1 meets ``size``,
    and 1 and 2 can only meet in the final (1, 8, 4, 5, 2, 7, 3, 6 for 8)."""
    order = [1]
    while len(order) < size:
        n = 2 * len(order) + 1
        order = [s for seed in order for s in (seed, n - seed)]
    return order


class Knockout(_Rounds):
    """Single elimination, seeded by the order of ``names`` (seed 1 first); the bracket is the
    next power of two, so the top seeds get byes when the field is short. A match is
    ``games`` games (seat-swapped pairs); a tie plays one extra pair, and a tie after it
    goes to the better seed. A round's games all go out at once, the next round is drawn
    once they are all in."""

    def __init__(self, names: Sequence[str], games: int, seed: int) -> None:
        super().__init__(seed)
        if len(names) < 2:
            raise ValueError("a knockout needs at least 2 entrants")
        self.names = tuple(names)
        self.games = games
        size = 1 << math.ceil(math.log2(len(names)))
        slots = bracket_order(size)
        first = []
        for i in range(0, size, 2):
            a, b = sorted((slots[i], slots[i + 1]))
            first.append(Match((a, b if b <= len(names) else None),
                               (names[a - 1], names[b - 1] if b <= len(names) else None)))
        self.bracket: list[list[Match]] = [first]
        self._games_of: dict[str, Match] = {}
        self._extras = 0
        self._start_round()

    @property
    def champion(self) -> str | None:
        last = self.bracket[-1]
        return last[0].winner if len(last) == 1 else None

    def next(self) -> Next:
        game = self._take()
        if game is not None:
            return game
        return WAIT if self._out else DONE

    def record(self, game: GameSpec, winner: int) -> None:
        self._hear(game)
        match = self._games_of.pop(game.game_id)
        match.wins[match.names.index((game.seat0, game.seat1)[winner])] += 1
        if self._round_over:
            self._settle_round()

    @property
    def total(self) -> int:
        return (len(self.names) - 1) * self.games + 2 * self._extras

    def _label(self, m: int) -> str:
        return f"k{len(self.bracket)}-m{m + 1}"

    def _start_round(self) -> None:
        matches = self.bracket[-1]
        for match in matches:
            if match.names[1] is None:
                match.winner, match.by = match.names[0], "bye"
        for k in range(self.games // 2):
            for m, match in enumerate(matches):
                if match.winner is None:
                    self._queue_pair(m, match, k)
        if self._round_over:  # nothing to play (byes only): cannot happen past the first round
            self._settle_round()

    def _queue_pair(self, m: int, match: Match, k: int) -> None:
        a, b = match.names
        assert b is not None
        before = len(self._queue)
        self._add_pair(f"{self._label(m)}-{2 * k}", a, b, k)
        for game in list(self._queue)[before:]:
            self._games_of[game.game_id] = match

    def _settle_round(self) -> None:
        matches = self.bracket[-1]
        extra = False
        for m, match in enumerate(matches):
            if match.winner is not None:
                continue
            if match.wins[0] == match.wins[1] and not match.extra:
                match.extra = extra = True
                self._extras += 1
                self._queue_pair(m, match, self.games // 2)
        if extra:
            return
        for match in matches:
            if match.winner is None:
                w0, w1 = match.wins
                if w0 != w1:
                    match.winner = match.names[0 if w0 > w1 else 1]
                    match.by = "extra pair" if match.extra else "games"
                else:
                    match.winner, match.by = match.names[0], "seed"  # seeds[0] is the better
        if len(matches) == 1:
            return
        following = []
        for i in range(0, len(matches), 2):
            (s0, n0), (s1, n1) = sorted(_winner_seed(matches[j]) for j in (i, i + 1))
            following.append(Match((s0, s1), (n0, n1)))
        self.bracket.append(following)
        self._start_round()


def _winner_seed(match: Match) -> tuple[int, str]:
    """The seed and name of a decided match's winner."""
    assert match.winner is not None
    seed = match.seeds[match.names.index(match.winner)]
    assert seed is not None
    return seed, match.winner


def make_scheduler(plan: Plan, completed: Collection[str] = ()) -> Scheduler:
    """The scheduler of ``plan``'s format (``completed``: the stored ids, which a round robin
    or gauntlet leaves out at once; Swiss and knockout need :class:`Replay` instead)."""
    if plan.format == "swiss":
        return Swiss(plan.names, plan.rounds, plan.seed)
    if plan.format == "knockout":
        return Knockout(plan.names, plan.games, plan.seed)
    if plan.challengers:
        return Gauntlet(plan, completed)
    return RoundRobin(plan, completed)


def replay(plan: Plan, stored: Mapping[str, int]) -> Scheduler:
    """A scheduler of ``plan`` that has heard every stored game (``stored``: id -> winning
    seat) it reached, as far as they go (the report's view of a Swiss or knockout run)."""
    scheduler = make_scheduler(plan)
    fed = Replay(scheduler, stored)
    while isinstance(fed.next(), GameSpec):
        pass
    return scheduler


__all__ = ["BYE_WINS", "DONE", "WAIT", "Ahead", "Fixed", "Gauntlet", "Knockout", "Match", "Next", "Replay",
           "RoundRobin", "Scheduler", "Status", "Swiss", "SwissRound", "as_scheduler", "bracket_order",
           "make_scheduler", "replay", "swiss_pairings"]
