"""Tournament config: TOML file, command-line overrides, embedded default, clear errors."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest

from arena.clock import DEFAULT_TIME_CONTROL, TimeControl
from arena.errors import ConfigError
from arena.launch.levels import Sandbox
from arena.tournament.config import (
    DEFAULTS,
    KEYS,
    TIME_CONTROL_KEYS,
    TournamentConfig,
    load_config,
    sample_bots_dir,
)


def make_bot(folder: Path, name: str | None = None, description: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bot.toml").write_text(f'name = "{name or folder.name}"\ncommand = "python bot.py"\n'
                                     f'description = "{description}"\n')
    return folder


@pytest.fixture
def bots(tmp_path: Path) -> Path:
    """tmp_path/bots holding three bot folders (alpha, beta, gamma) and a stray non-bot folder."""
    root = tmp_path / "bots"
    for name in ("gamma", "alpha", "beta"):
        make_bot(root / name, description=f"the {name} bot")
    (root / "notes").mkdir()
    return root


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_embedded_default_is_the_sample_bots_round_robin() -> None:
    config = load_config(None, {})
    assert config.name == "demo"
    assert config.format == "round-robin"
    assert config.games == 6 and config.seed == 1 and config.time_control.per_move_ms == 250
    assert config.edition == "revised"
    assert config.concurrency == (os.cpu_count() or 1)
    assert config.out == Path("results/demo")
    samples = {p.resolve() for p in sample_bots_dir().iterdir() if (p / "bot.toml").is_file()}
    assert set(config.folders) == samples
    assert list(config.names) == sorted(config.names) and len(config.names) >= 2


def test_file_with_every_key(tmp_path: Path, bots: Path) -> None:
    make_bot(tmp_path / "solo", name="delta")
    path = write(tmp_path / "spring.toml", """
name = "spring"
entrants = ["bots", "solo"]
format = "gauntlet"
challengers = ["delta"]
games = 4
edition = "original"
seed = 42
concurrency = 3
out = "out/spring"

[time_control]
per_move_ms = 200
bank_ms = 0
first_move_ms = 900
""")
    config = load_config(path, {})
    assert config.name == "spring"
    # folders of bot folders are expanded in sorted order; relative paths start at the file's folder
    assert config.names == ("alpha", "beta", "gamma", "delta")
    assert config.folders[0] == (bots / "alpha").resolve()
    assert config.entrants[0].description == "the alpha bot"
    assert (config.format, config.challengers, config.games, config.edition, config.seed) == \
        ("gauntlet", ("delta",), 4, "original", 42)
    assert config.time_control == TimeControl(per_move_ms=200, bank_ms=0, first_move_ms=900)
    assert config.concurrency == 3
    assert config.out == tmp_path / "out/spring"


def test_defaults_for_missing_keys_and_name_from_the_file(tmp_path: Path, bots: Path) -> None:
    config = load_config(write(tmp_path / "autumn cup.toml", 'entrants = ["bots"]\n'), {})
    assert config.name == "autumn-cup"
    assert config.out == Path("results/autumn-cup")
    assert (config.games, config.seed, config.format, config.time_control, config.sandbox) == \
        (10, 1, "round-robin", DEFAULT_TIME_CONTROL, Sandbox.STRICT)


def test_overrides_win_over_the_file(tmp_path: Path, bots: Path) -> None:
    path = write(tmp_path / "t.toml", 'entrants = ["bots"]\ngames = 4\nseed = 3\n'
                                      "[time_control]\nper_move_ms = 100\nbank_ms = 50\n")
    other = make_bot(tmp_path / "x" / "one", name="one").parent
    make_bot(other / "two", name="two")
    config = load_config(path, {"games": 6, "seed": None, "per_move_ms": 700, "entrants": [other],
                                "challengers": (), "time_control": {"bank_ms": 5}, "out": "elsewhere",
                                "name": "cli"})
    assert config.games == 6
    assert config.seed == 3  # None means "not given"
    assert (config.time_control.per_move_ms, config.time_control.bank_ms) == (700, 5)
    assert config.names == ("one", "two")
    assert config.out == Path("elsewhere") and config.name == "cli"


def test_entrants_given_on_the_command_line_without_a_file(bots: Path) -> None:
    config = load_config(None, {"entrants": [bots / "beta", bots / "alpha"]})
    assert config.names == ("beta", "alpha")
    assert config.name == "tournament" and config.out == Path("results/tournament")


def test_one_bots_folder_names_the_tournament_and_its_results_folder(bots: Path, tmp_path: Path) -> None:
    """`--bots my-bots/` goes to results/my-bots, not to the demo's folder (two such runs of
    different bots would collide there); a name that is not a valid one is made valid."""
    assert load_config(None, {"entrants": [bots]}).out == Path("results") / bots.name
    odd = tmp_path / "..my bots (v2)"
    shutil.copytree(bots, odd)
    config = load_config(None, {"entrants": [odd]})
    assert config.name == "my-bots--v2-" and config.out == Path("results/my-bots--v2-")
    assert load_config(None, {"entrants": [odd], "name": "given"}).name == "given"
    accents = tmp_path / "Équipe ünï"
    shutil.copytree(bots, accents)
    assert load_config(None, {"entrants": [accents]}).name == "Equipe-uni"
    (tmp_path / "link").symlink_to(odd)
    assert load_config(None, {"entrants": [tmp_path / "link"]}).name == "link"  # its own name


def test_bots_folders_whose_names_leave_nothing_get_names_of_their_own(bots: Path, tmp_path: Path) -> None:
    """Names with no letter or digit left would all have gone to one results folder."""
    names = set()
    for odd in ("名前", "-.-", "日本"):
        shutil.copytree(bots, tmp_path / odd)
        config = load_config(None, {"entrants": [tmp_path / odd]})
        assert config.name.startswith("bots-") and len(config.name) == len("bots-") + 8
        names.add(config.name)
    assert len(names) == 3 and "tournament" not in names
    assert load_config(None, {"entrants": [tmp_path / "名前"]}).name in names  # the same each time


def test_unknown_key_names_the_key_the_file_and_the_valid_keys(tmp_path: Path, bots: Path) -> None:
    path = write(tmp_path / "t.toml", 'entrants = ["bots"]\nstages = 3\n')
    with pytest.raises(ConfigError) as info:
        load_config(path, {})
    message = str(info.value)
    assert str(path) in message and "'stages'" in message
    assert all(key in message for key in KEYS)


def test_unknown_time_control_key(tmp_path: Path, bots: Path) -> None:
    path = write(tmp_path / "t.toml", 'entrants = ["bots"]\n[time_control]\nincrement_ms = 3\n')
    with pytest.raises(ConfigError, match=r"time_control\.increment_ms.*per_move_ms"):
        load_config(path, {})


def test_unknown_override_key(bots: Path) -> None:
    with pytest.raises(ConfigError,
                       match=r"command line: key 'stages': expected one of the keys \(name, .*\), got an"):
        load_config(None, {"entrants": [bots], "stages": 2})


@pytest.mark.parametrize(("line", "key", "expected"), [
    ('games = "two"', "games", "expected an integer"),
    ("games = true", "games", "expected an integer"),
    ("seed = 1.5", "seed", "expected an integer"),
    ("concurrency = 0", "concurrency", "expected an integer from 1 to 256"),
    ("name = 7", "name", "expected a tournament name"),
    ('format = "ladder"', "format", 'expected one of "round-robin", "gauntlet", "swiss", "knockout"'),
    ('edition = "deluxe"', "edition", "expected one of 'revised', 'original'"),
    ("out = 3", "out", "expected a folder path"),
    ("time_control = 5", "time_control", "expected a table"),
    ("[time_control]\nbank_ms = -1", "time_control.bank_ms", "expected an integer from 0 to 86,400,000"),
    ('[time_control]\nper_move_ms = "fast"', "time_control.per_move_ms", "expected an integer"),
])
def test_wrong_type_names_the_file_and_the_key(tmp_path: Path, bots: Path, line: str, key: str,
                                               expected: str) -> None:
    path = write(tmp_path / "t.toml", f'entrants = ["bots"]\n{line}\n')
    with pytest.raises(ConfigError) as info:
        load_config(path, {})
    assert str(info.value).startswith(f"{path}: key '{key}': {expected}")


def test_wrong_type_on_the_command_line(bots: Path) -> None:
    with pytest.raises(ConfigError, match="command line: key 'games': expected an integer"):
        load_config(None, {"entrants": [bots], "games": "2"})


def test_entrants_must_be_a_list_of_folders(tmp_path: Path, bots: Path) -> None:
    path = write(tmp_path / "t.toml", "entrants = [1, 2]\n")
    with pytest.raises(ConfigError, match=r"key 'entrants': expected a list of bot folders"):
        load_config(path, {})


def test_odd_games_explains_the_seat_swapped_pairs(tmp_path: Path, bots: Path) -> None:
    path = write(tmp_path / "t.toml", 'entrants = ["bots"]\ngames = 3\n')
    with pytest.raises(ConfigError, match=r"key 'games': expected an even number.*seats swapped\), got 3"):
        load_config(path, {})


def test_invalid_toml_gives_the_line(tmp_path: Path) -> None:
    path = write(tmp_path / "t.toml", 'name = "x"\n\ngames = = 2\n')
    with pytest.raises(ConfigError) as info:
        load_config(path, {})
    assert str(path) in str(info.value) and "not valid TOML" in str(info.value)
    assert "line 3" in str(info.value)


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "nope.toml", {})


def test_folder_without_bot_toml(tmp_path: Path, bots: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError,
                       match=r"command line: key 'entrants': expected bot folders .*, got '.*empty': "
                             r"not a bot folder \(no bot.toml\)"):
        load_config(None, {"entrants": [bots / "alpha", empty]})
    with pytest.raises(ConfigError, match="no such folder"):
        load_config(None, {"entrants": [bots / "alpha", tmp_path / "missing"]})


def test_broken_manifest_names_its_file(tmp_path: Path, bots: Path) -> None:
    (bots / "beta" / "bot.toml").write_text('name = "beta\n')
    with pytest.raises(ConfigError) as info:
        load_config(None, {"entrants": [bots]})
    assert str(bots / "beta" / "bot.toml") in str(info.value) and "not valid TOML" in str(info.value)
    (bots / "beta" / "bot.toml").write_text('command = "python bot.py"\n')
    with pytest.raises(ConfigError, match=r"beta/bot.toml: key 'name': expected 1 to 64 characters"):
        load_config(None, {"entrants": [bots]})


def test_entrants_manifests_are_read_by_the_one_manifest_parser(bots: Path) -> None:
    """A tournament refuses a bot.toml that check-bot refuses (it once read only name and description)."""
    (bots / "beta" / "bot.toml").write_text('name = "beta"\n')
    with pytest.raises(ConfigError, match=r"beta/bot.toml: key 'command': expected a command line .*, got"):
        load_config(None, {"entrants": [bots]})
    (bots / "beta" / "bot.toml").write_text('name = "beta"\ncommand = "python bot.py"\nlanguage = "py"\n')
    with pytest.raises(ConfigError, match=r"beta/bot.toml: key 'language': expected one of the keys"):
        load_config(None, {"entrants": [bots]})


def test_fewer_than_two_entrants(bots: Path) -> None:
    with pytest.raises(ConfigError, match="at least 2 entrants, got 1"):
        load_config(None, {"entrants": [bots / "alpha"]})


def test_duplicate_entrant_names(tmp_path: Path, bots: Path) -> None:
    make_bot(tmp_path / "copy", name="alpha")
    with pytest.raises(ConfigError,
                       match=r"expected entrants with unique names .*, got 'alpha' twice .*copy"):
        load_config(None, {"entrants": [bots, tmp_path / "copy"]})
    with pytest.raises(ConfigError, match="got 'beta' twice"):
        load_config(None, {"entrants": [bots, bots / "beta"]})


def test_gauntlet_needs_challengers_that_are_entrants(bots: Path) -> None:
    with pytest.raises(ConfigError, match="command line: key 'challengers': expected the entrant names .* "
                                          "that play everyone else, as format is \"gauntlet\", got nothing"):
        load_config(None, {"entrants": [bots], "format": "gauntlet"})
    with pytest.raises(ConfigError, match=r"key 'challengers': expected entrant names \(alpha, beta, gamma\)"
                                          r", got 'zeta', which is not an entrant"):
        load_config(None, {"entrants": [bots], "format": "gauntlet", "challengers": ["zeta"]})
    with pytest.raises(ConfigError, match="expected at least one entrant that is not a challenger"):
        load_config(None, {"entrants": [bots], "format": "gauntlet",
                           "challengers": ["alpha", "beta", "gamma"]})
    with pytest.raises(ConfigError,
                       match="key 'challengers': expected no challengers: they only apply to format"):
        load_config(None, {"entrants": [bots], "challengers": ["alpha"]})


def test_json_round_trip(tmp_path: Path, bots: Path) -> None:
    config = load_config(None, {"entrants": [bots], "format": "gauntlet", "challengers": ["beta"],
                                "games": 4, "concurrency": 2})
    data = json.loads(json.dumps(config.to_json()))
    assert data["time_control"] == {"per_move_ms": 1000, "bank_ms": 10_000, "first_move_ms": 5000}
    assert data["entrants"][0] == {"name": "alpha", "folder": str((bots / "alpha").resolve()),
                                   "description": "the alpha bot"}
    assert data["sandbox"] == "strict"
    assert TournamentConfig.from_json(data) == config
    with pytest.raises(ConfigError, match="malformed"):
        TournamentConfig.from_json({"name": "x"})
    with pytest.raises(ConfigError, match="malformed"):
        TournamentConfig.from_json({**data, "sandbox": "loose"})


def test_a_config_stored_by_earlier_versions_loads_typed() -> None:
    """A results folder's tournament config as earlier versions stored it: the time control as a
    table of three numbers, the sandbox as its name (and, older still, no rounds, game, sandbox
    or pondering)."""
    stored = {"name": "old", "entrants": [{"name": "a", "folder": "/bots/a", "description": ""},
                                          {"name": "b", "folder": "/bots/b"}],
              "format": "round-robin", "challengers": [], "games": 4,
              "time_control": {"per_move_ms": 300, "bank_ms": 0, "first_move_ms": 900},
              "edition": "revised", "seed": 7, "concurrency": 2, "out": "results/old"}
    config = TournamentConfig.from_json({**stored, "sandbox": "none", "pondering": False})
    assert config.time_control == TimeControl(per_move_ms=300, bank_ms=0, first_move_ms=900)
    assert config.sandbox is Sandbox.NONE and config.rounds == 0 and config.game == "patchwork"
    assert TournamentConfig.from_json(stored).sandbox is Sandbox.STRICT
    assert config.to_json()["time_control"] == stored["time_control"]


def test_the_defaults_have_one_home() -> None:
    """The file's and the flags' defaults are TournamentConfig's (games was 10 here, 2 there)."""
    fields = {f.name: f.default for f in dataclasses.fields(TournamentConfig)}
    assert DEFAULTS["games"] == fields["games"] == 10
    assert {key: DEFAULTS[key] for key in TIME_CONTROL_KEYS} == DEFAULT_TIME_CONTROL.to_json()
    assert DEFAULTS["sandbox"] == fields["sandbox"] == "strict"


def test_a_folder_of_bots_skips_plain_folders_but_not_a_misnamed_manifest(tmp_path: Path) -> None:
    folder = tmp_path / "entrants"
    make_bot(folder / "ant")
    make_bot(folder / "bee")
    (folder / ".previous" / "ant-old").mkdir(parents=True)  # what submit --replace keeps
    (folder / "notes").mkdir()
    config = load_config(None, {"entrants": [folder]})
    assert config.names == ("ant", "bee")
    make_bot(folder / "cat")
    (folder / "cat" / "bot.toml").rename(folder / "cat" / "Bot.toml")
    with pytest.raises(ConfigError, match=r"cat': holds Bot.toml"):
        load_config(None, {"entrants": [folder]})
    (folder / "cat" / "Bot.toml").unlink()
    os.mkfifo(folder / "cat" / "bot.toml")  # not a regular file: the manifest parser says so
    with pytest.raises(ConfigError, match="bot.toml"):
        load_config(None, {"entrants": [folder]})


# ------------------------------------------------------------------ swiss and knockout
def test_swiss_takes_rounds_and_plays_two_games_a_pairing(tmp_path: Path, bots: Path) -> None:
    config = load_config(write(tmp_path / "t.toml", 'entrants = ["bots"]\nformat = "swiss"\nrounds = 4\n'))
    assert (config.format, config.rounds, config.games) == ("swiss", 4, 2)
    assert config.plan.format == "swiss" and config.plan.rounds == 4
    # the default: log2 of the entrants, rounded up (3 entrants: 2 rounds)
    assert load_config(None, {"entrants": [bots], "format": "swiss"}).rounds == 2
    # stored and read back: a resume compares rounds too
    again = TournamentConfig.from_json(json.loads(json.dumps(config.to_json())))
    assert again.result_json() == config.result_json() and again.rounds == 4


def test_a_stored_config_from_before_rounds_reads_as_rounds_0(bots: Path) -> None:
    stored = load_config(None, {"entrants": [bots]}).to_json()
    del stored["rounds"]
    assert TournamentConfig.from_json(stored).rounds == 0


@pytest.mark.parametrize(("overrides", "message"), [
    ({"rounds": 3}, "command line: key 'rounds': expected no rounds: they only apply to format \"swiss\" "
                    "(format is 'round-robin'), got 3"),
    ({"format": "knockout", "rounds": 3}, "key 'rounds': expected no rounds"),
    ({"format": "swiss", "games": 4}, "command line: key 'games': expected no games: a Swiss pairing is "
                                      "always 2 games"),
    ({"format": "swiss", "rounds": 0}, "key 'rounds': expected an integer from 1 to 1,000"),
    ({"format": "knockout", "games": 3}, "key 'games': expected an even number"),
    ({"format": "knockout", "challengers": ["alpha"]}, "key 'challengers': expected no challengers"),
])
def test_bad_format_combinations_are_one_line_errors(bots: Path, overrides: dict, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(None, {"entrants": [bots], **overrides})
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_knockout_of_one_entrant_is_refused(tmp_path: Path) -> None:
    make_bot(tmp_path / "solo", name="solo")
    with pytest.raises(ConfigError, match="expected at least 2 entrants, got 1"):
        load_config(None, {"entrants": [tmp_path / "solo"], "format": "knockout"})
