"""What the in-process API tests of arena serve share: the app over a real data folder,
the organizer's token, an author's token."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fastapi.testclient import TestClient

from arena.serve.app import BodyLimit, Events, create_app
from arena.serve.service import Arena, Options
from arena.serve.store import hash_token

ORGANIZER = "pwa_organizer-token-for-tests"


@contextmanager
def api_client(
    data: Path, *, max_upload_bytes: int, uploads_per_hour: int = 3
) -> Iterator[tuple[TestClient, Arena]]:
    """The real app and service over ``data`` (no game host: versions stay queued)."""
    arena = Arena(Options(data=data, sandbox="none", house_bots=("random",)))
    app = create_app(
        arena,
        Events(),
        uploads_per_hour=uploads_per_hour,
        max_upload_bytes=max_upload_bytes,
        organizer_hash=hash_token(ORGANIZER),
    )
    try:
        with TestClient(BodyLimit(app, max_upload_bytes)) as client:
            yield client, arena
    finally:
        arena.close()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def add_author(client: TestClient, name: str) -> str:
    """A new author through the organizer's endpoint; their token."""
    answer = client.post("/api/authors", json={"name": name}, headers=bearer(ORGANIZER))
    assert answer.status_code == 201, answer.text
    token = str(answer.json()["token"])
    assert token.startswith("pwa_")
    return token


def tgz(files: dict[str, bytes]) -> bytes:
    """A .tar.gz of these regular files (path -> contents), paths taken as given (``../x`` too)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path, data in files.items():
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()
