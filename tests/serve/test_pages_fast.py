"""The pages of `arena serve` without a browser or a game host: an :class:`Arena` over a fresh
data folder, its app driven by FastAPI's TestClient. Headers, sessions, CSRF, escaping, and
the leaderboard's render time with many bots."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from arena.serve.app import Events, create_app
from arena.serve.pages import CONTENT_SECURITY_POLICY, SESSION_COOKIE
from arena.serve.service import Arena, Options
from arena.serve.store import hash_token

ORGANIZER = "pwa_the-organizer-token-for-tests"
HOSTILE = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">'


@pytest.fixture
def arena(tmp_path: Path) -> Iterator[Arena]:
    (tmp_path / "results").mkdir()
    made = Arena(Options(data=tmp_path, house_bots=("random", "greedy")))
    yield made
    made.close()


@pytest.fixture
def client(arena: Arena) -> Iterator[TestClient]:
    app = create_app(arena, Events(), organizer_hash=hash_token(ORGANIZER))
    with TestClient(app) as made:
        yield made


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "no CSRF field in the page"
    return found.group(1)


def sign_in(client: TestClient, token: str) -> Any:
    page = client.get("/signin")
    return client.post("/signin", data={"token": token, "csrf": csrf_of(page.text)}, follow_redirects=False)


def test_pages_carry_a_csp_without_inline_script(client: TestClient) -> None:
    for path in ("/", "/games", "/bots/random", "/signin", "/static/arena.js"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert (
            "script-src 'self'" in CONTENT_SECURITY_POLICY and "unsafe-inline" not in CONTENT_SECURITY_POLICY
        )
        assert response.headers["x-content-type-options"] == "nosniff"
        if path != "/static/arena.js":
            assert "<script>" not in response.text  # only <script src="/static/...">
            assert " on" + "click=" not in response.text and "style=" not in response.text
    assert "content-security-policy" not in client.get("/api/leaderboard").headers  # the API's own


def test_a_visitor_gets_no_cookie(client: TestClient) -> None:
    for path in ("/", "/games", "/bots/greedy"):
        assert "set-cookie" not in client.get(path).headers


def test_the_session_cookie_is_signed_httponly_and_strict(client: TestClient) -> None:
    response = sign_in(client, ORGANIZER)
    assert response.status_code == 303 and response.headers["location"] == "/admin"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(SESSION_COOKIE + "=")
    assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
    assert ORGANIZER not in cookie  # the token itself never goes into the cookie
    assert client.get("/admin").status_code == 200
    client.cookies.set(SESSION_COOKIE, cookie.split(";")[0].split("=", 1)[1][:-2] + "xx")  # tampered
    assert client.get("/admin", follow_redirects=False).status_code == 303  # back to /signin


def test_every_form_post_needs_the_csrf_token(client: TestClient, arena: Arena) -> None:
    sign_in(client, ORGANIZER)
    posts = [
        ("/admin/ladder", {"action": "pause"}),
        ("/admin/authors", {"name": "mallory"}),
        ("/admin/bots/random/quarantine", {}),
        ("/admin/export", {}),
        ("/admin/delay", {"seconds": "5"}),
        ("/signout", {}),
        ("/signin", {"token": ORGANIZER}),
    ]
    for path, data in posts:
        for csrf in (None, "forged"):
            sent = dict(data) if csrf is None else {**data, "csrf": csrf}
            response = client.post(path, data=sent, follow_redirects=False)
            assert response.status_code == 403, path
            assert "security token" in response.text
    assert arena.paused is False and arena.store.bot("random")["quarantined"] is False  # type: ignore[index]
    assert "mallory" not in [a["name"] for a in arena.store.authors()]
    page = client.get("/admin")
    response = client.post("/admin/ladder", data={"action": "pause", "csrf": csrf_of(page.text)})
    assert response.status_code == 200 and arena.paused is True


def test_a_revoked_token_ends_its_sessions(client: TestClient, arena: Arena) -> None:
    token = arena.store.add_author("alice")
    assert sign_in(client, token).headers["location"] == "/me"
    assert client.get("/me").status_code == 200
    arena.store.revoke_author("alice")
    assert client.get("/me", follow_redirects=False).headers["location"] == "/signin"
    assert sign_in(client, token).status_code == 401


def test_an_author_cannot_use_the_organizer_pages(client: TestClient, arena: Arena) -> None:
    sign_in(client, arena.store.add_author("alice"))
    page = client.get("/me")
    assert client.get("/admin").status_code == 403
    response = client.post("/admin/ladder", data={"action": "pause", "csrf": csrf_of(page.text)})
    assert response.status_code == 403 and arena.paused is False


def test_bot_text_is_escaped_and_reports_stay_private(client: TestClient, arena: Arena) -> None:
    token = arena.store.add_author("alice")
    author = arena.store.author_by_token(token)
    assert author is not None
    arena.store.claim_bot("evil", author.id, HOSTILE)
    version, _ = arena.store.add_version("evil", "digest", lambda n: "/nowhere")
    assert version is not None
    arena.store.set_state(
        version.id, "rejected", cause=HOSTILE, report={"log": "LOG " + HOSTILE, "lines": []}
    )
    for who in (None, "bob", "alice"):
        client.cookies.clear()
        if who == "bob":
            sign_in(client, arena.store.add_author("bob"))
        elif who == "alice":
            sign_in(client, token)
        html = client.get("/bots/evil").text
        assert "<script>window.pwned" not in html and "<img src=x" not in html
        assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in html
        assert ("LOG &lt;script&gt;" in html) == (who == "alice"), who


def test_unknown_pages_answer_with_a_page_not_a_traceback(client: TestClient) -> None:
    response = client.get("/bots/no-such-bot")
    assert response.status_code == 404 and "no bot named" in response.text
    assert "Traceback" not in response.text
    assert client.get("/games/ladder-9999999").status_code == 404
    assert client.get("/static/../../etc/passwd").status_code == 404


def test_leaderboard_renders_a_row_for_each_of_300_bots(client: TestClient, arena: Arena) -> None:
    """Every row is there, each bot rated over 20 games (its speed with 100k games is measured
    by make bench's serve section, not here)."""
    author = arena.store.author_by_token(arena.store.add_author("many"))
    assert author is not None
    labels = []
    for i in range(300):
        name = f"bot{i:03d}"
        arena.store.claim_bot(name, author.id, "")
        version, _ = arena.store.add_version(name, f"d{i}", lambda n: "/nowhere")
        assert version is not None
        arena.store.set_state(version.id, "active")
        labels.append(version.label)
    for idx in range(3_000):  # rated in memory as the service rates them
        a, b = labels[idx % 300], labels[(idx * 7 + 1) % 300]
        if a != b:
            arena._rate(idx, a, b, idx % 2, "normal", f"ladder-{idx:07d}", "2026-01-01T00:00:00")
    response = client.get("/")
    assert response.status_code == 200
    assert response.text.count("<tr data-bot=") == 302  # the two house bots too


def live_game(arena: Arena, moves: int) -> str:
    """A game in progress in the arena's live table, ``moves`` random legal moves in."""
    import random

    from arena.engine import GameState
    from arena.serve.service import LiveGame
    from arena.tournament.schedule import GameSpec

    spec = GameSpec(7, "ladder-0000007", "random.v1", "greedy.v1", 12345, 4)
    state = GameState.new(spec.seed, arena.options.edition, 0)
    rng = random.Random(1)
    entries = []
    for _ in range(moves):
        move = rng.choice(state.legal_moves())
        entries.append({"player": state.to_move(), **move.to_json(state.ruleset.cols), "info": HOSTILE})
        state.apply(move)
    arena.live[spec.game_id] = LiveGame(spec, time.time(), entries)
    return spec.game_id


def test_a_game_in_progress_replays_and_grows(client: TestClient, arena: Arena) -> None:
    game_id = live_game(arena, 6)
    page = client.get(f"/games/{game_id}")
    assert page.status_code == 200 and f'data-replay="/games/{game_id}/replay.json"' in page.text
    data = client.get(f"/games/{game_id}/replay.json").json()
    assert data["running"] is True and data["result"] is None and data["seed"] is None
    assert len(data["moves"]) == 6 and len(data["states"]) == 7 and data["moves"][0]["info"] == HOSTILE
    more = client.get(f"/games/{game_id}/replay.json?start=4").json()
    assert more["from"] == 4 and len(more["moves"]) == 2 and len(more["states"]) == 2


def test_the_spectator_delay_hides_the_newest_moves(client: TestClient, arena: Arena) -> None:
    from arena.serve.pages import SPECTATOR_DELAY_SETTING

    game_id = live_game(arena, 6)
    clock = client.app.state.move_clock  # type: ignore[attr-defined]
    now = time.time()
    clock.times[game_id] = [now - 100, now - 100, now - 100, now - 100, now - 1, now]  # the last two: new
    arena.store.set_setting(SPECTATOR_DELAY_SETTING, 30)
    data = client.get(f"/games/{game_id}/replay.json").json()
    assert len(data["moves"]) == 4 and data["hidden_moves"] == 2
    assert 'data-delay="30"' in client.get(f"/games/{game_id}").text
    arena.store.set_setting(SPECTATOR_DELAY_SETTING, 0)
    assert len(client.get(f"/games/{game_id}/replay.json").json()["moves"]) == 6


def test_an_author_chooses_the_version_that_plays(client: TestClient, arena: Arena) -> None:
    token = arena.store.add_author("alice")
    author = arena.store.author_by_token(token)
    assert author is not None
    arena.store.claim_bot("mine", author.id, "")
    for number in (1, 2):
        version, _ = arena.store.add_version("mine", f"d{number}", lambda n: "/nowhere")
        assert version is not None
        arena.store.set_state(version.id, "active")
    sign_in(client, token)
    assert {v.bot: v.number for v in arena.playing()}["mine"] == 2  # the newest
    page = client.get("/me")
    assert '<option value="1"' in page.text
    client.post("/me/bots/mine/active", data={"version": "1", "csrf": csrf_of(page.text)})
    assert {v.bot: v.number for v in arena.playing()}["mine"] == 1
    assert "version 1, chosen by you" in client.get("/me").text
    client.post("/me/bots/mine/active", data={"version": "newest", "csrf": csrf_of(page.text)})
    assert {v.bot: v.number for v in arena.playing()}["mine"] == 2
    response = client.post("/me/bots/random/active", data={"version": "1", "csrf": csrf_of(page.text)})
    assert response.status_code == 403  # a house bot: another author's


def test_the_organizer_quarantines_and_restores_a_bot(client: TestClient, arena: Arena) -> None:
    sign_in(client, ORGANIZER)
    page = client.get("/admin")
    client.post("/admin/bots/random/quarantine", data={"csrf": csrf_of(page.text)})
    assert arena.store.bot("random")["quarantined"] is True  # type: ignore[index]
    assert 'data-bot="random"' not in client.get("/").text
    client.post("/admin/bots/random/restore", data={"csrf": csrf_of(page.text)})
    assert arena.store.bot("random")["quarantined"] is False  # type: ignore[index]
    response = client.post("/admin/authors", data={"name": "carol", "csrf": csrf_of(page.text)})
    shown_token = re.findall(r"pwa_[\w-]+", response.text)
    assert len(shown_token) == 1 and arena.store.author_by_token(shown_token[0]) is not None
    assert "pwa_" not in client.get("/admin").text  # shown once
