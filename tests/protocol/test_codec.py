"""The protocol codec, the schemas, the message builders and the examples in PROTOCOL.md."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.engine import GameState, Move, Termination, patchwork
from arena.errors import (
    MalformedMessageError,
    OversizeMessageError,
    ProtocolError,
    ProtocolViolationError,
    SchemaViolationError,
)
from arena.protocol import (
    BOT_TYPES,
    MAX_MESSAGE_BYTES,
    REFEREE_TYPES,
    check_protocol,
    codec,
    decode,
    encode,
    load_schemas,
    schema_dir,
    validate,
)
from arena.protocol import messages as m

SPEC = Path(__file__).resolve().parents[2] / "protocol" / "PROTOCOL.md"
REASONS = [t.value for t in Termination]


# ---------------------------------------------------------------- helpers
def _state(seed: int = 3, plies: int = 0, *, special: bool = False) -> GameState:
    """A seeded position after ``plies`` first-legal-move plies (or at the first
    special decision when ``special``)."""
    state = GameState.new(seed)
    while not state.is_terminal():
        if special and state.decision() == "special":
            return state
        if not special and state.ply >= plies:
            return state
        moves = state.legal_moves()
        state.apply(moves[-1] if len(moves) > 1 else moves[0])
    assert not special, "no special decision in this game"
    return state


def _clocks() -> list[m.ClockJSON]:
    return [m.clock(9350, 1000), m.clock(10000, 5000)]


def _move_msg(**overrides: Any) -> dict[str, Any]:
    msg: dict[str, Any] = {"type": "move", "seq": 4,
                           "move": {"action": "buy", "patch": 5, "cells": [[0, 0], [0, 1], [1, 0]]}}
    msg.update(overrides)
    return msg


def _without(msg: Any, key: str) -> dict[str, Any]:
    return {k: v for k, v in msg.items() if k != key}


# ---------------------------------------------------------------- schema files
def test_schema_dir_holds_one_schema_per_message_type_plus_common() -> None:
    names = {p.stem for p in schema_dir().glob("*.json")}
    assert names == set(BOT_TYPES) | set(REFEREE_TYPES) | {"common"}


@pytest.mark.parametrize("name", sorted(load_schemas()))
def test_schema_files_are_valid_draft_2020_12(name: str) -> None:
    schema = load_schemas()[name]
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"https://patchwork-arena.invalid/protocol/1/{name}.json"
    codec._Validator.check_schema(schema)
    if name != "common":
        assert schema["properties"]["type"] == {"const": name}


def test_bot_schemas_are_strict_and_referee_schemas_permissive() -> None:
    schemas = load_schemas()
    for kind in BOT_TYPES:
        assert schemas[kind]["additionalProperties"] is False
    for kind in set(REFEREE_TYPES) - {"error"}:
        assert "additionalProperties" not in schemas[kind]
    state = schemas["common"]["$defs"]["state"]
    assert "additionalProperties" not in state
    assert "additionalProperties" not in schemas["common"]["$defs"]["components"]


# ---------------------------------------------------------------- examples in PROTOCOL.md
def _spec_examples() -> list[tuple[str, str, str]]:
    """(sender, raw JSON text, where) for every example message in PROTOCOL.md:
    fenced ```json bot / ```json referee blocks (one message each), and the lines of
    ```text transcript blocks ("bot: {...}" / "referee: {...}", "#" for comments)."""
    text = SPEC.read_text(encoding="utf-8")
    found = []
    for match in re.finditer(r"^```([^\n]*)\n(.*?)^```$", text, re.S | re.M):
        info, body = match.group(1).split(), match.group(2)
        line = text.count("\n", 0, match.start()) + 1
        if info[:1] == ["json"]:
            assert info[1:] in (["bot"], ["referee"]), f"line {line}: tag json blocks bot/referee"
            found.append((info[1], body, f"PROTOCOL.md:{line}"))
        elif info == ["text", "transcript"]:
            for offset, entry in enumerate(body.splitlines(), start=1):
                if not entry.strip() or entry.startswith("#"):
                    continue
                sender, sep, raw = entry.partition(": ")
                assert sep and sender in ("bot", "referee"), f"line {line + offset}: {entry[:60]}"
                found.append((sender, raw, f"PROTOCOL.md:{line + offset}"))
    return found


def _transcripts() -> list[list[tuple[str, dict[str, Any]]]]:
    text = SPEC.read_text(encoding="utf-8")
    out = []
    for match in re.finditer(r"^```text transcript\n(.*?)^```$", text, re.S | re.M):
        out.append([(line.partition(": ")[0], json.loads(line.partition(": ")[2]))
                    for line in match.group(1).splitlines() if line and not line.startswith("#")])
    return out


SPEC_EXAMPLES = _spec_examples()


@pytest.mark.parametrize(("sender", "raw", "where"), SPEC_EXAMPLES,
                         ids=[w for _, _, w in SPEC_EXAMPLES])
def test_every_example_in_the_spec_is_valid(sender: str, raw: str, where: str) -> None:
    msg = decode(raw, sender=sender)  # type: ignore[arg-type]
    assert validate(msg, sender=sender) is msg  # type: ignore[arg-type]


def test_the_spec_shows_every_message_type_from_its_sender() -> None:
    shown = {(sender, json.loads(raw)["type"]) for sender, raw, _ in SPEC_EXAMPLES}
    expected = {("bot", k) for k in BOT_TYPES} | {("referee", k) for k in REFEREE_TYPES}
    assert expected <= shown
    assert len(_transcripts()) == 3  # stdio, ZeroMQ, Stack'n Stuff


def test_spec_transcripts_are_real_games() -> None:
    """Each transcript follows the flow, echoes seq, and every move is legal in the state
    of the request it answers."""
    for transcript in _transcripts():
        kinds = [msg["type"] for _, msg in transcript]
        assert kinds[:3] == ["hello", "welcome", "new_game"]
        assert kinds[-2:] == ["game_over", "shutdown"]
        seat = transcript[2][1]["seat"]
        request = None
        for _sender, msg in transcript:
            if msg["type"] == "move_request":
                assert request is None
                request = msg
                assert msg["state"]["to_move"] == seat
            elif msg["type"] == "move":
                assert request is not None and msg["seq"] == request["seq"]
                state = GameState.from_json(request["state"])
                state.apply_json(msg["move"])
                request = None
        assert request is None


def test_spec_legal_moves_example_matches_the_engine() -> None:
    requests = [json.loads(raw) for sender, raw, _ in SPEC_EXAMPLES
                if sender == "referee" and '"legal_moves"' in raw]
    assert requests
    for request in requests:
        state = GameState.from_json(request["state"])
        engine = sorted(json.dumps(mv.to_json()) for mv in state.legal_moves())
        shown = sorted(json.dumps(Move.from_json(mv).to_json()) for mv in request["legal_moves"])
        assert shown == engine


# ---------------------------------------------------------------- good messages
def _good_referee_messages() -> list[Any]:
    start, special = _state(), _state(special=True)
    over = _state(plies=10_000)
    out: list[Any] = [
        m.welcome(),
        m.new_game("g1", 0, patchwork("revised"), m.time_control(1000, 10000, 5000), ["a", "b"]),
        m.new_game("g2", 1, patchwork("original"), m.time_control(50, 0, 50.7), ["a", "b"]),
        m.move_request(1, "g1", start, _clocks()),
        m.move_request(2, "g1", start, _clocks(), legal_moves=True),
        m.move_request(3, "g1", special, _clocks(), legal_moves=True),
        m.move_request(4, "g1", _state(plies=20).to_json(), _clocks()),
        m.game_over("g1", scores=list(over.scores()), winner=over.winner() or 0,
                    reason=Termination.NORMAL, detail="a wins"),
        m.shutdown(),
        m.error("bye"),
    ]
    out += [m.game_over("g9", scores=[-150, -20], winner=1, reason=r,  # type: ignore[arg-type, misc]
                        loser=None if r in ("normal", "interrupted") else 0) for r in REASONS]
    return out


def _good_bot_messages() -> list[Any]:
    return [
        m.hello("greedy", "1.0", legal_moves=True),
        m.hello("x", ""),
        {"type": "hello", "name": "minimal", "version": "0", "protocol": 1},
        {"type": "hello", "name": "n", "version": "0", "protocol": 1, "capabilities": {},
         "x-author": {"anything": [1, 2.5, None]}},
        m.move_reply(1, {"action": "advance"}),
        m.move_reply(2, {"action": "buy", "patch": 32, "cells": [[8, 8], [7, 7], [0, 0]]},
                     info="eval +3"),
        m.move_reply(3, {"action": "special", "cells": [[4, 4]]}, info=""),
        _move_msg(**{"x-nodes": 12345, "x-eval": 0.25}),
        m.error("out of memory"),
        {"type": "error", "message": "", "x-trace": "..."},
    ]


@pytest.mark.parametrize("msg", _good_referee_messages(), ids=lambda msg: msg["type"])
def test_good_referee_messages_validate_and_round_trip(msg: dict[str, Any]) -> None:
    assert validate(msg, sender="referee") is msg
    line = encode(msg)
    assert "\n" not in line and line.isascii()
    assert decode(line, sender="referee") == msg
    assert decode(line.encode() + b"\n", sender="referee") == msg


@pytest.mark.parametrize("msg", _good_bot_messages(), ids=lambda msg: msg["type"])
def test_good_bot_messages_validate_and_round_trip(msg: dict[str, Any]) -> None:
    assert validate(msg, sender="bot") is msg
    assert decode(encode(msg), sender="bot") == msg
    assert decode(encode(msg).encode() + b"\r\n", sender="bot") == msg


def test_every_legal_move_of_a_game_is_a_valid_move_message() -> None:
    state = GameState.new(11)
    seq = 0
    while not state.is_terminal():
        moves = state.legal_moves()
        for move in moves[:: max(1, len(moves) // 25)]:
            decode(encode(m.move_reply(seq + 1, move.to_json())))  # type: ignore[arg-type]
        seq += 1
        state.apply(moves[seq % len(moves)])


def test_non_ascii_text_survives_and_encodes_to_ascii() -> None:
    msg = m.move_reply(1, {"action": "advance"}, info="ça marche — ✓ \u2028")
    line = encode(msg)
    assert line.isascii()
    assert decode(line) == msg
    assert decode(json.dumps(msg, ensure_ascii=False).encode("utf-8")) == msg


# ---------------------------------------------------------------- bad messages
BAD_BOT = [
    # (message, error class, fragments the error message must contain)
    (_move_msg(move={"action": "buy", "patch": 5, "cells": [[0], [0, 1]]}), SchemaViolationError,
     ["move: at $.move.cells[0]: expected an array of 2 integers"]),
    (_move_msg(move={"action": "buy", "patch": 5, "cells": [[0, 9]]}), SchemaViolationError,
     ["move: at $.move.cells[0][1]:", "0..8", "got 9"]),
    (_move_msg(move={"action": "buy", "patch": 5, "cells": [[0, 0], [0, 0]]}),
     SchemaViolationError, ["$.move.cells", "distinct"]),
    (_move_msg(move={"action": "buy", "patch": 5, "cells": []}), SchemaViolationError,
     ["$.move.cells", "non-empty"]),
    (_move_msg(move={"action": "buy", "cells": [[0, 0]]}), SchemaViolationError,
     ["move: at $.move: missing field \"patch\""]),
    (_move_msg(move={"action": "buy", "patch": -1, "cells": [[0, 0]]}), SchemaViolationError,
     ["$.move.patch", "patch id"]),
    (_move_msg(move={"action": "buy", "patch": "5", "cells": [[0, 0]]}), SchemaViolationError,
     ["$.move.patch", "got \"5\""]),
    (_move_msg(move={"action": "advance", "patch": 3}), SchemaViolationError,
     ["at $.move: unexpected field \"patch\""]),
    (_move_msg(move={"action": "special", "cells": [[0, 0], [1, 1]]}), SchemaViolationError,
     ["$.move.cells", "exactly 1"]),
    (_move_msg(move={"action": "special", "cells": [[0, 0]], "patch": None}), SchemaViolationError,
     ["unexpected field \"patch\""]),
    (_move_msg(move={"action": "pass"}), SchemaViolationError,
     ["$.move.action", "\"advance\", \"buy\", \"special\"", "got \"pass\""]),
    (_move_msg(move={}), SchemaViolationError, ["$.move: missing field \"action\""]),
    (_move_msg(move="advance"), SchemaViolationError, ["$.move: expected a move object"]),
    (_move_msg(move={"action": "advance", "player": 0}), SchemaViolationError, ["\"player\""]),
    (_move_msg(seq=0), SchemaViolationError, ["move: at $.seq:", "integer >= 1"]),
    (_move_msg(seq="4"), SchemaViolationError, ["$.seq", "got \"4\""]),
    (_move_msg(seq=True), SchemaViolationError, ["$.seq", "got true"]),
    (_move_msg(seq=4.0), SchemaViolationError, ["$.seq", "got 4.0"]),
    (_without(_move_msg(), "seq"), SchemaViolationError, ["missing field \"seq\""]),
    (_without(_move_msg(), "move"), SchemaViolationError, ["missing field \"move\""]),
    ({"type": "move", "seq": 1, "mov": {"action": "advance"}}, SchemaViolationError,
     ["move: at $: missing field \"move\" (is \"mov\" meant to be \"move\"?)"]),
    ({"type": "hello", "name": "b", "verison": "1", "protocol": 1}, SchemaViolationError,
     ["missing field \"version\" (is \"verison\" meant to be \"version\"?)"]),
    (_move_msg(info=7), SchemaViolationError, ["$.info"]),
    (_move_msg(info="x" * 1001), SchemaViolationError,
     ["$.info", "at most 1000 characters", "a string of 1001 characters"]),
    (_move_msg(comment="hi"), SchemaViolationError,
     ["move: at $: unexpected field \"comment\"", "allowed: \"type\", \"seq\", \"move\""]),
    ({"type": "hello", "name": "b", "version": "1"}, SchemaViolationError,
     ["hello: at $: missing field \"protocol\""]),
    ({"type": "hello", "name": "", "version": "1", "protocol": 1}, SchemaViolationError,
     ["$.name"]),
    ({"type": "hello", "name": "n" * 65, "version": "1", "protocol": 1}, SchemaViolationError,
     ["$.name"]),
    ({"type": "hello", "name": "b", "version": 1, "protocol": 1}, SchemaViolationError,
     ["$.version"]),
    ({"type": "hello", "name": "b", "version": "1", "protocol": "1"}, SchemaViolationError,
     ["$.protocol"]),
    ({"type": "hello", "name": "b", "version": "1", "protocol": 0}, SchemaViolationError,
     ["$.protocol"]),
    ({"type": "hello", "name": "b", "version": "1", "protocol": 1,
      "capabilities": {"legal_moves": "yes"}}, SchemaViolationError,
     ["$.capabilities.legal_moves", "true or false"]),
    ({"type": "hello", "name": "b", "version": "1", "protocol": 1,
      "capabilities": {"ponder": True}}, SchemaViolationError, ["\"ponder\""]),
    ({"type": "hello", "name": "b", "version": "1", "protocol": 1, "capabilities": []},
     SchemaViolationError, ["$.capabilities"]),
    ({"type": "error"}, SchemaViolationError, ["error: at $: missing field \"message\""]),
    ({"type": "error", "message": None}, SchemaViolationError, ["$.message"]),
    ({"type": "error", "message": "m" * 1001}, SchemaViolationError, ["$.message"]),
    ({"type": "error", "message": "x", "code": 3}, SchemaViolationError, ["\"code\""]),
    ({"type": "welcome", "protocol": 1, "referee": "x"}, SchemaViolationError,
     ["message: at $.type", "\"welcome\" is sent by the referee"]),
    ({"type": "resign"}, SchemaViolationError,
     ["message: at $.type: expected one of \"hello\", \"move\", \"error\", got \"resign\""]),
    ({"type": 3}, SchemaViolationError, ["at $.type", "got 3"]),
    ({"move": {"action": "advance"}, "seq": 1}, SchemaViolationError,
     ["message: at $: missing field \"type\""]),
]


@pytest.mark.parametrize(("msg", "error", "fragments"), BAD_BOT,
                         ids=[f"bot-{i}" for i in range(len(BAD_BOT))])
def test_bad_bot_messages_raise_a_helpful_error(
        msg: dict[str, Any], error: type[ProtocolError], fragments: list[str]) -> None:
    for attempt in (lambda: decode(json.dumps(msg)), lambda: validate(msg, sender="bot")):
        with pytest.raises(error) as info:
            attempt()
        for fragment in fragments:
            assert fragment in str(info.value)


def _bad_referee_messages() -> list[tuple[dict[str, Any], list[str]]]:
    request = m.move_request(5, "g", _state(plies=4), _clocks())
    state = dict(request["state"])
    new_game = m.new_game("g", 0, patchwork(), m.time_control(1000, 1000, 1000), ["a", "b"])
    over = m.game_over("g", scores=[1, 2], winner=1, reason="normal")

    def replace(msg: Any, **changes: Any) -> dict[str, Any]:
        return {**msg, **changes}

    return [
        (replace(request, seq=0), ["move_request: at $.seq"]),
        (_without(request, "clocks"), ["missing field \"clocks\""]),
        (replace(request, clocks=[m.clock(1, 1)]), ["$.clocks", "2 clocks"]),
        (replace(request, clocks=[{"bank_ms": -1, "per_move_ms": 5}, m.clock(1, 1)]),
         ["$.clocks[0].bank_ms"]),
        (replace(request, state=replace(state, to_move=2)), ["$.state.to_move"]),
        (replace(request, state=replace(state, decision="pass")), ["$.state.decision"]),
        (replace(request, state=replace(state, quilts=[["........."] * 9, ["........x"] * 9])),
         ["$.state.quilts[1][0]", "1 to 9 characters"]),
        (replace(request, state=_without(state, "circle")), ["$.state: missing field \"circle\""]),
        (replace(request, state=replace(state, circle=[1, 1])), ["$.state.circle", "distinct"]),
        (replace(request, state=replace(state, ruleset="chess")), ["$.state.ruleset"]),
        (replace(request, legal_moves=[]), ["$.legal_moves"]),
        (replace(request, legal_moves=[{"action": "jump"}]), ["$.legal_moves[0].action"]),
        (replace(new_game, seat=2), ["new_game: at $.seat"]),
        (replace(new_game, edition="deluxe"), ["$.edition"]),
        (replace(new_game, players=["a"]), ["$.players"]),
        (replace(new_game, time_control={"per_move_ms": 0, "bank_ms": 0, "first_move_ms": 1}),
         ["$.time_control.per_move_ms"]),
        (replace(new_game, components=_without(new_game["components"], "patches")),
         ["$.components: missing field \"patches\""]),
        (replace(over, result=replace(over["result"], reason="forfeit")), ["$.result.reason"]),
        (replace(over, result=replace(over["result"], winner=None)), ["$.result.winner"]),
        (replace(over, result=_without(over["result"], "loser")), ["missing field \"loser\""]),
        ({"type": "welcome", "protocol": 1}, ["welcome: at $: missing field \"referee\""]),
        ({"type": "shutdown!"}, ["message: at $.type"]),
        ({"type": "move", "seq": 1, "move": {"action": "advance"}},
         ["\"move\" is sent by the bot, not the referee"]),
    ]


@pytest.mark.parametrize(("msg", "fragments"), _bad_referee_messages(),
                         ids=lambda value: value.get("type", "?") if isinstance(value, dict) else "")
def test_bad_referee_messages_are_caught(msg: dict[str, Any], fragments: list[str]) -> None:
    for attempt in (lambda: decode(json.dumps(msg), sender="referee"),
                    lambda: validate(msg, sender="referee")):
        with pytest.raises(SchemaViolationError) as info:
            attempt()
        for fragment in fragments:
            assert fragment in str(info.value)


def test_referee_messages_may_grow_new_fields_bot_messages_may_not() -> None:
    request = m.move_request(1, "g", _state(), _clocks())
    request["hint"] = "new in a later version"  # type: ignore[typeddict-unknown-key]
    request["state"]["pie_rule"] = False  # type: ignore[typeddict-unknown-key]
    assert validate(request, sender="referee")
    with pytest.raises(SchemaViolationError, match="unexpected field \"hint\""):
        validate({**_move_msg(), "hint": 1}, sender="bot")


# ---------------------------------------------------------------- garbage
@pytest.mark.parametrize(("raw", "fragment"), [
    (b"\xff\xfe{}", "not UTF-8"),
    (b'{"type":"move","info":"caf\xe9"}', "not UTF-8"),
    (b"", "not JSON"),
    (b"   ", "not JSON"),
    (b"hello", "not JSON"),
    (b"move advance", "not JSON"),
    (b'{"type":"move","seq":1,', "truncated"),
    (b'{"type":"move","seq":1,"move":{"action":"advance"}', "truncated"),
    (b'{"type" "move"}', "line 1 column 9"),
    (b'{"type":"move"}{"type":"move"}', "not JSON"),
    (b'{"seq":NaN}', "NaN"),
    (b'{"seq":Infinity}', "Infinity"),
    (b"\xef\xbb\xbf{}", "not JSON"),
    (b"[" * 100_000, "not JSON"),
    (b"[1, 2]", "not a JSON object but an array"),
    (b'"move"', "not a JSON object but a string"),
    (b"42", "not a JSON object but a number"),
    (b"null", "not a JSON object but null"),
    (b"true", "not a JSON object but a boolean"),
])
def test_garbage_is_malformed(raw: bytes, fragment: str) -> None:
    with pytest.raises(MalformedMessageError, match=re.escape(fragment)):
        decode(raw)
    if raw.isascii():
        with pytest.raises(MalformedMessageError, match=re.escape(fragment)):
            decode(raw.decode())


def test_malformed_error_quotes_the_first_80_characters() -> None:
    raw = "I think I'll buy patch 7 " + "x" * 200
    with pytest.raises(MalformedMessageError) as info:
        decode(raw)
    assert json.dumps(raw[:80]) + "..." in str(info.value)
    assert raw[:81] not in str(info.value)


def test_oversize_is_checked_before_anything_else() -> None:
    padding = MAX_MESSAGE_BYTES - len(encode(_move_msg()))
    exact = encode({**_move_msg(), "x-pad": "p" * (padding - len(',"x-pad":""'))})
    assert len(exact) == MAX_MESSAGE_BYTES
    assert decode(exact)["type"] == "move"
    assert decode(exact.encode() + b"\n")["type"] == "move"
    too_big = exact[:-1] + ' }'
    for raw in (too_big, too_big.encode(), b"\xff" * (MAX_MESSAGE_BYTES + 1)):
        with pytest.raises(OversizeMessageError, match="limit"):
            decode(raw)
    with pytest.raises(OversizeMessageError):
        decode(b"[" * 2000, max_bytes=1000)


def test_oversize_counts_utf8_bytes_not_characters() -> None:
    text = json.dumps({**_move_msg(), "x-pad": "é" * 600}, ensure_ascii=False)
    assert len(text) < 1000 < len(text.encode())
    with pytest.raises(OversizeMessageError):
        decode(text, max_bytes=1000)
    with pytest.raises(OversizeMessageError):
        decode(text.encode(), max_bytes=1000)
    assert decode(text, max_bytes=2000)["x-pad"] == "é" * 600


def test_validate_rejects_non_dicts_and_unknown_senders() -> None:
    with pytest.raises(MalformedMessageError):
        validate([_move_msg()], sender="bot")  # type: ignore[type-var]
    with pytest.raises(ValueError, match="sender"):
        decode(encode(_move_msg()), sender="observer")  # type: ignore[arg-type]


def test_integers_are_integers() -> None:
    with pytest.raises(SchemaViolationError, match=r"\$\.move\.cells\[0\]\[0\]"):
        decode('{"type":"move","seq":1,"move":{"action":"special","cells":[[1.0,2]]}}')
    with pytest.raises(SchemaViolationError, match=r"\$\.seq"):
        decode('{"type":"move","seq":1e0,"move":{"action":"advance"}}')
    with pytest.raises(SchemaViolationError, match=r"\$\.seq"):
        validate({"type": "move", "seq": 1.0, "move": {"action": "advance"}}, sender="bot")
    msg = decode('{"type":"move","seq":1,"move":{"action":"advance"},"x-eval":-1.0}')
    assert msg["x-eval"] == -1.0 and encode(msg).endswith('"x-eval":-1.0}')


def test_encode_is_compact_and_refuses_nan() -> None:
    assert encode({"type": "shutdown"}) == '{"type":"shutdown"}'
    with pytest.raises(ValueError):
        encode({"type": "move", "x-eval": float("nan")})


# ---------------------------------------------------------------- versions, builders
def test_check_protocol() -> None:
    assert check_protocol(m.hello("b")) == 1  # type: ignore[arg-type]
    with pytest.raises(ProtocolViolationError, match="protocol 2"):
        check_protocol(validate(m.hello("b", protocol=2), sender="bot"))  # type: ignore[arg-type]


def test_builders() -> None:
    assert m.welcome() == {"type": "welcome", "protocol": 1, "referee": "patchwork-arena 0.1.0"}
    assert m.clock(12.9, -3) == {"bank_ms": 12, "per_move_ms": 0}
    assert len(m.error("e" * 5000)["message"]) == 1000
    assert len(m.move_reply(1, {"action": "advance"}, info="i" * 5000)["info"]) == 1000
    assert m.game_over("g", scores=[1, 2], winner=1, reason=Termination.TIMEOUT,
                       loser=0)["result"]["reason"] == "timeout"
    original = m.components(patchwork("original"))
    assert original["time_board"]["special_patch_spaces"] == [20, 26, 32, 44, 50]
    assert len(original["patches"]) == 33
    with pytest.raises(TypeError):
        m.move_request(1, "g", _state().to_json(), _clocks(), legal_moves=True)  # type: ignore[arg-type]


def test_components_match_the_engine_data() -> None:
    data = json.loads((Path(__file__).resolve().parents[2] / "arena" / "engine" / "data"
                       / "patchwork.json").read_text())
    sent = m.components(patchwork("revised"))
    assert sent["patches"] == data["patches"]
    for key in ("quilt_board", "starting_buttons", "bonus_tile", "empty_square_penalty",
                "smallest_patch_id"):
        assert sent[key] == data[key]  # type: ignore[literal-required]
    assert sent["time_board"]["special_patch_spaces"] == \
        data["time_board"]["special_patch_spaces"]["revised"]


# ---------------------------------------------------------------- fast and slow agree
_scalars = (st.none() | st.booleans() | st.integers(-2, 82) | st.floats(-2, 9, allow_nan=False)
            | st.text(alphabet="abx-_.#o", max_size=6))
_json = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.sampled_from(["type", "seq", "move", "action", "patch", "cells", "x-a", "b"]), inner,
    max_size=3), max_leaves=8)
_cell = st.lists(st.integers(0, 8), min_size=2, max_size=2)
_valid_moves = (st.just({"action": "advance"})
                | st.builds(lambda p, c: {"action": "buy", "patch": p, "cells": c},
                            st.integers(0, 40), st.lists(_cell, min_size=1, max_size=8,
                                                         unique_by=tuple))
                | st.builds(lambda c: {"action": "special", "cells": [c]}, _cell))
_valid_bot_messages = (
    st.builds(lambda seq, mv, extra: {"type": "move", "seq": seq, "move": mv, **extra},
              st.integers(1, 10**6), _valid_moves,
              st.fixed_dictionaries({}, optional={"info": st.text(max_size=20), "x-e": _json}))
    | st.builds(lambda name, version, protocol, extra: {
        "type": "hello", "name": name, "version": version, "protocol": protocol, **extra},
        st.text(min_size=1, max_size=10), st.text(max_size=10), st.integers(1, 3),
        st.fixed_dictionaries({}, optional={"capabilities": st.fixed_dictionaries(
            {}, optional={"legal_moves": st.booleans()})}))
    | st.builds(lambda text: {"type": "error", "message": text}, st.text(max_size=20)))


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, (*path, index))
    return out


@st.composite
def _near_valid_bot_messages(draw: Any) -> dict[str, Any]:
    """Valid bot messages, and valid ones with one to three small mutations."""
    msg = json.loads(json.dumps(draw(_valid_bot_messages)))
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(_paths(msg)))
        if not path:
            continue
        parent = msg
        for key in path[:-1]:
            parent = parent[key]
        key, old = path[-1], parent[path[-1]]
        how = draw(st.sampled_from(["replace", "float", "delete", "add", "grow"]))
        if how == "replace":
            parent[key] = draw(_json)
        elif how == "float" and type(old) is int:
            parent[key] = float(old)
        elif how == "delete" and key != "type":
            del parent[key]
        elif how == "add" and isinstance(old, dict):
            old[draw(st.sampled_from(["zz", "x-q", "patch", "cells", "info"]))] = draw(_json)
        elif how == "grow" and isinstance(old, list):
            old.append(draw(_json | _cell))
    return msg


# The property tests below run a few hundred examples in make test and their full count in
# make test-slow (the same check, marked slow, named ..._thoroughly).
@pytest.mark.skipif(codec.fastjsonschema is None, reason="fastjsonschema not installed")
@settings(max_examples=100, deadline=None)
@given(_near_valid_bot_messages())
def test_fast_and_reference_validators_agree(msg: dict[str, Any]) -> None:
    _validators_agree(msg)


@pytest.mark.slow
@pytest.mark.skipif(codec.fastjsonschema is None, reason="fastjsonschema not installed")
@settings(max_examples=400, deadline=None)
@given(_near_valid_bot_messages())
def test_fast_and_reference_validators_agree_thoroughly(msg: dict[str, Any]) -> None:
    _validators_agree(msg)


def _validators_agree(msg: dict[str, Any]) -> None:
    text = json.dumps(msg)
    parsed = codec._DECODER.decode(text)  # floats become the codec's strict kind
    kind = parsed.get("type")
    entry = codec._validators()["bot"].get(kind) if isinstance(kind, str) else None
    if entry is None:
        return
    reference, fast = entry
    try:
        fast(parsed)
        fast_ok = True
    except codec.fastjsonschema.JsonSchemaException:
        fast_ok = False
    assert fast_ok == reference.is_valid(parsed), text


@pytest.mark.skipif(codec.fastjsonschema is None, reason="fastjsonschema not installed")
def test_fast_and_reference_validators_agree_on_referee_messages() -> None:
    cases = [(msg, True) for msg in _good_referee_messages()]
    cases += [(msg, False) for msg, _ in _bad_referee_messages() if msg["type"] != "move"]
    for msg, good in cases:
        parsed = codec._DECODER.decode(encode(msg))
        entry = codec._validators()["referee"].get(parsed["type"])
        if entry is None:
            assert not good
            continue
        reference, fast = entry
        try:
            fast(parsed)
            fast_ok = True
        except codec.fastjsonschema.JsonSchemaException:
            fast_ok = False
        assert fast_ok == reference.is_valid(parsed) == good, encode(msg)[:200]


def test_validate_judges_what_the_message_will_be_on_the_wire() -> None:
    assert validate({"type": "game_over", "game_id": "g", "result": {
        "scores": (3, 4), "winner": 1, "reason": "normal", "loser": None, "detail": ""}},
        sender="referee")
    with pytest.raises(SchemaViolationError, match=r"\$\.result\.scores\[0\]"):
        validate({"type": "game_over", "game_id": "g", "result": {
            "scores": [3.0, 4], "winner": 1, "reason": "normal", "loser": None, "detail": ""}},
            sender="referee")
    with pytest.raises(MalformedMessageError, match="cannot be encoded"):
        validate({"type": "error", "message": {1, 2}}, sender="bot")


def test_decode_without_the_fast_validator(monkeypatch: pytest.MonkeyPatch) -> None:
    slow = {sender: {kind: (ref, None) for kind, (ref, _) in table.items()}
            for sender, table in codec._validators().items()}
    monkeypatch.setattr(codec, "_validators", lambda: slow)
    assert decode(encode(_move_msg())) == _move_msg()
    for msg, error, fragments in BAD_BOT[:5]:
        with pytest.raises(error, match=re.escape(fragments[0])):
            decode(encode(msg))


@pytest.mark.skipif(codec.fastjsonschema is None, reason="fastjsonschema not installed")
def test_decoding_a_move_is_fast() -> None:
    raw = encode(m.move_reply(17, {"action": "buy", "patch": 23, "cells": [
        [0, 1], [0, 2], [1, 0], [1, 1], [1, 2], [1, 3], [2, 1], [2, 2]]}, info="d8 +3")).encode()
    decode(raw)
    best = min(_time(decode, raw, 500) for _ in range(5))
    assert best < 500e-6, f"decode took {best * 1e6:.0f} µs"  # typically 15-40 µs


def _time(function: Any, arg: Any, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        function(arg)
    return (time.perf_counter() - start) / n


# ---------------------------------------------------------------- the move fast path
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from arena.protocol.codec import is_plain_move  # noqa: E402

_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 90), st.floats(-1, 9, allow_nan=False),
                    st.text(max_size=3), st.lists(st.integers(-1, 9), max_size=3))
_CELLS = st.lists(st.one_of(st.lists(st.integers(-1, 9), min_size=0, max_size=3), _VALUES), max_size=6)
_MOVES = st.one_of(
    st.fixed_dictionaries({"action": st.sampled_from(["advance", "buy", "special", "fly"])},
                          optional={"patch": st.one_of(st.integers(-2, 40), _VALUES), "cells": _CELLS,
                                    "extra": _VALUES}),
    _VALUES)
_MESSAGES = st.fixed_dictionaries(
    {"type": st.sampled_from(["move", "move", "hello", "error"])},
    optional={"seq": st.one_of(st.integers(-1, 1000), _VALUES), "move": _MOVES,
              "info": st.one_of(st.text(max_size=5), _VALUES, st.just("x" * 1001)),
              "x-debug": _VALUES, "other": _VALUES})


@settings(max_examples=300, deadline=None)
@given(_MESSAGES)
def test_move_fast_path_never_accepts_what_the_schema_rejects(msg: dict) -> None:
    _fast_path_agrees(msg)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None)
@given(_MESSAGES)
def test_move_fast_path_never_accepts_what_the_schema_rejects_thoroughly(msg: dict) -> None:
    _fast_path_agrees(msg)


def _fast_path_agrees(msg: dict) -> None:
    if is_plain_move(msg):
        validate(msg, sender="bot")  # raises if the schema disagrees


def test_move_fast_path_accepts_the_usual_moves() -> None:
    for move in ({"action": "advance"}, {"action": "special", "cells": [[8, 8]]},
                 {"action": "buy", "patch": 3, "cells": [[0, 0], [0, 1], [0, 2], [0, 3], [0, 4]]}):
        assert is_plain_move({"type": "move", "seq": 7, "move": move, "info": "hi"})
    assert not is_plain_move({"type": "move", "seq": 7, "move": {"action": "special",
                                                                "cells": [[0, 0], [0, 1]]}})
    assert not is_plain_move({"type": "move", "seq": 1.0, "move": {"action": "advance"}})


def _decode_verdict(text: str) -> tuple[str, Any]:
    try:
        return "ok", decode(text, sender="bot")
    except ProtocolError as exc:
        return type(exc).__name__, str(exc)


def _slow_verdict(text: str) -> tuple[str, Any]:
    """What decode said before it tried orjson first: the stdlib parser and the schemas."""
    try:
        msg = codec._DECODER.decode(codec.clean_json_escapes(text))
    except ValueError:
        return _decode_verdict(text)  # a parse error: decode must say what it always said
    if type(msg) is not dict:
        return _decode_verdict(text)
    try:
        return "ok", codec._check(msg, "bot")
    except ProtocolError as exc:
        return type(exc).__name__, str(exc)


_ODD_TEXTS = st.sampled_from([
    '{"type":"move","seq":1.0,"move":{"action":"advance"}}',
    '{"type":"move","seq":99999999999999999999999,"move":{"action":"advance"}}',
    '{"type":"move","seq":3,"move":{"action":"buy","patch":1e400,"cells":[[0,0]]}}',
    '{"type":"move","seq":3,"move":{"action":"advance"},"info":"\\ud800"}',
    '{"type":"move","seq":3,"move":{"action":"advance"},"info":"\\ud83d\\ude00"}',
    '{"type":"move","seq":3,"seq":4,"move":{"action":"advance"}}',
    '{"type":"move","seq":3,"move":{"action":"special","cells":[[8,8.0]]}}',
    '{"type":"move","seq":3,"move":{"action":"advance"}} ',
    '{"type":"move","seq":NaN,"move":{"action":"advance"}}',
])


_TEXTS = st.one_of(_MESSAGES.map(lambda m: json.dumps(m, separators=(",", ":"))), _ODD_TEXTS)


@settings(max_examples=150, deadline=None)
@given(_TEXTS)
def test_decode_of_a_bot_message_is_what_the_stdlib_parser_and_schema_say(text: str) -> None:
    _decode_agrees(text)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None)
@given(_TEXTS)
def test_decode_of_a_bot_message_is_what_the_stdlib_parser_and_schema_say_thoroughly(text: str) -> None:
    _decode_agrees(text)


def _decode_agrees(text: str) -> None:
    # decode tries orjson first for plain moves; the result must be the very same.
    fast, slow = _decode_verdict(text), _slow_verdict(text)
    assert fast == slow
    if fast[0] == "ok":
        assert json.dumps(fast[1]) == json.dumps(slow[1])
        assert [type(v) for v in fast[1].values()] == [type(v) for v in slow[1].values()]
