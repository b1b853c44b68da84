"""Bot-controlled text, names and paths: one place that makes them safe to use.

Everything a bot author controls (the manifest's ``name``, the strings in its messages,
the files of its folder, the output of its build) is hostile until it has passed here:

- :func:`check_name` enforces the name rule of protocol/PROTOCOL.md at manifest load, so
  every name that reaches a path, a table, a terminal or a plot is plain ASCII;
- :func:`is_argument` tells whether a manifest's text can be a word of a command line or
  a path (no NUL), so a bad command is refused at manifest load, not at ``Popen``;
- :func:`valid_unicode` / :func:`clean_strings` replace lone UTF-16 surrogates (valid JSON
  escapes, but not encodable as UTF-8) where bot messages are decoded;
- :func:`for_terminal` shows control characters, escape sequences and bidi overrides as
  visible escapes before text is printed;
- :func:`csv_cell` keeps a spreadsheet from reading a cell as a formula;
- :func:`inside` builds a path from a name and refuses one that leaves its folder;
- :func:`refuse_symlinks` refuses a bot folder holding symbolic links.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from arena.errors import ConfigError

NAME_MAX = 64
NAME_RULE = ("1 to 64 characters: ASCII letters, digits, '-', '_' and '.', "
             "starting with a letter or a digit")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", re.ASCII)

_SURROGATE = re.compile("[\ud800-\udfff]")
_REPLACEMENT = "\ufffd"


# ------------------------------------------------------------------ names
def is_valid_name(value: object) -> bool:
    """Whether ``value`` is a bot name by the rule (see :data:`NAME_RULE`)."""
    return isinstance(value, str) and _NAME.fullmatch(value) is not None


def check_name(value: object, where: str, key: str = "name") -> str:
    """``value`` if it is a valid bot name; else ConfigError naming where, the key, the rule
    and the value (shown safely)."""
    if not is_valid_name(value):
        raise ConfigError(f"{where}: key '{key}': expected {NAME_RULE}, got {shown(value)}")
    assert isinstance(value, str)
    return value


# ------------------------------------------------------------------ command lines
ARGUMENT_RULE = "no NUL character (no command line or path can hold one)"


def is_argument(text: str) -> bool:
    """Whether ``text`` can be a word of a command line or a path (see :data:`ARGUMENT_RULE`):
    the kernel ends each at its first NUL, so ``Popen`` refuses such a word (ValueError), and
    a lone surrogate (which no TOML file yields) cannot be encoded at all."""
    return "\0" not in text and _SURROGATE.search(text) is None


# ------------------------------------------------------------------ free text
def valid_unicode(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD, so it encodes as UTF-8.

    (JSON's ``"\\ud800"`` decodes to a lone surrogate; valid pairs are already joined.)
    """
    return _SURROGATE.sub(_REPLACEMENT, text)


def clean_strings(value: Any) -> Any:
    """A JSON value with :func:`valid_unicode` applied to every string, keys included.

    Returns the same object when nothing needed replacing (the common case).
    """
    if isinstance(value, str):
        return valid_unicode(value)
    if isinstance(value, dict):
        return {clean_strings(k): clean_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_strings(v) for v in value]
    return value


def may_hold_surrogates(json_text: str) -> bool:
    """Cheap pre-check for :func:`clean_strings`: can parsing this JSON text give a lone
    surrogate? (Only through a ``\\u`` escape, or one already in the text.)"""
    return "\\u" in json_text or (not json_text.isascii() and _SURROGATE.search(json_text) is not None)


def cap(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with a note of how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters]"


# ------------------------------------------------------------------ terminals
def _escaped(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def for_terminal(text: object, *, newlines: bool = True) -> str:
    """``text`` safe to print: every character Python does not call printable is shown as
    ``\\xNN``/``\\uNNNN``: C0 and C1 controls (ESC starts every terminal escape sequence,
    CSI and OSC have C1 forms too), DEL, bidi overrides and other format characters, line
    separators, lone surrogates. With ``newlines`` (the default) line feeds and tabs are
    kept; without, they are escaped too, so the text stays on one line."""
    text = str(text)
    if text.isprintable():
        return text
    keep = "\n\t" if newlines else ""
    return "".join(ch if ch.isprintable() or ch in keep else _escaped(ch) for ch in text)


def shown(value: object, limit: int = 80) -> str:
    """A value quoted for an error message: ASCII only, control characters escaped, cut
    to about ``limit`` characters."""
    text = ascii(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ------------------------------------------------------------------ spreadsheets
_NUMBER = re.compile(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")


def csv_cell(value: Any) -> Any:
    """A CSV cell that no spreadsheet runs as a formula: text beginning with ``=``, ``+``,
    ``-``, ``@``, a tab or a line break gets a leading ``'``. Numbers, and text that is
    just a number (``-3``, ``+1.5e3``), are left alone."""
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def csv_frame(frame: Any) -> Any:
    """A copy of a pandas DataFrame with :func:`csv_cell` applied to every text cell and
    to the column headers (numeric, boolean and time columns are left as they are)."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype.kind not in "biufcmM":
            out[column] = out[column].map(csv_cell)
    out.columns = [csv_cell(c) for c in out.columns]
    return out


# ------------------------------------------------------------------ paths
def inside(folder: Path | str, *parts: str) -> Path:
    """``folder/part/...``, refused (ConfigError) unless it stays inside ``folder``.

    Each part must be a plain file name: not empty, not ``.`` or ``..``, no ``/`` nor NUL.
    Symbolic links already on the way are followed when checking.
    """
    base = Path(folder)
    for part in parts:
        if (not part or part in (".", "..") or "/" in part or "\0" in part
                or os.sep in part):
            raise ConfigError(f"{base}: refusing the path {shown(part)} (it must be a plain name "
                              "inside that folder)")
    path = base.joinpath(*parts)
    real_base = os.path.realpath(base)
    real = os.path.realpath(path)
    if os.path.commonpath([real_base, real]) != real_base:
        raise ConfigError(f"{base}: refusing the path {shown(str(path))}: it leads outside that "
                          "folder")
    return path


def file_name(text: str, *, limit: int = NAME_MAX, fallback: str = "bot") -> str:
    """``text`` made into one plain file name: ASCII letters, digits, ``-``, ``_`` and ``.``
    (anything else becomes ``_``), not starting with ``.``, at most ``limit`` characters."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", text, flags=re.ASCII)[:limit].lstrip(".")
    return name or fallback


def walk(folder: Path | str) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(folder)`` (top down, links not followed, unreadable folders skipped) without
    recursion: Python 3.11's ``os.walk`` raises RecursionError in a tree about 1000 folders
    deep, which a bot folder or a build can hold."""
    stack = [os.fspath(folder)]
    while stack:
        root = stack.pop()
        dirs: list[str] = []
        files: list[str] = []
        try:
            with os.scandir(root) as entries:
                for entry in entries:
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                    except OSError:
                        is_dir = False
                    (dirs if is_dir else files).append(entry.name)
        except OSError:
            continue
        yield root, dirs, files
        stack.extend(os.path.join(root, name) for name in reversed(dirs))


def remove_tree(folder: Path | str) -> None:
    """``shutil.rmtree(folder, ignore_errors=True)`` without recursion (see :func:`walk`);
    symlinks are removed, never followed."""
    folders = []
    for root, _dirs, files in walk(folder):
        folders.append(root)
        for name in files:
            try:
                os.unlink(os.path.join(root, name))
            except OSError:
                pass
    for path in reversed(folders):
        try:
            os.rmdir(path)
        except OSError:
            pass


def symlinks_in(folder: Path) -> list[Path]:
    """The symbolic links in ``folder`` (at any depth; links are not followed)."""
    found = []
    for root, dirs, files in walk(folder):
        for entry in dirs + files:
            path = Path(root) / entry
            if path.is_symlink():
                found.append(path)
    return sorted(found)


def refuse_symlinks(folder: Path, label: Path | str | None = None) -> None:
    """Raise ConfigError if the bot folder ``folder`` holds a symbolic link (the message
    names ``label``, default the folder): copied or packed by the harness (as root), a
    link could point it at any file of the machine."""
    links = symlinks_in(folder)
    if links:
        listed = ", ".join(shown(str(p.relative_to(folder)), 60) for p in links[:3])
        more = f" and {len(links) - 3} more" if len(links) > 3 else ""
        raise ConfigError(f"{label or folder}: a bot folder must not hold symbolic links (copy the "
                          f"files in instead); found {listed}{more}")


__all__ = ["ARGUMENT_RULE", "NAME_MAX", "NAME_RULE", "cap", "check_name", "clean_strings", "csv_cell",
           "csv_frame", "file_name", "for_terminal", "inside", "is_argument", "is_valid_name",
           "may_hold_surrogates", "refuse_symlinks", "remove_tree", "shown", "symlinks_in", "valid_unicode",
           "walk"]
