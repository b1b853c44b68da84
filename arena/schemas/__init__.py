"""JSON Schemas of the files users write, and the one checker that reports on them.

``tournament.json`` (the tournament config, TOML), ``manifest.json`` (a bot's ``bot.toml``),
``components.json`` (a Stack'n Stuff component file, JSON) and ``record.json`` (a game
record, checked by :func:`arena.records.check_record`) ship in this package. Every
problem they find reads ``FILE: key 'a.b': expected WHAT, got WHAT`` on one line: WHAT is
the ``description`` of the failing part of the schema, or is derived from its type, range
or choices. Rules a schema cannot express (games per pairing even, challengers that are
entrants, tile ids 0..n-1, ...) stay as a few lines of code beside each loader, and use
:func:`problem` and :func:`got` for the same style.

A bot's name is checked by :func:`arena.untrusted.is_valid_name` (the schema's
``"format": "bot-name"``): untrusted.py stays the one validator of bot names.
"""

from __future__ import annotations

import difflib
import enum
import json
import math
import re
import tomllib
from collections.abc import Mapping
from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING, Any

from arena.errors import ConfigError
from arena.untrusted import NAME_RULE, is_valid_name, name_suggestion, shown

KINDS = ("tournament", "manifest", "components", "record")
MISSING = "nothing (the key is missing)"

if TYPE_CHECKING:
    from jsonschema import FormatChecker
    from jsonschema.exceptions import ValidationError

_FORMAT_TEXT = {"bot-name": NAME_RULE}
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}", re.ASCII)
_TYPE_TEXT = {"string": "a string", "boolean": "true or false", "array": "a list", "number": "a number",
              "null": "null"}


@cache
def load_schema(kind: str) -> dict[str, Any]:
    """The shipped schema ``kind`` (one of KINDS), parsed once."""
    if kind not in KINDS:
        raise ValueError(f"no schema {kind!r}: expected one of {', '.join(KINDS)}")
    data: dict[str, Any] = json.loads(files("arena.schemas").joinpath(f"{kind}.json").read_text("utf-8"))
    if kind == "tournament":  # the games come from the registry (the file lists them for its readers)
        from arena.engine.components import GAMES

        data["properties"]["game"]["enum"] = list(GAMES)
    return data


def problem(key: str, expected: str, got_text: str) -> str:
    """One problem in the common style (without the file): ``key 'k': expected E, got G``."""
    where = f"key '{key}': " if key else ""
    return f"{where}expected {expected}, got {got_text}"


def got(value: Any, table: str = "table") -> str:
    """A value as an error message shows it: safe ASCII, cut short, with its kind where the
    quoting does not say it (``table`` names a mapping: "table" in TOML, "object" in JSON)."""
    if value is None:  # JSON's null (TOML has none)
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        text = f"{value:,}"
        return text if len(text) <= 40 else f"{text[:20]}... ({len(str(abs(value)))} digits)"
    if isinstance(value, str):
        return shown(value)
    article = "an" if table[:1] in ("a", "e", "i", "o", "u") else "a"
    kind = {list: "a list", tuple: "a list", dict: f"{article} {table}", float: "a number"}.get(
        type(value), type(value).__name__)
    return f"{shown(value)} ({kind})"


def problems(data: Any, schema: Mapping[str, Any], *, table: str = "table") -> list[str]:
    """Every problem of ``data`` against ``schema``, in the common style, in schema order."""
    from jsonschema import Draft202012Validator  # imported when a file is checked: `arena --help` stays quick

    validator = Draft202012Validator(schema, format_checker=_formats())
    found: list[str] = []
    more = 0
    for error in validator.iter_errors(data):
        for text in _explain(error, table):
            if text in found:
                continue
            if len(found) < MAX_PROBLEMS:
                found.append(text)
            else:
                more += 1
    return found + ([f"and {more} more problem{'s' if more > 1 else ''}"] if more else [])


_TOML_AT = re.compile(r"\(at line (\d+), column \d+\)$")
# key = bare words; matched against a stripped line, with no two parts that can take the same
# characters (a leading \s* beside the key's spaces made a 64 KiB line take 40 s)
_BARE_VALUE = re.compile(r"[\w.\"' -]+=[ \t]*[A-Za-z_./][\w./ -]*(#.*)?")
MAX_PROBLEMS = 20  # listed of a file's problems: 8,000 unknown keys printed 1 MB
TOML_MAX_DEPTH = 32
"""Levels of tables and arrays a bot.toml or a config may nest: a few are used. A key of
thousands (``a.b.c...``) took tomllib minutes (its time grows with the square of the depth)
and then made the schema check's repr() recurse past Python's limit."""
TOML_INT_BITS = 64  # TOML's integers are 64-bit; tomllib takes any (a repr of 0xfff... raised)


def _deepest_key(text: str) -> tuple[int, int] | None:
    """(line, parts) of the first key of more than TOML_MAX_DEPTH parts, looked for before
    tomllib parses (its time grows with the square of a key's depth): in each line outside a
    multi-line string, the part before its first '=' or, for a table header, inside its
    brackets. Dots inside quoted key parts count too (no real key has 32)."""
    in_string: str | None = None  # the delimiter of the multi-line string the line is in
    for number, line in enumerate(text.splitlines(), 1):
        if in_string is None and line.count(".") >= TOML_MAX_DEPTH:
            stripped = line.lstrip()
            if stripped.startswith("["):  # a table header
                key = stripped.split("]", 1)[0]
            else:  # a key = value line; without '=', a value's own line (an array's, say)
                key = stripped.split("=", 1)[0] if "=" in stripped else ""
            if "," not in key and key.count(".") >= TOML_MAX_DEPTH:  # "," : an array of numbers
                return number, key.count(".") + 1
        for delimiter in ('"""', "'''"):
            if in_string in (None, delimiter) and line.count(delimiter) % 2:
                in_string = None if in_string else delimiter
    return None


def toml_text(data: bytes, source: str) -> str:
    """The text of a TOML file users write, from its bytes: UTF-8. Raises ConfigError naming
    ``source``; for UTF-16 (what Windows Notepad saves as "Unicode": a byte-order mark, or a
    NUL byte beside every ASCII character), says to save it as UTF-8."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in data[:4096]:
        raise ConfigError(f"{source}: saved as UTF-16 (Windows Notepad's \"Unicode\"), not UTF-8: "
                          "save it as UTF-8")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{source}: not UTF-8 text (byte {exc.start}): save it as UTF-8") from None


def parse_toml(text: str, source: str) -> dict[str, Any]:
    """The TOML ``text`` of a file users write (a bot.toml, a tournament config): a leading
    UTF-8 byte-order mark (which some editors write) is dropped. Raises ConfigError
    ``SOURCE: not valid TOML: ...``, with a hint for a bare word as a value, the commonest
    slip (``protocol = stdio``: "Invalid value" alone does not say that quotes are missing),
    or when tables and arrays nest more than TOML_MAX_DEPTH levels."""
    too_deep = f"{source}: tables or arrays nested more than {TOML_MAX_DEPTH} levels deep"
    deepest = _deepest_key(text)
    if deepest is not None:
        raise ConfigError(f"{too_deep} (line {deepest[0]}: a dotted key of {deepest[1]} parts)")
    try:
        data: dict[str, Any] = tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:  # the message ends with "(at line L, column C)"
        message = str(exc)
        at = _TOML_AT.search(message)
        if message.startswith("Invalid value") and at is not None:
            lines = text.removeprefix("\ufeff").splitlines()
            number = int(at.group(1))
            if number <= len(lines) and _BARE_VALUE.fullmatch(lines[number - 1].strip()):
                message += " (strings need quotes)"
        elif ("escape" in message or "hex value" in message) and at is not None:
            message += (" (a backslash starts an escape in a \"string\": a Windows path? write paths "
                        "with /, relative to the bot's folder)")
        raise ConfigError(f"{source}: not valid TOML: {message}") from None
    except RecursionError:  # tomllib recurses once per level of [[[...]]] or {a={a=...}}
        raise ConfigError(f"{source}: not valid TOML: arrays or tables nested too deeply") from None
    except ValueError:  # int() of a decimal of more than 4,300 digits
        raise ConfigError(f"{source}: not valid TOML: a number too long (TOML's integers are "
                          f"{TOML_INT_BITS}-bit)") from None
    _check_values(data, too_deep, source)
    return data


def _check_values(data: dict[str, Any], too_deep: str, source: str) -> None:
    """Raise ConfigError when tables and arrays nest more than TOML_MAX_DEPTH levels or an
    integer is beyond TOML's 64 bits (walked without recursion: a repr() of either recursed
    past Python's limit or raised, in the schema check's messages)."""
    limit = 1 << (TOML_INT_BITS - 1)
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        item, level = stack.pop()
        if level > TOML_MAX_DEPTH:
            raise ConfigError(too_deep)
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, dict | list):
                stack.append((child, level + 1))
            elif isinstance(child, int) and not -limit <= child < limit:
                raise ConfigError(f"{source}: not valid TOML: a number too long (TOML's integers are "
                                  f"{TOML_INT_BITS}-bit)")


def check(data: Any, schema: Mapping[str, Any] | str, source: str, *, table: str = "table") -> None:
    """Raise ConfigError ``SOURCE: <the first problem>`` unless ``data`` matches ``schema``
    (a schema, or the name of a shipped one)."""
    found = problems(data, load_schema(schema) if isinstance(schema, str) else schema, table=table)
    if found:
        raise ConfigError(f"{source}: {found[0]}")


def plain(value: Any) -> Any:
    """A command-line value as a file would hold it: paths as strings, tuples as lists."""
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if hasattr(value, "__fspath__"):
        return str(value)
    if isinstance(value, enum.Enum):  # a --sandbox level
        return value.value
    return value


@cache
def _formats() -> FormatChecker:
    """The formats our schemas use: ``bot-name`` is :func:`arena.untrusted.is_valid_name`."""
    from jsonschema import FormatChecker

    checker = FormatChecker(formats=())
    checker.checks("bot-name")(is_valid_name)
    return checker


def _key(path: Any) -> str:
    text = ""
    for part in path:
        text = text + f"[{part}]" if isinstance(part, int) else _join(text, part)
    return text


def _join(key: str, name: Any) -> str:
    """``key.name``, the name shown safely: a bot.toml's keys are bot-controlled text."""
    if not (isinstance(name, str) and _PLAIN_KEY.fullmatch(name)):
        name = ascii(str(name))[1:-1]
        name = name if len(name) <= 60 else name[:57] + "..."
    return f"{key}.{name}" if key else name


def _explain(error: ValidationError, table: str) -> list[str]:
    key = _key(error.absolute_path)
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    value = error.instance
    if error.validator == "required":
        props = schema.get("properties", {})
        return [problem(_join(key, name), expected(props.get(name, {}), table), MISSING)
                for name in schema["required"] if isinstance(value, Mapping) and name not in value]
    if error.validator == "additionalProperties":
        properties = list(schema.get("properties", {}))
        known = ", ".join(properties)
        return [problem(_join(key, name), f"one of the keys ({known})",
                        "an unknown key" + _meant(name, properties))
                for name in value if name not in properties]
    suggestion = name_suggestion(value) if schema.get("format") == "bot-name" else ""
    return [problem(key, expected(schema, table), got(value, table)) + suggestion]


def _meant(name: Any, keys: list[str]) -> str:
    """" (did you mean 'protocol'?)" for a key spelt like a known one ('protocl'), else ""."""
    if not isinstance(name, str):
        return ""
    close = difflib.get_close_matches(name.lower(), keys, 1, 0.7)
    return f" (did you mean '{close[0]}'?)" if close else ""


def expected(schema: Mapping[str, Any], table: str = "table") -> str:
    """What a schema asks for, in words: its description, else from its format, choices,
    type and range."""
    if "description" in schema:
        return str(schema["description"])
    if "format" in schema and schema["format"] in _FORMAT_TEXT:
        return _FORMAT_TEXT[schema["format"]]
    if "enum" in schema:
        choices = [json.dumps(c) for c in schema["enum"]]
        return " or ".join(choices) if len(choices) == 2 else "one of " + ", ".join(choices)
    kind = schema.get("type")
    if kind == "integer":
        low, high = schema.get("minimum", -math.inf), schema.get("maximum", math.inf)
        if low > -math.inf and high < math.inf:
            return f"an integer from {low:,} to {high:,}"
        if low > -math.inf:
            return f"an integer >= {low:,}"
        return "an integer" if high == math.inf else f"an integer <= {high:,}"
    if kind == "object":
        return f"a {table}" if table[0] not in "aeiou" else f"an {table}"
    return _TYPE_TEXT.get(str(kind), "a valid value")


__all__ = ["KINDS", "MISSING", "check", "expected", "got", "load_schema", "parse_toml", "plain", "problem",
           "problems"]
