"""The time-control rules: what a bot may spend on a move, and what it has spent.

Pure values and arithmetic, no clocks read here: the referee measures time and
:class:`GameClock` says what it means. Every place that needs the rules (the referee,
check-bot, the report, the benchmarks) uses these, so the first-move allowance and the
bank are computed one way only.

A bot's limit for one move is ``per_move_ms``, or ``first_move_ms`` for its first move of
a game. Time beyond the limit is drawn from its bank (``bank_ms`` per game); a move that
takes longer than limit + what is left of the bank (its :class:`Allowance`) is a timeout.
"""

from __future__ import annotations

from dataclasses import dataclass

from arena.errors import ConfigError


@dataclass(frozen=True)
class TimeControl:
    """Per-move limit, a bank a bot may draw on when it overruns, and a larger first move."""

    per_move_ms: int = 1000
    bank_ms: int = 10_000
    first_move_ms: int = 5000

    def __post_init__(self) -> None:
        for name in ("per_move_ms", "bank_ms", "first_move_ms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"time control {name}: expected a whole number of ms >= 0, "
                                  f"got {value!r}")
        if self.per_move_ms < 1 or self.first_move_ms < 1:
            raise ConfigError("time control per_move_ms and first_move_ms must be at least 1 ms")

    def limit_ms(self, first_move: bool) -> int:
        """The per-move limit of a move (before the bank)."""
        return self.first_move_ms if first_move else self.per_move_ms

    def game_time_ms(self, moves: int) -> int:
        """The most both bots' clocks allow over a game of at most ``moves`` moves: every
        move at the per-move limit, plus each seat's first-move limit and whole bank.

        >>> TimeControl(per_move_ms=100, bank_ms=50, first_move_ms=500).game_time_ms(10)
        2100
        """
        return moves * self.per_move_ms + 2 * (self.first_move_ms + self.bank_ms)

    def to_json(self) -> dict[str, int]:
        return {"per_move_ms": self.per_move_ms, "bank_ms": self.bank_ms,
                "first_move_ms": self.first_move_ms}

    @classmethod
    def from_json(cls, data: dict[str, int]) -> TimeControl:
        return cls(data["per_move_ms"], data["bank_ms"], data["first_move_ms"])


DEFAULT_TIME_CONTROL = TimeControl()


@dataclass(frozen=True)
class Allowance:
    """What one move may take, fixed when it is requested: the move's limit and what is left
    of the seat's bank (:meth:`GameClock.allowance`)."""

    limit_ms: int
    bank_ms: float

    @property
    def total_ms(self) -> float:
        """The limit plus the bank: longer than this is a timeout."""
        return self.limit_ms + self.bank_ms

    @property
    def total_s(self) -> float:
        return self.total_ms / 1000.0

    def deadline(self, sent: float) -> float:
        """When the move is late, on the clock that read ``sent`` (seconds) as it was requested."""
        return sent + self.total_s

    def over_ms(self, used_ms: float) -> float:
        """By how many ms a move that took ``used_ms`` went past the allowance (< 0: within it)."""
        return used_ms - self.total_ms


class GameClock:
    """Both seats' clocks for one game: banks, and whether each seat has moved yet.

    >>> clock = GameClock(TimeControl(per_move_ms=100, bank_ms=50, first_move_ms=500))
    >>> clock.allowance_ms(0)   # first move: 500 + the whole bank
    550.0
    >>> clock.deadline(0, sent=10.0)  # requested at 10 s: late after 10.55 s
    10.55
    >>> clock.charge(0, 520.0)  # 20 ms over the first-move limit, from the bank
    0.0
    >>> clock.bank_ms(0), clock.limit_ms(0)
    (30.0, 100)
    >>> clock.charge(0, 140.0)  # 40 ms over: 10 ms more than the bank held
    10.0
    """

    def __init__(self, time_control: TimeControl) -> None:
        self.time_control = time_control
        self._banks = [float(time_control.bank_ms)] * 2
        self._moved = [False, False]
        self._json = [self._seat_json(0), self._seat_json(1)]  # changed only by charge

    def limit_ms(self, seat: int) -> int:
        """The per-move limit of ``seat``'s next move (larger for its first of the game)."""
        return self.time_control.limit_ms(first_move=not self._moved[seat])

    def bank_ms(self, seat: int) -> float:
        return self._banks[seat]

    def allowance(self, seat: int) -> Allowance:
        """``seat``'s next move's limit and bank, as they stand now (kept by whoever waits for
        the move: :meth:`charge` then changes the bank)."""
        return Allowance(self.limit_ms(seat), self._banks[seat])

    def allowance_ms(self, seat: int) -> float:
        """How long ``seat``'s next move may take in all: its limit plus its bank."""
        return self.allowance(seat).total_ms

    def deadline(self, seat: int, sent: float) -> float:
        """When ``seat``'s next move, requested at ``sent`` (seconds), is late."""
        return self.allowance(seat).deadline(sent)

    def charge(self, seat: int, used_ms: float) -> float:
        """Record a move of ``seat`` that took ``used_ms``; returns by how many ms it went over
        its allowance (0 when within it; then the overrun of the limit came from the bank)."""
        limit = self.limit_ms(seat)
        self._moved[seat] = True
        self._banks[seat] -= max(0.0, used_ms - limit)
        over = 0.0
        if self._banks[seat] < 0:
            over = -self._banks[seat]
            self._banks[seat] = 0.0
        self._json[seat] = self._seat_json(seat)
        return over

    def to_json(self) -> list[dict[str, int]]:
        """Both seats' clocks as a move request carries them (built when a move is charged,
        not for every request; the dicts are shared: read-only)."""
        return self._json[:]

    def _seat_json(self, seat: int) -> dict[str, int]:
        return {"bank_ms": int(self._banks[seat]), "per_move_ms": self.limit_ms(seat)}


def move_limits_ms(time_control: TimeControl, players: list[int]) -> list[int]:
    """The per-move limit that applied to each move of a game, given who made each move in
    order (a seat's first move has the first-move limit)."""
    seen: set[int] = set()
    limits = []
    for player in players:
        limits.append(time_control.limit_ms(first_move=player not in seen))
        seen.add(player)
    return limits
