"""Where the harness finds the files that ship with it: all of them are package data.

Everything read at run time (the protocol schemas, the sample bots, the starter kits, the
report's templates and assets) lives inside the ``arena`` package and is found through
:mod:`importlib.resources`, so a wheel installed anywhere works from any folder. The
repository's top-level ``sample_bots`` and ``protocol/schemas`` are links into the package.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def package_path(package: str, *parts: str) -> Path:
    """A folder or file shipped inside ``package`` (e.g. ``"arena.protocol", "schemas"``).

    The package is installed as plain files (never zipped), so the path is a real one that
    a bot process or a sandbox bind can use."""
    return Path(str(files(package).joinpath(*parts)))


def sample_bots_dir() -> Path:
    """The sample bots that ship with the harness (``arena/sample_bots``)."""
    return package_path("arena", "sample_bots")


def protocol_schemas_dir() -> Path:
    """The JSON Schemas of the bot protocol, one per message type plus ``common.json``."""
    return package_path("arena.protocol", "schemas")
