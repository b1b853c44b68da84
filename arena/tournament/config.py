"""Tournament configuration: a TOML file, command-line overrides, an embedded default.

```toml
name = "spring"                      # results go to results/<name> unless `out` is given
entrants = ["bots/", "../mybot"]     # bot folders (with bot.toml) or folders of bot folders
format = "round-robin"               # or "gauntlet" (then `challengers` is required), "swiss", "knockout"
rounds = 5                           # swiss only (default: log2 of the entrants, rounded up)
challengers = ["mybot"]              # gauntlet only: entrant names that play everyone else
games = 10                           # per pairing (knockout: per match); even: seat-swapped pairs
game = "patchwork"                   # or "stack-n-stuff" (its components are unverified proxy data)
components = "my-tiles.json"         # stack-n-stuff only: your own component file (same schema)
edition = "revised"                  # or "original" (patchwork); stack-n-stuff: "standard"
seed = 1                             # every game seed is derived from it
concurrency = 4                      # games played at once (default: the CPUs this process may use)
sandbox = "strict"                   # or "none": how bots are confined (see docs/sandbox.md)
pondering = false                    # true: bots are not frozen between their moves (strict)
out = "results/spring"

[time_control]                       # the defaults: arena/clock.py's DEFAULT_TIME_CONTROL
per_move_ms = 1000
bank_ms = 10000
first_move_ms = 5000
```

Every key is optional; arena/schemas/tournament.json gives the types and ranges, and the
rules between keys (an even number of games, challengers that are entrants, ...) follow
it in :func:`load_config`. Relative paths in a file are relative to the file's folder;
paths given on the command line are relative to the working directory. Without a
file and without entrants the embedded demo is used: the repository's sample bots,
round robin, 6 games per pairing at 250 ms per move (DEMO_DEFAULTS), seed 1.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, NamedTuple

from arena.bots.manifest import MANIFEST, Manifest
from arena.clock import DEFAULT_TIME_CONTROL, TimeControl
from arena.engine.components import GAME_EDITIONS, Ruleset, ruleset_for
from arena.errors import ConfigError
from arena.launch.levels import Sandbox
from arena.resources import sample_bots_dir
from arena.schemas import MISSING, check, got, load_schema, parse_toml, plain, problem, toml_text
from arena.schemas.components import check_components, load_components
from arena.tournament.schedule import Plan
from arena.untrusted import is_argument

Format = Literal["round-robin", "gauntlet", "swiss", "knockout"]
SCHEMA: dict[str, Any] = load_schema("tournament")
"""arena/schemas/tournament.json: the keys of a config file, their types and ranges."""
_PROPS = SCHEMA["properties"]
_TC_PROPS = _PROPS["time_control"]["properties"]
FORMATS: tuple[str, ...] = tuple(_PROPS["format"]["enum"])
KEYS: tuple[str, ...] = tuple(_PROPS)
TIME_CONTROL_KEYS: tuple[str, ...] = tuple(_TC_PROPS)
RESULT_KEYS: tuple[str, ...] = ("entrants", "format", "challengers", "games", "rounds", "seed", "game",
                                "components", "edition", "time_control")
"""The keys that change the games played; a resumed tournament must agree on all of them."""

DEMO_DEFAULTS: dict[str, Any] = {"games": 6, "per_move_ms": 250}
"""The embedded demo (no file, no entrants) plays shorter: the search bot uses all its time."""

MAX_SCHEDULED_GAMES: int = _PROPS["games"]["maximum"]
"""At most this many games in one tournament (pairings x games per pairing), and per
``sprt``/``play`` run. A stored game takes ~10-20 KB and a fast game ~0.1 s of a core, so
10 million games is ~150 GB and weeks of CPU: far beyond any real event, while a typo
(``--games 1000000000000``) is refused before anything starts."""
MAX_CONCURRENCY: int = _PROPS["concurrency"]["maximum"]
"""Games at once: each is a worker process and two bot processes (each with a uid of its
own under the strict sandbox, which has 1000 for the whole machine)."""
MAX_TIME_MS: int = _TC_PROPS["per_move_ms"]["maximum"]
"""Time-control values (per move, bank, first move) are at most a day; beyond ~24.8 days
they would overflow the millisecond timeouts of poll() and ZeroMQ."""
SEED_RANGE: tuple[int, int] = (_PROPS["seed"]["minimum"], _PROPS["seed"]["maximum"])
"""Tournament seeds are 64-bit integers, what a TOML file can hold (the flag agrees)."""

_CLI = "command line"
_CLI_SCHEMA: dict[str, Any] = {**SCHEMA, "properties": {**_PROPS, **_TC_PROPS}}
"""The command line gives the time control as flat keys too (--time-per-move, ...)."""


@dataclass(frozen=True)
class Entrant:
    """A bot in a tournament: its unique name (from bot.toml), folder and description."""

    name: str
    folder: Path
    description: str = ""

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "folder": str(self.folder), "description": self.description}


def usable_cpus() -> int:
    """The CPUs this process may run on (``taskset``, a container's cpuset), the default
    concurrency: ``os.cpu_count()`` counts the machine's, so under ``taskset -c 0`` it
    started two workers on one CPU."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class TournamentConfig:
    """What to play. Build it with :func:`load_config`; it is valid by construction there.

    ``entrants`` are the expanded bot folders with their names (``folders`` and ``names``
    give the parallel tuples). The defaults here are the defaults of a config file and of
    ``run-tournament``'s flags (:data:`DEFAULTS`).
    """

    name: str
    entrants: tuple[Entrant, ...]
    format: Format = "round-robin"
    challengers: tuple[str, ...] = ()
    games: int = 10
    rounds: int = 0  # swiss only
    time_control: TimeControl = DEFAULT_TIME_CONTROL
    edition: str = "revised"
    game: str = "patchwork"
    components: dict | None = None  # a user's component table (stack-n-stuff), already validated
    seed: int = 1
    concurrency: int = field(default_factory=usable_cpus)
    sandbox: Sandbox = Sandbox.STRICT  # not a result key: it does not change results
    pondering: bool = False  # True: strict-sandboxed bots are not frozen off their turn
    out: Path = Path("results/demo")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.entrants)

    @property
    def folders(self) -> tuple[Path, ...]:
        return tuple(e.folder for e in self.entrants)

    def ruleset(self) -> Ruleset:
        """The rules every game of this tournament is played by (built once per process:
        a custom component table is checked again on every build)."""
        rules: Ruleset | None = self.__dict__.get("_ruleset")
        if rules is None:
            if self.components is not None:  # a stored config's table is checked again
                check_components(self.components, "the tournament's components")
            rules = ruleset_for(self.game, self.edition, self.components)
            object.__setattr__(self, "_ruleset", rules)
        return rules

    @property
    def plan(self) -> Plan:
        """What the scheduler needs (:mod:`arena.tournament.schedule`), as plain values."""
        if self.format in ("swiss", "knockout"):
            return Plan(self.names, self.games, self.seed, format=self.format, rounds=self.rounds)
        return Plan(self.names, self.games, self.seed,
                    self.challengers if self.format == "gauntlet" else ())

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: the file's keys, entrants expanded to name/folder/description."""
        return {
            "name": self.name,
            "entrants": [e.to_json() for e in self.entrants],
            "format": self.format,
            "challengers": list(self.challengers),
            "games": self.games,
            "rounds": self.rounds,
            "time_control": self.time_control.to_json(),
            "game": self.game,
            "components": self.components,
            "edition": self.edition,
            "seed": self.seed,
            "concurrency": self.concurrency,
            "sandbox": self.sandbox.value,
            "pondering": self.pondering,
            "out": str(self.out),
        }

    @classmethod
    def from_json(cls, data: Any) -> TournamentConfig:
        """Rebuild a stored config (no file access: bot folders are not read again). Stored
        configs of every version load: their keys are those of :meth:`to_json`."""
        try:
            return cls(
                name=data["name"],
                entrants=tuple(Entrant(e["name"], Path(e["folder"]), e.get("description", ""))
                               for e in data["entrants"]),
                format=data["format"], challengers=tuple(data["challengers"]), games=data["games"],
                rounds=data.get("rounds", 0),
                time_control=TimeControl.from_json(data["time_control"]),
                edition=data["edition"], game=data.get("game", DEFAULTS["game"]),
                components=data.get("components"), seed=data["seed"], concurrency=data["concurrency"],
                sandbox=Sandbox(data.get("sandbox", DEFAULTS["sandbox"])),
                pondering=bool(data.get("pondering", DEFAULTS["pondering"])),
                out=Path(data["out"]))
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ConfigError(f"stored tournament config is malformed ({exc!r})") from None

    def result_json(self) -> dict[str, Any]:
        """The part of :meth:`to_json` that changes results (see RESULT_KEYS)."""
        full = self.to_json()
        out = {key: full[key] for key in RESULT_KEYS}
        out["entrants"] = [{"name": e.name, "folder": str(e.folder)} for e in self.entrants]
        return out


_FIELD_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(TournamentConfig)}
DEFAULTS: dict[str, Any] = {
    **{key: _FIELD_DEFAULTS[key] for key in ("format", "games", "edition", "game", "seed", "pondering")},
    "challengers": [], "sandbox": _FIELD_DEFAULTS["sandbox"].value,
    **_FIELD_DEFAULTS["time_control"].to_json(),
}
"""A config's defaults under the file's keys (the time control's flat, as the flags give it):
those of :class:`TournamentConfig`, their one home."""


class _Given(NamedTuple):
    value: Any
    source: str  # the config file, or "command line"
    base: Path  # relative paths are relative to this folder
    key: str  # the key as the user wrote it (time_control.bank_ms in a file)

    def error(self, expected: str, got_text: str | None = None) -> ConfigError:
        """``SOURCE: key 'K': expected E, got G`` (G: this value, unless given)."""
        return ConfigError(f"{self.source}: {problem(self.key, expected, got_text or got(self.value))}")


def load_config(path: Path | None = None, overrides: Mapping[str, Any] | None = None) -> TournamentConfig:
    """Read a tournament config from ``path`` (TOML, optional) with ``overrides`` on top.

    ``overrides`` holds command-line values under the file's keys; ``None`` values (and
    empty ``entrants``/``challengers`` sequences, click's default for repeatable options)
    mean "not given". The time control may be given as a ``time_control`` dict or as flat
    ``per_move_ms``/``bank_ms``/``first_move_ms`` keys. Without a name, one is made (see
    :func:`_default_name`); without entrants, the sample bots. The file and the overrides
    are each checked against arena/schemas/tournament.json, then the rules between keys
    here. Raises ConfigError ``FILE: key 'K': expected E, got G`` (FILE is "command line"
    for an override).
    """
    given: dict[str, _Given] = {}
    if path is not None:
        path = Path(path)
        data = _read_toml(path)
        check(data, SCHEMA, str(path))
        for key, value in data.items():
            if key == "time_control":
                for inner, item in value.items():
                    given[inner] = _Given(item, str(path), path.parent, f"time_control.{inner}")
            else:
                given[key] = _Given(value, str(path), path.parent, key)
    cwd = Path.cwd()
    cli = {key: plain(value) for key, value in (overrides or {}).items()
           if value is not None and not (key in ("entrants", "challengers")
                                         and isinstance(value, list | tuple) and not value)}
    check(cli, _CLI_SCHEMA, _CLI)
    for key, value in cli.items():
        if key == "time_control":
            given.update({inner: _Given(item, _CLI, cwd, f"time_control.{inner}")
                          for inner, item in value.items()})
        else:
            given[key] = _Given(value, _CLI, cwd, key)
    if path is None and "entrants" not in given:  # the embedded demo: quick enough to watch
        for key, value in DEMO_DEFAULTS.items():
            given.setdefault(key, _Given(value, "built-in demo default", cwd, key))
    return _build(given, _default_name(path, cli.get("entrants")))


def _default_name(path: Path | None, entrants: Any) -> str:
    """A tournament's name when none is given: the config file's stem; else the one --bots
    folder's name (as given: a link's own name); else "tournament" for several, "demo" for
    the built-in demo. Accents are dropped ("Équipe" -> "Equipe"), other characters become
    '-'; a name with nothing left is "bots-" and a hash of the folder, so that two such
    folders never share a results folder."""
    if path is not None:
        stem, where = path.stem, path
    elif isinstance(entrants, list) and len(entrants) == 1 and isinstance(entrants[0], str):
        where = Path(entrants[0])
        stem = where.name if where.name not in ("", ".", "..") else where.resolve().name
    else:
        return "tournament" if entrants else "demo"
    ascii_text = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode()
    name = re.sub(r"[^A-Za-z0-9_.+-]", "-", ascii_text).lstrip("-_.+")[:64]
    if not re.search(r"[A-Za-z0-9]", name):
        digest = hashlib.sha256(str(where.resolve()).encode("utf-8", "surrogateescape")).hexdigest()
        return f"bots-{digest[:8]}"
    return name


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    return parse_toml(toml_text(data, str(path)), str(path))


def _build(given: dict[str, _Given], default_name: str) -> TournamentConfig:
    """The config from values that passed the schema, after the rules between keys."""
    def get(key: str, default: Any) -> _Given:
        return given.get(key) or _Given(default, "built-in default", Path.cwd(), key)

    def value(key: str, default: Any) -> Any:
        return get(key, default).value

    name = value("name", default_name)
    fmt = value("format", DEFAULTS["format"])
    games = get("games", DEFAULTS["games"])
    if games.value % 2:
        raise games.error("an even number of games per pairing (games come in pairs on the same seed "
                          "with the seats swapped)")
    game = value("game", DEFAULTS["game"])
    edition_given = given.get("edition")
    edition = (check_edition(game, edition_given.value, edition_given.source) if edition_given
               else check_edition(game, None))
    components = None
    components_given = given.get("components")
    if components_given is not None:
        if game != "stack-n-stuff":
            raise components_given.error("no component file: custom components are for game "
                                         "\"stack-n-stuff\" only")
        components = load_components(_path(components_given))
    out_given = given.get("out")
    out = Path("results") / name if out_given is None else _path(out_given)

    entrants_given = get("entrants", [str(sample_bots_dir())])
    raw = entrants_given.value
    folders = [entrants_given.base / p for p in ([raw] if isinstance(raw, str) else raw)]
    entrants = _entrants(entrants_given, folders)
    names = [e.name for e in entrants]

    ch = get("challengers", [])
    challengers = tuple([ch.value] if isinstance(ch.value, str) else ch.value)
    listed = f"entrant names ({', '.join(names)})"
    if fmt == "gauntlet":
        if not challengers:
            source = get("format", fmt).source
            raise ConfigError(f"{source}: " + problem("challengers", f"the {listed} that play everyone "
                                                      "else, as format is \"gauntlet\"", MISSING))
        for challenger in challengers:
            if challenger not in names:
                raise ch.error(listed, f"{got(challenger)}, which is not an entrant")
        if len(set(challengers)) != len(challengers):
            raise ch.error(f"each of the {listed} at most once", f"{got(list(challengers))}, a challenger "
                           "listed twice")
        if len(challengers) == len(names):
            raise ch.error("at least one entrant that is not a challenger (every entrant is a challenger)")
    elif challengers:
        raise ch.error(f"no challengers: they only apply to format \"gauntlet\" (format is {fmt!r})")
    rounds = _rounds(fmt, given, len(names))
    if fmt == "swiss" and "games" in given and given["games"].source != "built-in demo default":
        raise games.error("no games: a Swiss pairing is always 2 games (one seed, seats swapped); set "
                          "rounds instead")
    if fmt == "swiss":
        games = _Given(2, "swiss", Path.cwd(), "games")
    _check_size(games, len(names), len(challengers) if fmt == "gauntlet" else None, fmt, rounds)
    time_control = TimeControl(**{key: value(key, DEFAULTS[key]) for key in TIME_CONTROL_KEYS})
    return TournamentConfig(name=name, entrants=entrants, format=fmt, challengers=challengers,
                            games=games.value, rounds=rounds, edition=edition, game=game,
                            components=components, seed=value("seed", DEFAULTS["seed"]),
                            concurrency=value("concurrency", min(usable_cpus(), MAX_CONCURRENCY)),
                            sandbox=Sandbox(value("sandbox", DEFAULTS["sandbox"])),
                            pondering=value("pondering", DEFAULTS["pondering"]), out=out,
                            time_control=time_control)


def check_edition(game: str, edition: str | None, source: str = _CLI) -> str:
    """``edition`` if it is one of ``game``'s editions (None: the game's default), else
    ConfigError ``SOURCE: key 'edition': expected one of ..., got ...``. The one check of a
    tournament config and of every command taking --game and --edition."""
    if game not in GAME_EDITIONS:
        expected = "one of " + ", ".join(map(repr, GAME_EDITIONS))
        raise ConfigError(f"{source}: {problem('game', expected, got(game))}")
    editions = GAME_EDITIONS[game]
    if edition is None:
        return editions[0]
    if edition not in editions:
        expected = f"one of {', '.join(map(repr, editions))} (the editions of {game})"
        raise ConfigError(f"{source}: {problem('edition', expected, got(edition))}")
    return edition


def _path(given: _Given) -> Path:
    """A path value: relative to the file's folder, or as given on the command line."""
    return Path(given.value) if given.source == _CLI else given.base / given.value


def _rounds(fmt: str, given: dict[str, _Given], entrants: int) -> int:
    """A Swiss tournament's rounds (default: log2 of the entrants, rounded up; 0 for other formats)."""
    rounds = given.get("rounds")
    if fmt != "swiss":
        if rounds is not None:
            raise rounds.error(f"no rounds: they only apply to format \"swiss\" (format is {fmt!r})")
        return 0
    return int(rounds.value) if rounds is not None else max(1, math.ceil(math.log2(entrants)))


def _check_size(games: _Given, entrants: int, challengers: int | None, fmt: str = "round-robin",
                rounds: int = 0) -> None:
    """Refuse a schedule of more than MAX_SCHEDULED_GAMES games before anything starts."""
    if fmt == "swiss":
        pairings = rounds * (entrants // 2)
    elif fmt == "knockout":
        pairings = entrants - 1
    elif challengers is None:
        pairings = entrants * (entrants - 1) // 2
    else:
        pairings = challengers * (entrants - challengers)
    total = pairings * games.value
    if total > MAX_SCHEDULED_GAMES:
        raise games.error(f"at most {MAX_SCHEDULED_GAMES:,} games in one tournament",
                          f"{games.value:,} games per pairing x {pairings:,} pairings = {total:,} games")


def _meant_as_bot(given: _Given, folder: Path) -> bool:
    """Whether a subfolder of a folder of bots is an entrant. Folders without a manifest are
    skipped (``.previous``, notes), but never silently one that looks meant as a bot: a
    ``Bot.toml`` is an error, and a ``bot.toml`` that is not a regular file is an entrant
    whose manifest then says what is wrong with it."""
    if (folder / MANIFEST).exists() or (folder / MANIFEST).is_symlink():
        return True
    if folder.name.startswith("."):
        return False
    near = [p.name for p in folder.iterdir() if p.name.lower() == MANIFEST and p.name != MANIFEST]
    if near:
        raise given.error(f"bot folders each holding a {MANIFEST} (the name is case-sensitive)",
                          f"{got(str(folder))}: holds {near[0]}")
    return False


def _entrants(given: _Given, folders: list[Path]) -> tuple[Entrant, ...]:
    """Expand folders of bot folders (sorted), read each bot.toml, check names are unique."""
    expected = f"bot folders (each holding a {MANIFEST}) or folders of bot folders"
    expanded: list[Path] = []
    for folder in folders:
        if not folder.exists():
            raise given.error(expected, f"{got(str(folder))}: no such folder")
        if not folder.is_dir():
            raise given.error(expected, f"{got(str(folder))}: not a folder")
        if (folder / MANIFEST).is_file():
            expanded.append(folder.resolve())
            continue
        inner = sorted(p for p in folder.iterdir() if p.is_dir() and _meant_as_bot(given, p))
        if not inner:
            raise given.error(expected, f"{got(str(folder))}: not a bot folder (no {MANIFEST}) and holds no "
                              "bot folders")
        expanded.extend(p.resolve() for p in inner)
    entrants = []
    for folder in expanded:
        if not is_argument(str(folder)):  # lone surrogates: bytes not UTF-8 (results hold it)
            raise given.error(expected, f"{got(str(folder))}: its path is not valid UTF-8; rename it")
        manifest = Manifest.load(folder)
        entrants.append(Entrant(manifest.name, folder, manifest.description))
    seen: dict[str, Path] = {}
    for entrant in entrants:
        if entrant.name in seen:
            raise given.error(f"entrants with unique names (names come from the 'name' key of each "
                              f"{MANIFEST})", f"{entrant.name!r} twice ({seen[entrant.name]} and "
                              f"{entrant.folder})")
        seen[entrant.name] = entrant.folder
    if len(entrants) < 2:
        raise given.error("at least 2 entrants", f"{len(entrants)}"
                          + (f" ({entrants[0].name} in {entrants[0].folder})" if entrants else ""))
    return tuple(entrants)


__all__ = ["DEFAULTS", "FORMATS", "KEYS", "MAX_CONCURRENCY", "MAX_SCHEDULED_GAMES", "MAX_TIME_MS",
           "RESULT_KEYS", "SEED_RANGE", "TIME_CONTROL_KEYS", "Entrant", "TournamentConfig", "load_config",
           "sample_bots_dir", "usable_cpus"]
