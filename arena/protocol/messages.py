"""Wire shapes as TypedDicts, and small constructors for the messages the referee sends.

The builders return plain dicts ready for :func:`arena.protocol.encode`; they do not
validate (the tests run every one through ``validate(msg, sender="referee")``). Times
are whole milliseconds on the wire: the builders floor floats and clamp them at 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, NotRequired, TypedDict

from arena import __version__
from arena.engine import GameState, Ruleset, Termination
from arena.engine.components import GameName
from arena.protocol.constants import PROTOCOL_VERSION

ERROR_MESSAGE_CHARS = 1000
INFO_CHARS = 1000

Reason = Literal["normal", "timeout", "crash", "malformed", "schema", "illegal_move", "oversize",
                 "protocol", "start_failure", "interrupted"]


# ---------------------------------------------------------------- shared shapes
class AdvanceMoveJSON(TypedDict):
    action: Literal["advance"]


class BuyMoveJSON(TypedDict):
    action: Literal["buy"]
    patch: int
    cells: list[list[int]]


class SpecialMoveJSON(TypedDict):
    action: Literal["special"]
    cells: list[list[int]]


MoveJSON = AdvanceMoveJSON | BuyMoveJSON | SpecialMoveJSON


class PlacedJSON(TypedDict):
    patch: int | None
    cells: list[list[int]]


class StateJSON(TypedDict):
    """``GameState.to_json()``; see PROTOCOL.md for the meaning of each field."""

    ruleset: GameName
    edition: Literal["revised", "original", "standard"]
    seed: int | None
    first_player: int
    ply: int
    to_move: int | None
    decision: Literal["main", "special"] | None
    positions: list[int]
    buttons: list[int]
    income: list[int]
    quilts: list[list[str]]
    placed: list[list[PlacedJSON]]
    circle: list[int]
    special_spaces_left: list[int]
    bonus_owner: int | None
    on_top: int
    first_to_finish: int | None


class ClockJSON(TypedDict):
    bank_ms: int
    per_move_ms: int


class TimeControlJSON(TypedDict):
    per_move_ms: int
    bank_ms: int
    first_move_ms: int


class QuiltBoardJSON(TypedDict):
    rows: int
    cols: int


class TimeBoardJSON(TypedDict):
    final_space: int
    button_income_spaces: list[int]
    special_patch_spaces: list[int]


class SpecialPatchJSON(TypedDict):
    count: int
    shape: list[str]


class BonusTileJSON(TypedDict):
    square: int
    points: int


class PatchJSON(TypedDict):
    id: int
    shape: list[str]
    buttons_cost: int
    time_cost: int
    income: int


class ComponentsJSON(TypedDict):
    quilt_board: QuiltBoardJSON
    starting_buttons: int
    time_board: TimeBoardJSON
    special_patch: SpecialPatchJSON
    bonus_tile: BonusTileJSON
    empty_square_penalty: int
    smallest_patch_id: int
    patches: list[PatchJSON]
    late_patch_ids: list[int]  # Stack'n Stuff: join the circle when late_join_at are left
    late_join_at: int
    special_removable: bool  # Stack'n Stuff: a box may be removed instead of placed
    take_every_special: bool  # Stack'n Stuff: a move takes every box it passes (Patchwork: one)
    currency: str
    unverified: str  # non-empty: a warning that these components are not verified


class ResultJSON(TypedDict):
    scores: list[int]
    winner: int
    reason: Reason
    loser: int | None
    detail: str


# ---------------------------------------------------------------- bot -> referee
class Capabilities(TypedDict, total=False):
    legal_moves: bool


class HelloMessage(TypedDict):
    type: Literal["hello"]
    name: str
    version: str
    protocol: int
    capabilities: NotRequired[Capabilities]


class MoveMessage(TypedDict):
    type: Literal["move"]
    seq: int
    move: MoveJSON
    info: NotRequired[str]


class ErrorMessage(TypedDict):
    """Sent by either side (same shape both ways)."""

    type: Literal["error"]
    message: str


# ---------------------------------------------------------------- referee -> bot
class WelcomeMessage(TypedDict):
    type: Literal["welcome"]
    protocol: int
    referee: str


class NewGameMessage(TypedDict):
    type: Literal["new_game"]
    game_id: str
    seat: int
    ruleset: GameName
    edition: Literal["revised", "original", "standard"]
    time_control: TimeControlJSON
    players: list[str]
    components: ComponentsJSON


class MoveRequestMessage(TypedDict):
    type: Literal["move_request"]
    seq: int
    game_id: str
    state: StateJSON
    clocks: list[ClockJSON]
    legal_moves: NotRequired[list[MoveJSON]]


class GameOverMessage(TypedDict):
    type: Literal["game_over"]
    game_id: str
    result: ResultJSON


class ShutdownMessage(TypedDict):
    type: Literal["shutdown"]


BotMessage = HelloMessage | MoveMessage | ErrorMessage
RefereeMessage = (WelcomeMessage | NewGameMessage | MoveRequestMessage | GameOverMessage
                  | ShutdownMessage | ErrorMessage)


# ---------------------------------------------------------------- builders
def welcome(protocol: int = PROTOCOL_VERSION) -> WelcomeMessage:
    return {"type": "welcome", "protocol": protocol, "referee": f"patchwork-arena {__version__}"}


def components(ruleset: Ruleset) -> ComponentsJSON:
    """The component table a bot needs to play ``ruleset`` (its edition's special spaces)."""
    return {
        "quilt_board": {"rows": ruleset.rows, "cols": ruleset.cols},
        "starting_buttons": ruleset.starting_buttons,
        "time_board": {
            "final_space": ruleset.final_space,
            "button_income_spaces": list(ruleset.income_spaces),
            "special_patch_spaces": list(ruleset.special_spaces),
        },
        "special_patch": {"count": len(ruleset.special_spaces), "shape": ["#"]},
        "bonus_tile": {"square": ruleset.bonus_square, "points": ruleset.bonus_points},
        "empty_square_penalty": ruleset.empty_penalty,
        "smallest_patch_id": ruleset.last_patch_id,
        "patches": [{"id": p.id, "shape": list(p.shape), "buttons_cost": p.buttons_cost,
                     "time_cost": p.time_cost, "income": p.income} for p in ruleset.patches],
        "late_patch_ids": list(ruleset.late_patch_ids),
        "late_join_at": ruleset.late_join_at,
        "special_removable": ruleset.special_removable,
        "take_every_special": ruleset.take_every_special,
        "currency": ruleset.currency,
        "unverified": ruleset.unverified,
    }


_components = components  # for new_game, whose parameter has the same name


def time_control(per_move_ms: float, bank_ms: float, first_move_ms: float) -> TimeControlJSON:
    return {"per_move_ms": _ms(per_move_ms), "bank_ms": _ms(bank_ms),
            "first_move_ms": _ms(first_move_ms)}


def new_game(game_id: str, seat: int, ruleset: Ruleset, time_control: TimeControlJSON,
             players: Sequence[str], *, components: ComponentsJSON | None = None) -> NewGameMessage:
    """``components``: the ruleset's table when already built (the referee builds it once
    per game, for both seats)."""
    table = _components(ruleset) if components is None else components
    return {
        "type": "new_game",
        "game_id": game_id,
        "seat": seat,
        "ruleset": ruleset.name,  # type: ignore[typeddict-item]
        "edition": ruleset.edition,  # type: ignore[typeddict-item]
        "time_control": {"per_move_ms": time_control["per_move_ms"],
                         "bank_ms": time_control["bank_ms"],
                         "first_move_ms": time_control["first_move_ms"]},
        "players": list(players),
        "components": table,
    }


def clock(bank_ms: float, per_move_ms: float) -> ClockJSON:
    """One seat's clock: its bank left, and the limit on its next move before the bank
    is drawn on (``first_move_ms`` until it has made its first move of the game)."""
    return {"bank_ms": _ms(bank_ms), "per_move_ms": _ms(per_move_ms)}


def move_request(seq: int, game_id: str, state: GameState | Mapping[str, Any],
                 clocks: Sequence[ClockJSON] | Sequence[Mapping[str, int]], *,
                 legal_moves: bool = False) -> MoveRequestMessage:
    """A request for the seat to move in ``state``, with both seats' clocks in whole ms
    (:func:`clock`, or :meth:`arena.clock.GameClock.to_json`; taken as they are, this is
    on every move); ``legal_moves=True`` if the bot asked for them in its hello (needs a
    GameState, not its JSON)."""
    state_json = state.public_json() if isinstance(state, GameState) else state
    msg: MoveRequestMessage = {
        "type": "move_request",
        "seq": seq,
        "game_id": game_id,
        "state": state_json,  # type: ignore[typeddict-item]
        "clocks": list(clocks),  # type: ignore[arg-type]
    }
    if legal_moves:
        if not isinstance(state, GameState):
            raise TypeError("legal_moves=True needs the GameState, not its JSON")
        msg["legal_moves"] = [m.to_json(state.ruleset.cols) for m in state.legal_moves()]  # type: ignore[misc]
    return msg


def move_request_text(seq: int, game_id: str, state: GameState,
                      clocks: Sequence[ClockJSON] | Sequence[Mapping[str, int]], *,
                      legal_moves: bool = False) -> str:
    """:func:`move_request`, encoded as the referee sends it: the same text as encoding that
    message, with the legal moves' JSON joined from the texts the engine encoded once per
    ruleset (a request of 1,345 legal moves was re-encoded on every move, most of its cost)."""
    from arena.protocol.codec import encode_trusted

    text = encode_trusted(move_request(seq, game_id, state, clocks))
    if not legal_moves:
        return text
    return f'{text[:-1]},"legal_moves":[{",".join(state.legal_moves_text())}]}}'


def game_over(game_id: str, *, scores: Sequence[int], winner: int,
              reason: Reason | Termination, loser: int | None = None,
              detail: str = "") -> GameOverMessage:
    """``loser`` is the seat at fault (None when the game ended by the rules or was
    interrupted); ``winner`` is always a seat."""
    value = reason.value if isinstance(reason, Termination) else reason
    return {"type": "game_over", "game_id": game_id,
            "result": {"scores": list(scores), "winner": winner, "reason": value,  # type: ignore[typeddict-item]
                       "loser": loser, "detail": detail}}


def shutdown() -> ShutdownMessage:
    return {"type": "shutdown"}


def error(message: str) -> ErrorMessage:
    """An error to send to a bot; long messages are cut to the protocol's 1000 characters."""
    return {"type": "error", "message": _cut(message, ERROR_MESSAGE_CHARS)}


# ---------------------------------------------------------------- bot side (tests, Python bots)
def hello(name: str, version: str = "", *, legal_moves: bool = False,
          protocol: int = PROTOCOL_VERSION) -> HelloMessage:
    return {"type": "hello", "name": name, "version": version, "protocol": protocol,
            "capabilities": {"legal_moves": legal_moves}}


def move_reply(seq: int, move: MoveJSON, info: str | None = None) -> MoveMessage:
    msg: MoveMessage = {"type": "move", "seq": seq, "move": move}
    if info is not None:
        msg["info"] = _cut(info, INFO_CHARS)
    return msg


def _ms(value: float) -> int:
    return max(0, int(value))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
