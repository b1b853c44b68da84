"""A results folder: ``tournament.db`` (SQLite, the truth) and ``games.jsonl`` (a copy).

```
results/<name>/
  tournament.db     tables tournament (key/value: config, created_at, versions, hidden_key), entrants,
                    games (one row per game, with its record JSON); view moves (one
                    row per move, read from the records)
  games.jsonl       every game record, one per line (completion order; idx order after a repair)
  tournament.lock   held by the one process that writes
```

A game and its record (moves included) are written in one transaction, then the record is appended
to ``games.jsonl``. A run killed between the two leaves the file short (or with a
partial last line); the next writer that opens the folder rewrites the file from the
database, so the two always hold the same games.

The database is in WAL mode: readers (``arena ratings`` during a run) never block the
writer and always see whole games. ``synchronous=NORMAL`` is enough with WAL: a
killed process loses nothing committed and the file can never be corrupted; only a
power cut or OS crash may lose the last few commits, which a resumed run replays.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.errors import ArenaError, ConfigError, RecordError
from arena.protocol.codec import encode_trusted
from arena.records import utc_now
from arena.tournament.config import RESULT_KEYS, TournamentConfig
from arena.tournament.schedule import HIDDEN_KEY_BYTES, GameSpec

if TYPE_CHECKING:
    import pandas as pd

DB_NAME = "tournament.db"
JSONL_NAME = "games.jsonl"
LOCK_NAME = "tournament.lock"
SCHEMA_VERSION = 2  # 1: moves was a table (read as it is; a writer makes it the view)
BUSY_TIMEOUT_S = 10.0
TABLES = ("tournament", "entrants", "games", "moves")
SQLITE_MAGIC = b"SQLite format 3\x00"
WAL_MAGIC = (0x377F0682, 0x377F0683)

_SCHEMA = """
CREATE TABLE tournament (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE entrants (
    name TEXT PRIMARY KEY,
    folder TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT ''
);
CREATE TABLE games (
    game_id TEXT PRIMARY KEY,
    idx INTEGER NOT NULL UNIQUE,            -- position in the schedule
    pair INTEGER NOT NULL,                  -- global number of the seat-swapped pair
    seed INTEGER NOT NULL,
    seat0 TEXT NOT NULL,
    seat1 TEXT NOT NULL,
    score0 INTEGER NOT NULL,
    score1 INTEGER NOT NULL,
    winner INTEGER NOT NULL CHECK (winner IN (0, 1)),
    winner_name TEXT NOT NULL,
    loser INTEGER CHECK (loser IN (0, 1)),  -- the seat that forfeited; NULL when reason = 'normal'
    reason TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '',
    moves INTEGER NOT NULL,
    duration_s REAL NOT NULL,
    started_at TEXT,
    finished_at TEXT,
    record TEXT NOT NULL
);
"""

# Every move is in its game's record already: the moves are a view of them, not a second
# copy (schema 1 had a table; storing its 59 rows a game was 150 of a game's 257 us).
_MOVES_VIEW = """
CREATE VIEW moves (game_id, ply, player, action, patch, cells, time_ms) AS
SELECT g.game_id, CAST(m.key AS INTEGER), json_extract(m.value, '$.player'),
       json_extract(m.value, '$.action'), json_extract(m.value, '$.patch'),
       json_extract(m.value, '$.cells'), json_extract(m.value, '$.time_ms')
FROM games AS g, json_each(g.record, '$.moves') AS m;
"""
_MIGRATIONS = {1: "DROP TABLE moves;"}  # from schema N to N + 1, then the view is made again

_GAME_COLUMNS = ("idx", "game_id", "pair", "seed", "seat0", "seat1", "score0", "score1", "winner",
                 "winner_name", "loser", "reason", "detail", "moves", "duration_s", "started_at",
                 "finished_at")
_INSERT_GAME = (f"INSERT INTO games ({', '.join(_GAME_COLUMNS)}, record) "
                f"VALUES ({', '.join('?' * (len(_GAME_COLUMNS) + 1))})")
_GAME_TYPES = {"idx": "int64", "pair": "int64", "seed": "int64", "score0": "int64", "score1": "int64",
               "winner": "int64", "loser": "Int64", "moves": "int64", "duration_s": "float64"}
_MOVE_TYPES = {"idx": "int64", "ply": "int64", "player": "int64", "patch": "Int64", "time_ms": "float64"}


class ResultStore:
    """One results folder. Writers hold a lock; readers may open it at any time.

    ``ResultStore(folder, create=True)`` makes the folder and database if needed (a new
    run or a resume); ``ResultStore(folder)`` opens an existing one for writing;
    ``ResultStore(folder, readonly=True)`` reads while another process writes. Anything
    that is not a results folder raises ConfigError. Use it as a context manager (or
    call :meth:`close`). Methods are safe to call from several threads.
    """

    def __init__(self, folder: Path, *, create: bool = False, readonly: bool = False) -> None:
        if create and readonly:
            raise ValueError("a store cannot be both created and read-only")
        self.folder = Path(folder)
        self.db_path = self.folder / DB_NAME
        self.jsonl_path = self.folder / JSONL_NAME
        self.readonly = readonly
        self._mutex = threading.Lock()
        self._lock_file: Any = None
        self._jsonl_fd: int | None = None  # games.jsonl, open for appending while we write
        self._jsonl_id = (0, 0)  # and the (device, inode) it was opened as
        self._conn = self._open(create)
        if not readonly:
            try:
                self.repair_jsonl()
            except sqlite3.DatabaseError as exc:  # damaged beyond its first pages
                self.close()
                raise self._not_ours(str(exc)) from None
            except BaseException:
                self.close()
                raise

    # ------------------------------------------------------------------ opening
    def _open(self, create: bool) -> sqlite3.Connection:
        folder, db = self.folder, self.db_path
        if folder.exists() and not folder.is_dir():
            raise ConfigError(f"{folder}: not a results folder (it is a file)")
        if not db.is_file():
            if db.exists() or db.is_symlink():
                raise self._not_ours("it is not a regular file")
            if not create:
                what = "no such folder" if not folder.exists() else f"no {DB_NAME}"
                raise ConfigError(f"{folder}: not a results folder ({what})")
            if self.jsonl_path.is_file() and self.jsonl_path.stat().st_size:
                raise ConfigError(f"{folder}: holds a {JSONL_NAME} but no {DB_NAME}, so it is not a results "
                                  "folder this version can resume; use another --out")
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ConfigError(f"{folder}: cannot create the results folder: {exc.strerror}") from None
        if not self.readonly:
            self._take_lock()
        try:
            new = self._sniff(create)
            if not new:  # check on a read-only connection, which never writes (no checkpoint on close)
                probe = self._connect(readonly=True)
                try:
                    new = create and self._never_begun(probe)
                    if not new:
                        self._check_schema(probe)
                finally:
                    probe.close()
            conn = self._connect(self.readonly)
            try:
                self._prepare(conn, new)
            except BaseException:
                conn.close()
                raise
        except sqlite3.OperationalError as exc:
            self._release_lock()
            raise ConfigError(f"{db}: cannot open the tournament database: {exc}") from None
        except sqlite3.DatabaseError as exc:  # "file is not a database", "database disk image is malformed"
            self._release_lock()
            raise self._not_ours(str(exc)) from None
        except BaseException:
            self._release_lock()
            raise
        return conn

    def _not_ours(self, why: str) -> ConfigError:
        return ConfigError(f"{self.db_path}: not a patchwork-arena results database ({why}); it was left "
                           "untouched")

    def _sniff(self, create: bool) -> bool:
        """Check the database file's bytes before SQLite sees it (SQLite may rewrite a file it
        opens for writing); True if there is no database yet (no file, or an empty one)."""
        db = self.db_path
        try:
            size = db.stat().st_size if db.exists() else 0
            header = b""
            if size:
                with db.open("rb") as handle:  # the header only: the file may be gigabytes
                    header = handle.read(100)
        except OSError as exc:
            raise ConfigError(f"{db}: cannot read: {exc.strerror}") from None
        if not size:
            if not create:
                raise self._not_ours("an empty file")
            if self.jsonl_path.is_file() and self.jsonl_path.stat().st_size:
                raise self._not_ours(f"an empty file, while {JSONL_NAME} holds games: restore it from a "
                                     "backup, or use another --out")
            return True
        if len(header) < 100 or not header.startswith(SQLITE_MAGIC):
            raise self._not_ours("not an SQLite database file")
        page_size = int.from_bytes(header[16:18], "big")
        page_size = 65536 if page_size == 1 else page_size
        pages = int.from_bytes(header[28:32], "big")
        wal = db.with_name(db.name + "-wal")
        wal_size = wal.stat().st_size if wal.is_file() else 0
        if wal_size:  # a run killed with commits not yet copied into the database: SQLite replays it
            with wal.open("rb") as handle:
                wal_header = handle.read(32)
            magic = int.from_bytes(wal_header[:4], "big") if len(wal_header) == 32 else 0
            if magic not in WAL_MAGIC or int.from_bytes(wal_header[8:12], "big") != page_size:
                raise self._not_ours(f"{wal.name} is not a write-ahead log of this database")
        elif header[24:28] == header[92:96] and size < pages * page_size:  # the page count is valid
            raise self._not_ours(f"the file is truncated: {size} bytes of {pages * page_size}")
        return False

    def _connect(self, readonly: bool) -> sqlite3.Connection:
        if readonly:
            return sqlite3.connect(f"{self.db_path.resolve().as_uri()}?mode=ro", uri=True,
                                   timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        return sqlite3.connect(self.db_path, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                               check_same_thread=False)

    def _never_begun(self, conn: sqlite3.Connection) -> bool:
        """A database that holds nothing at all (no table, view or index, version 0) in a folder
        whose games.jsonl is empty: what a run killed between switching a new database to WAL
        and creating its tables leaves (kill -9 at start). It is made a new one: there is
        nothing in it to lose, and the same command then resumes as promised."""
        if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            return False
        if conn.execute("PRAGMA user_version").fetchone()[0]:
            return False
        return not (self.jsonl_path.is_file() and self.jsonl_path.stat().st_size)

    def _check_schema(self, conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = {row[0] for row in
                  conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        if 1 <= version <= SCHEMA_VERSION and set(TABLES) <= tables:
            return
        if version > SCHEMA_VERSION and set(TABLES) <= tables:
            why = f"schema version {version} is newer than this program's ({SCHEMA_VERSION})"
        elif not tables:
            why = "an SQLite database without tables"
        else:
            shown = ", ".join(sorted(tables)[:8]) + (", ..." if len(tables) > 8 else "")
            why = f"an SQLite database without the tournament tables; it holds {shown}"
        raise self._not_ours(why)

    def _prepare(self, conn: sqlite3.Connection, new: bool) -> None:
        if self.readonly:
            conn.execute("PRAGMA query_only = ON")
            self._check_schema(conn)
            return
        conn.execute("PRAGMA journal_mode = WAL")  # persistent
        conn.execute("PRAGMA synchronous = NORMAL")  # safe with WAL, see the module docstring
        version = 0 if new else conn.execute("PRAGMA user_version").fetchone()[0]
        if version < SCHEMA_VERSION:  # new, or an older results folder resumed: made current in one go
            steps = _SCHEMA if new else " ".join(_MIGRATIONS[v] for v in range(version, SCHEMA_VERSION))
            conn.executescript(f"BEGIN IMMEDIATE; {steps} {_MOVES_VIEW} "
                               f"PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;")

    def _take_lock(self) -> None:
        try:
            import fcntl
        except ImportError:  # not POSIX: no guard against two writers
            return
        path = self.folder / LOCK_NAME
        handle = path.open("a")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise ConfigError(f"{self.folder}: another process is writing to this results folder "
                              f"({path} is locked); wait for it or use another --out") from None
        self._lock_file = handle

    def _release_lock(self) -> None:
        if self._lock_file is not None:
            self._lock_file.close()  # closing the file releases the flock
            self._lock_file = None

    def close(self) -> None:
        with self._mutex:
            self._close_jsonl()
            if getattr(self, "_conn", None) is not None:
                self._conn.close()
            self._release_lock()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ config
    def stored_config(self) -> dict[str, Any] | None:
        """The config JSON stored by :meth:`save_config`, or None."""
        rows = self._query("SELECT value FROM tournament WHERE key = 'config'")
        return json.loads(rows[0][0]) if rows else None

    def check_config(self, config: TournamentConfig) -> None:
        """Raise ConfigError if the stored config differs from ``config`` in anything that
        changes results (entrants, format, challengers, games, seed, edition, time control).
        Name, concurrency and out may differ. Nothing stored yet: no-op."""
        stored = self.stored_config()
        if stored is None:
            return
        old = TournamentConfig.from_json(stored).result_json()
        new = config.result_json()
        differ = [key for key in RESULT_KEYS if old[key] != new[key]]
        if differ:
            changes = "; ".join(_entrants_change(old[key], new[key]) if key == "entrants" else
                                f"{key}: stored {_brief(key, old[key])}, now {_brief(key, new[key])}"
                                for key in differ)
            raise ConfigError(
                f"{self.folder} holds games of a different tournament ({', '.join(differ)} differ: "
                f"{changes}). Resuming would mix incompatible games: use another --out, or the stored "
                "settings to resume (the name, concurrency, sandbox and pondering may change)")

    def check_versions(self, versions: dict[str, str]) -> None:
        """Store each entrant's version (:meth:`Manifest.version`) the first time; after that,
        raise ConfigError when one differs: a resumed run would rate two versions of a bot
        as one (`submit --replace` between a run and its resume went unnoticed). Folders
        made before versions were stored take the current ones."""
        rows = self._query("SELECT value FROM tournament WHERE key = 'versions'")
        stored = json.loads(rows[0][0]) if rows else {}
        changed = sorted(name for name, version in versions.items()
                         if name in stored and stored[name] != version)
        if changed:
            raise ConfigError(
                f"{self.folder}: {', '.join(repr(name) for name in changed)} changed since "
                f"{'its' if len(changed) == 1 else 'their'} games were stored (command, protocol, build "
                "or submission differ): resuming would rate two versions as one bot. Put the old "
                "version back (arena submit keeps it in entrants/.previous/), or start afresh with "
                "another --out")
        if stored.keys() >= versions.keys():
            return
        self._writable()
        with self._mutex:
            try:
                self._conn.execute("INSERT INTO tournament (key, value) VALUES ('versions', ?) "
                                   "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                                   (json.dumps({**versions, **stored}),))
            except sqlite3.Error as exc:
                raise ArenaError(f"{self.db_path}: cannot store the entrants' versions: {exc}") from None

    def hidden_key(self) -> bytes:
        """The tournament's secret for its hidden draws (Stack'n Stuff's join orders, see
        :func:`arena.tournament.schedule.hidden_seed`): made (os.urandom) the first time and
        kept in the database, so that a resumed run plays the games it has left exactly as an
        uninterrupted one would have. Bots never see it: under strict the results folder does
        not exist in their world, and each record keeps its game's hidden seed for replays."""
        rows = self._query("SELECT value FROM tournament WHERE key = 'hidden_key'")
        if rows:
            try:
                key = bytes.fromhex(rows[0][0])
            except (TypeError, ValueError):
                key = b""
            if len(key) != HIDDEN_KEY_BYTES:
                raise ConfigError(f"{self.db_path}: the stored hidden_key is not {HIDDEN_KEY_BYTES} bytes "
                                  "in hex: the games left cannot be played as the first ones were")
            return key
        from arena.tournament.series import new_hidden_key  # (series starts bots: not for every reader)

        self._writable()
        key = new_hidden_key()
        with self._mutex:
            try:
                self._conn.execute("INSERT INTO tournament (key, value) VALUES ('hidden_key', ?)",
                                   (key.hex(),))
            except sqlite3.Error as exc:
                raise ArenaError(f"{self.db_path}: cannot store the hidden key: {exc}") from None
        return key

    def save_config(self, config: TournamentConfig) -> None:
        """Check ``config`` against the stored one (see :meth:`check_config`), then store it
        if none is stored yet, and record the entrants."""
        self._writable()
        self.check_config(config)
        with self._mutex:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.execute("INSERT OR IGNORE INTO tournament (key, value) VALUES ('config', ?)",
                                 (json.dumps(config.to_json()),))
                    conn.execute("INSERT OR IGNORE INTO tournament (key, value) VALUES ('created_at', ?)",
                                 (utc_now(),))
                    conn.executemany(
                        "INSERT INTO entrants (name, folder, description) VALUES (?, ?, ?) "
                        "ON CONFLICT (name) DO UPDATE SET folder = excluded.folder, "
                        "description = excluded.description",
                        [(e.name, str(e.folder), e.description) for e in config.entrants])
                    conn.execute("COMMIT")
                except BaseException:
                    self._rollback()
                    raise
            except sqlite3.Error as exc:
                raise ArenaError(f"{self.db_path}: cannot store the config: {exc}") from None

    # ------------------------------------------------------------------ games
    def store_game(self, spec: GameSpec, record: dict[str, Any], duration_s: float) -> None:
        """Store one finished game: the game row and all its moves in one transaction, then
        its record as one line of games.jsonl. Raises RecordError if the record does not
        match ``spec`` or the game is already stored."""
        self._writable()
        record = _with_game_id(spec, record)
        game_row = _game_row(spec, record, duration_s)
        text = game_row[-1]
        with self._mutex:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    try:  # game_id and idx are unique: a game stored already fails here
                        conn.execute(_INSERT_GAME, game_row)
                    except sqlite3.IntegrityError:
                        clash = conn.execute("SELECT game_id, idx FROM games WHERE game_id = ? OR idx = ?",
                                             (spec.game_id, spec.index)).fetchone()
                        if clash is None:
                            raise
                        raise RecordError(f"game {spec.game_id} (index {spec.index}) is already stored as "
                                          f"{clash[0]} (index {clash[1]})") from None
                    conn.execute("COMMIT")
                except BaseException:
                    self._rollback()
                    raise
            except sqlite3.Error as exc:
                raise ArenaError(f"{self.db_path}: cannot store game {spec.game_id}: {exc}") from None
            self._append_jsonl(text)

    def completed_ids(self) -> set[str]:
        """The ids of the stored games (the ones a resumed run skips)."""
        return {row[0] for row in self._query("SELECT game_id FROM games")}

    def game_count(self) -> int:
        return int(self._query("SELECT count(*) FROM games")[0][0])

    def records(self) -> Iterator[dict[str, Any]]:
        """The stored game records in schedule (idx) order."""
        for (text,) in self._query("SELECT record FROM games ORDER BY idx"):
            yield json.loads(text)

    def games_frame(self) -> pd.DataFrame:
        """One row per stored game, ordered by idx (record JSON left out): idx, game_id, pair,
        seed, seat0, seat1, score0, score1, winner, winner_name, loser (nullable), reason,
        detail, moves, duration_s, started_at, finished_at."""
        return self._frame(f"SELECT {', '.join(_GAME_COLUMNS)} FROM games ORDER BY idx", _GAME_TYPES)

    def moves_frame(self) -> pd.DataFrame:
        """One row per move, ordered by game idx then ply: idx, game_id, ply, player, name (the
        mover), action, patch (nullable), cells (JSON text), time_ms."""
        return self._frame(
            "SELECT g.idx, m.game_id, m.ply, m.player, "
            "CASE m.player WHEN 0 THEN g.seat0 ELSE g.seat1 END AS name, "
            "m.action, m.patch, m.cells, m.time_ms "
            "FROM moves m JOIN games g ON g.game_id = m.game_id ORDER BY g.idx, m.ply", _MOVE_TYPES)

    def finished_games(self, players: list[str] | None, limit: int) -> list[tuple[Any, ...]]:
        """The newest stored games (of ``players``, if given), newest first: game_id, seat0,
        seat1, winner, winner_name, reason, score0, score1, moves, started_at, finished_at."""
        sql = ("SELECT game_id, seat0, seat1, winner, winner_name, reason, score0, score1, moves, "
               "started_at, finished_at FROM games")
        args: list[Any] = []
        if players is not None:
            marks = ", ".join("?" * len(players)) or "NULL"
            sql += f" WHERE seat0 IN ({marks}) OR seat1 IN ({marks})"
            args = [*players, *players]
        with self._mutex:
            try:
                return self._conn.execute(sql + " ORDER BY idx DESC LIMIT ?", (*args, limit)).fetchall()
            except sqlite3.Error as exc:
                raise self._read_error(exc) from None

    def rows(self, sql: str, args: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
        """The rows of a read-only query, one at a time, on a connection of their own (a long
        read never holds the writer's lock)."""
        conn = self._connect(readonly=True)
        try:
            yield from conn.execute(sql, args)
        except sqlite3.Error as exc:
            raise self._read_error(exc) from None
        finally:
            conn.close()

    def record(self, game_id: str) -> dict[str, Any] | None:
        """One stored game's record, or None."""
        with self._mutex:
            try:
                row = self._conn.execute("SELECT record FROM games WHERE game_id = ?", (game_id,)).fetchone()
            except sqlite3.Error as exc:
                raise self._read_error(exc) from None
        return None if row is None else json.loads(row[0])

    def entrants_frame(self) -> pd.DataFrame:
        """The entrants: name, folder, description (sorted by name)."""
        return self._frame("SELECT name, folder, description FROM entrants ORDER BY name", {})

    # ------------------------------------------------------------------ games.jsonl
    def repair_jsonl(self) -> bool:
        """Make games.jsonl hold exactly the stored games; True if it had to be rewritten
        (then in idx order). Done when a writer opens the folder."""
        self._writable()
        path = self.jsonl_path
        if (path.exists() or path.is_symlink()) and not path.is_file():
            raise ConfigError(f"{path}: not a file; move it away and run again: every game is in {DB_NAME} "
                              f"and {JSONL_NAME} is written again from it")
        with self._mutex:
            stored = [row[0] for row in self._conn.execute("SELECT game_id FROM games ORDER BY idx")]
            listed = _jsonl_ids(self.jsonl_path)
            if listed is not None and len(listed) == len(set(listed)) and set(listed) == set(stored):
                return False
            if listed is None and not stored and not self.jsonl_path.exists():
                self.jsonl_path.touch()
                return False
            self._close_jsonl()
            tmp = self.jsonl_path.with_name(JSONL_NAME + ".tmp")
            with tmp.open("w", encoding="utf-8") as handle:
                for (text,) in self._conn.execute("SELECT record FROM games ORDER BY idx"):
                    handle.write(text + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.jsonl_path)
            return True

    # ------------------------------------------------------------------ helpers
    def _writable(self) -> None:
        if self.readonly:
            raise ConfigError(f"{self.folder}: opened read-only")

    def _append_jsonl(self, text: str) -> None:
        """Append one record line: one write to a descriptor kept open (O_APPEND), not an
        open and close per game. If the path no longer names that file (deleted, renamed or
        replaced meanwhile), it is opened again (a folder there raises IsADirectoryError)."""
        if self._jsonl_fd is not None:
            try:
                current = os.stat(self.jsonl_path)
                same = (current.st_dev, current.st_ino) == self._jsonl_id
            except FileNotFoundError:
                same = False
            if not same:
                self._close_jsonl()
        if self._jsonl_fd is None:
            self._jsonl_fd = os.open(self.jsonl_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC,
                                     0o644)
            opened = os.fstat(self._jsonl_fd)
            self._jsonl_id = (opened.st_dev, opened.st_ino)
        data = memoryview((text + "\n").encode())
        while data:
            data = data[os.write(self._jsonl_fd, data):]

    def _close_jsonl(self) -> None:
        if self._jsonl_fd is not None:
            os.close(self._jsonl_fd)
            self._jsonl_fd = None

    def _rollback(self) -> None:
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    def _read_error(self, exc: BaseException) -> ArenaError:
        if type(exc) is sqlite3.DatabaseError:  # corrupt pages (not "locked", not "no such table")
            return self._not_ours(str(exc))
        return ArenaError(f"{self.db_path}: cannot read: {exc}")

    def _query(self, sql: str) -> list[Any]:
        with self._mutex:
            try:
                return self._conn.execute(sql).fetchall()
            except sqlite3.Error as exc:
                raise self._read_error(exc) from None

    def _frame(self, sql: str, types: dict[str, str]) -> pd.DataFrame:
        import pandas as pd

        with self._mutex:
            try:
                frame = pd.read_sql_query(sql, self._conn)
            except (sqlite3.Error, pd.errors.DatabaseError) as exc:
                raise self._read_error(exc.__cause__ or exc) from None
        return frame.astype(types)


def _with_game_id(spec: GameSpec, record: dict[str, Any]) -> dict[str, Any]:
    """The record with ``game_id`` set (placed before the moves if it was missing)."""
    if not isinstance(record, dict):
        raise RecordError(f"game {spec.game_id}: a record must be a JSON object")
    if "game_id" in record:
        if record["game_id"] != spec.game_id:
            raise RecordError(f"game {spec.game_id}: the record says game_id {record['game_id']!r}")
        return record
    out: dict[str, Any] = {}
    for key, value in record.items():
        if key == "moves":
            out["game_id"] = spec.game_id
        out[key] = value
    out.setdefault("game_id", spec.game_id)
    return out


def _game_row(spec: GameSpec, record: dict[str, Any], duration_s: float) -> tuple[Any, ...]:
    """The games row (record JSON last); RecordError if the record is not of the shape of
    arena.records.make_record (its moves included: the moves view reads them) or does not
    match the spec."""
    def bad(why: str) -> RecordError:
        return RecordError(f"game {spec.game_id}: {why}")

    if record.get("players") != [spec.seat0, spec.seat1]:
        raise bad(f"the record's players {record.get('players')!r} are not [{spec.seat0!r}, {spec.seat1!r}]")
    if record.get("seed") != spec.seed:
        raise bad(f"the record's seed {record.get('seed')!r} is not the scheduled {spec.seed}")
    result = record.get("result")
    if not isinstance(result, dict):
        raise bad("result must be a JSON object")
    scores, winner, loser = result.get("scores"), result.get("winner"), result.get("loser")
    if not (isinstance(scores, list) and len(scores) == 2 and all(type(s) is int for s in scores)):
        raise bad(f"result.scores must be two integers, got {scores!r}")
    if winner not in (0, 1) or isinstance(winner, bool):
        raise bad(f"result.winner must be 0 or 1, got {winner!r}")
    if loser not in (None, 0, 1) or isinstance(loser, bool):
        raise bad(f"result.loser must be 0, 1 or absent, got {loser!r}")
    reason = result.get("reason")
    if not isinstance(reason, str):
        raise bad(f"result.reason must be a string, got {reason!r}")
    moves = record.get("moves")
    if not isinstance(moves, list):
        raise bad("moves must be a list")
    for ply, entry in enumerate(moves):
        if not (isinstance(entry, dict) and entry.get("player") in (0, 1)
                and isinstance(entry.get("action"), str)):
            raise bad(f"move {ply + 1} is not a move object with player and action: {entry!r}"[:300])
        time_ms = entry.get("time_ms")
        if time_ms is not None and not (type(time_ms) in (int, float) and math.isfinite(time_ms)):
            raise bad(f"move {ply + 1}: time_ms must be a finite number, got {time_ms!r}"[:300])
    try:
        # A record's only floats are its moves' time_ms (checked above): orjson, 9x faster than
        # json (5.6 against 50.6 us for a 59-move game); non-ASCII text still goes through json,
        # so games.jsonl stays ASCII (no U+2028 inside a line).
        text = encode_trusted(record)
    except (TypeError, ValueError) as exc:
        raise bad(f"the record is not JSON: {exc}") from None
    names = (spec.seat0, spec.seat1)
    game_row = (spec.index, spec.game_id, spec.pair, spec.seed, spec.seat0, spec.seat1, scores[0], scores[1],
                winner, names[winner], loser, reason, str(result.get("detail") or ""), len(moves),
                float(duration_s), record.get("started_at"), record.get("finished_at"), text)
    return game_row


def _jsonl_ids(path: Path) -> list[str] | None:
    """The game ids in a games.jsonl, in file order; None if it is missing or damaged (a partial
    or unparsable line, a line without a game_id)."""
    try:
        handle = path.open("rb")
    except OSError:
        return None
    ids = []
    with handle:
        for line in handle:
            if not line.endswith(b"\n"):
                return None
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                return None
            if not isinstance(record, dict) or not isinstance(record.get("game_id"), str):
                return None
            ids.append(record["game_id"])
    return ids


def _entrants_change(old: list[dict[str, str]], new: list[dict[str, str]]) -> str:
    """What differs between two entrant lists, not both lists whole (13 entrants each read as
    a wall of text): the entrants gone, added, or in another folder."""
    before = {e["name"]: e["folder"] for e in old}
    after = {e["name"]: e["folder"] for e in new}
    parts = []
    if gone := [n for n in before if n not in after]:
        parts.append("no longer: " + ", ".join(f"{n} ({before[n]})" for n in gone))
    if added := [n for n in after if n not in before]:
        parts.append("new: " + ", ".join(f"{n} ({after[n]})" for n in added))
    if moved := [n for n in after if n in before and before[n] != after[n]]:
        parts.append("another folder: " + ", ".join(f"{n} ({before[n]} -> {after[n]})" for n in moved))
    return "entrants: " + ("; ".join(parts) if parts else "the same, in another order")


def _brief(key: str, value: Any) -> str:
    if key == "entrants":
        return "[" + ", ".join(f"{e['name']} ({e['folder']})" for e in value) + "]"
    text = json.dumps(value)
    return text if len(text) <= 200 else text[:197] + "..."


__all__ = ["DB_NAME", "JSONL_NAME", "LOCK_NAME", "ResultStore"]
