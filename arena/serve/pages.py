"""The pages of `arena serve`: server-rendered HTML over the same :class:`Arena` the API reads.

Every page is readable without JavaScript: Jinja2 templates (``templates/``), autoescaped,
every printed value passed through :func:`arena.report.render.visible` (control and bidi
characters written out). JavaScript (``static/arena.js``, loaded from our own origin: the
Content-Security-Policy allows no inline script) only adds live updates from the
server-sent events of ``/api/events``, and builds them with DOM text APIs alone.

Signing in: an author's (or the organizer's) token, posted once to ``/signin``; the session
is Starlette's signed cookie (HttpOnly, SameSite=Strict) holding the token's hash, checked
on every request against the database, so a revoked or replaced token ends its sessions.
Every form carries the session's CSRF token, checked on every POST.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections import Counter
from collections.abc import AsyncIterator
from functools import lru_cache
from typing import Any
from urllib.parse import quote

import orjson
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from jinja2 import (
    ChoiceLoader,
    Environment,
    PackageLoader,
    PrefixLoader,
    StrictUndefined,
    select_autoescape,
)
from starlette.concurrency import run_in_threadpool
from starlette.middleware.sessions import SessionMiddleware

from arena.errors import ArenaError, RecordError
from arena.report.render import MISSING, num, pct, text, visible, visible_data
from arena.resources import package_path
from arena.serve.archive import Limits
from arena.serve.service import Arena, public_record
from arena.serve.store import HOUSE, ORGANIZER, Author, hash_token
from arena.untrusted import is_valid_name, shown

log = logging.getLogger(__name__)

SESSION_COOKIE = "arena_session"
SESSION_SECRET_SETTING = "session_secret"
SPECTATOR_DELAY_SETTING = "spectator_delay_s"
MAX_SPECTATOR_DELAY_S = 3600
SESSION_MAX_AGE_S = 14 * 86_400
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
"""For every response but the API's (its /api/docs page loads Swagger UI from elsewhere)."""
STATIC_FILES = {
    # our own files: name -> (package, folder)
    "arena.css": ("arena.serve", "static"),
    "arena.js": ("arena.serve", "static"),
    "replay.css": ("arena.report", "assets"),  # the report's replay viewer, shared
    "replay.js": ("arena.report", "assets"),
}
HEAD_TO_HEAD_GAMES = 5000  # a bot page counts its head-to-head over its newest games
RECENT_GAMES = 100
ENDINGS = {
    "normal": "by the rules",
    "timeout": "time ran out",
    "crash": "a crash",
    "illegal_move": "an illegal move",
    "malformed": "a malformed message",
    "schema": "a message breaking the schema",
    "oversize": "an oversize message",
    "protocol": "a protocol error",
    "start_failure": "a failure to start",
    "interrupted": "an interruption",
}


class PageError(Exception):
    """An error shown as a page: status and a one-line message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = " ".join(message.split())[:1000]


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The pages' templates, and the report's under ``report/`` (the replay viewer's body)."""
    from arena.report.render import environment as report_environment

    loader = ChoiceLoader(
        [
            PackageLoader("arena.serve", "templates"),
            PrefixLoader({"report": PackageLoader("arena.report", "templates")}),
        ]
    )
    env = Environment(
        loader=loader,
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        auto_reload=False,  # templates read once (warm() reads them before privileges drop)
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=visible,
    )
    env.filters.update(report_environment().filters)
    env.filters.update(num=num, pct=pct, text=text, when=when, bot_of=bot_of)
    env.globals.update(ENDINGS=ENDINGS)
    return env


@lru_cache(maxsize=len(STATIC_FILES))
def static_file(name: str) -> bytes:
    package, folder = STATIC_FILES[name]
    return (package_path(package, folder) / name).read_bytes()


def warm() -> None:
    """Read every template and static file, and replay an empty game once, while the process
    may still read every file (before `arena serve` drops its privileges: see server.preload)."""
    from arena.records import replay
    from arena.report.replay_html import replay_data

    env = environment()
    for name in env.list_templates(filter_func=lambda n: n.endswith(".html")):
        env.get_template(name)
    for name in STATIC_FILES:
        static_file(name)
    record: dict[str, Any] = {"seed": 0, "first_player": 0, "players": ["a", "b"], "moves": []}
    replay_data(record, replay(record, check_result=False))


def when(value: Any) -> str:
    """A time (epoch seconds or an ISO string) as ``YYYY-MM-DD HH:MM:SS`` UTC."""
    if value is None or value == "":
        return "–"
    if isinstance(value, int | float):
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(value))
    return str(value).replace("T", " ")[:19]


def bot_of(label: str) -> str:
    """``name.v3`` -> ``name``."""
    name, dot, number = str(label).rpartition(".v")
    return name if dot and number.isdigit() else str(label)


def _board_row(r: dict[str, Any]) -> dict[str, str]:
    """A leaderboard row as the strings the page prints: formatted here in one pass, so the
    template only escapes them (300 rows in a few milliseconds)."""
    elo = r["elo"]
    last = r["last_game"]
    return {
        "rank": str(r["rank"]),
        "bot": r["bot"],
        "bot_url": "/bots/" + quote(r["bot"], safe=""),
        "author": text(r["author"]),
        "version": f"v{r['version']}",
        "mu": num(r["mu"], ".2f"),
        "sigma": num(r["sigma"], ".2f"),
        "conservative": num(r["conservative"], ".2f"),
        "elo": MISSING if elo is None else f"{elo:.0f} ",
        "elo_range": "" if elo is None else f"({r['elo_low']:.0f}–{r['elo_high']:.0f})",
        "games": str(r["games"]),
        "win_rate": pct(r["win_rate"]),
        "failures": str(r["failures"]),
        "last_url": "" if not last else "/games/" + quote(last, safe=""),
        "last_at": when(r["last_at"]),
    }


def session_secret(arena: Arena) -> str:
    """The key that signs session cookies: made once, kept in the arena's settings table."""
    secret = arena.store.setting(SESSION_SECRET_SETTING)
    if not isinstance(secret, str) or len(secret) < 32:
        secret = secrets.token_urlsafe(48)
        arena.store.set_setting(SESSION_SECRET_SETTING, secret)
    return secret


def spectator_delay(arena: Arena) -> int:
    value = arena.store.setting(SPECTATOR_DELAY_SETTING, 0)
    return value if isinstance(value, int) and 0 <= value <= MAX_SPECTATOR_DELAY_S else 0


class MoveClock:
    """When each move of a game in progress reached this process: a subscriber of the event
    stream like any browser. The spectator delay hides the moves younger than it."""

    def __init__(self) -> None:
        self.times: dict[str, list[float]] = {}

    def seen(self, kind: str, data: dict[str, Any]) -> None:
        game = str(data.get("id"))
        if kind == "move":
            self.times.setdefault(game, []).append(time.time())
            if len(self.times) > 1000:  # games whose end we missed
                self.times.pop(next(iter(self.times)))
        elif kind == "game_ended":
            self.times.pop(game, None)

    def shown_moves(self, game: str, moves: int, delay_s: int) -> int:
        """How many of a running game's ``moves`` are at least ``delay_s`` old."""
        if delay_s <= 0:
            return moves
        times = self.times.get(game, [])
        cutoff = time.time() - delay_s
        unknown = max(0, moves - len(times))  # made before we listened: old
        return unknown + sum(1 for t in times[: moves - unknown] if t <= cutoff)

    async def listen(self, events: Any) -> None:
        from arena.serve.app import EVENT_QUEUE

        while True:
            queue: asyncio.Queue[str | None] = asyncio.Queue(EVENT_QUEUE)
            events.queues.add(queue)
            try:
                while True:
                    message = await queue.get()
                    if message is None:
                        break  # dropped as a slow reader: subscribe again
                    kind, data = _parse_event(message)
                    if kind in ("move", "game_ended"):
                        self.seen(kind, data)
            finally:
                events.queues.discard(queue)


def _parse_event(message: str) -> tuple[str, dict[str, Any]]:
    kind, data = "", {}
    for line in message.splitlines():
        if line.startswith("event: "):
            kind = line[7:]
        elif line.startswith("data: "):
            try:
                data = json.loads(line[6:])
            except ValueError:
                data = {}
    return kind, data if isinstance(data, dict) else {}


def add_pages(
    app: FastAPI,
    arena: Arena,
    events: Any,
    *,
    organizer_hash: str,
    uploads_per_hour: int,
    max_upload_bytes: int,
    secure_cookies: bool = False,
) -> None:
    """Add the pages, their static files and the session middleware to ``app``."""
    from arena.serve.app import Refused, _take_upload, admit_upload, count_upload, new_author

    env = environment()
    limits = Limits(max_bytes=max_upload_bytes)
    clock = MoveClock()
    app.state.move_clock = clock
    app.add_middleware(
        SessionMiddleware,
        secret_key=session_secret(arena),
        session_cookie=SESSION_COOKIE,
        max_age=SESSION_MAX_AGE_S,
        same_site="strict",
        https_only=secure_cookies,
    )

    inner_lifespan = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(app_: Any) -> AsyncIterator[Any]:
        async with inner_lifespan(app_) as state:  # create_app's own (the event loop for Events)
            task = asyncio.create_task(clock.listen(events))
            try:
                yield state
            finally:
                task.cancel()

    app.router.lifespan_context = lifespan

    # ------------------------------------------------------------------ sessions
    def signed_in(request: Request) -> Author | None:
        held = request.session.get("token_hash")
        if not isinstance(held, str):
            return None
        if organizer_hash and secrets.compare_digest(held, organizer_hash):
            return Author(0, ORGANIZER, organizer=True)
        return arena.store.author_by_token_hash(held)

    def csrf_token(request: Request) -> str:
        token = request.session.get("csrf")
        if not isinstance(token, str):
            token = secrets.token_urlsafe(32)
            request.session["csrf"] = token
        return token

    def check_csrf(request: Request, form: Any) -> None:
        sent = form.get("csrf")
        held = request.session.get("csrf")
        if not isinstance(sent, str) or not isinstance(held, str) or not secrets.compare_digest(sent, held):
            raise PageError(
                403, "the form's security token is missing or stale: reload the page and send it again"
            )

    async def post_form(request: Request, **limits_: int) -> Any:
        try:
            form = await request.form(**limits_)
        except Refused:
            raise
        except Exception:
            raise PageError(400, "the request is not a form") from None
        check_csrf(request, form)
        return form

    def flash(request: Request, kind: str, message: str) -> None:
        notes = list(request.session.get("flash") or [])[-2:]  # the cookie stays far under 4 kB
        notes.append([kind, " ".join(message.split())[:400]])
        request.session["flash"] = notes

    def page(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        who = signed_in(request)
        notes = request.session.pop("flash", None) or []
        html = env.get_template(template).render(
            who=who,
            csrf=csrf_token(request) if who is not None or template == "signin.html" else "",
            notes=notes,
            path=request.url.path,
            paused=arena.paused,
            **context,
        )
        return HTMLResponse(html, status_code=status_code, headers={"Cache-Control": "no-store"})

    def back(url: str) -> RedirectResponse:
        return RedirectResponse(url, status_code=303)

    def need_author(request: Request) -> Author:
        who = signed_in(request)
        if who is None:
            raise PageError(401, "sign in first (your author token)")
        return who

    def need_organizer(request: Request) -> Author:
        who = need_author(request)
        if not who.organizer:
            raise PageError(403, "only the organizer may do this (sign in with the organizer token)")
        return who

    async def _page_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, PageError)
        return page(request, "error.html", exc.status, message=exc.message, status=exc.status)

    app.add_exception_handler(PageError, _page_error)

    # ------------------------------------------------------------------ static files
    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str) -> Response:
        if name not in STATIC_FILES:
            raise PageError(404, f"no static file {shown(name)}")
        media = "text/css" if name.endswith(".css") else "text/javascript"
        return Response(
            static_file(name), media_type=f"{media}; charset=utf-8", headers={"Cache-Control": "no-cache"}
        )

    # ------------------------------------------------------------------ the leaderboard
    shown_board: list[Any] = [None, []]  # the leaderboard's JSON bytes, and its rows as printed

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def leaderboard_page(request: Request) -> Response:
        board = arena.leaderboard_json()  # built once per change, shared with /api/leaderboard
        if board is not shown_board[0]:
            shown_board[:] = [board, [_board_row(r) for r in orjson.loads(board)]]
        rows = shown_board[1]
        return page(
            request,
            "leaderboard.html",
            rows=rows,
            frozen=arena.store.setting("frozen_board") is not None,
            games_stored=arena.games_stored,
            running=len(arena.live),
        )

    # ------------------------------------------------------------------ games
    @app.get("/games", response_class=HTMLResponse, include_in_schema=False)
    def games_page(request: Request, bot: str = "") -> Response:
        labels = None
        if bot:
            found = arena.store.bot(bot) if is_valid_name(bot) else None
            if found is None:
                raise PageError(404, f"no bot named {shown(bot)}")
            bot = found["name"]
            labels = [v.label for v in arena.store.versions(bot=bot)]
        games = arena.games(labels, RECENT_GAMES)
        return page(
            request,
            "games.html",
            games=games,
            bot=bot,
            bots=[b["name"] for b in arena.store.bots()],
        )

    @app.get("/games/{game_id}", response_class=HTMLResponse, include_in_schema=False)
    def game_page(request: Request, game_id: str) -> Response:
        data = replay_payload(game_id)
        if data is None:
            raise PageError(404, f"no game {shown(game_id)}")
        return page(request, "game.html", game=data, game_id=game_id, delay=spectator_delay(arena))

    @app.get("/games/{game_id}/replay.json", include_in_schema=False)
    def game_json(game_id: str, start: int = 0) -> Response:
        data = replay_payload(game_id)
        if data is None:
            return JSONResponse({"detail": f"no game {shown(game_id)}"}, status_code=404)
        if start > 0:
            data = {
                "from": start,
                "moves": data["moves"][start:],
                "states": data["states"][start + 1 :],
                "result": data["result"],
                "running": data["running"],
            }
        else:
            data = dict(data, **{"from": 0})
        return JSONResponse(data, headers={"Cache-Control": "no-store"})

    live_cache: dict[tuple[str, int], dict[str, Any]] = {}

    def replay_payload(game_id: str) -> dict[str, Any] | None:
        """The viewer's data (arena.report.replay_html.replay_data) for a finished game, or for
        a game in progress: its moves so far (less those inside the spectator delay)."""
        if len(game_id) > 100:
            return None
        with arena.lock:
            live = arena.live.get(game_id)
            moves = list(live.moves) if live is not None else []
        if live is None:
            return finished_replay(game_id)
        from arena.records import replay
        from arena.report.replay_html import replay_data

        shown_count = clock.shown_moves(game_id, len(moves), spectator_delay(arena))
        cached = live_cache.get((game_id, shown_count))
        if cached is not None:  # every spectator asks after each move: replayed once
            return dict(cached, hidden_moves=len(moves) - shown_count)
        o = arena.options
        record = {
            "ruleset": o.game,
            "edition": o.edition,
            "seed": live.spec.seed,
            "first_player": 0,  # seat 0 moves first (GameSpec)
            "players": [live.spec.seat0, live.spec.seat1],
            "game_id": game_id,
            "time_control": o.time_control.to_json(),
            "moves": moves[:shown_count],
        }
        try:
            data = replay_data(record, replay(record, check_result=False))
        except (RecordError, ArenaError) as exc:
            log.warning("game %s in progress does not replay: %s", game_id, exc)
            return None
        data["seed"] = None  # not told before the game ends
        data["result"] = None
        data["running"] = True
        data = visible_data(data)
        if len(live_cache) >= 256:
            live_cache.clear()
        live_cache[(game_id, shown_count)] = data
        return dict(data, hidden_moves=len(moves) - shown_count)

    finished_cache: dict[str, dict[str, Any]] = {}

    def finished_replay(game_id: str) -> dict[str, Any] | None:
        from arena.report.replay_html import replay_data

        if game_id in finished_cache:
            return finished_cache[game_id]
        record = arena.results.record(game_id)
        if record is None:
            return None
        try:
            data = replay_data(public_record(record))
        except (RecordError, ArenaError) as exc:
            log.warning("game %s does not replay: %s", game_id, exc)
            return None
        data["running"] = False
        data["hidden_moves"] = 0
        data = visible_data(data)
        if len(finished_cache) >= 64:  # a game not found is not kept: it may be stored a moment later
            finished_cache.pop(next(iter(finished_cache)), None)
        finished_cache[game_id] = data
        return data

    # ------------------------------------------------------------------ a bot
    @app.get("/bots/{name}", response_class=HTMLResponse, include_in_schema=False)
    def bot_page(request: Request, name: str) -> Response:
        bot = arena.store.bot(name) if is_valid_name(name) else None
        if bot is None:
            raise PageError(404, f"no bot named {shown(name)}")
        who = signed_in(request)
        private = who is not None and (who.organizer or who.id == bot["author_id"])
        versions = arena.store.versions(bot=bot["name"])
        playing = {v.bot: v for v in arena.playing()}.get(bot["name"])
        labels = [v.label for v in versions]
        rows = []
        for version in reversed(versions):
            standing = arena.standings.get(version.label)
            rows.append(
                {
                    "v": version,
                    "playing": playing is not None and playing.id == version.id,
                    "games": standing.games if standing else 0,
                    "report": arena.store.version_report(version.id) if private else None,
                }
            )
        finished = arena.results.finished_games(labels, HEAD_TO_HEAD_GAMES) if labels else []
        ours = set(labels)
        opponents: dict[str, Counter[str]] = {}
        endings: Counter[tuple[str, str]] = Counter()
        for game in finished:
            seat = 0 if game[1] in ours else 1
            other = game[2 - seat]
            if other in ours:
                continue
            won = game[3] == seat
            tally = opponents.setdefault(bot_of(other), Counter())
            tally["games"] += 1
            tally["wins" if won else "losses"] += 1
            endings[("won" if won else "lost", str(game[5]))] += 1
        head_to_head = [
            {"opponent": k, "games": v["games"], "wins": v["wins"], "losses": v["losses"]}
            for k, v in sorted(opponents.items(), key=lambda kv: (-kv[1]["games"], kv[0]))
        ]
        return page(
            request,
            "bot.html",
            bot=bot,
            private=private,
            versions=rows,
            playing=playing,
            head_to_head=head_to_head,
            endings=sorted(endings.items(), key=lambda kv: -kv[1]),
            counted=len(finished),
            recent=arena.games(labels, 30) if labels else [],
        )

    # ------------------------------------------------------------------ signing in
    @app.get("/signin", response_class=HTMLResponse, include_in_schema=False)
    def signin_page(request: Request) -> Response:
        return page(request, "signin.html")

    @app.post("/signin", include_in_schema=False)
    async def signin(request: Request) -> Response:
        form = await post_form(request, max_files=0, max_fields=4)
        token = form.get("token")
        token = token.strip() if isinstance(token, str) else ""
        if not token or len(token) > 200:
            raise PageError(401, "paste your token (pwa_...) to sign in")
        digest = hash_token(token)
        if organizer_hash and secrets.compare_digest(digest, organizer_hash):
            target = "/admin"
        elif arena.store.author_by_token_hash(digest) is not None:
            target = "/me"
        else:
            raise PageError(401, "unknown or revoked token")
        request.session.clear()  # a new session: a new CSRF token
        request.session["token_hash"] = digest
        request.session["csrf"] = secrets.token_urlsafe(32)
        return back(target)

    @app.post("/signout", include_in_schema=False)
    async def signout(request: Request) -> Response:
        await post_form(request, max_files=0, max_fields=4)
        request.session.clear()
        return back("/")

    # ------------------------------------------------------------------ my arena
    @app.get("/me", response_class=HTMLResponse, include_in_schema=False)
    def me_page(request: Request) -> Response:
        who = signed_in(request)
        if who is None:
            return back("/signin")
        if who.organizer:
            return back("/admin")
        uploads = arena.store.uploads_since(who.id, time.time() - 3600)
        playing = {v.bot: v.number for v in arena.playing()}
        mine = []
        for bot in arena.store.bots():
            if bot["author_id"] != who.id:
                continue
            versions = list(reversed(arena.store.versions(bot=bot["name"])))
            pinned = next((v.number for v in versions if v.id == bot["pinned_version"]), None)
            mine.append(
                {"bot": bot, "versions": versions, "playing": playing.get(bot["name"]), "pinned": pinned}
            )
        return page(
            request,
            "me.html",
            mine=mine,
            uploads_left=max(0, uploads_per_hour - len(uploads)),
            uploads_per_hour=uploads_per_hour,
            resets_in=round(uploads[0] + 3600 - time.time()) if uploads else 0,
            max_upload_bytes=max_upload_bytes,
        )

    @app.post("/me/versions", include_in_schema=False)
    async def upload(request: Request) -> Response:
        form = await post_form(request, max_files=1, max_fields=4)
        try:
            who = need_author(request)
            name = form.get("name")
            name = name.strip() if isinstance(name, str) else ""
            try:
                admit_upload(arena, who, name, uploads_per_hour)
            except Refused as exc:
                raise PageError(exc.status, exc.detail) from None
            archive = form.get("archive")
            if archive is None or isinstance(archive, str) or not archive.filename:
                raise PageError(422, "choose a .zip or .tar.gz of your bot's folder")
            data = await archive.read(max_upload_bytes + 1)
            if len(data) > max_upload_bytes:
                raise PageError(413, f"the archive is larger than the limit of {max_upload_bytes} bytes")
            try:
                count_upload(arena, who, uploads_per_hour)
                made = await run_in_threadpool(_take_upload, arena, who, name, data, limits)
            except Refused as exc:
                raise PageError(exc.status, exc.detail) from None
        except PageError as exc:
            flash(request, "error", f"upload refused: {exc.message}")
            return back("/me")
        finally:
            await form.close()
        flash(request, "ok", f"{made['label']} uploaded: it is queued for its check")
        return back("/me")

    @app.post("/me/bots/{name}/active", include_in_schema=False)
    async def choose_active(request: Request, name: str) -> Response:
        form = await post_form(request, max_files=0, max_fields=4)
        who = need_author(request)
        bot = arena.store.bot(name) if is_valid_name(name) else None
        if bot is None:
            raise PageError(404, f"no bot named {shown(name)}")
        if not (who.organizer or who.id == bot["author_id"]):
            raise PageError(403, f"{shown(bot['name'])} is another author's bot")
        raw = form.get("version")
        number = None
        if isinstance(raw, str) and raw.strip() not in ("", "newest"):
            if not raw.strip().isdigit():
                raise PageError(422, "version: a version number, or newest")
            number = int(raw)
        try:
            await run_in_threadpool(arena.set_active, bot["name"], number)
        except (LookupError, ValueError) as exc:
            flash(request, "error", str(exc))
            return back("/me")
        flash(
            request,
            "ok",
            f"{bot['name']} plays " + (f"version {number}" if number else "its newest active version"),
        )
        return back("/me")

    # ------------------------------------------------------------------ the organizer
    @app.get("/admin", response_class=HTMLResponse, include_in_schema=False)
    def admin_page(request: Request) -> Response:
        who = signed_in(request)
        if who is None:
            return back("/signin")
        need_organizer(request)
        return admin(request)

    def admin(request: Request, new_token: tuple[str, str] | None = None) -> HTMLResponse:
        return page(
            request,
            "admin.html",
            authors=[a for a in arena.store.authors() if a["name"] != HOUSE],
            bots=arena.store.bots(),
            playing={v.bot: v.number for v in arena.playing()},
            frozen=arena.store.setting("frozen_board") is not None,
            pairings=arena.store.pairings(100),
            delay=spectator_delay(arena),
            new_token=new_token,
            exports=sorted((p.name for p in (arena.files / "exports").glob("*")), reverse=True)[:10]
            if (arena.files / "exports").is_dir()
            else [],
        )

    @app.post("/admin/authors", include_in_schema=False)
    async def admin_add_author(request: Request) -> Response:
        form = await post_form(request, max_files=0, max_fields=4)
        need_organizer(request)
        name = form.get("name")
        name = name.strip() if isinstance(name, str) else ""
        try:
            token = new_author(arena, name)
        except Refused as exc:
            raise PageError(exc.status, exc.detail) from None
        return admin(request, new_token=(name, token))  # shown once: never stored, never redirected

    @app.post("/admin/authors/{name}/{action}", include_in_schema=False)
    async def admin_author(request: Request, name: str, action: str) -> Response:
        await post_form(request, max_files=0, max_fields=4)
        need_organizer(request)
        if action == "revoke":
            if not arena.store.revoke_author(name):
                raise PageError(404, f"no author named {shown(name)}")
            flash(request, "ok", f"{name}'s token is revoked")
            return back("/admin")
        if action == "token":
            token = arena.store.new_author_token(name)
            if token is None:
                raise PageError(404, f"no author named {shown(name)}")
            return admin(request, new_token=(name, token))
        raise PageError(404, f"no action {shown(action)}")

    @app.post("/admin/ladder", include_in_schema=False)
    async def admin_ladder(request: Request) -> Response:
        form = await post_form(request, max_files=0, max_fields=4)
        need_organizer(request)
        action = form.get("action")
        if action == "pause":
            await run_in_threadpool(arena.set_paused, True)
        elif action == "resume":
            await run_in_threadpool(arena.set_paused, False)
        elif action == "freeze":
            await run_in_threadpool(arena.freeze, True)
        elif action == "unfreeze":
            await run_in_threadpool(arena.freeze, False)
        else:
            raise PageError(422, "action: pause, resume, freeze or unfreeze")
        done = {"pause": "paused", "resume": "resumed", "freeze": "frozen", "unfreeze": "unfrozen"}[action]
        flash(request, "ok", f"the ladder is {done}")
        return back("/admin")

    @app.post("/admin/delay", include_in_schema=False)
    async def admin_delay(request: Request) -> Response:
        form = await post_form(request, max_files=0, max_fields=4)
        need_organizer(request)
        raw = form.get("seconds")
        raw = raw.strip() if isinstance(raw, str) else ""
        if not raw.isdigit() or int(raw) > MAX_SPECTATOR_DELAY_S:
            raise PageError(422, f"the spectator delay: whole seconds from 0 to {MAX_SPECTATOR_DELAY_S}")
        arena.store.set_setting(SPECTATOR_DELAY_SETTING, int(raw))
        flash(request, "ok", f"spectators see moves {int(raw)} s late")
        return back("/admin")

    @app.post("/admin/bots/{name}/{action}", include_in_schema=False)
    async def admin_bot(request: Request, name: str, action: str) -> Response:
        await post_form(request, max_files=0, max_fields=4)
        need_organizer(request)
        bot = arena.store.bot(name) if is_valid_name(name) else None
        if bot is None:
            raise PageError(404, f"no bot named {shown(name)}")
        if action not in ("quarantine", "restore"):
            raise PageError(404, f"no action {shown(action)}")
        await run_in_threadpool(arena.set_quarantined, bot["name"], action == "quarantine")
        flash(request, "ok", f"{bot['name']}: " + ("quarantined" if action == "quarantine" else "restored"))
        return back("/admin")

    @app.post("/admin/export", include_in_schema=False)
    async def admin_export(request: Request) -> Response:
        await post_form(request, max_files=0, max_fields=4)
        need_organizer(request)
        folder = await run_in_threadpool(arena.export)
        flash(request, "ok", f"results exported to {folder} (arena ratings / arena report read it)")
        return back("/admin")


__all__ = ["CONTENT_SECURITY_POLICY", "PageError", "add_pages", "environment", "warm"]
