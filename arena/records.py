"""Game records: one JSON object per game, one line of a ``.jsonl`` file.

A record is the raw truth about a game; replaying it validates every move with the
rules engine and must reproduce the stored result. docs/records.md lists the fields.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from arena.engine import GameState, Move, Termination
from arena.engine.components import ruleset_for
from arena.errors import ArenaError, RecordError
from arena.schemas import load_schema, problem, problems
from arena.schemas.components import check_components

RECORD_FORMAT = "patchwork-arena/game-record"
RECORD_VERSION = 1
REASONS = tuple(t.value for t in Termination)


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def make_record(initial: GameState, players: tuple[str, str] | list[str],
                moves: list[dict[str, Any]], result: dict[str, Any], *, hidden_seed: int | None = None,
                **extra: Any) -> dict[str, Any]:
    """Build a record. ``initial`` is the state before the first move; ``moves`` are move
    JSON objects with a ``player`` field (and optional ``time_ms``, ``info``); ``result``
    has ``scores``, ``winner``, ``reason`` (a Termination value) and optional ``detail``.
    ``hidden_seed``: the seed the late patches' order was drawn from, when it was not the
    public ``seed`` (:meth:`GameState.new`); kept so that the order can be checked on replay."""
    rules = initial.ruleset
    record: dict[str, Any] = {
        "format": RECORD_FORMAT,
        "version": RECORD_VERSION,
        "ruleset": rules.name,
        "edition": rules.edition,
        "seed": initial.seed,
        "circle": initial.circle[:],
        "first_player": initial.first_player,
        "players": list(players),
    }
    if rules.late_patch_ids:
        record["reserve"] = initial.reserve[:]  # the order the late patches join in
        if hidden_seed is not None:
            record["hidden_seed"] = hidden_seed
    if rules != ruleset_for(rules.name, rules.edition):
        record["components"] = rules.components  # user-supplied: the record must carry them
    record.update(extra)
    record["moves"] = moves
    record["result"] = result
    return record


def normal_result(state: GameState) -> dict[str, Any]:
    """The result of a game that ended by the rules."""
    winner = state.winner()
    if winner is None:
        raise ValueError("the game is not over")
    return {"scores": list(state.scores()), "winner": winner, "reason": "normal"}


def initial_state(record: dict[str, Any]) -> GameState:
    """The starting position a record describes (checks ruleset, edition, circle, seed)."""
    first = record.get("first_player")
    if first not in (0, 1):
        raise RecordError(f"first_player must be 0 or 1, got {first!r}")
    circle, reserve, seed = record.get("circle"), record.get("reserve"), record.get("seed")
    hidden = record.get("hidden_seed")
    hidden = hidden if isinstance(hidden, int) and not isinstance(hidden, bool) else None
    try:
        components = record.get("components")
        if components is not None:  # the record's own table: checked before the engine builds on it
            check_components(components, "the record's components")
        rules = ruleset_for(record.get("ruleset", "patchwork"), record.get("edition"), components)
        if circle is None:
            if not isinstance(seed, int):
                raise RecordError("the record has neither a circle nor an integer seed")
            return GameState.new(seed, first_player=first, ruleset=rules, hidden_seed=hidden)
        if not isinstance(circle, list) or not all(isinstance(i, int) for i in circle):
            raise RecordError("circle must be a list of patch ids")
        state = GameState.from_circle(circle, first, ruleset=rules, seed=seed, reserve=reserve)
    except ValueError as exc:
        raise RecordError(str(exc)) from None
    except ArenaError as exc:
        raise RecordError(str(exc)) from None
    if circle[-1] != state.ruleset.last_patch_id:
        raise RecordError(f"circle must end with patch {state.ruleset.last_patch_id}")
    if isinstance(seed, int):
        shuffled = GameState.new(seed, first_player=first, ruleset=rules, hidden_seed=hidden)
        if shuffled.circle != circle:
            raise RecordError(f"circle does not match the shuffle of seed {seed}")
        if shuffled.reserve != state.reserve:
            drawn_by = f"seed {seed}" if hidden is None else f"hidden_seed {hidden}"
            raise RecordError(f"reserve does not match the order drawn by {drawn_by}")
    elif hidden is not None:
        drawn = GameState.new(0, first_player=first, ruleset=rules, hidden_seed=hidden).reserve
        if drawn != state.reserve:
            raise RecordError(f"reserve does not match the order drawn by hidden_seed {hidden}")
    return state


def check_record(record: Any) -> None:
    """Raise RecordError naming the first field of ``record`` that is not of the shape of the
    record schema (arena/schemas/record.json), or a number in it that is not finite.

    A record is untrusted input: this is what lets every reader index and print its fields
    (two player names, two integer scores, an integer seed, finite numbers for JSON).
    """
    if not isinstance(record, dict):
        raise RecordError("a record must be a JSON object")
    found = problems(record, load_schema("record"), table="object")
    if found:
        raise RecordError(found[0])
    key = _non_finite(record)
    if key is not None:
        raise RecordError(problem(key, "a finite number", "NaN or Infinity"))


def _non_finite(value: Any) -> str | None:
    """The key (``a.b[2]``) of the first NaN or infinity in a JSON value, or None."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        key, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return key
        if isinstance(item, dict):
            for name, inner in item.items():
                name = name if name.isidentifier() else ascii(name)[1:-1][:60]  # keys are untrusted text
                stack.append((f"{key}.{name}" if key else name, inner))
        elif isinstance(item, list):
            stack.extend((f"{key}[{i}]", v) for i, v in enumerate(item))
    return None


def replay(record: dict[str, Any], *, check_result: bool = True) -> list[GameState]:
    """Replay a record, validating every move; returns the states (initial, after each move).

    The record's shape is checked first (:func:`check_record`). Raises RecordError naming
    the field, or the move number (1-based), and why it is wrong.
    """
    check_record(record)
    state = initial_state(record)
    states = [state.clone()]
    moves = record.get("moves")
    if not isinstance(moves, list):
        raise RecordError("moves must be a list")
    for number, entry in enumerate(moves, start=1):
        if not isinstance(entry, dict):
            raise RecordError(f"move {number}: not a JSON object")
        mover = state.to_move()
        if mover is None:
            raise RecordError(f"move {number}: the game was already over")
        if entry.get("player") != mover:
            raise RecordError(f"move {number}: recorded for player {entry.get('player')!r} "
                              f"but player {mover} is to move")
        try:
            state.apply(Move.from_json(entry, state.ruleset.rows, state.ruleset.cols))
        except ArenaError as exc:
            raise RecordError(f"move {number} ({_move_text(entry)}): {exc}") from None
        states.append(state.clone())
    if check_result:
        _check_result(record.get("result"), state)
    return states


def _check_result(result: Any, state: GameState) -> None:
    if not isinstance(result, dict):
        raise RecordError("result must be a JSON object")
    reason = result.get("reason")
    if reason not in REASONS:
        raise RecordError(f"result: unknown reason {reason!r}")
    if reason == "normal":
        if not state.is_terminal():
            raise RecordError("result says the game ended normally but the moves do not finish it")
        expected = normal_result(state)
        if list(result.get("scores", [])) != expected["scores"]:
            raise RecordError(f"result: scores {result.get('scores')} but the moves give "
                              f"{expected['scores']}")
        if result.get("winner") != expected["winner"]:
            raise RecordError(f"result: winner {result.get('winner')} but the moves give "
                              f"{expected['winner']}")
    elif result.get("winner") not in (0, 1):
        raise RecordError(f"result: winner must be 0 or 1, got {result.get('winner')!r}")


def _move_text(entry: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in entry.items() if k not in ("time_ms", "info")})[:120]


def read_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (record number from 1, record) from a .jsonl file; blank lines are skipped.

    A line that is not a JSON object raises RecordError naming the record number.
    """
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise RecordError(f"cannot read {path}: {exc.strerror}") from None
    with handle:
        number = 0
        for line in handle:
            if not line.strip():
                continue
            number += 1
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RecordError(f"{path}: record {number}: not valid JSON ({exc.msg} at "
                                  f"column {exc.colno})") from None
            except ValueError:  # json.loads refuses an integer of more than 4300 digits
                raise RecordError(f"{path}: record {number}: not a usable record (an integer of "
                                  "more than 4300 digits)") from None
            except RecursionError:
                raise RecordError(f"{path}: record {number}: not a usable record (nested too "
                                  "deeply)") from None
            if not isinstance(record, dict):
                raise RecordError(f"{path}: record {number}: not a JSON object")
            yield number, record


def append_record(path: Path, record: dict[str, Any]) -> None:
    """Append one record as one line (flushed), so a killed writer loses at most that line."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, separators=(",", ":")) + "\n")
