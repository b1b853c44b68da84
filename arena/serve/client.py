"""The client side of `arena serve`, for `arena author`, `arena upload` and `arena status`.

Tokens come from ``ARENA_TOKEN`` or ``--token-file`` and go in the Authorization header
only. Every failure is one line: the server's ``detail``, or what went wrong on the way.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Any

import httpx

from arena.errors import ArenaError, ConfigError
from arena.untrusted import shown

TIMEOUT_S = 60.0


def read_token(token_file: Path | None) -> str:
    if token_file is not None:
        try:
            info = os.stat(token_file)
            if not stat.S_ISREG(info.st_mode):
                raise ConfigError(f"--token-file {token_file}: not a regular file")
            if info.st_size > 4096:
                raise ConfigError(f"--token-file {token_file}: too large to be a token")
            token = Path(token_file).read_text(errors="replace").strip()
        except OSError as exc:
            raise ConfigError(f"--token-file {token_file}: cannot read it: {exc.strerror or exc}") from None
        if not token:
            raise ConfigError(f"--token-file {token_file}: empty")
        return token
    token = os.environ.get("ARENA_TOKEN", "").strip()
    if not token:
        raise ConfigError(
            "no token: set ARENA_TOKEN or pass --token-file FILE (the organizer's is in "
            "DIR/organizer.token on the server; an author's is printed by `arena author add`)"
        )
    return token


class Client:
    def __init__(self, server: str, token: str | None) -> None:
        server = server.rstrip("/")
        if not server.startswith(("http://", "https://")):
            raise ConfigError(f"--server {shown(server)}: expected a URL such as http://127.0.0.1:8000")
        self.server = server
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=server, headers=headers, timeout=TIMEOUT_S, follow_redirects=False)

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ArenaError(f"{self.server}: cannot reach the arena ({type(exc).__name__}: {exc})") from None
        if response.status_code >= 400:
            try:
                detail = response.json().get("detail")
            except ValueError:
                detail = response.text[:300]
            extra = ""
            if response.status_code == 429 and response.headers.get("retry-after"):
                extra = f" (retry after {response.headers['retry-after']} s)"
            raise ArenaError(f"{self.server}: {response.status_code}: {shown(str(detail), 500)}{extra}")
        return response.json()

    def close(self) -> None:
        self.http.close()


def wait_for_version(client: Client, version_id: int, timeout_s: float) -> dict[str, Any]:
    """Poll until the version is active or rejected (or ``timeout_s`` passes)."""
    deadline = time.monotonic() + timeout_s
    while True:
        version = client.call("GET", f"/api/versions/{version_id}")
        if version["state"] in ("active", "rejected") or time.monotonic() > deadline:
            return version
        time.sleep(0.5)


__all__ = ["Client", "read_token", "wait_for_version"]
