"""bot.toml: the one manifest parser (schema arena/schemas/manifest.json, names by arena.untrusted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.bots.manifest import Manifest, ManifestError
from arena.errors import ConfigError
from arena.tournament.config import load_config
from tests.helpers import arena


def bot(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "bot"
    folder.mkdir(exist_ok=True)
    (folder / "bot.toml").write_text(text)
    return folder


def test_a_manifest_with_defaults_and_with_every_key(tmp_path: Path) -> None:
    manifest = Manifest.load(bot(tmp_path, 'name = "b-1"\ncommand = "./run --fast \'x y\'"\n'))
    assert (manifest.name, manifest.command, manifest.protocol, manifest.build, manifest.description) == \
        ("b-1", ("./run", "--fast", "x y"), "zmq", None, "")
    manifest = Manifest.load(bot(tmp_path, 'name = "b"\ncommand = ["java", "-jar", "b.jar"]\n'
                                           'protocol = "stdio"\nbuild = "make"\ndescription = "mine"\n'))
    assert (manifest.command, manifest.protocol, manifest.build, manifest.description) == \
        (("java", "-jar", "b.jar"), "stdio", "make", "mine")


def test_every_problem_at_once_each_in_the_common_style(tmp_path: Path) -> None:
    folder = bot(tmp_path, 'name = "no spaces"\ncommand = []\nprotocol = 3\ndescription = ["x"]\n')
    with pytest.raises(ManifestError) as caught:
        Manifest.load(folder)
    assert caught.value.problems == [
        "key 'name': expected 1 to 64 characters: ASCII letters, digits, '-', '_' and '.', starting with a "
        "letter or a digit, got 'no spaces' (e.g. 'no-spaces')",  # a name that would do
        "key 'command': expected a command line (a string, or a list of strings), e.g. command = "
        "\"python bot.py\", got [] (a list)",
        "key 'protocol': expected \"zmq\" or \"stdio\", got 3",
        "key 'description': expected a string, got ['x'] (a list)",
    ]
    assert str(caught.value).startswith(f"{folder / 'bot.toml'}: 4 problems: key 'name': expected 1 to 64")


def test_hostile_key_names_are_shown_safely_and_short(tmp_path: Path) -> None:
    key = "\\u001b]0;owned\\u0007\\u202e" * 500  # TOML escapes: the key holds the characters
    folder = bot(tmp_path, f'name = "b"\ncommand = "x"\n"{key}" = 1\n')
    with pytest.raises(ManifestError) as caught:
        Manifest.load(folder)
    (problem,) = caught.value.problems
    assert problem.isascii() and problem.isprintable() and len(problem) < 200, problem
    assert problem.startswith("key '\\x1b]0;owned\\x07\\u202e") and "got an unknown key" in problem


def test_a_command_that_does_not_split_into_words(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"bot.toml: key 'command': expected a command line that splits "
                                            r"into words, got 'python \"bot.py' \(No closing quotation\)"):
        Manifest.load(bot(tmp_path, 'name = "b"\ncommand = \'python "bot.py\'\n'))


def test_not_a_bot_folder(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"not a bot folder \(no bot.toml\)"):
        Manifest.load(tmp_path)
    with pytest.raises(ConfigError, match=r"bot.toml: not valid TOML: .*line 1"):
        Manifest.load(bot(tmp_path, 'name = = "b"\n'))


@pytest.mark.parametrize(("text", "message"), [
    ('name = "b"\ncommand = "python bot.py"\nprotocol = stdio\n',
     "bot.toml: not valid TOML: Invalid value (at line 3, column 12) (strings need quotes)"),
    ('name = "b"\ncommand = python3 bot.py   # mine\n',
     "bot.toml: not valid TOML: Invalid value (at line 2, column 11) (strings need quotes)"),
    ('[bot]\nname = "b"\ncommand = "python bot.py"\n',
     "bot.toml: keys go at the top level of bot.toml, not under [bot] (remove that table line)"),
])
def test_common_slips_in_a_bot_toml_are_named(tmp_path: Path, text: str, message: str) -> None:
    """A bare word as a value said only "Invalid value"; keys under [bot] gave every key
    missing and one unknown."""
    proc = arena("check-bot", str(bot(tmp_path, text)), "--logs", str(tmp_path / "logs"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    problems = [line for line in proc.stderr.splitlines() if line.startswith("  - ")]
    assert len(problems) == 1 and problems[0].endswith(message), problems


@pytest.mark.parametrize(("command", "got"), [
    ('["", "a"]', "got ['', 'a'] (a list)"),
    ('["   "]', "got ['   '] (a list)"),
    ('"\'\' a"', "got \"'' a\""),  # a quoted empty word: the split gives ["", "a"]
])
def test_a_command_without_a_program_is_refused_at_load(tmp_path: Path, command: str, got: str) -> None:
    """An empty first word was accepted and failed at start: "cannot start '' in ...:
    Permission denied"."""
    folder = bot(tmp_path, f'name = "b"\ncommand = {command}\n')
    proc = arena("check-bot", str(folder), "--logs", str(tmp_path / "logs"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    problems = [line for line in proc.stderr.splitlines() if line.startswith("  - ")]
    expected = (f"  - {folder / 'bot.toml'}: key 'command': expected a program to run as the first word "
                f"(not empty, not only spaces), e.g. command = \"python bot.py\", {got}")
    assert problems == [expected], proc.stderr
    assert "cannot start" not in proc.stderr


def test_a_bot_toml_and_a_config_with_a_byte_order_mark_are_read(tmp_path: Path) -> None:
    """Some editors save UTF-8 with a BOM: it was "Invalid statement (at line 1, column 1)"."""
    folder = bot(tmp_path, "")
    (folder / "bot.toml").write_bytes(b'\xef\xbb\xbfname = "b"\ncommand = "python bot.py"\n')
    assert Manifest.load(folder).name == "b"
    (tmp_path / "other").mkdir()
    other = bot(tmp_path / "other", 'name = "c"\ncommand = "python bot.py"\n')
    config = tmp_path / "t.toml"
    config.write_bytes(f'\ufeffentrants = ["{folder}", "{other}"]\ngames = 4\n'.encode())
    assert load_config(config).games == 4
