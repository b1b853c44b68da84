"""The shipped JSON Schemas of the files users write, and their one error style through the CLI:
``FILE: key 'a.b': expected WHAT, got WHAT`` on one line, for a tournament config, a bot.toml
and a component file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from arena.engine.components import GAMES
from arena.errors import ConfigError
from arena.launch.levels import LEVELS
from arena.resources import sample_bots_dir
from arena.schemas import KINDS, MISSING, check, got, load_schema, problems
from arena.schemas.components import load_components
from tests.helpers import arena_here as arena

STYLE = re.compile(r"^Error: (?P<file>[^:]+): key '(?P<key>[^']+)': expected (?P<what>.+), got (?P<got>.+)$")


def shipped_components() -> dict:
    return json.loads((sample_bots_dir().parent / "engine/data/stack-n-stuff.json").read_text())


def one_error_line(proc) -> re.Match[str]:  # type: ignore[no-untyped-def]
    """The single line a bad file gives: exit status 1, no traceback, the common style."""
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    match = STYLE.match(lines[0])
    assert match, lines[0]
    return match


@pytest.mark.parametrize("kind", KINDS)
def test_each_shipped_schema_is_a_valid_2020_12_schema(kind: str) -> None:
    Draft202012Validator.check_schema(load_schema(kind))


def test_the_schemas_agree_with_the_code_they_describe() -> None:
    tournament = load_schema("tournament")["properties"]
    assert tuple(tournament["sandbox"]["enum"]) == tuple(LEVELS)
    assert tuple(tournament["game"]["enum"]) == GAMES
    Draft202012Validator(load_schema("components")).validate(shipped_components())
    for bot in sample_bots_dir().iterdir():
        if (bot / "bot.toml").is_file():
            import tomllib

            assert problems(tomllib.loads((bot / "bot.toml").read_text()), load_schema("manifest")) == []


def test_the_words_of_a_problem() -> None:
    schema = load_schema("tournament")
    assert problems({"concurrency": 0, "pondering": "yes", "time_control": {"bank_ms": 1.5}}, schema) == [
        "key 'time_control.bank_ms': expected an integer from 0 to 86,400,000, got 1.5 (a number)",
        "key 'concurrency': expected an integer from 1 to 256, got 0",
        "key 'pondering': expected true or false, got 'yes'",
    ]
    assert got(10**60).endswith("(61 digits)") and got(True) == "true"
    assert got({"a": 1}) == "{'a': 1} (a table)"
    with pytest.raises(ConfigError, match=r"^x.toml: key 'manifest': expected one of the keys"):
        check({"manifest": 1}, "tournament", "x.toml")
    with pytest.raises(ConfigError, match=f"^bot.toml: key 'name': expected 1 .*, got {re.escape(MISSING)}"):
        check({"command": "x"}, "manifest", "bot.toml")


def test_a_bad_tournament_config_through_the_cli(tmp_path: Path) -> None:
    config = tmp_path / "cup.toml"
    config.write_text(f'entrants = ["{sample_bots_dir()}"]\n[time_control]\nbank_ms = "lots"\n')
    match = one_error_line(arena("run-tournament", str(config), "--out", str(tmp_path / "out")))
    assert match.group("file", "key", "what", "got") == (
        str(config), "time_control.bank_ms", "an integer from 0 to 86,400,000", "'lots'")
    config.write_text(f'entrants = ["{sample_bots_dir()}"]\ngames = 3\n')  # a rule between keys, same style
    match = one_error_line(arena("run-tournament", str(config), "--out", str(tmp_path / "out")))
    assert match.group("key", "got") == ("games", "3") and "even number" in match.group("what")
    assert not (tmp_path / "out").exists()


def test_a_bad_bot_toml_through_check_bot_and_run_tournament(tmp_path: Path) -> None:
    bot = tmp_path / "bots" / "typo"
    bot.mkdir(parents=True)
    (bot / "bot.toml").write_text('name = "typo"\ncommand = "python bot.py"\nprotocol = "stdoi"\n')
    proc = arena("check-bot", str(bot), "--logs", str(tmp_path / "logs"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[:2] == [
        "FAIL: 1 problem(s):",
        f"  - {bot / 'bot.toml'}: key 'protocol': expected \"zmq\" or \"stdio\", got 'stdoi'"]
    # a tournament reads its entrants' manifests with the same parser, and says the same
    match = one_error_line(arena("run-tournament", "--bots", str(bot), "--bots",
                                 str(sample_bots_dir() / "random"), "--out", str(tmp_path / "out"),
                                 "--sandbox", "none"))
    assert match.group("file", "key", "got") == (str(bot / "bot.toml"), "protocol", "'stdoi'")


def test_a_bad_component_file_through_the_cli(tmp_path: Path) -> None:
    table = shipped_components()
    table["stuff_tiles"][2]["cost"] = -1
    bad = tmp_path / "tiles.json"
    bad.write_text(json.dumps(table))
    for argv in (["random-games", "2", "--game", "stack-n-stuff", "--out", str(tmp_path / "g.jsonl")],
                 ["run-tournament", "--game", "stack-n-stuff", "--bots", str(sample_bots_dir()),
                  "--out", str(tmp_path / "out"), "--sandbox", "none"]):
        match = one_error_line(arena(*argv, "--components", str(bad)))
        assert match.group("file", "key", "what", "got") == (str(bad), "stuff_tiles[2].cost",
                                                             "an integer >= 0", "-1")
    table = shipped_components()
    table["stack_tiles"][0]["id"] = 99  # a rule the schema cannot express, in the same style
    bad.write_text(json.dumps(table))
    with pytest.raises(ConfigError) as caught:
        load_components(bad)
    assert str(caught.value).startswith(f"{bad}: key 'stack_tiles/stuff_tiles': expected tile ids 0..22, "
                                        "each used once, got [1, 2,")
