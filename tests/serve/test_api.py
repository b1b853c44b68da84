"""The JSON API at its edge, in-process (FastAPI's TestClient over the real app and a real
SQLite data folder; no game host: versions stay queued). The end-to-end run with a real
uvicorn, real sandboxed bots and kill -9 is tests/serve/test_serve_e2e.py."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from arena.serve.service import Arena
from arena.serve.store import hash_token
from tests.serve.helpers import ORGANIZER, add_author, api_client, bearer, tgz


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[TestClient, Arena]]:
    with api_client(tmp_path, max_upload_bytes=50_000) as both:
        yield both


def archive(name: str, extra: dict[str, bytes] | None = None, *, manifest_name: str | None = None) -> bytes:
    files = {
        "bot.toml": f'name = "{manifest_name or name}"\ncommand = ["python3", "bot.py"]\n'
        f'protocol = "stdio"\n'.encode(),
        "bot.py": b"import sys\n",
        **(extra or {}),
    }
    return tgz(files)


def upload(client: TestClient, token: str | None, name: str, data: bytes):  # type: ignore[no-untyped-def]
    return client.post(
        f"/api/bots/{name}/versions",
        files={"archive": ("b.tar.gz", data)},
        headers=bearer(token) if token else {},
    )


def test_tokens_are_stored_hashed_and_checked(api: tuple[TestClient, Arena], tmp_path: Path) -> None:
    client, arena = api
    alice = add_author(client, "alice")
    stored = b"".join(path.read_bytes() for path in (tmp_path / "results").iterdir() if path.is_file())
    assert alice.encode() not in stored and hash_token(alice).encode() in stored
    assert upload(client, None, "ab", archive("ab")).status_code == 401
    bad = upload(client, "pwa_nope", "ab", archive("ab"))
    assert bad.status_code == 401 and bad.json()["detail"] == "unknown or revoked token"
    assert client.get("/api/me", headers={"Authorization": "Basic x"}).status_code == 401
    assert client.get("/api/me", headers=bearer(alice)).json()["name"] == "alice"
    # only the organizer adds authors; an author's token is refused there
    assert client.post("/api/authors", json={"name": "eve"}, headers=bearer(alice)).status_code == 403
    assert client.post("/api/authors/alice/revoke", headers=bearer(ORGANIZER)).status_code == 200
    assert client.get("/api/me", headers=bearer(alice)).status_code == 401


def test_a_token_in_a_url_is_refused(api: tuple[TestClient, Arena]) -> None:
    client, _ = api
    answer = client.get(f"/api/leaderboard?token={ORGANIZER}")
    assert answer.status_code == 400 and "Authorization header" in answer.json()["detail"]


def test_upload_numbers_versions_and_refuses_repeats(api: tuple[TestClient, Arena]) -> None:
    client, arena = api
    alice = add_author(client, "alice")
    first = upload(client, alice, "mybot", archive("mybot"))
    assert first.status_code == 201, first.text
    assert first.json()["number"] == 1 and first.json()["state"] == "queued"
    again = upload(client, alice, "mybot", archive("mybot"))
    assert again.status_code == 409 and "identical to version 1" in again.json()["detail"]
    second = upload(client, alice, "mybot", archive("mybot", {"more.txt": b"2"}))
    assert second.json()["number"] == 2
    bot = client.get("/api/bots/mybot").json()
    assert [(v["number"], v["state"]) for v in bot["versions"]] == [(1, "queued"), (2, "queued")]
    assert client.get(f"/api/versions/{first.json()['id']}").json()["number"] == 1


def test_a_name_belongs_to_its_first_author(api: tuple[TestClient, Arena]) -> None:
    client, _ = api
    alice, bob = add_author(client, "alice"), add_author(client, "bob")
    assert upload(client, alice, "taken", archive("taken")).status_code == 201
    refused = upload(client, bob, "taken", archive("taken", {"x": b"1"}))
    assert refused.status_code == 403 and "another author" in refused.json()["detail"]
    assert upload(client, bob, "TAKEN", archive("TAKEN")).status_code == 403  # in any case
    # and the house bots' names too
    assert upload(client, bob, "random", archive("random")).status_code == 403
    active = client.put("/api/bots/taken/active", json={"version": 1}, headers=bearer(bob))
    assert active.status_code == 403


@pytest.mark.parametrize(
    ("name", "data", "status", "words"),
    [
        ("evil", None, 400, "'..' leads outside"),
        ("ok-name", archive("other"), 400, "bot.toml names the bot 'other'"),
        ("bad name", archive("x"), 400, "bot name"),
        ("sneaky.v2", archive("sneaky.v2"), 400, "not ending in .v"),
        ("nomanifest", b"PK\x05\x06" + b"\0" * 18, 400, "holds no file"),
    ],
)
def test_bad_uploads_get_one_line(
    api: tuple[TestClient, Arena], name: str, data: bytes | None, status: int, words: str
) -> None:
    client, _ = api
    alice = add_author(client, "alice")
    if data is None:
        data = tgz({"../escape": b"x"})
    answer = upload(client, alice, name, data)
    assert answer.status_code == status, answer.text
    detail = answer.json()["detail"]
    assert words in detail and "\n" not in detail and "Traceback" not in detail


def test_too_large_is_413_and_the_quota_is_429_with_retry_after(api: tuple[TestClient, Arena]) -> None:
    client, _ = api
    alice = add_author(client, "alice")
    big = upload(client, alice, "big", archive("big", {"blob": os.urandom(80_000)}))
    assert big.status_code == 413
    left = client.get("/api/me", headers=bearer(alice)).json()["quota"]["uploads_left"]
    assert left == 3
    for i in range(3):
        assert upload(client, alice, "q", archive("q", {"n": str(i).encode()})).status_code == 201
    assert client.get("/api/me", headers=bearer(alice)).json()["quota"]["uploads_left"] == 0
    over = upload(client, alice, "q", archive("q", {"n": b"9"}))
    assert over.status_code == 429 and 3000 <= int(over.headers["Retry-After"]) <= 3600
    assert "quota" in over.json()["detail"]


def test_check_reports_are_their_authors_alone(api: tuple[TestClient, Arena]) -> None:
    client, arena = api
    alice, bob = add_author(client, "alice"), add_author(client, "bob")
    version_id = upload(client, alice, "secret", archive("secret")).json()["id"]
    arena._on_checked(
        {
            "version": version_id,
            "ok": False,
            "lines": ["x"],
            "problems": ["it crashed: SECRET-LOG"],
            "warnings": [],
            "log": "SECRET-LOG line",
        }
    )
    mine = client.get(f"/api/versions/{version_id}", headers=bearer(alice)).json()
    assert mine["state"] == "rejected" and "SECRET-LOG" in mine["report"]["log"]
    for headers in ({}, bearer(bob)):
        seen = client.get(f"/api/versions/{version_id}", headers=headers).json()
        assert "report" not in seen
        assert "SECRET-LOG line" not in client.get("/api/bots/secret", headers=headers).text
    assert "report" in client.get(f"/api/versions/{version_id}", headers=bearer(ORGANIZER)).json()


def test_errors_are_json_with_one_line(api: tuple[TestClient, Arena]) -> None:
    client, _ = api
    assert client.get("/api/bots/nobody-here").json() == {"detail": "no bot named 'nobody-here'"}
    assert client.get("/api/games?limit=0").status_code == 422
    invalid = client.get("/api/versions/notanumber")
    assert invalid.status_code == 422 and isinstance(invalid.json()["detail"], str)
    assert client.get("/api/games/nope").status_code == 404
    assert client.post("/api/ladder/pause").status_code == 401
    assert client.get("/api/docs").status_code == 200
    assert client.get("/api/openapi.json").json()["paths"]["/api/leaderboard"]


def test_the_organizer_pauses_and_quarantines(api: tuple[TestClient, Arena]) -> None:
    client, arena = api
    assert client.post("/api/ladder/pause", headers=bearer(ORGANIZER)).json() == {"paused": True}
    assert client.get("/api/ladder").json()["paused"] is True and arena.paused
    assert client.post("/api/ladder/resume", headers=bearer(ORGANIZER)).json() == {"paused": False}
    assert client.post("/api/bots/random/quarantine", headers=bearer(ORGANIZER)).status_code == 200
    assert client.get("/api/bots/random").json()["quarantined"] is True
    assert [row["bot"] for row in client.get("/api/leaderboard").json()] == []


def test_checks_go_one_at_a_time_taking_authors_in_turn(api: tuple[TestClient, Arena]) -> None:
    """Red team: one author's pile of slow uploads held another author's upload in the queue
    until it timed out. Checks now go to the host one at a time, authors in turn."""
    import json
    from types import SimpleNamespace

    client, arena = api
    sent = io.StringIO()
    arena._host = SimpleNamespace(stdin=sent)  # type: ignore[assignment]
    dave, erin = add_author(client, "dave"), add_author(client, "erin")
    ids = [
        upload(client, dave, "pile", archive("pile", {"n": str(i).encode()})).json()["id"] for i in range(3)
    ]
    erins = upload(client, erin, "honest", archive("honest")).json()["id"]

    def checks() -> list[int]:
        return [m["version"] for m in map(json.loads, sent.getvalue().splitlines()) if m["op"] == "check"]

    assert checks() == [ids[0]]  # one at a time
    order = [ids[0]]
    for _ in range(3):
        arena._on_host({"op": "checked", "version": order[-1], "ok": False, "problems": ["x"]})
        order = checks()
    arena._host = None
    assert order == [ids[0], erins, ids[1], ids[2]]


def test_an_authors_storage_is_bounded(api: tuple[TestClient, Arena]) -> None:
    """Red team: 20 uploads an hour of archives unpacking to 200 MB each grew the disk by 4 GB an
    hour per author. What an author's versions hold unpacked is now capped."""
    client, arena = api
    arena.options.max_author_bytes = 30_000
    alice = add_author(client, "alice")
    first = upload(client, alice, "big", archive("big", {"blob": b"x" * 20_000}))
    assert first.status_code == 201
    quota = client.get("/api/me", headers=bearer(alice)).json()["quota"]
    assert quota["storage_bytes"] > 20_000 and quota["storage_max_bytes"] == 30_000
    over = upload(client, alice, "big", archive("big", {"blob": b"y" * 20_000}))
    assert over.status_code == 413 and "storage quota" in over.json()["detail"]
    assert len(client.get("/api/bots/big").json()["versions"]) == 1


def test_a_version_that_keeps_failing_is_retired_and_the_older_one_plays(
    api: tuple[TestClient, Arena],
) -> None:
    """A version that passed its check but then loses game after game by its own fault (a
    crash, a timeout...) is rejected with the cause once its streak reaches failing_streak; a
    game it plays without a fault resets the streak, and the bot's older active version plays
    again. Its games are kept."""
    from arena.engine.state import GameState
    from arena.records import make_record

    client, arena = api
    arena.options.failing_streak = 3
    alice = add_author(client, "alice")
    for i in (1, 2):
        version = upload(client, alice, "flaky", archive("flaky", {"n": str(i).encode()})).json()["id"]
        arena._on_host({"op": "checked", "version": version, "ok": True, "problems": []})
    assert {v.label for v in arena.playing()} == {"random.v1", "flaky.v2"}
    played = 0

    def game(loser_reason: str, flaky_seat: int = 1) -> None:
        nonlocal played
        seats = ["random.v1", "random.v1"]
        seats[flaky_seat] = "flaky.v2"
        state = GameState.new(seed=played)
        record = make_record(state, seats, [], {"scores": [0, 0], "winner": 1 - flaky_seat,
                                                "reason": loser_reason, "detail": "it died"})
        arena._on_done({"game": {"index": played, "game_id": f"g{played}", "seat0": seats[0],
                                 "seat1": seats[1], "seed": played, "pair": played // 2 + 1},
                        "record": record, "duration_s": 0.1})
        played += 1

    game("crash")
    game("timeout", flaky_seat=0)
    game("interrupted")  # the harness's doing, not the bot's: neither counts nor resets
    assert arena.standings["flaky.v2"].failing_streak == 2
    game("crash")
    versions = {v["number"]: v for v in client.get("/api/bots/flaky").json()["versions"]}
    assert versions[2]["state"] == "rejected"
    assert versions[2]["cause"] == (
        "retired from the ladder: it lost its last 3 games in a row by its own fault (the last: crash)"
    )
    assert {v.label for v in arena.playing()} == {"random.v1", "flaky.v1"}
    assert arena.standings["flaky.v2"].games == 4  # kept, with its rating
    assert list(arena.results.rows("SELECT COUNT(*) FROM games")) == [(4,)]  # all four stored


def test_a_game_without_a_fault_resets_the_failing_streak(api: tuple[TestClient, Arena]) -> None:
    arena = api[1]
    arena.options.failing_streak = 2
    arena._rate(0, "a.v1", "b.v1", 1, "crash", "g0", None)
    arena._rate(1, "a.v1", "b.v1", 0, "normal", "g1", None)  # a's win: no fault
    arena._rate(2, "a.v1", "b.v1", 1, "normal", "g2", None)  # a's loss by the rules: no fault
    arena._rate(3, "a.v1", "b.v1", 1, "timeout", "g3", None)
    assert arena.standings["a.v1"].failing_streak == 1
    assert arena.standings["b.v1"].failing_streak == 0
