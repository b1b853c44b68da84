"""Starter kits: ``arena new-bot DIR --lang LANG`` writes a small bot that plays legal moves.

Each kit is a folder of package data beside this module (``arena/starter/<lang>/``): the
bot's source and its ``bot.toml``, where ``@NAME@`` stands for the bot's name. Every kit
speaks protocol v1 directly (protocol/PROTOCOL.md), asks the referee for the legal moves
and plays one of them, and passes ``arena check-bot DIR --sandbox strict`` as written.
"""

from __future__ import annotations

import re
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from arena.errors import ConfigError
from arena.untrusted import NAME_RULE, is_valid_name

LANGUAGES = ("python", "python-zmq", "js", "c", "cpp", "java")
DESCRIPTIONS = {
    "python": "Python over stdio (standard library only)",
    "python-zmq": "Python over ZeroMQ (pyzmq)",
    "js": "JavaScript for Node.js over stdio",
    "c": "C99 over stdio (built with cc)",
    "cpp": "C++17 over stdio (built with c++)",
    "java": "Java 17 over stdio (compiled by the runtime's own compiler)",
}
PLACEHOLDER = "@NAME@"


def default_name(folder: Path) -> str | None:
    """A bot name made from the folder's name (invalid characters become ``-``), or None."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", folder.resolve().name)[:64]
    name = name.lstrip("._-")
    return name if is_valid_name(name) else None


def create(folder: Path, lang: str, name: str | None = None) -> list[Path]:
    """Write the ``lang`` kit into ``folder`` (created; refused if it exists and is not an
    empty folder), named ``name`` or :func:`default_name`; return the files written.
    Everything is made readable by all (0644, folders 0755): the strict sandbox runs the
    bot under a uid of its own. Raises ConfigError saying what is wrong."""
    if lang not in LANGUAGES:
        raise ConfigError(f"unknown language {lang!r}: expected one of {', '.join(LANGUAGES)}")
    if folder.exists() or folder.is_symlink():
        if not folder.is_dir() or folder.is_symlink():
            raise ConfigError(f"{folder}: exists and is not a folder")
        if any(folder.iterdir()):
            raise ConfigError(f"{folder}: exists and is not empty; give a new or empty folder")
    if name is None:
        name = default_name(folder)
        if name is None:
            raise ConfigError(f"{folder}: cannot make a bot name of the folder's name; give one with "
                              f"--name ({NAME_RULE})")
    elif not is_valid_name(name):
        raise ConfigError(f"--name: expected {NAME_RULE}, got {name!r}")
    kit = resources.files(__name__).joinpath(lang)
    folder.mkdir(mode=0o755, parents=True, exist_ok=True)
    written: list[Path] = []
    _copy(kit, folder, name, written)
    return written


def _copy(source: Traversable, target: Path, name: str, written: list[Path]) -> None:
    for entry in sorted(source.iterdir(), key=lambda e: e.name):
        if entry.name.startswith(("__", ".")) or entry.name.endswith(".pyc"):
            continue
        path = target / entry.name
        if entry.is_dir():
            path.mkdir(mode=0o755)
            path.chmod(0o755)
            _copy(entry, path, name, written)
        else:
            path.write_text(entry.read_text(encoding="utf-8").replace(PLACEHOLDER, name), encoding="utf-8")
            path.chmod(0o644)
            written.append(path)


__all__ = ["DESCRIPTIONS", "LANGUAGES", "create", "default_name"]
