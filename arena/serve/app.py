"""The HTTP face of `arena serve`: the JSON API (OpenAPI at /api/docs) over :class:`Arena`.

Every request is untrusted. The edge checks it once: the body's size (413 before it is
read), the token (only in ``Authorization: Bearer``; one in a URL is refused), names by
the project's name rule, archives by :mod:`arena.serve.archive`. Every error is JSON with
a one-line ``detail``; nothing ever answers with a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import secrets
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arena.errors import ArenaError
from arena.serve.archive import ArchiveError, Limits, unpack
from arena.serve.pages import CONTENT_SECURITY_POLICY, add_pages
from arena.serve.service import Arena, version_folder
from arena.serve.store import HOUSE, ORGANIZER, Author, hash_token
from arena.untrusted import NAME_RULE, is_valid_name, shown

log = logging.getLogger(__name__)

SMALL_BODY_BYTES = 64 * 1024  # any request but an upload
FORM_OVERHEAD_BYTES = 64 * 1024  # a multipart form's headers around the archive
MAX_EVENT_STREAMS = 500  # 200 cost 0.21 cores (make bench); 1,000 non-readers slowed every request to seconds
EVENT_QUEUE = 2000  # events a slow reader may lag behind before it is dropped (it reconnects)
_VERSION_SUFFIX = re.compile(r"\.v\d+$")


class Refused(Exception):
    """An error answer: status, one-line detail, extra headers."""

    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = " ".join(detail.split())[:1000]
        self.headers = headers or {}


def _error(status: int, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    # nosniff here too: a 500 or a BodyLimit answer never passes the middleware that adds it
    headers = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store", **(headers or {})}
    return JSONResponse({"detail": " ".join(str(detail).split())[:1000]}, status_code=status, headers=headers)


class BodyLimit:
    """Refuses a body over its limit with 413, from Content-Length before reading it, or
    while it streams in (chunked); the upload path gets the archive limit."""

    def __init__(self, app: ASGIApp, upload_bytes: int) -> None:
        self.app = app
        self.upload_bytes = upload_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        upload = scope["method"] == "POST" and scope["path"].endswith("/versions")
        limit = self.upload_bytes + FORM_OVERHEAD_BYTES if upload else SMALL_BODY_BYTES
        what = (
            f"an archive is limited to {self.upload_bytes} bytes"
            if upload
            else f"a request body is limited to {SMALL_BODY_BYTES} bytes"
        )
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    await _error(400, "Content-Length is not a number")(scope, receive, send)
                    return
                if length > limit:
                    await _error(413, f"the request is too large ({length} bytes): {what}")(
                        scope, receive, send
                    )
                    return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise Refused(413, f"the request is too large (over {limit} bytes): {what}")
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except Refused as exc:
            if not started:
                await _error(exc.status, exc.detail)(scope, receive, send)


class Events:
    """Server-sent events: every subscriber has a bounded queue; a reader that falls behind
    is dropped (its browser reconnects) rather than holding memory."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.queues: set[asyncio.Queue[str | None]] = set()
        self.sequence = 0

    def publish(self, kind: str, data: dict[str, Any]) -> None:
        """From any thread."""
        loop = self.loop
        if loop is None or not self.queues:
            return
        self.sequence += 1
        text = f"id: {self.sequence}\nevent: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"
        try:
            loop.call_soon_threadsafe(self._deliver, text)
        except RuntimeError:  # the loop is closed: shutting down
            pass

    def _deliver(self, text: str) -> None:
        for queue in list(self.queues):
            try:
                queue.put_nowait(text)
            except asyncio.QueueFull:
                self.queues.discard(queue)
                queue._queue.clear()  # type: ignore[attr-defined]
                queue.put_nowait(None)


def create_app(
    arena: Arena,
    events: Events,
    *,
    uploads_per_hour: int = 20,
    max_upload_bytes: int = 20 << 20,
    organizer_hash: str = "",
) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        events.loop = asyncio.get_running_loop()  # events published from threads are delivered on it
        yield

    app = FastAPI(
        lifespan=lifespan,
        title="patchwork-arena",
        docs_url="/api/docs",
        openapi_url="/api/openapi.json",
        redoc_url=None,
        version="1",
    )
    app.state.arena = arena
    app.state.events = events
    limits = Limits(max_bytes=max_upload_bytes)

    # ------------------------------------------------------------------ errors
    @app.exception_handler(Refused)
    async def _refused(request: Request, exc: Refused) -> JSONResponse:
        return _error(exc.status, exc.detail, exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail), getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return _error(422, f"{where}: {first.get('msg', 'invalid')}")

    @app.exception_handler(Exception)
    async def _bug(request: Request, exc: Exception) -> JSONResponse:
        log.exception("an error answering %s %s", request.method, request.url.path)
        return _error(500, f"internal error ({type(exc).__name__}); the server carries on")

    @app.middleware("http")
    async def _headers(request: Request, call_next: Any) -> Response:
        for key, value in request.query_params.multi_items():
            if key.lower() in ("token", "access_token", "auth") or value.startswith("pwa_"):
                return _error(400, "a token goes in the Authorization header (Bearer), never in a URL")
        response: Response = await call_next(request)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        response.headers.setdefault("X-Frame-Options", "DENY")
        if request.url.path.startswith("/api/") and not request.url.path.startswith("/api/docs"):
            response.headers.setdefault("Cache-Control", "no-store")
        if not request.url.path.startswith("/api/"):
            response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response

    # ------------------------------------------------------------------ who is asking
    def token_of(request: Request) -> str | None:
        header = request.headers.get("authorization")
        if header is None:
            return None
        scheme, _, token = header.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token or len(token) > 200:
            raise Refused(401, "the Authorization header must be 'Bearer <token>'")
        return token

    def caller(request: Request) -> Author | None:
        token = token_of(request)
        if token is None:
            return None
        if organizer_hash and secrets.compare_digest(hash_token(token), organizer_hash):
            return Author(0, ORGANIZER, organizer=True)
        author = arena.store.author_by_token(token)
        if author is None:
            raise Refused(401, "unknown or revoked token")
        return author

    def author(request: Request) -> Author:
        who = caller(request)
        if who is None:
            raise Refused(
                401,
                "no token: send 'Authorization: Bearer <token>' (arena upload reads it from "
                "ARENA_TOKEN or --token-file)",
            )
        return who

    def organizer(request: Request) -> Author:
        who = author(request)
        if not who.organizer:
            raise Refused(403, "only the organizer may do this")
        return who

    def bot_or_404(name: str) -> dict[str, Any]:
        bot = arena.store.bot(name) if is_valid_name(name) else None
        if bot is None:
            raise Refused(404, f"no bot named {shown(name)}")
        return bot

    def may_see_private(who: Author | None, bot: dict[str, Any]) -> bool:
        return who is not None and (who.organizer or who.id == bot["author_id"])

    # ------------------------------------------------------------------ reading
    @app.get("/api/leaderboard", summary="The playing version of every bot, best first")
    def leaderboard() -> Response:
        return Response(arena.leaderboard_json(), media_type="application/json")

    @app.get("/api/ladder", summary="The ladder's state: paused, frozen, games stored and running")
    def ladder() -> dict[str, Any]:
        return {
            "paused": arena.paused,
            "frozen": arena.store.setting("frozen_board") is not None,
            "games": arena.games_stored,
            "running": len(arena.live),
            "playing": [v.label for v in arena.playing()],
            "time_control": arena.options.time_control.to_json(),
            "game": arena.options.game,
            "edition": arena.options.edition,
        }

    @app.get("/api/bots", summary="Every bot")
    def bots() -> list[dict[str, Any]]:
        playing = {v.bot: v.number for v in arena.playing()}
        return [
            {
                "name": b["name"],
                "author": b["author"],
                "quarantined": b["quarantined"],
                "playing_version": playing.get(b["name"]),
                "description": b["description"],
            }
            for b in arena.store.bots()
        ]

    @app.get("/api/bots/{name}", summary="A bot: its versions, their states, its rating history")
    def bot(name: str, request: Request) -> dict[str, Any]:
        found = bot_or_404(name)
        who = caller(request)
        private = may_see_private(who, found)
        playing = {v.bot: v for v in arena.playing()}.get(found["name"])
        versions = []
        for version in arena.store.versions(bot=found["name"]):
            entry = version.public()
            entry["playing"] = playing is not None and playing.id == version.id
            standing = arena.standings.get(version.label)
            entry["games"] = standing.games if standing else 0
            if private:
                entry["report"] = arena.store.version_report(version.id)
            versions.append(entry)
        return {
            "name": found["name"],
            "author": found["author"],
            "description": found["description"],
            "quarantined": found["quarantined"],
            "playing_version": playing.number if playing else None,
            "pinned": found["pinned_version"] is not None,
            "versions": versions,
            "history": {
                v.label: arena.history(v.label)
                for v in arena.store.versions(bot=found["name"])
                if v.label in arena.standings
            },
        }

    @app.get("/api/games", summary="Games in progress, then finished ones, newest first")
    def games(bot: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        if not 1 <= limit <= 10_000:
            raise Refused(422, f"limit: expected 1 to 10000, got {limit}")
        labels = None
        if bot:
            found = bot_or_404(bot)
            labels = [v.label for v in arena.store.versions(bot=found["name"])]
        return arena.games(labels, limit)

    @app.get("/api/games/{game_id}", summary="A game's record (running: the moves so far)")
    def game(game_id: str) -> dict[str, Any]:
        if len(game_id) > 100:
            raise Refused(404, "no such game")
        found = arena.game(game_id)
        if found is None:
            raise Refused(404, f"no game {shown(game_id)}")
        return found

    @app.get(
        "/api/versions/{version_id}", summary="A version: its state and cause (its check report: author only)"
    )
    def version(version_id: int, request: Request) -> dict[str, Any]:
        found = arena.store.version(version_id) if 0 < version_id < 2**63 else None  # SQLite's integers
        if found is None:
            raise Refused(404, f"no version {version_id}")
        out = found.public()
        bot = arena.store.bot(found.bot)
        if bot is not None and may_see_private(caller(request), bot):
            out["report"] = arena.store.version_report(version_id)
        return out

    @app.get("/api/me", summary="The caller: their bots, versions and the upload quota left")
    def me(request: Request) -> dict[str, Any]:
        who = author(request)
        if who.organizer:
            return {"name": ORGANIZER, "organizer": True, "bots": []}
        since = time.time() - 3600
        uploads = arena.store.uploads_since(who.id, since)
        mine = [b for b in arena.store.bots() if b["author_id"] == who.id]
        playing = {v.bot: v.number for v in arena.playing()}
        return {
            "name": who.name,
            "organizer": False,
            "quota": {
                "uploads_per_hour": uploads_per_hour,
                "uploads_left": max(0, uploads_per_hour - len(uploads)),
                "resets_in_s": round(uploads[0] + 3600 - time.time()) if uploads else 0,
                "max_archive_bytes": max_upload_bytes,
                "storage_bytes": arena.store.author_bytes(who.id),
                "storage_max_bytes": arena.options.max_author_bytes,
            },
            "bots": [
                {
                    "name": b["name"],
                    "quarantined": b["quarantined"],
                    "playing_version": playing.get(b["name"]),
                    "versions": [v.public() for v in arena.store.versions(bot=b["name"])],
                }
                for b in mine
            ],
        }

    # ------------------------------------------------------------------ uploads
    @app.post(
        "/api/bots/{name}/versions",
        status_code=201,
        summary="Upload a version: a multipart form whose file field 'archive' holds a .tar.gz or .zip",
    )
    async def upload(name: str, request: Request) -> dict[str, Any]:
        who = author(request)
        admit_upload(arena, who, name, uploads_per_hour)
        try:
            form = await request.form(max_files=1, max_fields=8)
        except Refused:
            raise
        except Exception as exc:
            if isinstance(exc, ExceptionGroup) and exc.subgroup(Refused):  # BodyLimit's 413, in a task group
                raise _first_refused(exc) from None
            raise Refused(
                400, f"the body is not a multipart form with a file field 'archive': {exc}"
            ) from None
        archive = form.get("archive")
        if archive is None or isinstance(archive, str):
            raise Refused(422, "the form has no file field 'archive' (a .tar.gz or .zip of the bot's folder)")
        data = await archive.read(max_upload_bytes + 1)
        await form.close()
        if len(data) > max_upload_bytes:
            raise Refused(413, f"the archive is larger than the limit of {max_upload_bytes} bytes")
        count_upload(arena, who, uploads_per_hour)
        return await run_in_threadpool(_take_upload, arena, who, name, data, limits)

    @app.put(
        "/api/bots/{name}/active", summary='Choose the version that plays: {"version": N} (null: the newest)'
    )
    async def set_active(name: str, request: Request) -> dict[str, Any]:
        who = author(request)
        bot = bot_or_404(name)
        if not (who.organizer or who.id == bot["author_id"]):
            raise Refused(403, f"{shown(bot['name'])} is another author's bot")
        body = await _json_body(request)
        number = body.get("version") if isinstance(body, dict) else None
        if number is not None and (isinstance(number, bool) or not isinstance(number, int)):
            raise Refused(422, "version: expected a version number or null")
        try:
            await run_in_threadpool(arena.set_active, bot["name"], number)
        except LookupError as exc:
            raise Refused(404, str(exc)) from None
        except ValueError as exc:
            raise Refused(409, str(exc)) from None
        return {"bot": bot["name"], "pinned_version": number}

    # ------------------------------------------------------------------ organizer
    @app.post("/api/authors", status_code=201, summary="Organizer: add an author; the token is shown once")
    async def add_author(request: Request) -> dict[str, Any]:
        organizer(request)
        body = await _json_body(request)
        name = body.get("name") if isinstance(body, dict) else None
        token = new_author(arena, name)
        return {"name": name, "token": token}

    @app.get("/api/authors", summary="Organizer: the authors")
    def authors(request: Request) -> list[dict[str, Any]]:
        organizer(request)
        return arena.store.authors()

    @app.delete("/api/authors/{name}", summary="Organizer: revoke an author's token (as POST .../revoke)")
    @app.post("/api/authors/{name}/revoke", summary="Organizer: revoke an author's token")
    def revoke(name: str, request: Request) -> dict[str, Any]:
        organizer(request)
        if not arena.store.revoke_author(name):
            raise Refused(404, f"no author named {shown(name)}")
        return {"name": name, "revoked": True}

    @app.post("/api/authors/{name}/token", summary="Organizer: a new token for an author (the old one stops)")
    def new_token(name: str, request: Request) -> dict[str, Any]:
        organizer(request)
        token = arena.store.new_author_token(name)
        if token is None:
            raise Refused(404, f"no author named {shown(name)}")
        return {"name": name, "token": token}

    @app.post("/api/ladder/pause", summary="Organizer: no new game starts (games in progress finish)")
    def pause(request: Request) -> dict[str, Any]:
        organizer(request)
        arena.set_paused(True)
        return {"paused": True}

    @app.post("/api/ladder/resume", summary="Organizer: the ladder plays again")
    def resume(request: Request) -> dict[str, Any]:
        organizer(request)
        arena.set_paused(False)
        return {"paused": False}

    @app.post("/api/ladder/freeze", summary="Organizer: the leaderboard stops changing (games go on)")
    def freeze(request: Request) -> dict[str, Any]:
        organizer(request)
        arena.freeze(True)
        return {"frozen": True}

    @app.post("/api/ladder/unfreeze", summary="Organizer: the leaderboard follows the games again")
    def unfreeze(request: Request) -> dict[str, Any]:
        organizer(request)
        arena.freeze(False)
        return {"frozen": False}

    @app.post("/api/bots/{name}/quarantine", summary="Organizer: the bot stops playing")
    def quarantine(name: str, request: Request) -> dict[str, Any]:
        organizer(request)
        bot = bot_or_404(name)
        arena.set_quarantined(bot["name"], True)
        return {"bot": bot["name"], "quarantined": True}

    @app.post("/api/bots/{name}/restore", summary="Organizer: a quarantined bot plays again")
    def restore(name: str, request: Request) -> dict[str, Any]:
        organizer(request)
        bot = bot_or_404(name)
        arena.set_quarantined(bot["name"], False)
        return {"bot": bot["name"], "quarantined": False}

    @app.get("/api/pairings", summary="Organizer: the pairing log, newest first, with each pairing's reason")
    def pairings(request: Request, limit: int = 100) -> list[dict[str, Any]]:
        organizer(request)
        return arena.store.pairings(max(1, min(limit, 10_000)))

    @app.post("/api/export", summary="Organizer: write the results folder (for arena ratings / arena report)")
    def export(request: Request) -> dict[str, Any]:
        organizer(request)
        return {"folder": str(arena.export())}

    # ------------------------------------------------------------------ events
    @app.get(
        "/api/events", summary="Server-sent events: game_started, move, game_ended, version, pairing, ladder"
    )
    async def stream(request: Request) -> StreamingResponse:
        if len(events.queues) >= MAX_EVENT_STREAMS:
            raise Refused(
                503,
                f"too many open event streams ({MAX_EVENT_STREAMS}); try again later",
                {"Retry-After": "30"},
            )
        queue: asyncio.Queue[str | None] = asyncio.Queue(EVENT_QUEUE)
        events.queues.add(queue)

        async def feed() -> AsyncIterator[str]:
            try:
                yield "retry: 3000\n: connected\n\n"
                while True:
                    try:
                        text = await asyncio.wait_for(queue.get(), timeout=15)
                    except TimeoutError:
                        if await request.is_disconnected():
                            return
                        yield ": ping\n\n"
                        continue
                    if text is None:
                        return
                    yield text
            finally:
                events.queues.discard(queue)

        return StreamingResponse(
            feed(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    add_pages(
        app,
        arena,
        events,
        organizer_hash=organizer_hash,
        uploads_per_hour=uploads_per_hour,
        max_upload_bytes=max_upload_bytes,
    )
    return app


def _first_refused(group: BaseExceptionGroup[Any]) -> Refused:
    for inner in group.exceptions:
        if isinstance(inner, Refused):
            return inner
        if isinstance(inner, BaseExceptionGroup) and inner.subgroup(Refused):
            return _first_refused(inner)
    raise AssertionError("no Refused in the group")  # pragma: no cover


# ------------------------------------------------------------------ rules the API and the pages share
def admit_upload(arena: Arena, who: Author, name: str, uploads_per_hour: int) -> None:
    """Refused unless ``who`` may upload a version of ``name`` now: an author (not the
    organizer), a bot name by the rule, theirs or nobody's, within the hourly quota."""
    if who.organizer:
        raise Refused(403, "the organizer token uploads nothing: add an author (arena author add) and use "
                           "their token")
    if not is_valid_name(name) or _VERSION_SUFFIX.search(name):
        raise Refused(400, f"bot name {shown(name)}: expected {NAME_RULE}, not ending in .v<number>")
    existing = arena.store.bot(name)
    if existing is not None and existing["author_id"] != who.id:
        raise Refused(403, f"the bot name {shown(existing['name'])} belongs to another author")
    _check_quota(arena, who, uploads_per_hour)


def count_upload(arena: Arena, who: Author, uploads_per_hour: int) -> None:
    """Count the upload, the quota checked again first with no await in between: uploads
    sent at once had all passed :func:`admit_upload` before any was counted."""
    _check_quota(arena, who, uploads_per_hour)
    arena.store.count_upload(who.id)


def _check_quota(arena: Arena, who: Author, uploads_per_hour: int) -> None:
    uploads = arena.store.uploads_since(who.id, time.time() - 3600)
    if len(uploads) >= uploads_per_hour:
        wait = max(1, round(uploads[0] + 3600 - time.time()))
        raise Refused(429, f"upload quota reached: {uploads_per_hour} uploads an hour; the next one is "
                           f"possible in {wait} s", {"Retry-After": str(wait)})


def new_author(arena: Arena, name: Any) -> str:
    """Add the author ``name`` (the name rule, not a reserved name, not another author's in
    another case); their token, shown once."""
    if not is_valid_name(name) or str(name).lower() in (ORGANIZER, HOUSE):
        raise Refused(422, f"name: expected {NAME_RULE} (not 'organizer' or 'house'), got {shown(name)}")
    if any(a["name"].lower() == name.lower() for a in arena.store.authors()):  # no 'Alice' beside 'alice'
        raise Refused(409, f"an author named {shown(name)} exists already (in another case)")
    try:
        return arena.store.add_author(name)
    except ArenaError as exc:
        raise Refused(409, str(exc)) from None


async def _json_body(request: Request) -> Any:
    raw = await request.body()
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # 64 kB of '[' nests past the recursion limit: was a 500
        raise Refused(400, "the body is not JSON") from None


def _take_upload(arena: Arena, who: Author, name: str, data: bytes, limits: Limits) -> dict[str, Any]:
    """Unpack, check the manifest, number and keep the version, and queue its check."""
    from arena.bots.manifest import Manifest

    staging_root = arena.files / "versions" / ".staging"
    staging_root.mkdir(parents=True, exist_ok=True)
    staging = staging_root / secrets.token_hex(8)
    try:
        unpacked = unpack(data, staging, limits)
    except ArchiveError as exc:
        raise Refused(400, str(exc)) from None
    try:
        try:
            manifest = Manifest.load(staging)
        except ArenaError as exc:
            raise Refused(400, str(exc).replace(str(staging), "<archive>")) from None
        if manifest.name.lower() != name.lower():
            raise Refused(
                400,
                f"bot.toml names the bot {shown(manifest.name)}, but it was uploaded as "
                f"{shown(name)}: they must be the same",
            )
        arena.store.claim_bot(name, who.id, manifest.description)
        bot = arena.store.bot(name)
        if bot is None or bot["author_id"] != who.id:
            raise Refused(403, f"the bot name {shown(name)} belongs to another author")
        name = bot["name"]
        arena.store.set_description(name, manifest.description)
        used, allowed = arena.store.author_bytes(who.id), arena.options.max_author_bytes
        if used + unpacked.bytes > allowed:
            raise Refused(
                413,
                f"storage quota: your versions hold {used / 1e6:.1f} MB unpacked and this one "
                f"{unpacked.bytes / 1e6:.1f} MB, over your {allowed / 1e6:.0f} MB: ask the organizer",
            )
        version, same = arena.store.add_version(
            name, unpacked.digest, lambda number: version_folder(arena.data, name, number), unpacked.bytes
        )
        if version is None:
            raise Refused(409, f"this archive is identical to version {same} of {name}: nothing new to check")
        target = arena.local(Path(version.folder))
        target.parent.mkdir(parents=True, exist_ok=True)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    arena.publish(
        "version", {"id": version.id, "bot": name, "number": version.number, "state": "queued", "cause": ""}
    )
    arena.submit(version)
    out = version.public()
    out["files"] = unpacked.files
    out["bytes"] = unpacked.bytes
    return out


__all__ = ["BodyLimit", "Events", "Refused", "create_app"]
