"""Tournament configuration: a TOML file, command-line overrides, an embedded default.

```toml
name = "spring"                      # results go to results/<name> unless `out` is given
entrants = ["bots/", "../mybot"]     # bot folders (with bot.toml) or folders of bot folders
format = "round-robin"               # or "gauntlet" (then `challengers` is required)
challengers = ["mybot"]              # gauntlet only: entrant names that play everyone else
games = 2                            # per pairing; even: games come in seat-swapped pairs
game = "patchwork"                   # or "stack-n-stuff" (its components are unverified proxy data)
components = "my-tiles.json"         # stack-n-stuff only: your own component file (same schema)
edition = "revised"                  # or "original" (patchwork); stack-n-stuff: "standard"
seed = 1                             # every game seed is derived from it
concurrency = 4                      # games played at once (default: the number of CPUs)
sandbox = "strict"                   # or "none": how bots are confined (see README, Sandbox)
pondering = false                    # true: bots are not frozen between their moves (strict)
out = "results/spring"

[time_control]
per_move_ms = 1000
bank_ms = 10000
first_move_ms = 5000
```

Every key is optional. Relative paths in a file are relative to the file's folder;
paths given on the command line are relative to the working directory. Without a
file and without entrants the embedded demo is used: the repository's sample bots,
round robin, 6 games per pairing at 250 ms per move (DEMO_DEFAULTS), seed 1.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

from arena.engine import EDITIONS
from arena.engine.components import GAMES, load_components, ruleset_for
from arena.errors import ConfigError
from arena.launch.bubblewrap import LEVELS as SANDBOX_LEVELS
from arena.resources import sample_bots_dir
from arena.untrusted import check_name

Format = Literal["round-robin", "gauntlet"]
FORMATS: tuple[str, ...] = ("round-robin", "gauntlet")
MANIFEST = "bot.toml"
KEYS: tuple[str, ...] = ("name", "entrants", "format", "challengers", "games", "time_control",
                         "game", "components", "edition", "seed", "concurrency", "sandbox", "pondering",
                         "out")
TIME_CONTROL_KEYS: tuple[str, ...] = ("per_move_ms", "bank_ms", "first_move_ms")
RESULT_KEYS: tuple[str, ...] = ("entrants", "format", "challengers", "games", "seed", "game",
                                "components", "edition", "time_control")
"""The keys that change the games played; a resumed tournament must agree on all of them."""

DEFAULTS: dict[str, Any] = {
    "format": "round-robin", "challengers": [], "games": 10, "edition": "revised", "seed": 1,
    "per_move_ms": 1000, "bank_ms": 10_000, "first_move_ms": 5000,
}
DEMO_DEFAULTS: dict[str, Any] = {"games": 6, "per_move_ms": 250}
"""The embedded demo (no file, no entrants) plays shorter: the search bot uses all its time."""

MAX_SCHEDULED_GAMES = 10_000_000
"""At most this many games in one tournament (pairings x games per pairing), and per
``sprt``/``play`` run. A stored game takes ~10-20 KB and a fast game ~0.1 s of a core, so
10 million games is ~150 GB and weeks of CPU: far beyond any real event, while a typo
(``--games 1000000000000``) is refused before anything starts."""
MAX_CONCURRENCY = 256
"""Games at once: each is a worker process and two bot processes (each with a uid of its
own under the strict sandbox, which has 1000 for the whole machine)."""
MAX_TIME_MS = 86_400_000
"""Time-control values (per move, bank, first move) are at most a day; beyond ~24.8 days
they would overflow the millisecond timeouts of poll() and ZeroMQ."""
SEED_RANGE = (-(2**63), 2**63 - 1)
"""Tournament seeds are 64-bit integers, what a TOML file can hold (the flag agrees)."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
_CLI = "command line"


@dataclass(frozen=True)
class Entrant:
    """A bot in a tournament: its unique name (from bot.toml), folder and description."""

    name: str
    folder: Path
    description: str = ""

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "folder": str(self.folder), "description": self.description}


@dataclass(frozen=True)
class TournamentConfig:
    """What to play. Build it with :func:`load_config`; it is valid by construction there.

    ``entrants`` are the expanded bot folders with their names (``folders`` and ``names``
    give the parallel tuples); the time control is ``per_move_ms``, ``bank_ms`` and
    ``first_move_ms`` (``time_control`` gives them as a dict for ``TimeControl(**...)``).
    """

    name: str
    entrants: tuple[Entrant, ...]
    format: Format = "round-robin"
    challengers: tuple[str, ...] = ()
    games: int = 2
    per_move_ms: int = 1000
    bank_ms: int = 10_000
    first_move_ms: int = 5000
    edition: str = "revised"
    game: str = "patchwork"
    components: dict | None = None  # a user's component table (stack-n-stuff), already validated
    seed: int = 1
    concurrency: int = field(default_factory=lambda: os.cpu_count() or 1)
    sandbox: str = "strict"  # "strict" or "none"; not a result key: it does not change results
    pondering: bool = False  # True: strict-sandboxed bots are not frozen off their turn
    out: Path = Path("results/demo")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.entrants)

    @property
    def folders(self) -> tuple[Path, ...]:
        return tuple(e.folder for e in self.entrants)

    @property
    def time_control(self) -> dict[str, int]:
        return {"per_move_ms": self.per_move_ms, "bank_ms": self.bank_ms,
                "first_move_ms": self.first_move_ms}

    def ruleset(self):  # type: ignore[no-untyped-def]
        """The rules every game of this tournament is played by."""
        return ruleset_for(self.game, self.edition, self.components)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: the file's keys, entrants expanded to name/folder/description."""
        return {
            "name": self.name,
            "entrants": [e.to_json() for e in self.entrants],
            "format": self.format,
            "challengers": list(self.challengers),
            "games": self.games,
            "time_control": self.time_control,
            "game": self.game,
            "components": self.components,
            "edition": self.edition,
            "seed": self.seed,
            "concurrency": self.concurrency,
            "sandbox": self.sandbox,
            "pondering": self.pondering,
            "out": str(self.out),
        }

    @classmethod
    def from_json(cls, data: Any) -> TournamentConfig:
        """Rebuild a stored config (no file access: bot folders are not read again)."""
        try:
            tc = data["time_control"]
            return cls(
                name=data["name"],
                entrants=tuple(Entrant(e["name"], Path(e["folder"]), e.get("description", ""))
                               for e in data["entrants"]),
                format=data["format"], challengers=tuple(data["challengers"]), games=data["games"],
                per_move_ms=tc["per_move_ms"], bank_ms=tc["bank_ms"], first_move_ms=tc["first_move_ms"],
                edition=data["edition"], game=data.get("game", "patchwork"),
                components=data.get("components"), seed=data["seed"], concurrency=data["concurrency"],
                sandbox=data.get("sandbox", "strict"), pondering=bool(data.get("pondering", False)),
                out=Path(data["out"]))
        except (KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"stored tournament config is malformed ({exc!r})") from None

    def result_json(self) -> dict[str, Any]:
        """The part of :meth:`to_json` that changes results (see RESULT_KEYS)."""
        full = self.to_json()
        out = {key: full[key] for key in RESULT_KEYS}
        out["entrants"] = [{"name": e.name, "folder": str(e.folder)} for e in self.entrants]
        return out


class _Given(NamedTuple):
    value: Any
    source: str  # the config file, or "command line"
    base: Path  # relative paths are relative to this folder
    key: str  # the key as the user wrote it (time_control.bank_ms in a file)

    @property
    def label(self) -> str:
        return f"{self.source}: key '{self.key}'"


def load_config(path: Path | None = None, overrides: Mapping[str, Any] | None = None) -> TournamentConfig:
    """Read a tournament config from ``path`` (TOML, optional) with ``overrides`` on top.

    ``overrides`` holds command-line values under the file's keys; ``None`` values (and
    empty ``entrants``/``challengers`` sequences, click's default for repeatable options)
    mean "not given". The time control may be given as a ``time_control`` dict or as flat
    ``per_move_ms``/``bank_ms``/``first_move_ms`` keys. Without a name the file's stem
    (or "demo") is used; without entrants, the sample bots. Raises ConfigError naming the
    file (or "command line"), the key and what was expected.
    """
    given: dict[str, _Given] = {}
    if path is not None:
        path = Path(path)
        data = _read_toml(path)
        unknown = sorted(set(data) - set(KEYS))
        if unknown:
            raise ConfigError(f"{path}: unknown key(s) {', '.join(map(repr, unknown))}: valid keys are "
                              f"{', '.join(KEYS)}")
        for key, value in data.items():
            if key == "time_control":
                _flatten_time_control(value, str(path), path.parent, given)
            else:
                given[key] = _Given(value, str(path), path.parent, key)
    cwd = Path.cwd()
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        if key in ("entrants", "challengers") and isinstance(value, list | tuple) and not value:
            continue
        if key == "time_control":
            _flatten_time_control(value, _CLI, cwd, given)
        elif key in KEYS or key in TIME_CONTROL_KEYS:
            given[key] = _Given(value, _CLI, cwd, key)
        else:
            raise ConfigError(f"{_CLI}: unknown key {key!r}: valid keys are "
                              f"{', '.join(KEYS + TIME_CONTROL_KEYS)}")
    if path is None and "entrants" not in given:  # the embedded demo: quick enough to watch
        for key, value in DEMO_DEFAULTS.items():
            given.setdefault(key, _Given(value, "built-in demo default", cwd, key))
    default_name = re.sub(r"[^A-Za-z0-9_.+-]", "-", path.stem).lstrip("-_.+") if path else ""
    return _build(given, default_name or "demo")


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # the message ends with "(at line L, column C)"
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def _flatten_time_control(value: Any, source: str, base: Path, given: dict[str, _Given]) -> None:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{source}: key 'time_control': expected a table with "
                          f"{', '.join(TIME_CONTROL_KEYS)}, got {_show(value)}")
    unknown = sorted(set(value) - set(TIME_CONTROL_KEYS))
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {', '.join(f'time_control.{k}' for k in unknown)}: "
                          f"valid keys in [time_control] are {', '.join(TIME_CONTROL_KEYS)}")
    for key, item in value.items():
        if item is not None:
            given[key] = _Given(item, source, base, f"time_control.{key}")


def _build(given: dict[str, _Given], default_name: str) -> TournamentConfig:
    def get(key: str, default: Any) -> _Given:
        return given.get(key) or _Given(default, "built-in default", Path.cwd(), key)

    name = _name(get("name", default_name))
    fmt = get("format", DEFAULTS["format"])
    if fmt.value not in FORMATS:
        raise ConfigError(f"{fmt.label}: expected \"round-robin\" or \"gauntlet\", got {_show(fmt.value)}")
    games = _int(get("games", DEFAULTS["games"]), 2, MAX_SCHEDULED_GAMES)
    if games % 2:
        raise ConfigError(f"{get('games', 0).label}: expected an even number of games per pairing (games "
                          f"come in pairs on the same seed with the seats swapped), got {games}")
    per_move_ms = _int(get("per_move_ms", DEFAULTS["per_move_ms"]), 1, MAX_TIME_MS)
    bank_ms = _int(get("bank_ms", DEFAULTS["bank_ms"]), 0, MAX_TIME_MS)
    first_move_ms = _int(get("first_move_ms", DEFAULTS["first_move_ms"]), 1, MAX_TIME_MS)
    game = get("game", "patchwork")
    if game.value not in GAMES:
        raise ConfigError(f"{game.label}: expected one of {', '.join(map(repr, GAMES))}, "
                          f"got {_show(game.value)}")
    editions = EDITIONS if game.value == "patchwork" else ("standard",)
    edition = get("edition", editions[0])
    if edition.value not in editions:
        raise ConfigError(f"{edition.label}: expected one of {', '.join(map(repr, editions))} "
                          f"(the editions of {game.value}), got {_show(edition.value)}")
    components = None
    components_given = given.get("components")
    if components_given is not None:
        if game.value != "stack-n-stuff":
            raise ConfigError(f"{components_given.label}: custom components are for game "
                              "\"stack-n-stuff\" only")
        value = components_given.value
        if not isinstance(value, str | os.PathLike) or not str(value).strip():
            raise ConfigError(f"{components_given.label}: expected the path of a component file (JSON)")
        path = Path(value) if components_given.source == _CLI else components_given.base / value
        components = load_components(path)
    seed = _int(get("seed", DEFAULTS["seed"]), *SEED_RANGE)
    concurrency = _int(get("concurrency", min(os.cpu_count() or 1, MAX_CONCURRENCY)), 1, MAX_CONCURRENCY)
    sandbox = get("sandbox", "strict")
    if sandbox.value not in SANDBOX_LEVELS:
        choices = " or ".join(f'"{level}"' for level in SANDBOX_LEVELS)
        raise ConfigError(f"{sandbox.label}: expected {choices}, got {_show(sandbox.value)}")
    pondering = get("pondering", False)
    if not isinstance(pondering.value, bool):
        raise ConfigError(f"{pondering.label}: expected true or false, got {_show(pondering.value)}")
    out_given = given.get("out")
    if out_given is None:
        out = Path("results") / name
    elif isinstance(out_given.value, str | os.PathLike) and str(out_given.value).strip():
        out = Path(out_given.value) if out_given.source == _CLI else out_given.base / out_given.value
    else:
        raise ConfigError(f"{out_given.label}: expected a folder path, got {_show(out_given.value)}")

    entrants_given = get("entrants", [sample_bots_dir()])
    folders = [entrants_given.base / p for p in _paths(entrants_given)]
    entrants = _entrants(entrants_given.label, folders)
    names = [e.name for e in entrants]

    ch = get("challengers", [])
    raw = [ch.value] if isinstance(ch.value, str) else ch.value
    if not isinstance(raw, list | tuple) or not all(isinstance(c, str) for c in raw):
        raise ConfigError(f"{ch.label}: expected a list of entrant names, got {_show(ch.value)}")
    challengers = tuple(raw)
    if fmt.value == "gauntlet":
        if not challengers:
            raise ConfigError(f"{fmt.label}: a gauntlet needs 'challengers' (the entrant names that play "
                              f"everyone else); entrants are {', '.join(names)}")
        for challenger in challengers:
            if challenger not in names:
                raise ConfigError(f"{ch.label}: {challenger!r} is not an entrant; entrants are "
                                  f"{', '.join(names)}")
        if len(set(challengers)) != len(challengers):
            raise ConfigError(f"{ch.label}: a challenger is listed twice: {', '.join(challengers)}")
        if len(challengers) == len(names):
            raise ConfigError(f"{ch.label}: every entrant is a challenger; a gauntlet needs at least one "
                              "entrant that is not")
    elif challengers:
        raise ConfigError(f"{ch.label}: challengers only apply to format \"gauntlet\" "
                          f"(format is {fmt.value!r})")
    _check_size(get("games", 0), games, len(names), len(challengers) if fmt.value == "gauntlet" else None)
    return TournamentConfig(name=name, entrants=entrants, format=fmt.value, challengers=challengers,
                            games=games, per_move_ms=per_move_ms, bank_ms=bank_ms,
                            first_move_ms=first_move_ms, edition=edition.value, game=game.value,
                            components=components, seed=seed,
                            concurrency=concurrency, sandbox=sandbox.value,
                            pondering=pondering.value, out=out)


def _name(given: _Given) -> str:
    value = given.value
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise ConfigError(f"{given.label}: expected a tournament name of letters, digits, '_', "
                          f"'.', '+' or '-' (it names the results folder), got {_show(value)}")
    return value


def _int(given: _Given, minimum: int, maximum: int) -> int:
    value = given.value
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{given.label}: expected an integer, got {_show(value)}")
    if not minimum <= value <= maximum:
        raise ConfigError(f"{given.label}: expected an integer from {minimum:,} to {maximum:,}, got "
                          f"{_show_int(value)}")
    return value


def _show_int(value: int) -> str:
    text = f"{value:,}"
    return text if len(text) <= 40 else f"{text[:20]}... ({len(str(abs(value)))} digits)"


def _check_size(given: _Given, games: int, entrants: int, challengers: int | None) -> None:
    """Refuse a schedule of more than MAX_SCHEDULED_GAMES games before anything starts."""
    if challengers is None:
        pairings = entrants * (entrants - 1) // 2
    else:
        pairings = challengers * (entrants - challengers)
    total = pairings * games
    if total > MAX_SCHEDULED_GAMES:
        raise ConfigError(f"{given.label}: {games:,} games per pairing x {pairings:,} pairings = {total:,} "
                          f"games, more than the limit of {MAX_SCHEDULED_GAMES:,} games in one tournament")


def _paths(given: _Given) -> list[Path]:
    value = given.value
    if isinstance(value, str | os.PathLike):
        value = [value]
    if (not isinstance(value, list | tuple) or not value
            or not all(isinstance(p, str | os.PathLike) and str(p).strip() for p in value)):
        raise ConfigError(f"{given.label}: expected a list of bot folders, got {_show(value)}")
    return [Path(p) for p in value]


def _entrants(label: str, folders: list[Path]) -> tuple[Entrant, ...]:
    """Expand folders of bot folders (sorted), read each bot.toml, check names are unique."""
    expanded: list[Path] = []
    for folder in folders:
        if not folder.exists():
            raise ConfigError(f"{label}: {folder}: no such folder")
        if not folder.is_dir():
            raise ConfigError(f"{label}: {folder}: not a folder (expected a bot folder with {MANIFEST})")
        if (folder / MANIFEST).is_file():
            expanded.append(folder.resolve())
            continue
        inner = sorted(p for p in folder.iterdir() if p.is_dir() and (p / MANIFEST).is_file())
        if not inner:
            raise ConfigError(f"{label}: {folder}: not a bot folder (no {MANIFEST}) and holds no bot "
                              "folders")
        expanded.extend(p.resolve() for p in inner)
    entrants = [_read_manifest(folder) for folder in expanded]
    seen: dict[str, Path] = {}
    for entrant in entrants:
        if entrant.name in seen:
            raise ConfigError(f"{label}: duplicate entrant name {entrant.name!r} ({seen[entrant.name]} and "
                              f"{entrant.folder}); names come from the 'name' key of each {MANIFEST}")
        seen[entrant.name] = entrant.folder
    if len(entrants) < 2:
        raise ConfigError(f"{label}: a tournament needs at least 2 entrants, got {len(entrants)}"
                          + (f" ({entrants[0].name} in {entrants[0].folder})" if entrants else ""))
    return tuple(entrants)


def _read_manifest(folder: Path) -> Entrant:
    path = folder / MANIFEST
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    name = check_name(data.get("name"), str(path))
    description = data.get("description", "")
    if not isinstance(description, str):
        raise ConfigError(f"{path}: key 'description': expected a string, got {_show(description)}")
    return Entrant(name, folder, description)


def _show(value: Any) -> str:
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{text} ({type(value).__name__})"


__all__ = ["DEFAULTS", "FORMATS", "KEYS", "MAX_CONCURRENCY", "MAX_SCHEDULED_GAMES", "MAX_TIME_MS",
           "RESULT_KEYS", "SEED_RANGE", "TIME_CONTROL_KEYS", "Entrant", "TournamentConfig", "load_config",
           "sample_bots_dir"]
