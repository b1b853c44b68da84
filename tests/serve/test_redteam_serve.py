"""`arena serve` under attack (the red team's findings, each kept fixed by a test): hostile
archives that cost memory or CPU before any limit counted, or answered 500; uploads sent at
once past the quota; imports the web process can no longer make once it is ``nobody``."""

from __future__ import annotations

import asyncio
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from arena.serve.archive import ArchiveError, unpack
from arena.serve.server import prepare_folder
from arena.serve.service import Arena, Options
from tests.helpers import needs_strict
from tests.serve.helpers import ORGANIZER, add_author, api_client, bearer, tgz
from tests.serve.test_serve_e2e import Server, auth, leftovers

MANIFEST = 'name = "{name}"\ncommand = ["python3", "bot.py"]\nprotocol = "stdio"\n'


def header(name: str, size: int, kind: bytes = tarfile.REGTYPE) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    info.type = kind
    return info.tobuf(format=tarfile.USTAR_FORMAT)


def streamed_tgz(first: bytes, payload: int, filler: bytes, rest: bytes) -> bytes:
    """A .tar.gz of ``first`` (a header), ``payload`` bytes of ``filler``, then ``rest``:
    made a MiB at a time, so a test can hold a GB-sized member in a few MB."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [packer.compress(first)]
    chunk = filler * ((1 << 20) // len(filler))
    left = payload
    while left > 0:
        piece = chunk[: min(left, len(chunk))]
        parts.append(packer.compress(piece))
        left -= len(piece)
    parts += [packer.compress(b"\0" * (-payload % 512) + rest + b"\0" * 1024), packer.flush()]
    return b"".join(parts)


def bot_zip(name: str, method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:  # ASCII names: no UTF-8 flag
        archive.writestr("bot.toml", MANIFEST.format(name=name))
        archive.writestr("bot.py", "import sys\n")
    return buffer.getvalue()


@pytest.mark.parametrize("kind", [tarfile.GNUTYPE_LONGNAME, tarfile.XHDTYPE])
def test_a_huge_extended_tar_header_is_refused_before_it_is_read(tmp_path: Path, kind: bytes) -> None:
    # 64 MB of name in a 64 kB upload: tarfile read it whole (a 100 kB one cost a minute and
    # ~700 MB in the web process; a 20 MB one would have asked for ~40 GB)
    data = streamed_tgz(header("././@LongLink", 64 << 20, kind), 64 << 20, b"a", header("bot.toml", 0))
    assert len(data) < 200_000
    started = time.monotonic()
    with pytest.raises(ArchiveError, match="extended header of 67108864 bytes"):
        unpack(data, tmp_path / "out")
    assert time.monotonic() - started < 2
    assert not (tmp_path / "out").exists()


def test_skipping_a_bomb_member_counts_against_the_limits(tmp_path: Path) -> None:
    # 1 GB of zeros (1 MB compressed), then a member refused by its name: reading the headers
    # decompressed the whole GB (~16 s) before anything was refused
    data = streamed_tgz(header("big", 1 << 30), 1 << 30, b"\0", header("../evil", 0))
    started = time.monotonic()
    with pytest.raises(ArchiveError, match="unpacks to over"):
        unpack(data, tmp_path / "out")
    assert time.monotonic() - started < 2


def test_an_archive_in_order_still_unpacks(tmp_path: Path) -> None:
    files = {
        "bot.toml": MANIFEST.format(name="fine").encode(),
        **{f"d/{i}": os.urandom(300) for i in range(300)},
    }
    unpacked = unpack(tgz(files), tmp_path / "out")
    assert unpacked.files == 301 and (tmp_path / "out" / "d" / "299").read_bytes() == files["d/299"]


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[TestClient, Arena]]:
    with api_client(tmp_path, max_upload_bytes=3_000_000) as both:
        yield both


def damaged_zip() -> bytes:
    data = bytearray(bot_zip("crc", zipfile.ZIP_STORED))
    data[data.index(b"import sys")] ^= 1  # its CRC no longer matches
    return bytes(data)


@pytest.mark.parametrize(
    ("archive", "words"),
    [
        (damaged_zip(), "is damaged"),
        (tgz({"/".join(["d" * 250] * 16) + "/" + "f" * 255: b"x", "bot.toml": b""}), "a path longer than"),
    ],
)
def test_damaged_or_unwritable_archives_are_400_not_500(
    api: tuple[TestClient, Arena], archive: bytes, words: str
) -> None:
    client, _ = api
    alice = add_author(client, "alice")
    answer = client.post("/api/bots/crc/versions", files={"archive": ("b", archive)}, headers=bearer(alice))
    assert answer.status_code == 400, answer.text
    assert words in answer.json()["detail"]


def test_uploads_sent_at_once_stay_within_the_quota(api: tuple[TestClient, Arena]) -> None:
    client, arena = api
    alice = add_author(client, "alice")
    app = client.app

    async def burst() -> list[int]:
        transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
        async with httpx.AsyncClient(transport=transport, base_url="http://arena") as http:

            async def one(i: int) -> int:
                # over 1 MB: the form spills to a file, so reading it awaits (the other uploads run)
                data = tgz({"bot.toml": MANIFEST.format(name="other").encode(), "n": os.urandom(1_500_000)})
                answer = await http.post(
                    "/api/bots/burst/versions", files={"archive": ("b", data)}, headers=bearer(alice)
                )
                return answer.status_code

            return await asyncio.gather(*(one(i) for i in range(8)))

    codes = asyncio.run(burst())
    assert codes.count(429) == 5, codes  # 3 an hour: three were taken (400: misnamed), five refused
    assert len(arena.store.uploads_since(1, 0)) <= 3 + 1  # alice's (the house is author 1 or 2)


def test_errors_outside_the_routes_are_json_and_nosniff(api: tuple[TestClient, Arena]) -> None:
    client, _ = api
    huge = client.get("/api/versions/99999999999999999999999")  # was a 500 (SQLite's OverflowError)
    assert huge.status_code == 404 and huge.json()["detail"].startswith("no version")
    big = client.post("/api/authors", content=b"x" * 70_000, headers=bearer(ORGANIZER))
    assert big.status_code == 413 and big.headers["x-content-type-options"] == "nosniff"


def test_the_web_user_can_write_exports(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give the folders to another user")
    prepare_folder(tmp_path / "arena", (65534, 65534))
    assert (tmp_path / "arena" / "exports").stat().st_uid == 65534  # POST /api/export was a 500


RESTRICTED = r"""
import io, sys, zipfile, tarfile
from pathlib import Path
from fastapi.testclient import TestClient
from arena.serve.app import BodyLimit, Events, create_app
from arena.serve.service import Arena, Options
from arena.serve.server import preload
from arena.serve.store import hash_token
from tests.serve.helpers import tgz
from tests.serve.test_redteam_serve import bot_zip, MANIFEST

arena = Arena(Options(data=Path(sys.argv[1]), sandbox="none", house_bots=("random",)))
app = BodyLimit(create_app(arena, Events(), organizer_hash=hash_token("pwa_o")), 20 << 20)
with TestClient(app) as client:
    token = client.post("/api/authors", json={"name": "a"}, headers={"Authorization": "Bearer pwa_o"}).json()
    preload()
    # what the web process sees of a Python only root can read (pyenv in /root): no more imports
    kept = ("BuiltinImporter", "FrozenImporter")
    sys.meta_path[:] = [f for f in sys.meta_path if getattr(f, "__name__", "") in kept]
    auth = {"Authorization": "Bearer " + token["token"]}
    for name, data in (("zipped", bot_zip("zipped")), ("tarred", tgz({"bot.toml": MANIFEST.format(
            name="tarred").encode(), "bot.py": b"x"}))):
        answer = client.post(f"/api/bots/{name}/versions", files={"archive": ("b", data)}, headers=auth)
        print(name, answer.status_code, answer.text[:200])
    for path in ("/api/leaderboard", "/api/bots", "/api/bots/zipped", "/api/games", "/api/ladder", "/api/me"):
        print(path, client.get(path, headers=auth).status_code)
arena.close()
"""


def test_the_upload_path_needs_no_import_after_the_drop(tmp_path: Path) -> None:
    """Every ordinary .zip upload was a 500 (LookupError: unknown encoding: cp437) once the web
    process could no longer read the standard library it had not imported yet."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", RESTRICTED, str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stderr[-2000:]
    assert lines[0].startswith("zipped 201") and lines[1].startswith("tarred 201"), (
        done.stdout + done.stderr[-2000:]
    )
    assert all(line.endswith(" 200") for line in lines[2:]), done.stdout


def test_deeply_nested_json_is_400_not_500(api: tuple[TestClient, Arena]) -> None:
    client, _ = api
    answer = client.post("/api/authors", content=b"[" * 30_000 + b"]" * 30_000, headers=bearer(ORGANIZER))
    assert answer.status_code == 400 and answer.json()["detail"] == "the body is not JSON"


@pytest.mark.parametrize("name", ["House", "ORGANIZER", "Alice"])
def test_author_names_differ_in_more_than_case(api: tuple[TestClient, Arena], name: str) -> None:
    # 'House' could pass for the house bots' author on the leaderboard, 'Alice' for alice
    client, _ = api
    add_author(client, "alice")
    answer = client.post("/api/authors", json={"name": name}, headers=bearer(ORGANIZER))
    assert answer.status_code in (409, 422), answer.text


def test_a_restart_removes_uploads_a_kill_cut_short(tmp_path: Path) -> None:
    # kill -9 of the web process while it unpacked left versions/.staging/<random> (119 MB
    # after two kills) that no restart removed
    left = tmp_path / "versions" / ".staging" / "0123456789abcdef" / "z"
    left.mkdir(parents=True)
    (left / "0").write_bytes(b"\0" * 1000)
    arena = Arena(Options(data=tmp_path, sandbox="none", house_bots=("random",)))
    arena.close()
    assert not (tmp_path / "versions" / ".staging").exists()


@pytest.mark.slow
@needs_strict
def test_a_real_server_takes_zips_exports_and_keeps_no_check_copies() -> None:
    """As nobody (the web process) and root (the host): a .zip upload was a 500, POST
    /api/export a 500, and every check left its copy of the bot in host/src for good."""
    root = Path(tempfile.mkdtemp(prefix="arena-redteam-"))
    root.chmod(0o755)
    data = root / "arena"
    server = Server(data)
    server.start()
    try:
        organizer = (data / "organizer.token").read_text().strip()
        added = httpx.post(
            f"{server.url}/api/authors", json={"name": "zed"}, headers=auth(organizer), timeout=30
        )
        token = added.json()["token"]
        sent = httpx.post(
            f"{server.url}/api/bots/zipped/versions",
            files={"archive": ("zipped.zip", bot_zip("zipped"))},
            headers=auth(token),
            timeout=60,
        )
        assert sent.status_code == 201, sent.text
        version = sent.json()["id"]
        deadline = time.monotonic() + 120
        while server.get(f"/api/versions/{version}").json()["state"] not in ("active", "rejected"):
            assert time.monotonic() < deadline
            time.sleep(0.5)
        deadline = time.monotonic() + 10
        while (data / "host" / "src" / f"check-{version}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not (data / "host" / "src" / f"check-{version}").exists()
        exported = httpx.post(f"{server.url}/api/export", headers=auth(organizer), timeout=120)
        assert exported.status_code == 200, exported.text
    finally:
        server.stop()
        for line in leftovers(data):
            os.kill(int(line.split(":")[0]), 9)
        shutil.rmtree(root, ignore_errors=True)


def test_a_chunked_upload_past_the_limit_is_413(api: tuple[TestClient, Arena]) -> None:
    # no Content-Length: BodyLimit refuses while the body streams in; that answer was lost in
    # the form parser's task group ("400: unhandled errors in a TaskGroup (1 sub-exception)")
    client, _ = api
    alice = add_author(client, "alice")

    def body() -> Iterator[bytes]:
        yield b'--X\r\nContent-Disposition: form-data; name="archive"; filename="a"\r\n\r\n'
        for _ in range(8):
            yield os.urandom(1 << 19)

    answer = client.post(
        "/api/bots/chunky/versions",
        content=body(),
        headers={**bearer(alice), "Content-Type": "multipart/form-data; boundary=X"},
    )
    assert answer.status_code == 413, answer.text
    assert "too large" in answer.json()["detail"]
