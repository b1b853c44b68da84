"""The results folder: atomic games, games.jsonl repaired from the database, resume, errors."""

from __future__ import annotations

import json
import sqlite3
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from arena.engine.playout import random_game
from arena.errors import ArenaError, ConfigError, RecordError
from arena.records import make_record, normal_result, replay
from arena.tournament import storage
from arena.tournament.config import TournamentConfig, load_config
from arena.tournament.ratings import rate
from arena.tournament.schedule import GameSpec, schedule
from arena.tournament.storage import ResultStore
from tests.helpers import arena


def make_bot(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "bot.toml").write_text(f'name = "{folder.name}"\ncommand = "python bot.py"\n')


@pytest.fixture
def config(tmp_path: Path) -> TournamentConfig:
    for name in ("ant", "bee", "cat"):
        make_bot(tmp_path / "bots" / name)
    return load_config(None, {"entrants": [tmp_path / "bots"], "out": tmp_path / "results" / "t",
                              "concurrency": 1})


@cache
def _random_record(seed: int, seat0: str, seat1: str) -> str:
    initial, moves, final = random_game(seed)
    record = make_record(initial, (seat0, seat1),
                         [{"player": p, **m.to_json(), "time_ms": 1.5} for p, m in moves],
                         normal_result(final), started_at="2024-01-01T00:00:00.000+00:00",
                         finished_at="2024-01-01T00:00:01.000+00:00")
    return json.dumps(record)


def record_for(spec: GameSpec, forfeit: int | None = None) -> dict[str, Any]:
    """A real record for the spec's game (random moves); with ``forfeit`` set, that seat loses
    by timeout after 10 moves."""
    record = json.loads(_random_record(spec.seed, spec.seat0, spec.seat1))
    if forfeit is not None:
        record["moves"] = record["moves"][:10]
        record["result"] = {"scores": [-140, -141], "winner": 1 - forfeit, "reason": "timeout",
                            "loser": forfeit, "detail": "too slow"}
    return record


def jsonl_ids(folder: Path) -> list[str]:
    return [json.loads(line)["game_id"] for line in (folder / "games.jsonl").read_text().splitlines()]


def test_store_and_read_back(config: TournamentConfig) -> None:
    specs = schedule(config.plan)
    with ResultStore(config.out, create=True) as store:
        store.save_config(config)
        for spec in specs[:4]:
            store.store_game(spec, record_for(spec, forfeit=0 if spec.index == 3 else None), 0.25)
        games = store.games_frame()
        moves = store.moves_frame()
        records = list(store.records())
        assert store.completed_ids() == {s.game_id for s in specs[:4]}
        assert store.game_count() == 4
        assert list(store.entrants_frame()["name"]) == ["ant", "bee", "cat"]
        assert store.stored_config() == config.to_json()
    assert list(games["idx"]) == [0, 1, 2, 3]
    first = games.iloc[0]
    assert (first["game_id"], first["seat0"], first["seat1"], first["seed"], first["pair"]) == \
        (specs[0].game_id, specs[0].seat0, specs[0].seat1, specs[0].seed, 0)
    assert first["winner_name"] == (first["seat0"], first["seat1"])[first["winner"]]
    assert pd.isna(first["loser"]) and first["reason"] == "normal" and first["duration_s"] == 0.25
    assert first["started_at"].startswith("2024-01-01")
    forfeit = games.iloc[3]
    assert (forfeit["reason"], forfeit["loser"], forfeit["winner"], forfeit["detail"], forfeit["moves"]) == \
        ("timeout", 0, 1, "too slow", 10)
    assert len(moves) == games["moves"].sum()
    assert list(moves[moves["idx"] == 0]["ply"]) == list(range(first["moves"]))
    move = moves.iloc[0]
    assert move["name"] == first["seat0"] and move["time_ms"] == 1.5
    for record, spec in zip(records, specs, strict=False):
        assert record["game_id"] == spec.game_id
    replay(records[0])  # the stored record is the real one
    assert jsonl_ids(config.out) == [s.game_id for s in specs[:4]]


def test_store_game_is_atomic(config: TournamentConfig) -> None:
    spec = schedule(config.plan)[0]
    with ResultStore(config.out, create=True) as store:
        # a failure inside the transaction, once the game row is in
        with sqlite3.connect(config.out / "tournament.db") as other:
            other.execute("CREATE TRIGGER boom AFTER INSERT ON games "
                          "BEGIN SELECT RAISE(ABORT, 'disk on fire'); END")
        with pytest.raises(ArenaError, match="cannot store game .*disk on fire"):
            store.store_game(spec, record_for(spec), 1.0)
        assert store.completed_ids() == set()
        assert store.moves_frame().empty
        assert (config.out / "games.jsonl").read_text() == ""
        with sqlite3.connect(config.out / "tournament.db") as other:
            other.execute("DROP TRIGGER boom")
        store.store_game(spec, record_for(spec), 1.0)
        assert store.completed_ids() == {spec.game_id}
        assert len(store.moves_frame()) == len(record_for(spec)["moves"])


def test_records_that_do_not_match_are_refused(config: TournamentConfig) -> None:
    first, second = schedule(config.plan)[:2]
    with ResultStore(config.out, create=True) as store:
        with pytest.raises(RecordError, match="players"):
            store.store_game(first, record_for(second), 1.0)
        wrong_seed = record_for(first) | {"seed": 5}
        with pytest.raises(RecordError, match="seed 5"):
            store.store_game(first, wrong_seed, 1.0)
        with pytest.raises(RecordError, match="game_id"):
            store.store_game(first, record_for(first) | {"game_id": "other"}, 1.0)
        assert store.game_count() == 0
        store.store_game(first, record_for(first), 1.0)
        with pytest.raises(RecordError, match="already stored"):
            store.store_game(first, record_for(first), 1.0)
        assert store.game_count() == 1


def test_kill_between_commit_and_append_is_repaired(config: TournamentConfig,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    specs = schedule(config.plan)
    with ResultStore(config.out, create=True) as store:
        store.store_game(specs[0], record_for(specs[0]), 1.0)

        def killed(self: ResultStore, text: str) -> None:
            raise KeyboardInterrupt

        monkeypatch.setattr(ResultStore, "_append_jsonl", killed)
        with pytest.raises(KeyboardInterrupt):
            store.store_game(specs[1], record_for(specs[1]), 1.0)
        monkeypatch.undo()
        assert store.game_count() == 2  # committed
        assert jsonl_ids(config.out) == [specs[0].game_id]
    with ResultStore(config.out) as store:
        assert jsonl_ids(config.out) == [specs[0].game_id, specs[1].game_id]
        assert store.repair_jsonl() is False


def test_a_run_killed_before_its_tables_were_made_resumes(config: TournamentConfig,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Red team: kill -9 right after a new database was switched to WAL, before its tables were
    made (3 of 20 kills 0-9 ms after tournament.db appeared), left a folder every later run
    refused as "not a patchwork-arena results database (an SQLite database without tables)"."""
    def killed(self: sqlite3.Connection, script: str) -> None:
        raise KeyboardInterrupt

    real_connect = sqlite3.connect

    class Connection(sqlite3.Connection):
        executescript = killed  # type: ignore[assignment]

    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: real_connect(*a, **k, factory=Connection))
    with pytest.raises(KeyboardInterrupt):
        ResultStore(config.out, create=True)
    monkeypatch.undo()
    with sqlite3.connect(config.out / "tournament.db") as conn:  # what the kill left: a database, no tables
        assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone() == (0,)
    bots = config.out.parent.parent / "bots"
    proc = arena("run-tournament", "--bots", str(bots), "--games", "2", "--sandbox", "none",
                 "--concurrency", "1", "--out", str(config.out))
    assert proc.returncode == 0, proc.stderr
    with ResultStore(config.out) as store:
        assert store.game_count() == 6


def test_partial_last_line_is_repaired(config: TournamentConfig) -> None:
    specs = schedule(config.plan)
    with ResultStore(config.out, create=True) as store:
        for spec in reversed(specs[:3]):  # completion order differs from schedule order
            store.store_game(spec, record_for(spec), 1.0)
    path = config.out / "games.jsonl"
    whole = path.read_bytes()
    path.write_bytes(whole[:-100])
    with ResultStore(config.out, create=True):
        assert jsonl_ids(config.out) == [s.game_id for s in specs[:3]]  # rewritten in idx order
    rewritten = path.read_text().splitlines()
    assert sorted(rewritten) == sorted(whole.decode().splitlines())


def test_jsonl_with_a_game_the_database_lacks_is_rewritten(config: TournamentConfig) -> None:
    specs = schedule(config.plan)
    with ResultStore(config.out, create=True) as store:
        store.store_game(specs[0], record_for(specs[0]), 1.0)
    with (config.out / "games.jsonl").open("a") as handle:
        handle.write(json.dumps(record_for(specs[1]) | {"game_id": specs[1].game_id}) + "\n")
    with ResultStore(config.out):
        assert jsonl_ids(config.out) == [specs[0].game_id]


def test_consistent_jsonl_is_left_alone(config: TournamentConfig) -> None:
    specs = schedule(config.plan)
    with ResultStore(config.out, create=True) as store:
        for spec in (specs[2], specs[0]):
            store.store_game(spec, record_for(spec), 1.0)
    before = (config.out / "games.jsonl").read_bytes()
    with ResultStore(config.out) as store:
        assert store.repair_jsonl() is False
    assert (config.out / "games.jsonl").read_bytes() == before  # completion order kept


def test_resume_plays_the_rest_and_equals_an_uninterrupted_run(config: TournamentConfig,
                                                               tmp_path: Path) -> None:
    specs = schedule(config.plan)
    with ResultStore(config.out, create=True) as store:
        store.save_config(config)
        for spec in specs[:3]:
            store.store_game(spec, record_for(spec), 1.0)
    with ResultStore(config.out, create=True) as store:
        store.save_config(config)
        rest = schedule(config.plan, completed=store.completed_ids())
        assert rest == specs[3:]
        for spec in reversed(rest):
            store.store_game(spec, record_for(spec), 1.0)
        resumed = store.games_frame()
    with ResultStore(tmp_path / "once", create=True) as store:
        for spec in specs:
            store.store_game(spec, record_for(spec), 1.0)
        once = store.games_frame()
    pd.testing.assert_frame_equal(resumed, once)
    pd.testing.assert_frame_equal(rate(resumed), rate(once))


def test_config_mismatch_on_resume(config: TournamentConfig, tmp_path: Path) -> None:
    with ResultStore(config.out, create=True) as store:
        store.save_config(config)
        store.check_config(load_config(None, {"entrants": [tmp_path / "bots"], "out": config.out,
                                              "concurrency": 7, "name": "renamed"}))
        changed = load_config(None, {"entrants": [tmp_path / "bots"], "games": 4, "seed": 9,
                                     "per_move_ms": 5})
        with pytest.raises(ConfigError) as info:
            store.save_config(changed)
        message = str(info.value)
        assert "games, seed, time_control differ" in message and "--out" in message
        fewer = load_config(None, {"entrants": [tmp_path / "bots" / "ant", tmp_path / "bots" / "bee"]})
        with pytest.raises(ConfigError, match="entrants differ") as info:
            store.check_config(fewer)
        cat = tmp_path / "bots" / "cat"  # only what differs, not both lists whole
        assert f"entrants: no longer: cat ({cat})" in str(info.value) and "bee (" not in str(info.value)
        assert "the name, concurrency, sandbox and pondering may change" in str(info.value)
        assert store.stored_config() == config.to_json()


def test_a_results_folder_of_the_previous_config_format_resumes(config: TournamentConfig,
                                                                tmp_path: Path) -> None:
    """The config as earlier versions stored it (the time control as a table of three numbers,
    the sandbox as its name) is the config of a typed TimeControl and Sandbox: it resumes."""
    old = {"name": config.name, "entrants": [{"name": e.name, "folder": str(e.folder),
                                              "description": e.description} for e in config.entrants],
           "format": "round-robin", "challengers": [], "games": 10, "rounds": 0,
           "time_control": {"per_move_ms": 1000, "bank_ms": 10000, "first_move_ms": 5000},
           "game": "patchwork", "components": None, "edition": "revised", "seed": 1, "concurrency": 1,
           "sandbox": "strict", "pondering": False, "out": str(config.out)}
    with ResultStore(config.out, create=True):
        pass
    with sqlite3.connect(config.out / storage.DB_NAME) as conn:
        conn.execute("INSERT INTO tournament (key, value) VALUES ('config', ?)", (json.dumps(old),))
    with ResultStore(config.out) as store:
        store.save_config(config)  # resumes: nothing differs
        assert store.stored_config() == old == config.to_json()
        with pytest.raises(ConfigError, match="time_control differ"):
            store.check_config(load_config(None, {"entrants": [tmp_path / "bots"], "per_move_ms": 5}))


@pytest.mark.parametrize("setup", ["missing", "empty", "file", "garbage", "other-db", "jsonl-only"])
def test_not_a_results_folder(tmp_path: Path, setup: str) -> None:
    folder = tmp_path / "res"
    create = False
    if setup == "empty":
        folder.mkdir()
    elif setup == "file":
        folder.write_text("hello")
    elif setup == "garbage":
        folder.mkdir()
        (folder / "tournament.db").write_bytes(b"this is not SQLite at all" * 100)
    elif setup == "other-db":
        folder.mkdir()
        with sqlite3.connect(folder / "tournament.db") as conn:
            conn.execute("CREATE TABLE recipes (name TEXT)")
        create = True
    elif setup == "jsonl-only":
        folder.mkdir()
        (folder / "games.jsonl").write_text('{"game_id": "x"}\n')
        create = True
    with pytest.raises(ConfigError,
                       match="not a (results folder|patchwork-arena results database)|no tournament.db"):
        ResultStore(folder, create=create)
    if setup in ("garbage", "other-db"):
        with pytest.raises(ConfigError, match="not a patchwork-arena results database"):
            ResultStore(folder, readonly=True)


def test_one_writer_many_readers(config: TournamentConfig) -> None:
    specs = schedule(config.plan)
    with ResultStore(config.out, create=True) as writer:
        writer.store_game(specs[0], record_for(specs[0]), 1.0)
        with pytest.raises(ConfigError, match="another process is writing"):
            ResultStore(config.out)
        with ResultStore(config.out, readonly=True) as reader:
            assert reader.game_count() == 1
            writer.store_game(specs[1], record_for(specs[1]), 1.0)
            assert list(reader.games_frame()["idx"]) == [0, 1]  # sees new games while the writer runs
            with pytest.raises(ConfigError, match="read-only"):
                reader.store_game(specs[2], record_for(specs[2]), 1.0)
    with ResultStore(config.out, readonly=True) as reader:  # and after the writer has gone
        assert reader.completed_ids() == {specs[0].game_id, specs[1].game_id}
    with ResultStore(config.out) as writer:  # the lock was released
        assert writer.game_count() == 2


def test_database_is_in_wal_mode(config: TournamentConfig) -> None:
    with ResultStore(config.out, create=True):
        with sqlite3.connect(config.out / "tournament.db") as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_record_with_a_time_that_is_not_a_finite_number_is_refused_and_nothing_is_stored(
        config: TournamentConfig) -> None:
    spec = schedule(config.plan)[0]
    record = record_for(spec)
    record["moves"][0]["time_ms"] = float("nan")
    with ResultStore(config.out, create=True) as store:
        with pytest.raises(RecordError, match="time_ms must be a finite number"):
            store.store_game(spec, record, 0.1)
        assert store.game_count() == 0


def test_stored_text_is_ascii_whatever_a_bot_wrote(config: TournamentConfig) -> None:
    spec = schedule(config.plan)[0]
    record = record_for(spec)
    record["moves"][0]["info"] = "caf\u00e9 \u2028 line separator"
    with ResultStore(config.out, create=True) as store:
        store.store_game(spec, record, 0.1)
        (stored,) = store.records()
    text = (config.out / "games.jsonl").read_text(encoding="utf-8")
    assert text.isascii() and len(text.splitlines()) == 1
    assert stored["moves"][0]["info"] == "caf\u00e9 \u2028 line separator"


def test_every_move_of_a_record_is_a_row_of_the_moves_view_in_order(config: TournamentConfig) -> None:
    """The moves are a view of the records: a long record comes back whole, each row equal to
    its entry, and the view reads the stored record, not a copy made when it was stored."""
    spec = schedule(config.plan)[0]
    record = record_for(spec)
    record["moves"] = record["moves"] * 4
    with ResultStore(config.out, create=True) as store:
        store.store_game(spec, record, 1.0)
        moves = store.moves_frame()
    assert list(moves["ply"]) == list(range(len(record["moves"])))
    for row, entry in zip(moves.itertuples(), record["moves"], strict=True):
        assert (row.player, row.action) == (entry["player"], entry["action"])
        assert row.time_ms == entry.get("time_ms")
        assert (None if pd.isna(row.patch) else row.patch) == entry.get("patch")
        assert (None if pd.isna(row.cells) else json.loads(row.cells)) == entry.get("cells")
    with sqlite3.connect(config.out / "tournament.db") as conn:
        conn.execute("UPDATE games SET record = json_set(record, '$.moves[0].action', 'edited')")
    with ResultStore(config.out, readonly=True) as store:
        assert store.moves_frame()["action"].iloc[0] == "edited"


_SCHEMA_1_MOVES = """
DROP VIEW moves;
CREATE TABLE moves (
    game_id TEXT NOT NULL REFERENCES games (game_id), ply INTEGER NOT NULL,
    player INTEGER NOT NULL CHECK (player IN (0, 1)), action TEXT NOT NULL, patch INTEGER,
    cells TEXT, time_ms REAL, PRIMARY KEY (game_id, ply)
) WITHOUT ROWID;
INSERT INTO moves SELECT * FROM (SELECT g.game_id, CAST(m.key AS INTEGER), json_extract(m.value, '$.player'),
    json_extract(m.value, '$.action'), json_extract(m.value, '$.patch'), json_extract(m.value, '$.cells'),
    json_extract(m.value, '$.time_ms') FROM games AS g, json_each(g.record, '$.moves') AS m);
PRAGMA user_version = 1;
"""


def test_a_schema_1_folder_is_read_as_it_is_and_brought_up_to_date_by_a_writer(
        config: TournamentConfig) -> None:
    """Schema 1 stored the moves in a table of their own: a reader reads it as it is; the
    next writer (a resumed run) replaces it by the view, in one transaction, and stores on."""
    first, second = schedule(config.plan)[:2]
    with ResultStore(config.out, create=True) as store:
        store.save_config(config)
        store.store_game(first, record_for(first), 1.0)
        expected = store.moves_frame()
    with sqlite3.connect(config.out / "tournament.db") as conn:
        conn.executescript(_SCHEMA_1_MOVES)

    def moves_kind() -> tuple[str, int]:
        with sqlite3.connect(config.out / "tournament.db") as conn:
            kind = conn.execute("SELECT type FROM sqlite_master WHERE name = 'moves'").fetchone()[0]
            return kind, conn.execute("PRAGMA user_version").fetchone()[0]

    assert moves_kind() == ("table", 1)
    with ResultStore(config.out, readonly=True) as store:
        pd.testing.assert_frame_equal(store.moves_frame(), expected)
    assert moves_kind() == ("table", 1)
    with ResultStore(config.out, create=True) as store:
        assert moves_kind() == ("view", storage.SCHEMA_VERSION)
        pd.testing.assert_frame_equal(store.moves_frame(), expected)
        store.store_game(second, record_for(second), 1.0)
        assert store.game_count() == 2
        assert len(store.moves_frame()) == len(expected) + len(record_for(second)["moves"])


def test_an_entrant_without_games_shows_no_win_rate_not_nan(config: TournamentConfig) -> None:
    """An interrupted run's table: the entrant that has not played yet has '-' for its win
    rate (a rate of nothing), never 'nan'."""
    spec = schedule(config.plan)[0]
    with ResultStore(config.out, create=True) as store:
        store.save_config(config)
        store.store_game(spec, record_for(spec), 1.0)
    idle = ({"ant", "bee", "cat"} - {spec.seat0, spec.seat1}).pop()
    shown = arena("ratings", str(config.out))
    assert shown.returncode == 0, shown.stderr
    assert "nan" not in shown.stdout
    line = next(line for line in shown.stdout.splitlines() if f" {idle} " in f" {line} ")
    assert line.split()[-2:] == ["-", "0"], line  # win_rate, failures


def test_games_jsonl_deleted_mid_run_is_written_again(config: TournamentConfig) -> None:
    """The writer keeps games.jsonl open; deleted (or replaced) under it, the next game
    goes to a new file of that name, and the next opening repairs it whole."""
    specs = schedule(config.plan)
    path = config.out / "games.jsonl"
    with ResultStore(config.out, create=True) as store:
        store.store_game(specs[0], record_for(specs[0]), 1.0)
        path.unlink()
        store.store_game(specs[1], record_for(specs[1]), 1.0)
        assert jsonl_ids(config.out) == [specs[1].game_id]
        path.rename(config.out / "elsewhere.jsonl")
        path.write_text("")
        store.store_game(specs[2], record_for(specs[2]), 1.0)
        assert jsonl_ids(config.out) == [specs[2].game_id]
    with ResultStore(config.out):
        assert jsonl_ids(config.out) == [s.game_id for s in specs[:3]]


def test_games_jsonl_turned_into_a_folder_is_a_clear_error(config: TournamentConfig) -> None:
    specs = schedule(config.plan)
    path = config.out / "games.jsonl"
    with ResultStore(config.out, create=True) as store:
        store.store_game(specs[0], record_for(specs[0]), 1.0)
        path.unlink()
        path.mkdir()
        with pytest.raises(IsADirectoryError):  # the game is stored; the run stops here
            store.store_game(specs[1], record_for(specs[1]), 1.0)
        assert store.game_count() == 2
    with pytest.raises(ConfigError, match=r"games.jsonl: not a file; move it away"):
        ResultStore(config.out)
    assert not (config.out / "games.jsonl.tmp").exists()
    path.rmdir()
    with ResultStore(config.out):
        assert jsonl_ids(config.out) == [s.game_id for s in specs[:2]]


def test_hidden_key_is_made_once_and_kept(config: TournamentConfig) -> None:
    """The secret of the hidden draws is made on first use and read back on a resume (the games
    left draw as an uninterrupted run would); a read-only store never makes one."""
    with ResultStore(config.out, create=True) as store:
        key = store.hidden_key()
        assert len(key) == 32 and store.hidden_key() == key
    with ResultStore(config.out) as store:
        assert store.hidden_key() == key
    with ResultStore(config.out, readonly=True) as store:
        assert store.hidden_key() == key
    with sqlite3.connect(config.out / storage.DB_NAME) as conn:
        conn.execute("UPDATE tournament SET value = 'zz' WHERE key = 'hidden_key'")
    with ResultStore(config.out) as store, pytest.raises(ConfigError, match="hidden_key is not 32 bytes"):
        store.hidden_key()
