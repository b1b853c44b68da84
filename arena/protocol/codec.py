"""Encode and decode protocol messages: pure functions over one message's text.

The only I/O is reading the JSON schemas (package data, ``arena/protocol/schemas/``) once, on first use
(call :func:`load_schemas` at startup to pay that before any clock runs). Every
decoded message is checked against the schema of its ``type``; failures raise the
narrow :class:`~arena.errors.ProtocolError` subclasses the referee maps to a game
result (oversize, malformed, schema).

Two validators, one verdict. ``jsonschema`` (a cached ``Draft202012Validator``) is the
authority and writes the error messages, but it takes about 1 ms for a typical move,
so :func:`decode` first runs the schema compiled to Python by ``fastjsonschema``
(a few microseconds). A message the fast validator accepts is accepted; one it rejects
goes to ``jsonschema``, which explains why (and has the last word). The tests check
that both agree. Without ``fastjsonschema`` installed the codec is correct, just slower.

Integers on the wire must be JSON integers: ``1.0`` is rejected where an integer is
expected (stock JSON Schema would accept it; the engine would not).
"""

from __future__ import annotations

import difflib
import itertools
import json
import re
import sys
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypeVar

import orjson
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource

try:
    import fastjsonschema
except ImportError:  # pragma: no cover - optional accelerator, same verdicts without it
    fastjsonschema = None  # type: ignore[assignment]

from arena.errors import (
    MalformedMessageError,
    OversizeMessageError,
    ProtocolViolationError,
    SchemaViolationError,
)
from arena.protocol.constants import MAX_MESSAGE_BYTES, SUPPORTED_PROTOCOLS
from arena.resources import protocol_schemas_dir
from arena.untrusted import clean_json_escapes

Sender = Literal["bot", "referee"]

BOT_TYPES: tuple[str, ...] = ("hello", "move", "error")
REFEREE_TYPES: tuple[str, ...] = (
    "welcome", "new_game", "move_request", "game_over", "shutdown", "error")
MESSAGE_TYPES: dict[str, tuple[str, ...]] = {"bot": BOT_TYPES, "referee": REFEREE_TYPES}

_QUOTE_CHARS = 80
_SPELLING_KEYS = 64  # keys of a message looked at for a misspelt field (a bot's message may hold many)

_Msg = TypeVar("_Msg", bound=Mapping[str, Any])


def schema_dir() -> Path:
    """The folder holding the canonical schema files (package data)."""
    return protocol_schemas_dir()


# ---------------------------------------------------------------- encoding
def encode(msg: Mapping[str, Any]) -> str:
    """One message as compact JSON on one line, without the newline.

    Non-ASCII characters are escaped, so the text is plain ASCII and can never contain a
    line break of any kind. Does not validate: call :func:`validate` for that.
    """
    return json.dumps(msg, separators=(",", ":"), allow_nan=False)


def encode_trusted(msg: Mapping[str, Any]) -> str:
    """:func:`encode` for messages the referee builds from engine data (dicts, lists,
    str, int, bool, None: never NaN or float subclasses), 20x faster.

    ``orjson`` encodes a typical move request in 5 us where ``json`` takes 110 us, which
    was most of the referee's own time per move. Its output is UTF-8, so a message with
    non-ASCII text (a bot's name, say) goes through :func:`encode` to keep the wire ASCII.
    """
    text: str = orjson.dumps(msg).decode()
    return text if text.isascii() else encode(msg)


# ---------------------------------------------------------------- decoding
def decode(raw: bytes | str, *, sender: Sender = "bot",
           max_bytes: int = MAX_MESSAGE_BYTES) -> dict[str, Any]:
    """Parse and validate one message (a ZeroMQ frame or a stdio line).

    A trailing ``\\n`` or ``\\r\\n`` is ignored. Raises, in this order of checks:

    - :class:`OversizeMessageError` if it is longer than ``max_bytes`` bytes of UTF-8;
    - :class:`MalformedMessageError` if it is not UTF-8, not JSON, or not a JSON object
      (the message quotes the start of the offending text);
    - :class:`SchemaViolationError` if ``type`` is not one ``sender`` may send or the
      message does not match that type's schema (the message names the type, the JSON
      path and what was expected).

    Lone UTF-16 surrogates in strings (``"\\ud800"``) come back as U+FFFD, so every
    decoded message encodes again as UTF-8.
    """
    if sender == "bot" and len(raw) <= _PLAIN_MOVE_MAX_BYTES <= max_bytes:
        # The message of every move: orjson parses it in a fraction of the time. It is
        # taken only when it is a plain move, which holds no float, no integer beyond 64
        # bits and no lone surrogate (orjson refuses those) and is never oversize, so it
        # is exactly what the checks below would return; anything else goes through them,
        # which decide (a long text goes to them at once: oversize is checked first).
        try:
            fast = orjson.loads(raw)
        except orjson.JSONDecodeError:
            fast = None
        if type(fast) is dict and is_plain_move(fast):
            return fast
    if isinstance(raw, str):
        text = raw[:-2] if raw.endswith("\r\n") else raw[:-1] if raw.endswith("\n") else raw
        # Cheap bounds first: a character is 1 to 4 bytes of UTF-8.
        if len(text) > max_bytes or (
                len(text) * 4 > max_bytes
                and len(text.encode("utf-8", "surrogatepass")) > max_bytes):
            raise OversizeMessageError(
                f"message of more than {max_bytes} bytes (the limit): {_quote(text)}")
    else:
        data = bytes(raw)
        if data.endswith(b"\n"):
            data = data[:-2] if data.endswith(b"\r\n") else data[:-1]
        if len(data) > max_bytes:
            raise OversizeMessageError(
                f"message of {len(data)} bytes exceeds the limit of {max_bytes} bytes: "
                f"{_quote_bytes(data)}")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedMessageError(
                f"not UTF-8 (byte {exc.start}: {exc.reason}): {_quote_bytes(data)}") from None
    if not text.strip():
        raise MalformedMessageError("not JSON: an empty message")
    try:
        # "\ud800" is valid JSON but not Unicode text: it could not be encoded again (the
        # game_over message, a record, the database). Replaced here, at the edge.
        msg = _DECODER.decode(clean_json_escapes(text))
    except json.JSONDecodeError as exc:
        where = ("the text ends too early (truncated?)" if exc.pos >= len(text.rstrip())
                 else f"line {exc.lineno} column {exc.colno}")
        raise MalformedMessageError(f"not JSON ({exc.msg}; {where}): {_quote(text)}") from None
    except ValueError as exc:  # NaN, Infinity, an integer of too many digits
        reason = str(exc)
        if "integer string conversion" in reason:  # Python's own advice names sys.set_int_max_str_digits
            reason = f"a number too long: at most {sys.get_int_max_str_digits():,} digits"
        raise MalformedMessageError(f"not JSON ({reason}): {_quote(text)}") from None
    except RecursionError:
        raise MalformedMessageError(f"not JSON (nested too deeply): {_quote(text)}") from None
    if type(msg) is not dict:
        raise MalformedMessageError(
            f"not a JSON object but {_json_kind(msg)}: {_quote(text)}")
    # The C parser nests deeper than Python code can walk: the surrogate clean-up, and the
    # validators (fastjsonschema's uniqueItems recurses into every item) overflow the stack
    # on an array nested 500 deep where the schema looks into it (cells).
    try:
        return _check(msg, sender)
    except RecursionError:
        raise MalformedMessageError(f"nested too deeply to check: {_quote(text)}") from None


def validate(msg: _Msg, *, sender: Sender) -> _Msg:
    """Check an already parsed message against its schema; returns it unchanged.

    The verdict is the one :func:`decode` would give for ``encode(msg)``. Raises
    :class:`MalformedMessageError` if it is not a dict (or cannot be encoded) and
    :class:`SchemaViolationError` as :func:`decode` does. The tests run every message the
    referee sends through ``validate(msg, sender="referee")``.
    """
    if not isinstance(msg, dict):
        raise MalformedMessageError(f"not a JSON object but {_json_kind(msg)}: {_short(msg)}")
    if _needs_round_trip(msg):
        # Floats (1.0 must not pass for an integer), tuples, other types: judge the JSON
        # text this would become, as the receiver will.
        try:
            text = encode(msg)
        except (TypeError, ValueError) as exc:
            raise MalformedMessageError(f"cannot be encoded as JSON: {exc}") from None
        _check(_DECODER.decode(text), sender)
    else:
        _check(msg, sender)
    return msg


def _needs_round_trip(msg: dict[str, Any]) -> bool:
    """Whether a value holds anything but dicts, lists, strings, ints, booleans and None."""
    stack: list[Any] = [msg]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is dict:
            stack.extend(value.values())
        elif kind is list:
            stack.extend(value)
        elif kind not in _PLAIN:
            return True
    return False


_PLAIN = frozenset({str, int, bool, type(None)})


def check_protocol(hello: Mapping[str, Any]) -> int:
    """The protocol version to speak with the bot that sent this (already validated) hello.

    Raises :class:`ProtocolViolationError` if we do not speak the bot's version; the
    referee then sends an ``error`` and treats the bot as failing to start.
    """
    version = hello.get("protocol")
    if version not in SUPPORTED_PROTOCOLS:
        supported = ", ".join(map(str, SUPPORTED_PROTOCOLS))
        raise ProtocolViolationError(
            f"hello: the bot speaks protocol {version!r}; this referee speaks {supported}")
    assert isinstance(version, int)
    return version


_MOVE_KEYS = frozenset({"type", "seq", "move", "info"})
_PLAIN_MOVE_MAX_BYTES = 16_384  # more than any message is_plain_move accepts (info: 1,000 chars)


def is_plain_move(msg: dict[str, Any]) -> bool:
    """True only for a bot ``move`` message the schema certainly accepts (no x- fields).

    The referee decodes one of these per move, and this check takes ~2 us where the
    compiled schema takes ~30 us. It is conservative: anything it does not recognise
    goes through the schemas, which decide and explain. A property test checks that it
    never accepts a message the schema rejects.
    """
    if not _MOVE_KEYS.issuperset(msg) or msg.get("type") != "move":
        return False
    seq, move, info = msg.get("seq"), msg.get("move"), msg.get("info", "")
    if type(seq) is not int or seq < 1 or type(move) is not dict:
        return False
    if type(info) is not str or len(info) > 1000:
        return False
    action = move.get("action")
    if action == "advance" or action == "remove":
        return len(move) == 1
    if action == "buy":
        patch = move.get("patch")
        if len(move) != 3 or type(patch) is not int or patch < 0:
            return False
        most = 81
    elif action == "special":
        if len(move) != 2:
            return False
        most = 1
    else:
        return False
    cells = move.get("cells")
    if type(cells) is not list or not 1 <= len(cells) <= most:
        return False
    seen = set()
    for cell in cells:
        if type(cell) is not list or len(cell) != 2:
            return False
        row, col = cell
        if type(row) is not int or type(col) is not int or not (0 <= row <= 8 and 0 <= col <= 8):
            return False
        seen.add(row * 9 + col)
    return len(seen) == len(cells)


def _check(msg: dict[str, Any], sender: Sender) -> dict[str, Any]:
    if sender == "bot" and is_plain_move(msg):
        return msg
    try:
        table = _validators()[sender]
    except KeyError:
        raise ValueError(f"sender must be 'bot' or 'referee', not {sender!r}") from None
    kind = msg.get("type")
    entry = table.get(kind) if type(kind) is str else None
    if entry is None:
        raise SchemaViolationError(_unknown_type(msg, sender))
    validator, fast_validate = entry
    if fast_validate is not None:
        try:
            fast_validate(msg)
            return msg
        except fastjsonschema.JsonSchemaException:
            pass  # let jsonschema explain (and decide)
    # Report the shallowest error, the first in document order among equals (our schemas
    # have no anyOf/oneOf, so jsonschema's best_match heuristics are not needed). It is
    # looked for in a copy with long arrays cut short: jsonschema takes 20 s over the
    # 170,000 cells of a 1 MiB message (uniqueItems, an error per item), and no array the
    # schemas constrain may be that long (maxItems), so the cut keeps the verdict.
    error = min(validator.iter_errors(_shortened(msg)), key=lambda e: len(e.path), default=None)
    if error is None:
        error = min(validator.iter_errors(msg), key=lambda e: len(e.path), default=None)
    if error is not None:
        raise SchemaViolationError(f"{kind}: at {error.json_path}: {_expected(error)}")
    return msg


_EXPLAIN_ITEMS = 128  # more than any maxItems of the schemas


def _shortened(value: Any) -> Any:
    """``value`` with every array cut to its first :data:`_EXPLAIN_ITEMS` items (iterative:
    a message may nest deeper than the recursion limit)."""
    if type(value) is not dict:
        return value
    top: dict[str, Any] = {}
    stack: list[tuple[Any, Any]] = [(value, top)]
    while stack:
        source, target = stack.pop()
        pairs = source.items() if type(source) is dict else enumerate(source[:_EXPLAIN_ITEMS])
        for key, item in pairs:
            kind = type(item)
            if kind is dict or kind is list:
                copy: Any = {} if kind is dict else [None] * min(len(item), _EXPLAIN_ITEMS)
                stack.append((item, copy))
                item = copy
            target[key] = item
    return top


class _JSONFloat(float):
    """A number parsed from JSON text with a fraction or an exponent (``1.0``, ``1e3``).

    It reports ``is_integer()`` as False so that the fast validator, which otherwise
    counts 1.0 as an integer as the JSON Schema spec says, rejects it where the protocol
    wants an integer. It is a float in every other respect (arithmetic, ``json.dumps``).
    """

    __slots__ = ()

    def is_integer(self) -> bool:
        return False


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_float=_JSONFloat, parse_constant=_reject_constant)


# ---------------------------------------------------------------- schemas
def _strict_integer(checker: Any, instance: Any) -> bool:
    return type(instance) is int


_Validator = validators.extend(
    Draft202012Validator,
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _strict_integer),
)


@cache
def load_schemas() -> dict[str, dict[str, Any]]:
    """Every schema file, by file stem (``common``, ``hello``, ...); read once."""
    schemas = {}
    for path in sorted(schema_dir().glob("*.json")):
        schemas[path.stem] = json.loads(path.read_text(encoding="utf-8"))
    if not schemas:
        raise FileNotFoundError(f"no protocol schemas in {schema_dir()}")
    return schemas


@cache
def _validators() -> dict[str, dict[str, tuple[Any, Any]]]:
    """Per sender and message type: (jsonschema validator, fastjsonschema function or None).

    Built once; every message schema is checked against the 2020-12 metaschema first.
    """
    schemas = load_schemas()
    by_id = {schema["$id"]: schema for schema in schemas.values()}
    registry: Registry = Registry().with_resources(
        (uri, Resource.from_contents(schema)) for uri, schema in by_id.items())
    compiled: dict[str, tuple[Any, Any]] = {}
    for name, schema in schemas.items():
        if name == "common":
            continue
        _Validator.check_schema(schema)
        fast = None
        if fastjsonschema is not None:
            # $refs to other files resolve by $id from the loaded files, never the network.
            fast = fastjsonschema.compile(
                schema, handlers={"https": by_id.__getitem__}, use_default=False)
        compiled[name] = (_Validator(schema, registry=registry), fast)
    return {sender: {kind: compiled[kind] for kind in kinds}
            for sender, kinds in MESSAGE_TYPES.items()}


# ---------------------------------------------------------------- error messages
def _unknown_type(msg: dict[str, Any], sender: Sender) -> str:
    kinds = ", ".join(json.dumps(k) for k in MESSAGE_TYPES[sender])
    if "type" not in msg:
        keys = list(itertools.islice(msg, _SPELLING_KEYS))
        extra = [k for k in keys if k.lower() == "type"] or difflib.get_close_matches("type", keys, 1, 0.6)
        meant = f" (is {_short(extra[0])} meant to be \"type\"?)" if extra else ""
        return f"message: at $: missing field \"type\"{meant} (expected one of {kinds})"
    kind = msg["type"]
    hint = ""
    other: Sender = "referee" if sender == "bot" else "bot"
    if kind in MESSAGE_TYPES[other]:
        hint = f" ({json.dumps(kind)} is sent by the {other}, not the {sender})"
    return f"message: at $.type: expected one of {kinds}, got {_short(kind)}{hint}"


def _expected(error: ValidationError) -> str:
    """What the failing part of the schema wanted, in words, and what it got."""
    keyword, value, instance = error.validator, error.validator_value, error.instance
    schema = error.schema if isinstance(error.schema, dict) else {}
    if keyword == "required":
        missing = [k for k in value if k not in instance]
        text = f"missing field{'s' if len(missing) > 1 else ''} " + ", ".join(json.dumps(k) for k in missing)
        known = schema.get("properties", {})
        patterns = list(schema.get("patternProperties", {}))
        extra = [k for k in itertools.islice(instance, _SPELLING_KEYS)
                 if k not in known and not any(re.search(p, k) for p in patterns)]
        guesses = [(close[0], k) for k in missing if (close := difflib.get_close_matches(k, extra, 1, 0.6))]
        unmatched = [k for k in missing if all(k != meant for _, meant in guesses)]
        unused = [k for k in extra if all(k != got for got, _ in guesses)]
        if len(unmatched) == 1 and len(unused) == 1:  # "sequence" for "seq": no spelling alike
            guesses.append((unused[0], unmatched[0]))
        elif len(unmatched) == 1 and unused:
            text += (f" (unknown fields {', '.join(_short(k, 30) for k in unused[:3])}"
                     f"{', ...' if len(unused) > 3 else ''}: is one of them meant to be "
                     f"{json.dumps(unmatched[0])}?)")
        return text + "".join(f" (is {_short(got)} meant to be {json.dumps(k)}?)" for got, k in guesses)
    if keyword == "additionalProperties":
        props = schema.get("properties", {})
        patterns = list(schema.get("patternProperties", {}))
        extra = [k for k in instance
                 if k not in props and not any(re.search(p, k) for p in patterns)]
        allowed = ", ".join(json.dumps(k) for k in props)
        return (f"unexpected field{'s' if len(extra) > 1 else ''} "
                + ", ".join(json.dumps(k) for k in extra) + f" (allowed: {allowed})")
    if keyword == "const":
        return f"expected {json.dumps(value)}, got {_short(instance)}"
    if keyword == "enum":
        return f"expected one of {', '.join(json.dumps(v) for v in value)}, got {_short(instance)}"
    description = schema.get("description")
    if description:
        return f"expected {description}, got {_short(instance)}"
    if keyword == "type":
        wanted = [str(t) for t in (value if isinstance(value, list) else [value])]
        return f"expected {' or '.join(_ARTICLES.get(t, t) for t in wanted)}, got {_short(instance)}"
    if keyword == "minimum":
        return f"expected a number >= {value}, got {_short(instance)}"
    if keyword == "maximum":
        return f"expected a number <= {value}, got {_short(instance)}"
    if keyword == "minLength":
        return f"expected a string of at least {value} characters, got {_short(instance)}"
    if keyword == "maxLength":
        return f"expected a string of at most {value} characters, got {_short(instance)}"
    if keyword == "minItems":
        return f"expected at least {value} items, got {_short(instance)}"
    if keyword == "maxItems":
        return f"expected at most {value} items, got {_short(instance)}"
    if keyword == "uniqueItems":
        return f"expected distinct items, got {_short(instance)}"
    if keyword == "pattern":
        return f"expected a string matching {value}, got {_short(instance)}"
    return error.message


_ARTICLES = {"object": "an object", "array": "an array", "string": "a string",
             "integer": "an integer", "number": "a number", "boolean": "true or false",
             "null": "null"}


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return f"a {type(value).__name__}"


def _short(value: Any, limit: int = 60) -> str:
    """A JSON rendering of a value, cut to ``limit`` characters; long strings are summarised."""
    if isinstance(value, str) and len(value) > limit:
        return f"a string of {len(value)} characters"
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _quote(text: str) -> str:
    """The first 80 characters of an offending text, quoted as a JSON string."""
    cut = text[:_QUOTE_CHARS]
    return json.dumps(cut) + ("..." if len(text) > _QUOTE_CHARS else "")


def _quote_bytes(data: bytes) -> str:
    """:func:`_quote` for bytes that may not be UTF-8 (bad bytes show as U+FFFD)."""
    text = data[: _QUOTE_CHARS * 4].decode("utf-8", "replace")
    cut = text[:_QUOTE_CHARS]
    return json.dumps(cut) + ("..." if len(data) > len(cut.encode("utf-8", "replace")) else "")
