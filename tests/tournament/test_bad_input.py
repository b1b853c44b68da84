"""Bad input to the tournament commands is a one-line error, before anything starts, and a
damaged results database is reported and left exactly as it was."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from arena.errors import ConfigError
from arena.tournament.config import TournamentConfig, load_config
from arena.tournament.schedule import iter_schedule, schedule_size
from arena.tournament.storage import ResultStore
from tests.helpers import arena, arena_here
from tests.tournament.test_storage import make_bot, record_for


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A results folder holding 4 games, and the bots folder of its (never started) entrants."""
    root = tmp_path_factory.mktemp("good")
    for name in ("ant", "bee"):
        make_bot(root / "bots" / name)
    config = load_config(None, {"entrants": [root / "bots"], "out": root / "results", "games": 4,
                                "concurrency": 1, "sandbox": "none"})
    with ResultStore(config.out, create=True) as store:
        store.save_config(config)
        for spec in list(iter_schedule(config.plan))[:3]:
            store.store_game(spec, record_for(spec), 0.5)
    return root / "results", root / "bots"


def _garbage(db: Path) -> None:
    db.write_bytes(random.Random(1).randbytes(3 * 4096))


def _truncated(db: Path) -> None:
    data = db.read_bytes()
    db.write_bytes(data[:len(data) // 2])


def _other_tables(db: Path) -> None:
    db.unlink()
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE customers (name TEXT)")
        conn.execute("INSERT INTO customers VALUES ('x')")
    conn.close()


def _foreign_wal(db: Path) -> None:
    """The write-ahead log of another SQLite database (valid in itself) beside ours."""
    other = db.with_name("other.db")
    conn = sqlite3.connect(other, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("CREATE TABLE customers (name TEXT)")
    conn.execute("INSERT INTO customers VALUES ('x')")
    shutil.copy(other.with_name("other.db-wal"), db.with_name(db.name + "-wal"))
    conn.close()
    other.unlink()


def _garbage_wal(db: Path) -> None:
    db.with_name(db.name + "-wal").write_bytes(random.Random(2).randbytes(5000))


def _bad_pages(db: Path) -> None:
    """The header intact, the pages after it overwritten."""
    data = bytearray(db.read_bytes())
    data[4096:] = random.Random(3).randbytes(len(data) - 4096)
    db.write_bytes(bytes(data))


def _emptied(db: Path) -> None:
    db.write_bytes(b"")


DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    "garbage": (_garbage, "not an SQLite database file"),
    "truncated": (_truncated, "the file is truncated"),
    "other tables": (_other_tables, "without the tournament tables; it holds customers"),
    "foreign wal": (_foreign_wal, "without the tournament tables; it holds customers"),
    "garbage wal": (_garbage_wal, "tournament.db-wal is not a write-ahead log of this database"),
    "bad pages": (_bad_pages, "malformed"),
    "emptied": (_emptied, "an empty file"),
}


def _snapshot(folder: Path) -> dict[str, bytes]:
    """The user's files (SQLite's shared-memory index, our lock and an empty log aside)."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())
            if p.is_file() and not p.name.endswith(("-shm", ".lock"))
            and not (p.name.endswith("-wal") and not p.stat().st_size)}


@pytest.mark.slow
@pytest.mark.parametrize("kind", DAMAGE)
def test_a_damaged_database_is_a_one_line_error_and_stays_untouched(tmp_path: Path, good: tuple[Path, Path],
                                                                     kind: str) -> None:
    source, bots = good
    folder = tmp_path / "results"
    shutil.copytree(source, folder)
    damage, why = DAMAGE[kind]
    db = folder / "tournament.db"
    damage(db)
    before = _snapshot(folder)
    commands = {
        "resume": ["run-tournament", "--bots", str(bots), "--games", "4", "--concurrency", "1",
                   "--sandbox", "none", "--out", str(folder)],
        "ratings": ["ratings", str(folder)],
        "report": ["report", str(folder), "--out", str(tmp_path / "report")],
    }
    if kind not in ("garbage", "bad pages"):  # the other kinds: the reading commands' store in-process
        for command in ("ratings", "report"):
            del commands[command]
        with pytest.raises(ConfigError) as caught:
            ResultStore(folder, readonly=True)
        assert str(caught.value).startswith(f"{db}: not a patchwork-arena results database (")
        assert ("an empty file" if kind == "emptied" else why) in str(caught.value)
        assert _snapshot(folder) == before
    for command, argv in commands.items():
        proc = arena(*argv)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 1, (command, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr and len(lines) == 1, (command, proc.stderr)
        assert lines[0].startswith(f"Error: {db}: not a patchwork-arena results database ("), (command, lines)
        expected = "an empty file" if kind == "emptied" and command != "resume" else why
        assert expected in lines[0], (command, lines)
        assert _snapshot(folder) == before, command  # the user's files are exactly as they were


def test_an_emptied_database_never_costs_the_games_in_games_jsonl(tmp_path: Path,
                                                                  good: tuple[Path, Path]) -> None:
    source, bots = good
    folder = tmp_path / "results"
    shutil.copytree(source, folder)
    _emptied(folder / "tournament.db")
    jsonl = (folder / "games.jsonl").read_bytes()
    with pytest.raises(ConfigError, match="an empty file, while games.jsonl holds games"):
        ResultStore(folder, create=True)
    assert (folder / "games.jsonl").read_bytes() == jsonl and jsonl.count(b"\n") == 3


@pytest.mark.parametrize(("args", "message"), [
    (["--games", "1000000000000"], "key 'games': expected an integer from 2 to 10,000,000, got "
                                   "1,000,000,000,000"),
    (["--games", "4000000"], "key 'games': expected at most 10,000,000 games in one tournament, got "
                             "4,000,000 games per pairing x 3 pairings = 12,000,000 games"),
])
def test_counts_too_large_to_schedule_are_refused_before_anything_starts(tmp_path: Path, args: list[str],
                                                                         message: str) -> None:
    for name in ("ant", "bee", "cat"):
        make_bot(tmp_path / "bots" / name)
    out = tmp_path / "out"
    proc = arena_here("run-tournament", "--bots", str(tmp_path / "bots"), "--sandbox", "none",
                      "--out", str(out), *args)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0] == f"Error: command line: {message}", lines
    assert not out.exists()


def test_a_bot_folder_whose_name_is_not_utf8_is_refused_before_anything_starts(tmp_path: Path) -> None:
    """Such a path cannot be stored in the results (it crashed with a UnicodeEncodeError in
    save_config): one line naming the folder, escaped, and nothing written."""
    bots = tmp_path / "bots"
    make_bot(bots / "ant")
    bad = os.fsdecode(os.fsencode(bots) + b"/bad\xff")
    Path(bad).mkdir()
    (Path(bad) / "bot.toml").write_text('name = "bad"\ncommand = "python bot.py"\n')
    out = tmp_path / "out"
    for args in (["--bots", str(bots)], ["--bots", bad, "--bots", str(bots / "ant")]):
        proc = arena_here("run-tournament", *args, "--sandbox", "none", "--out", str(out))
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        [line] = proc.stderr.strip().splitlines()
        assert line.startswith("Error: command line: key 'entrants': expected bot folders (each holding "
                               "a bot.toml) or folders of bot folders, got '/"), line
        # a long path is cut in its middle: the end names what is wrong
        assert line.endswith("/bad\\udcff': its path is not valid UTF-8; rename it"), line
        assert not out.exists()


@pytest.mark.parametrize(("key", "value", "message"), [
    ("games", 2 * 10**6, "got 2,000,000 games per pairing x 6 pairings = 12,000,000 games"),
    ("concurrency", 100_000, "key 'concurrency': expected an integer from 1 to 256, got 100,000"),
    ("per_move_ms", 10**11, "key 'per_move_ms': expected an integer from 1 to 86,400,000"),
    ("first_move_ms", 0, "key 'first_move_ms': expected an integer from 1 to 86,400,000, got 0"),
    ("bank_ms", -5, "key 'bank_ms': expected an integer from 0 to 86,400,000, got -5"),
    ("seed", 2**64, "key 'seed': expected an integer from -9,223,372,036,854,775,808 to "
                    "9,223,372,036,854,775,807, got 18,446,744,073,709,551,616"),
    ("seed", 10**100, "got 10,000,000,000,000,0... (101 digits)"),
])
def test_every_number_of_a_config_is_bounded(tmp_path: Path, key: str, value: int, message: str) -> None:
    for name in ("ant", "bee", "cat", "dog"):
        make_bot(tmp_path / "bots" / name)
    with pytest.raises(ConfigError) as caught:
        load_config(None, {"entrants": [tmp_path / "bots"], key: value})
    assert message in str(caught.value)


def test_other_commands_bound_their_numbers_too() -> None:
    for argv in (["report", ".", "--bootstrap", "10000000"], ["report", ".", "--seed", "-1"],
                 ["sprt", ".", ".", "--max-games", "100000000"], ["play", ".", ".", "--seed", str(2**70)],
                 ["play", ".", ".", "--time-per-move", "99999999999"]):
        proc = arena_here(*argv)
        usage_error = 3 if argv[0] == "sprt" else 2  # sprt's 2 is a verdict ("max-games reached")
        assert proc.returncode == usage_error and "Traceback" not in proc.stderr, argv
        assert "is not in the range" in proc.stderr, (argv, proc.stderr)


def test_the_largest_legal_schedule_starts_at_once(tmp_path: Path) -> None:
    for name in ("ant", "bee"):
        make_bot(tmp_path / "bots" / name)
    config: TournamentConfig = load_config(None, {"entrants": [tmp_path / "bots"], "games": 10_000_000})
    assert schedule_size(config.plan) == 10_000_000
    games = iter_schedule(config.plan, completed={"0000000-ant-vs-bee-p0"})
    first, second = next(games), next(games)
    assert (first.index, first.game_id, second.index) == (1, "0000001-bee-vs-ant-p0", 2)


def test_a_config_saved_as_utf16_is_told_to_be_utf8(tmp_path: Path) -> None:
    """Notepad's "Unicode" is UTF-16: the config and bot.toml share the reader that says so."""
    config = tmp_path / "class.toml"
    config.write_text('bots = ["sample_bots"]\ngames = 2\n', encoding="utf-16")
    proc = arena_here("run-tournament", str(config))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{config}: saved as UTF-16 (Windows Notepad's \"Unicode\"), not UTF-8: save it as UTF-8" in \
        proc.stderr, proc.stderr
