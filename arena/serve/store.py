"""The arena's data: authors, tokens, bots, versions, the pairing log and settings, in the
same SQLite file as its games (``DIR/tournament.db``, a results folder that `arena ratings`
and `arena report` read as it is).

Only the server process writes. The games table belongs to :class:`ResultStore` (one
transaction a game, re-verified first); these tables are written here, one short
transaction each, through one connection guarded by a lock, so no write ever waits on
another writer ("database is locked" cannot happen: there is no other writer).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.errors import ArenaError
from arena.tournament.storage import BUSY_TIMEOUT_S, DB_NAME

TOKEN_PREFIX = "pwa_"
ORGANIZER = "organizer"
HOUSE = "house"  # the author of the house bots
STATES = ("queued", "building", "checking", "active", "rejected")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS arena_authors (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    token_hash TEXT UNIQUE,
    created_at REAL NOT NULL,
    revoked_at REAL
);
CREATE TABLE IF NOT EXISTS arena_bots (
    name TEXT PRIMARY KEY,
    author_id INTEGER NOT NULL REFERENCES arena_authors(id),
    active_version INTEGER,          -- arena_versions.id chosen by the author; NULL: the newest active
    quarantined INTEGER NOT NULL DEFAULT 0,
    description TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS arena_versions (
    id INTEGER PRIMARY KEY,
    bot TEXT NOT NULL REFERENCES arena_bots(name),
    number INTEGER NOT NULL,
    digest TEXT NOT NULL,
    state TEXT NOT NULL,
    cause TEXT NOT NULL DEFAULT '',
    report TEXT NOT NULL DEFAULT '{}',   -- the check's report and bot log (JSON), for its author only
    folder TEXT NOT NULL,
    created_at REAL NOT NULL,
    state_at REAL NOT NULL,
    UNIQUE (bot, number),
    UNIQUE (bot, digest)
);
CREATE TABLE IF NOT EXISTS arena_uploads (
    author_id INTEGER NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS arena_uploads_by_author ON arena_uploads (author_id, at);
CREATE TABLE IF NOT EXISTS arena_pairings (
    id INTEGER PRIMARY KEY,
    at REAL NOT NULL,
    seat0 TEXT NOT NULL,
    seat1 TEXT NOT NULL,
    reason TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS arena_settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


def hash_token(token: str) -> str:
    """Tokens carry 192 random bits: a plain SHA-256 is enough to store them (no guessing to slow)."""
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(24)


def version_label(bot: str, number: int) -> str:
    """The name a version plays and is rated under: ``bot.vN``."""
    return f"{bot}.v{number}"


@dataclass(frozen=True)
class Author:
    id: int
    name: str
    organizer: bool = False


@dataclass(frozen=True)
class Version:
    id: int
    bot: str
    number: int
    digest: str
    state: str
    cause: str
    folder: str
    created_at: float
    state_at: float

    @property
    def label(self) -> str:
        return version_label(self.bot, self.number)

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "bot": self.bot,
            "number": self.number,
            "label": self.label,
            "state": self.state,
            "cause": self.cause,
            "created_at": self.created_at,
            "state_at": self.state_at,
            "digest": self.digest,
        }


_VERSION_COLUMNS = "id, bot, number, digest, state, cause, folder, created_at, state_at"


class ArenaStore:
    """The arena tables of ``DIR/tournament.db``; every method is one short transaction."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / DB_NAME
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.executescript(_SCHEMA)
            columns = {row[1] for row in self._conn.execute("PRAGMA table_info(arena_versions)")}
            if "bytes" not in columns:  # a data folder of the first release
                self._conn.execute("ALTER TABLE arena_versions ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0")
        except sqlite3.Error as exc:
            raise ArenaError(f"{self.path}: cannot open the arena database: {exc}") from None

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        with self._lock:
            return self._conn.execute(sql, args).fetchall()

    def _write(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        with self._lock:
            cursor = self._conn.execute(sql, args)
            return int(cursor.lastrowid or 0)

    # ------------------------------------------------------------------ settings
    def setting(self, key: str, default: Any = None) -> Any:
        rows = self._rows("SELECT value FROM arena_settings WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else default

    def set_setting(self, key: str, value: Any) -> None:
        self._write(
            "INSERT INTO arena_settings (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value)),
        )

    # ------------------------------------------------------------------ authors
    def add_author(self, name: str) -> str:
        """A new author with a new token (returned, never stored in the clear); ArenaError if taken."""
        token = new_token()
        try:
            self._write(
                "INSERT INTO arena_authors (name, token_hash, created_at) VALUES (?, ?, ?)",
                (name, hash_token(token), time.time()),
            )
        except sqlite3.IntegrityError:
            raise ArenaError(f"an author named {name!r} already exists") from None
        return token

    def ensure_house(self) -> int:
        rows = self._rows("SELECT id FROM arena_authors WHERE name = ?", (HOUSE,))
        if rows:
            return int(rows[0][0])
        return self._write(
            "INSERT INTO arena_authors (name, token_hash, created_at) VALUES (?, NULL, ?)",
            (HOUSE, time.time()),
        )

    def revoke_author(self, name: str) -> bool:
        with self._lock:
            cursor = self._conn.execute(
                "UPDATE arena_authors SET revoked_at = ?, token_hash = NULL WHERE name = ? AND name != ?",
                (time.time(), name, HOUSE),
            )
            return cursor.rowcount > 0

    def new_author_token(self, name: str) -> str | None:
        """A fresh token for ``name`` (revoked or not): the old one stops working."""
        token = new_token()
        with self._lock:
            cursor = self._conn.execute(
                "UPDATE arena_authors SET token_hash = ?, revoked_at = NULL WHERE name = ? AND name != ?",
                (hash_token(token), name, HOUSE),
            )
        return token if cursor.rowcount else None

    def author_by_token(self, token: str) -> Author | None:
        return self.author_by_token_hash(hash_token(token))

    def author_by_token_hash(self, token_hash: str) -> Author | None:
        """The author whose current token hashes to ``token_hash`` (a page session holds it)."""
        rows = self._rows(
            "SELECT id, name FROM arena_authors WHERE token_hash = ? AND revoked_at IS NULL", (token_hash,)
        )
        return Author(int(rows[0][0]), rows[0][1]) if rows else None

    def authors(self) -> list[dict[str, Any]]:
        rows = self._rows(
            "SELECT a.name, a.created_at, a.revoked_at, "
            "(SELECT count(*) FROM arena_bots b WHERE b.author_id = a.id) "
            "FROM arena_authors a ORDER BY a.name"
        )
        return [{"name": r[0], "created_at": r[1], "revoked": r[2] is not None, "bots": r[3]} for r in rows]

    def author_name(self, author_id: int) -> str:
        rows = self._rows("SELECT name FROM arena_authors WHERE id = ?", (author_id,))
        return rows[0][0] if rows else "?"

    # ------------------------------------------------------------------ uploads (quota)
    def uploads_since(self, author_id: int, since: float) -> list[float]:
        return [
            r[0]
            for r in self._rows(
                "SELECT at FROM arena_uploads WHERE author_id = ? AND at >= ? ORDER BY at", (author_id, since)
            )
        ]

    def count_upload(self, author_id: int) -> None:
        now = time.time()
        with self._lock:
            self._conn.execute("INSERT INTO arena_uploads (author_id, at) VALUES (?, ?)", (author_id, now))
            self._conn.execute("DELETE FROM arena_uploads WHERE at < ?", (now - 86_400,))

    # ------------------------------------------------------------------ bots and versions
    _BOT_SQL = ("SELECT b.name, b.author_id, a.name, b.active_version, b.quarantined, b.description "
                "FROM arena_bots b JOIN arena_authors a ON a.id = b.author_id")

    @staticmethod
    def _bot_row(r: Any) -> dict[str, Any]:
        return {"name": r[0], "author_id": r[1], "author": r[2], "pinned_version": r[3],
                "quarantined": bool(r[4]), "description": r[5]}

    def bot(self, name: str) -> dict[str, Any] | None:
        """The bot named ``name`` in any letter case, or None."""
        rows = self._rows(self._BOT_SQL + " WHERE lower(b.name) = lower(?)", (name,))
        return self._bot_row(rows[0]) if rows else None

    def bots(self) -> list[dict[str, Any]]:
        return [self._bot_row(r) for r in self._rows(self._BOT_SQL + " ORDER BY b.name")]

    def claim_bot(self, name: str, author_id: int, description: str = "") -> None:
        """Create the bot for ``author_id`` if nobody owns the name (in any case) yet."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                taken = self._conn.execute(
                    "SELECT 1 FROM arena_bots WHERE lower(name) = lower(?)", (name,)
                ).fetchone()
                if taken is None:
                    self._conn.execute(
                        "INSERT INTO arena_bots (name, author_id, description, created_at) "
                        "VALUES (?, ?, ?, ?)",
                        (name, author_id, description, time.time()),
                    )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def set_description(self, name: str, description: str) -> None:
        self._write("UPDATE arena_bots SET description = ? WHERE name = ?", (description, name))

    def author_bytes(self, author_id: int) -> int:
        """What the versions of the author's bots hold on disk, unpacked."""
        rows = self._rows(
            "SELECT coalesce(sum(v.bytes), 0) FROM arena_versions v JOIN arena_bots b "
            "ON b.name = v.bot WHERE b.author_id = ?",
            (author_id,),
        )
        return int(rows[0][0])

    def add_version(
        self, bot: str, digest: str, folder_for: Any, size: int = 0
    ) -> tuple[Version | None, int | None]:
        """A new version of ``bot`` numbered next, its folder named by ``folder_for(number)``;
        or (None, number) when a version with the same content exists."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                same = self._conn.execute(
                    "SELECT number FROM arena_versions WHERE bot = ? AND digest = ?", (bot, digest)
                ).fetchone()
                if same is not None:
                    self._conn.execute("ROLLBACK")
                    return None, int(same[0])
                number = 1 + int(
                    self._conn.execute(
                        "SELECT coalesce(max(number), 0) FROM arena_versions WHERE bot = ?", (bot,)
                    ).fetchone()[0]
                )
                now = time.time()
                folder = str(folder_for(number))
                cursor = self._conn.execute(
                    "INSERT INTO arena_versions (bot, number, digest, state, folder, created_at, state_at, "
                    "bytes) VALUES (?, ?, ?, 'queued', ?, ?, ?, ?)",
                    (bot, number, digest, folder, now, now, size),
                )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        return Version(int(cursor.lastrowid or 0), bot, number, digest, "queued", "", folder, now, now), None

    def version(self, version_id: int) -> Version | None:
        rows = self._rows(f"SELECT {_VERSION_COLUMNS} FROM arena_versions WHERE id = ?", (version_id,))
        return Version(*rows[0]) if rows else None

    def versions(self, bot: str | None = None, states: tuple[str, ...] = ()) -> list[Version]:
        sql = f"SELECT {_VERSION_COLUMNS} FROM arena_versions"
        where, args = [], []
        if bot is not None:
            where.append("bot = ?")
            args.append(bot)
        if states:
            where.append(f"state IN ({', '.join('?' * len(states))})")
            args.extend(states)
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [Version(*r) for r in self._rows(sql + " ORDER BY bot, number", tuple(args))]

    def version_report(self, version_id: int) -> dict[str, Any]:
        """The check's report: lines, problems, warnings, and the end of the bot's log."""
        rows = self._rows("SELECT report FROM arena_versions WHERE id = ?", (version_id,))
        report = json.loads(rows[0][0]) if rows else {}
        return report if isinstance(report, dict) else {}

    def set_state(
        self,
        version_id: int,
        state: str,
        *,
        cause: str = "",
        report: dict[str, Any] | None = None,
        only_from: tuple[str, ...] = (),
    ) -> bool:
        """Move a version to ``state``; with ``only_from``, only if it is in one of those (a late
        answer for a version already timed out changes nothing). True if it moved."""
        assert state in STATES
        sql = "UPDATE arena_versions SET state = ?, cause = ?, state_at = ?"
        args: list[Any] = [state, cause, time.time()]
        if report is not None:
            sql += ", report = ?"
            args.append(json.dumps(report))
        sql += " WHERE id = ?"
        args.append(version_id)
        if only_from:
            sql += f" AND state IN ({', '.join('?' * len(only_from))})"
            args.extend(only_from)
        with self._lock:
            return self._conn.execute(sql, tuple(args)).rowcount > 0

    def pin_version(self, bot: str, version_id: int | None) -> None:
        self._write("UPDATE arena_bots SET active_version = ? WHERE name = ?", (version_id, bot))

    def set_quarantined(self, bot: str, quarantined: bool) -> bool:
        with self._lock:
            return (
                self._conn.execute(
                    "UPDATE arena_bots SET quarantined = ? WHERE name = ?", (int(quarantined), bot)
                ).rowcount
                > 0
            )

    def playing_versions(self) -> list[Version]:
        """The version each bot plays: the author's pinned one if still active, else its
        newest active one; none for a quarantined bot."""
        out = []
        active: dict[str, list[Version]] = {}
        for version in self.versions(states=("active",)):
            active.setdefault(version.bot, []).append(version)
        for bot in self.bots():
            candidates = active.get(bot["name"], [])
            if bot["quarantined"] or not candidates:
                continue
            pinned = [v for v in candidates if v.id == bot["pinned_version"]]
            out.append(pinned[0] if pinned else max(candidates, key=lambda v: v.number))
        return out

    # ------------------------------------------------------------------ pairing log
    def log_pairing(self, seat0: str, seat1: str, reason: str) -> None:
        with self._lock:
            cursor = self._conn.execute(
                "INSERT INTO arena_pairings (at, seat0, seat1, reason) VALUES (?, ?, ?, ?)",
                (time.time(), seat0, seat1, reason),
            )
            if cursor.lastrowid and cursor.lastrowid % 1000 == 0:  # keep the last 10,000
                self._conn.execute("DELETE FROM arena_pairings WHERE id <= ?", (cursor.lastrowid - 10_000,))

    def pairings(self, limit: int = 100) -> list[dict[str, Any]]:
        rows = self._rows(
            "SELECT at, seat0, seat1, reason FROM arena_pairings ORDER BY id DESC LIMIT ?", (limit,)
        )
        return [{"at": r[0], "seat0": r[1], "seat1": r[2], "reason": r[3]} for r in rows]


__all__ = [
    "HOUSE",
    "ORGANIZER",
    "STATES",
    "TOKEN_PREFIX",
    "ArenaStore",
    "Author",
    "Version",
    "hash_token",
    "new_token",
    "version_label",
]
