"""The referee: plays one game between two bots and turns every bot failure into an outcome.

It owns the only authoritative game state and both clocks (monotonic). A bot that
times out, crashes, sends garbage, breaks the schema, plays an illegal move, sends
an oversize message or breaks the protocol loses the game with a recorded reason,
its process tree is killed (it is restarted for its next game), and the opponent wins.
Nothing a bot does can make :func:`play_game` hang or raise.

Under a sandbox with a cgroup freezer a bot runs only on its turn: each is frozen once it
has started (seat 0 while seat 1 starts), the mover is thawed before its request is sent
(its clock starts once the kernel has thawed it), and the bot waiting for its turn is frozen
FREEZE_GRACE_S after its own reply came in, checked before and after the opponent's request
is built and while the opponent thinks; it is frozen before the request is built or the
opponent thawed when the request is slow to build (it carries the legal moves) or the
opponent is frozen (a thaw can take milliseconds): an opponent that answers sooner costs no
freeze and no thaw (each wakes every process of the bot). Between games both stay frozen
(see :meth:`BotHandle.freeze`; pondering bots are never frozen).

The referee depends on a :class:`Player`, not on a process: :class:`BotHandle` is the real
one; the tests' scripted players (``tests/scripted.py``) run the failure cases in-process.
Every message it sends is built by :mod:`arena.protocol.messages`.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from arena.clock import DEFAULT_TIME_CONTROL, Allowance, GameClock, TimeControl
from arena.engine import GameState, Ruleset, Termination
from arena.errors import (
    ArenaError,
    BotStartError,
    BotTerminatedError,
    BotTimeoutError,
    IllegalMoveError,
    MalformedMessageError,
    OversizeMessageError,
    ProtocolError,
    ProtocolViolationError,
    SchemaViolationError,
)
from arena.protocol import messages
from arena.protocol.codec import encode_trusted as encode
from arena.protocol.constants import MAX_MESSAGE_BYTES
from arena.records import make_record, utc_now
from arena.untrusted import shown

log = logging.getLogger("arena.referee")

MAX_STALE_REPLIES = 100  # stale replies tolerated during one request before it is a flood ...
MAX_STALE_BYTES = MAX_MESSAGE_BYTES  # ... and their size in all: each is decoded and checked
FREEZE_GRACE_S = 0.001
"""How long after its reply a bot waiting for its turn is frozen (if its opponent has not
answered by then): it may compute for this long of each opponent move, on as many CPUs as
its cgroup's quota lets it burst on, plus the end of a kernel call it was in (the freezer
stops a process on its way back from the kernel)."""
DETAIL_CAP = 2048  # characters of a recorded failure detail (its log tail is cut to fit)

__all__ = ["DEFAULT_TIME_CONTROL", "GameResult", "MoveCallback", "Player", "TimeControl", "play_game"]


class Player(Protocol):
    """What the referee needs of a bot (:class:`arena.bots.session.BotHandle` is one).

    Every method that talks to the bot raises an :class:`~arena.errors.ArenaError` when
    the bot misbehaves; the referee turns it into the game's result."""

    name: str
    broken: str | None  # why it can never start (a failed build), else None
    stderr_log: Path  # named in a failure's detail

    @property
    def wants_legal_moves(self) -> bool:
        """It asked for the legal moves in its hello."""
        ...

    @property
    def last_decode_ns(self) -> int:
        """Referee time spent decoding its last message."""
        ...

    @property
    def last_message_bytes(self) -> int:
        """The size of its last message."""
        ...

    def ensure_started(self) -> None:
        """Start it and do the handshake, unless it is running."""
        ...

    def next_seq(self) -> int:
        """The sequence number of its next request."""
        ...

    def send(self, message: Mapping[str, Any], timeout_s: float | None = None) -> None:
        """Send a message built by :mod:`arena.protocol.messages`."""
        ...

    def send_text(self, text: str, timeout_s: float | None = None) -> None:
        """Send a message already encoded; should the bot not read it, wait ``timeout_s``
        (its time to read it: BotTimeoutError after) or a default (ProtocolViolationError)."""
        ...

    def receive(self, timeout_s: float) -> dict[str, Any] | None:
        """Its next message, decoded and schema-checked, or None after ``timeout_s``."""
        ...

    @property
    def freezes(self) -> bool:
        """:meth:`freeze` stops it (it has a freezer and may not ponder)."""
        ...

    @property
    def frozen(self) -> bool:
        """:meth:`freeze` was called and :meth:`thaw` not since."""
        ...

    def freeze(self) -> None:
        """Stop it computing off its turn (where it can be)."""
        ...

    def thaw(self) -> None:
        """Let it run again."""
        ...

    def is_running(self) -> bool:
        ...

    def kill(self) -> None:
        """End it now; its next :meth:`ensure_started` starts it afresh."""
        ...

    def hint(self, error: BaseException) -> str:
        """What to change for a common mistake behind ``error``, or ""."""
        ...

    def log_tail(self) -> list[str]:
        """The last lines of what its latest run wrote to its log."""
        ...

    def log_full_note(self) -> str:
        """Why its log holds no last words when it reached its size limit ("" otherwise)."""
        ...

_REASONS: list[tuple[type[Exception], Termination]] = [
    (BotTimeoutError, Termination.TIMEOUT),
    (BotTerminatedError, Termination.CRASH),
    (BotStartError, Termination.START_FAILURE),
    (MalformedMessageError, Termination.MALFORMED),
    (SchemaViolationError, Termination.SCHEMA),
    (OversizeMessageError, Termination.OVERSIZE),
    (IllegalMoveError, Termination.ILLEGAL_MOVE),
    (ProtocolError, Termination.PROTOCOL),
]


def termination_for(error: Exception) -> Termination:
    for kind, termination in _REASONS:
        if isinstance(error, kind):
            return termination
    return Termination.PROTOCOL


@dataclass
class GameResult:
    """What :func:`play_game` returns: the record plus figures that are not part of it."""

    record: dict[str, Any]
    termination: Termination
    winner: int
    loser: int | None
    detail: str
    overhead_ns: list[int] = field(default_factory=list)  # with measure=True: per move
    duration_s: float = 0.0
    stale_replies: int = 0
    freeze_ns: list[int] = field(default_factory=list)  # with measure=True: thaw + freeze of the mover

    @property
    def scores(self) -> tuple[int, int]:
        s = self.record["result"]["scores"]
        return (s[0], s[1])


MoveCallback = Callable[[GameState, dict[str, Any]], None]


class _Forfeit(Exception):
    def __init__(self, seat: int, error: Exception) -> None:
        super().__init__(str(error))
        self.seat = seat
        self.error = error


def play_game(bots: tuple[Player, Player], *, seed: int, edition: str = "revised",
              first_player: int = 0, time_control: TimeControl = DEFAULT_TIME_CONTROL,
              game_id: str = "game", on_move: MoveCallback | None = None,
              clock: Callable[[], float] = time.monotonic, ruleset: Ruleset | None = None,
              measure: bool = False, hidden_seed: int | None = None) -> GameResult:
    """Play one game; ``bots[i]`` sits in seat i. Never raises because of a bot.

    ``ruleset`` chooses the game (default: Patchwork of ``edition``). ``hidden_seed`` draws
    what no player may know (Stack'n Stuff's join order; see :meth:`GameState.new`): give one
    no bot can guess (:func:`arena.tournament.schedule.hidden_seed`). ``measure``: time the
    referee's own work and the freezer per move (``overhead_ns``, ``freeze_ns``: the
    bench's figures; a tournament does not pay for them)."""
    started_at = utc_now()
    wall_start = time.perf_counter()
    state = GameState.new(seed, edition, first_player, ruleset=ruleset, hidden_seed=hidden_seed)
    initial = state.clone()
    players = (bots[0].name, bots[1].name)
    components_table = messages.components(state.ruleset)
    tc_json = messages.time_control(time_control.per_move_ms, time_control.bank_ms,
                                    time_control.first_move_ms)
    moves: list[dict[str, Any]] = []
    clocks = GameClock(time_control)
    overhead: list[int] = []
    freeze_ns: list[int] = []
    stale = 0
    termination, loser, detail = Termination.NORMAL, None, ""
    try:
        for seat in (0, 1):
            _start(bots[seat], seat)
            bots[seat].freeze()  # seat 0 computes nothing while seat 1 starts (150-300 ms under strict)
        for seat in (0, 1):
            _send(bots[seat], seat, messages.new_game(game_id, seat, state.ruleset, tc_json, players,
                                                      components=components_table))
        for bot in bots:
            bot.freeze()  # a bot computes on its own turn only
        decode_ns = thaw_ns = park_ns = 0
        replied = [0.0, 0.0]  # when each seat's last reply came in (both are frozen until they move)

        def park(seat: int) -> None:
            """Freeze the bot in ``seat``, which waits for its turn (see FREEZE_GRACE_S)."""
            nonlocal park_ns
            started = time.perf_counter_ns() if measure else 0
            bots[seat].freeze()
            if measure:
                park_ns += time.perf_counter_ns() - started

        t_ready = time.perf_counter_ns() if measure else 0
        while (mover := state.to_move()) is not None:
            bot = bots[mover]
            waiting = 1 - mover
            park_at = replied[waiting] + FREEZE_GRACE_S
            parking = None  # a bot that cannot be frozen, or is already, costs no 1 ms wake-up
            if bots[waiting].freezes and not bots[waiting].frozen:
                # Freeze first, then build and send: no grace while the request is slow to build
                # (legal moves) or the mover must be thawed (it is frozen: this is no exchange of
                # quick replies, and a thaw can take milliseconds), nor once the grace is over.
                if bot.wants_legal_moves or bot.frozen or clock() >= park_at:
                    park(waiting)
                else:
                    parking = functools.partial(park, waiting)
            seq = bot.next_seq()
            allowance = clocks.allowance(mover)  # the limit (larger for a first move) and the bank
            text = messages.move_request_text(seq, game_id, state, clocks.to_json(),
                                              legal_moves=bot.wants_legal_moves)
            if parking is not None and clock() >= park_at:  # the grace ran out while it was built
                parking()
                parking = None
            if measure:
                t_thaw = time.perf_counter_ns()
                bot.thaw()
                thaw_ns = time.perf_counter_ns() - t_thaw
            else:
                bot.thaw()
            sent = clock()  # the clock starts once the bot can run
            # A long request (legal moves) may not fit in the pipe: a bot that thinks before it
            # reads is waited for as long as its time for the move lasts, and no longer.
            _send_text(bot, mover, text, allowance.total_s)
            if measure:
                overhead.append(time.perf_counter_ns() - t_ready + decode_ns - thaw_ns)
            reply, stale_now = _await_move(bot, mover, seq, sent, allowance, clock, parking, park_at)
            replied[mover] = clock()
            used_ms = (replied[mover] - sent) * 1000.0
            if measure:
                t_ready = time.perf_counter_ns()
                freeze_ns.append(park_ns + thaw_ns)
                park_ns = 0
                decode_ns = bot.last_decode_ns  # decoding the reply is referee work too
            stale += stale_now
            if clocks.charge(mover, used_ms) > 0:  # the reply arrived just past the deadline
                raise _Forfeit(mover, BotTimeoutError(_too_slow(bot.name, used_ms, allowance)))
            try:
                move = state.apply_json(reply["move"])
            except IllegalMoveError as exc:
                raise _Forfeit(mover, IllegalMoveError(
                    f"{bot.name} played an illegal move {_short(reply['move'])}: {exc}")) from None
            entry: dict[str, Any] = {"player": mover, **move.to_json(state.ruleset.cols),
                                     "time_ms": round(used_ms, 3)}
            if reply.get("info"):
                entry["info"] = reply["info"]
            moves.append(entry)
            if on_move is not None:
                on_move(state, entry)
    except _Forfeit as forfeit:
        loser = forfeit.seat
        termination = termination_for(forfeit.error)
        detail = failure_detail(bots[loser], forfeit.error, termination)
        log.info("game %s: %s loses: %s (%s)", game_id, players[loser], termination.value, detail)
        _tell_offender(bots[loser], termination, detail)
        bots[loser].kill()
    except KeyboardInterrupt:
        for bot in bots:
            bot.kill()
        raise
    if loser is None:
        winner = state.winner()
        assert winner is not None
    else:
        winner = 1 - loser
    result: dict[str, Any] = {"scores": list(state.scores()), "winner": winner,
                              "reason": termination.value}
    if loser is not None:
        result["loser"] = loser
        result["detail"] = detail
    for seat in (0, 1):
        if seat != loser and bots[seat].is_running():
            try:
                # The first line only: the loser's log tail is not for its opponent to read.
                _send(bots[seat], seat, messages.game_over(
                    game_id, scores=result["scores"], winner=winner, reason=termination,
                    loser=loser, detail=detail.split("\n", 1)[0]))
            except _Forfeit as late:  # the game is decided; a bot dying now is only logged
                log.info("game %s: %s failed after the game: %s", game_id, players[seat], late)
                bots[seat].kill()
            else:
                bots[seat].freeze()  # till its next turn (it is thawed only if it had much to read)
    record = make_record(initial, players, moves, result, hidden_seed=hidden_seed, game_id=game_id,
                         time_control=time_control.to_json(), started_at=started_at,
                         finished_at=utc_now())
    return GameResult(record, termination, winner, loser, detail, overhead,
                      time.perf_counter() - wall_start, stale, freeze_ns)


def _tell_offender(bot: Player, termination: Termination, detail: str) -> None:
    """Best effort: tell a bot at fault what it did (PROTOCOL.md, "How a game ends")."""
    if termination in (Termination.CRASH, Termination.START_FAILURE) or not bot.is_running():
        return
    try:  # not waited for: a bot at fault may not read, and the game is over
        bot.send(messages.error(f"{termination.value}: {detail.split(chr(10), 1)[0]}"), timeout_s=0.0)
    except ArenaError:
        pass


def _too_slow(name: str, used_ms: float, allowance: Allowance) -> str:
    # to a tenth when it was over by less than 1 ms: "took 30 ms ... (30 ms in all)" read as on time
    took = f"{used_ms:.0f}" if allowance.over_ms(used_ms) >= 1 else f"{used_ms:.1f}"
    return (f"{name} took {took} ms for a move: its limit was {allowance.limit_ms} ms plus "
            f"{allowance.bank_ms:.0f} ms left in its bank ({allowance.total_ms:.0f} ms in all)")


def failure_detail(bot: Player, error: Exception, termination: Termination) -> str:
    """The recorded reason: the error, a hint when it is a common mistake, and for a start
    failure or a crash the last lines of the bot's log (what it printed before it died),
    all within DETAIL_CAP characters; the first line stands alone."""
    lines = str(error).splitlines() or [""]
    detail = lines[0] if bot.broken is not None else " ".join(lines)  # a build's: lines of its output
    try:
        hint = bot.hint(error)
    except Exception as exc:  # a hint reads the bot's files and log: never let it cost the game or
        # the run, nor print a traceback on the user's terminal (the traceback is for debugging)
        log.warning("the hint for %s failed (%s: %s); left out", bot.name, type(exc).__name__,
                    shown(str(exc), 200))
        log.debug("the hint's failure", exc_info=True)
        hint = ""
    if hint:
        detail += f" - hint: {hint}"
    if bot.broken is not None:
        return (detail + "".join(f"\n{line}" for line in lines[1:]))[:DETAIL_CAP]
    detail = detail[:DETAIL_CAP // 2]
    if termination not in (Termination.CRASH, Termination.START_FAILURE):
        return detail
    tail = bot.log_tail()
    full = "" if tail else bot.log_full_note()
    if full:  # a bot that wrote its last words: none were kept
        return detail + f"\n({full})"
    if not tail:
        return detail + f"\n(its log {bot.stderr_log} is empty)"
    room = DETAIL_CAP - len(detail) - len(str(bot.stderr_log)) - 40
    while tail and sum(len(line) + 3 for line in tail) > room:
        tail = tail[1:]
    return (detail + f"\nthe last {len(tail)} lines of its log {bot.stderr_log}:"
            + "".join(f"\n  {line}" for line in tail))


def _start(bot: Player, seat: int) -> None:
    try:
        bot.ensure_started()
    except ArenaError as exc:
        raise _Forfeit(seat, exc) from None


def _send(bot: Player, seat: int, message: Mapping[str, Any]) -> None:
    _send_text(bot, seat, encode(message))


def _send_text(bot: Player, seat: int, text: str, timeout_s: float | None = None) -> None:
    try:
        bot.send_text(text, timeout_s)
    except ArenaError as exc:
        raise _Forfeit(seat, exc) from None


def _await_move(bot: Player, seat: int, seq: int, sent: float, allowance: Allowance,
                clock: Callable[[], float], park: Callable[[], None] | None = None,
                park_at: float = 0.0) -> tuple[dict[str, Any], int]:
    """Wait for the move answering ``seq``, requested at ``sent``, until its ``allowance``
    runs out; stale replies are dropped and counted. ``park`` is called at ``park_at`` (at
    once if that has passed), unless the reply comes first."""
    deadline = allowance.deadline(sent)
    stale = stale_bytes = 0
    stale_seqs: set[int] | None = None  # what the stale replies carried (said if the bot times out)
    while True:
        now = clock()
        remaining = deadline - now
        if remaining <= 0:
            raise _Forfeit(seat, BotTimeoutError(
                f"{bot.name} did not answer: its limit was {allowance.limit_ms} ms plus "
                f"{allowance.bank_ms:.0f} ms left "
                f"in its bank, and the referee gave up after {(clock() - sent) * 1000:.0f} ms"
                + _stale_note(stale, stale_seqs, seq), silent=not stale))
        wait = remaining
        if park is not None:
            if now >= park_at:
                park()
                park = None
            else:
                wait = min(remaining, park_at - now)
        try:
            message = bot.receive(wait)
        except ArenaError as exc:
            raise _Forfeit(seat, exc) from None
        if message is None:
            continue
        kind = message["type"]
        if kind == "move":
            if message["seq"] == seq:
                return message, stale
            if message["seq"] < seq:
                stale += 1
                stale_seqs = stale_seqs or set()
                stale_seqs.add(message["seq"])
                stale_bytes += bot.last_message_bytes
                if stale > MAX_STALE_REPLIES or stale_bytes > MAX_STALE_BYTES:
                    # Each is decoded and schema-checked: 100 padded ones of 1 MiB made the
                    # referee's CPU the bot's for its whole thinking time.
                    raise _Forfeit(seat, ProtocolViolationError(
                        f"{bot.name} flooded the referee with more than {MAX_STALE_REPLIES} stale "
                        f"replies or {MAX_STALE_BYTES} bytes of them during request {seq}"))
                log.info("%s: dropped a stale reply to request %d (current %d)",
                         bot.name, message["seq"], seq)
                continue
            raise _Forfeit(seat, ProtocolViolationError(
                f"{bot.name} answered request {shown(message['seq'], 40)}, which was never sent "
                f"(current request {seq})"))
        if kind == "error":  # the bot gives up: PROTOCOL.md counts it as a crash
            raise _Forfeit(seat, BotTerminatedError(
                f"{bot.name} gave up: {message.get('message', '')[:200]}"))
        raise _Forfeit(seat, ProtocolViolationError(
            f"{bot.name} sent {kind!r} while a move was expected"))


def _stale_note(stale: int, seqs: set[int] | None, seq: int) -> str:
    """What a bot that timed out sent instead of its answer: replies carrying an old seq."""
    if not stale or not seqs:
        return ""
    shown_seqs = sorted(seqs)
    listed = ", ".join(map(str, shown_seqs[:5])) + (", ..." if len(shown_seqs) > 5 else "")
    return (f"; it sent {stale} repl{'y' if stale == 1 else 'ies'} with seq {listed} while request "
            f"{seq} was waiting (stale: dropped): each reply must carry the seq of the request it "
            "answers")


def _short(value: Any, limit: int = 200) -> str:
    import json

    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
