"""`arena serve`: one command, one data folder.

What runs, and as whom (docs/serve.md says it for organizers):

1. As the user who typed the command (root, for strict): the data folder and the
   organizer token are made, the listening socket is bound, and the game host
   (:mod:`arena.serve.host`) is started: it keeps those privileges, to start sandboxes.
2. Then this process drops to ``--user`` (default ``nobody`` when run as root), before
   the HTTP server reads a single request, and serves the API and pages with uvicorn. It
   alone writes the database.

``DIR`` holds ``organizer.token`` (0600), ``results/`` (the database: a results folder
that `arena ratings` and `arena report` read), ``versions/`` (the uploaded sources) and
``host/`` (root's: the copies, builds and logs of the bots, 0700).
"""

from __future__ import annotations

import ctypes
import grp
import logging
import os
import pwd
import socket
import stat
import sys
from pathlib import Path
from typing import Any

import click

from arena.errors import ArenaError, ConfigError
from arena.serve.service import Arena, Options, host_folder, results_folder, start_host
from arena.serve.store import hash_token, new_token

log = logging.getLogger(__name__)

TOKEN_FILE = "organizer.token"
DEFAULT_USER = "nobody"


def prepare_folder(data: Path, owner: tuple[int, int] | None) -> None:
    """Make ``DIR`` and its parts; the web user owns ``results/``, ``versions/`` and ``exports/``."""
    if data.exists() and not data.is_dir():
        raise ConfigError(f"--data {data}: not a folder")
    data.mkdir(parents=True, exist_ok=True)
    for part in ("results", "versions", "exports"):
        (data / part).mkdir(exist_ok=True)
    host = host_folder(data)
    host.mkdir(mode=0o700, exist_ok=True)
    os.chmod(host, 0o700)
    if owner is not None:
        os.chmod(data, 0o755)
        for folder in (results_folder(data), data / "versions", data / "exports"):
            for root, dirs, files in os.walk(folder):
                for name in [*dirs, *files]:
                    os.lchown(os.path.join(root, name), *owner)
            os.lchown(folder, *owner)


def organizer_token(data: Path) -> tuple[str, str | None]:
    """The organizer token's hash, and the token itself when it was made now (to print once)."""
    path = data / TOKEN_FILE
    if path.is_symlink():
        raise ConfigError(f"{path}: a symbolic link; remove it (a new token is made)")
    if path.exists():
        info = path.stat()
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.chmod(path, 0o600)
        token = path.read_text(errors="replace").strip()
        if not token.startswith("pwa_"):
            raise ConfigError(
                f"{path}: does not hold an arena token (pwa_...); remove it to have a new one made"
            )
        return hash_token(token), None
    token = new_token()
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(token + "\n")
    return hash_token(token), token


def web_user(name: str | None) -> tuple[int, int] | None:
    """The (uid, gid) the web process drops to; None when not root (it already is not)."""
    if os.geteuid() != 0:
        if name not in (None, pwd.getpwuid(os.geteuid()).pw_name):
            raise ConfigError(
                "--user: only root can switch to another user (start arena serve as root, or "
                "leave --user out)"
            )
        return None
    name = name or DEFAULT_USER
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise ConfigError(f"--user {name}: no such user (create one: useradd --system arena)") from None
    if entry.pw_uid == 0:
        raise ConfigError(f"--user {name}: the web process never runs as root; name an unprivileged user")
    return entry.pw_uid, entry.pw_gid


def closed_to(path: Path, owner: tuple[int, int]) -> Path | None:
    """The first folder on the way to ``path`` that the user ``owner`` may not pass, or None."""
    uid, gid = owner
    for folder in [*reversed(path.parents), path]:
        try:
            info = folder.stat()
        except FileNotFoundError:
            return None  # made by us, 0755
        except OSError:
            return folder
        mode = info.st_mode
        bit = stat.S_IXUSR if info.st_uid == uid else stat.S_IXGRP if info.st_gid == gid else stat.S_IXOTH
        if not mode & bit:
            return folder
    return None


_CLONE_NEWNS = 0x00020000
_MS_BIND, _MS_REC, _MS_PRIVATE = 0x1000, 0x4000, 1 << 18
VIEW = Path("/mnt/arena-data")


def private_view(data: Path) -> Path | None:
    """The data folder bind-mounted at :data:`VIEW`, in a mount namespace of this process's
    own (a tmpfs over /mnt in it): the web user reaches it there whatever the modes of the
    folders above it (pytest's, /root's), and nothing of it is seen, or left, outside this
    process. None when the kernel refuses (no CAP_SYS_ADMIN in a container, threads)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if not Path("/mnt").is_dir() or libc.unshare(_CLONE_NEWNS) != 0:
        return None
    if libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        return None
    if libc.mount(b"tmpfs", b"/mnt", b"tmpfs", 0, b"mode=0755,size=64k") != 0:
        return None
    VIEW.mkdir(mode=0o755)
    if libc.mount(str(data).encode(), str(VIEW).encode(), None, _MS_BIND, None) != 0:
        return None
    return VIEW


def open_interpreter(owner: tuple[int, int]) -> None:
    """In this process's mount namespace (see :func:`private_view`), make the interpreter and
    its packages reachable by the web user when they lie below a folder closed to it (pyenv in
    /root, 0700): that folder is covered by a tmpfs holding only the way to them, each bound
    back in from its original. Nothing outside this process changes."""
    libc = ctypes.CDLL(None, use_errno=True)
    wanted: dict[Path, set[str]] = {}
    for entry in {sys.base_prefix, sys.prefix, *sys.path}:
        path = Path(entry or ".").absolute()
        if not path.is_dir():
            continue
        closed = closed_to(path, owner)
        if closed is not None and closed != path and path.is_relative_to(closed):
            wanted.setdefault(closed, set()).add(path.relative_to(closed).parts[0])
    for number, (closed, children) in enumerate(sorted(wanted.items())):
        held = Path("/mnt") / f"held-{number}"
        held.mkdir(mode=0o755)
        if libc.mount(str(closed).encode(), str(held).encode(), None, _MS_BIND, None) != 0:
            continue
        if libc.mount(b"tmpfs", str(closed).encode(), b"tmpfs", 0, b"mode=0755,size=64k") != 0:
            continue
        for child in sorted(children):
            (closed / child).mkdir(mode=0o755)
            libc.mount(
                str(held / child).encode(), str(closed / child).encode(), None, _MS_BIND | _MS_REC, None
            )


def drop_privileges(owner: tuple[int, int]) -> None:
    uid, gid = owner
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    try:
        os.setuid(0)
    except PermissionError:
        return
    raise ArenaError("could not drop root privileges")  # pragma: no cover


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)
    sock.set_inheritable(False)
    return sock


HEAD_TIMEOUT_S = 10.0
"""A connection sends a whole request head within this long of opening it (or of its last
answer), or it is closed: 2,000 connections that sent nothing held every slot of the server."""


def guarded_http() -> type:
    """uvicorn's h11 protocol with :data:`HEAD_TIMEOUT_S` (it has none for a request's head)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Guarded(H11Protocol):
        _head_timer: Any = None
        _seen: Any = None

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def _arm(self) -> None:
            self._disarm()
            self._head_timer = self.loop.call_later(HEAD_TIMEOUT_S, self._too_slow)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _too_slow(self) -> None:
            self._head_timer = None
            if not self.transport.is_closing():
                self.transport.close()

        def handle_events(self) -> None:
            super().handle_events()
            if self.cycle is not None and self.cycle is not self._seen:  # a request's head has come
                self._seen = self.cycle
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return Guarded


class _Late:
    """The ASGI app, set once the web process has dropped its privileges: uvicorn's own
    set-up (its protocol modules) is done before, while every file is still readable."""

    app: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)


PRELOAD = (
    "scipy.sparse.csgraph",
    "arena.report.stats",
    "arena.records",
    "arena.bots.manifest",
    "arena.serve.app",
    "arena.serve.archive",
    "arena.serve.pages",
    "arena.report.replay_html",
    "starlette.middleware.sessions",
    "itsdangerous",
    "fastapi",
    "python_multipart",
    "jinja2",
    "tarfile",
    "zipfile",
    "encodings.cp437",  # zipfile's names without the UTF-8 flag (where no mount namespace shows the stdlib)
    "sqlite3",
    "email.utils",
)


def preload() -> None:
    """Import what the web process uses later, while it may still read every file: an
    interpreter installed in a folder only root can read (pyenv in /root) gives the
    unprivileged user no standard library at all."""
    import importlib

    for module in PRELOAD:
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    from arena.serve.pages import warm

    warm()  # the pages' templates and static files, read now


def serve(options: Options, *, host: str, port: int, user: str | None) -> None:
    """Run the arena until interrupted (SIGINT or SIGTERM)."""
    import uvicorn

    from arena.launch.launcher import Launcher
    from arena.serve.app import BodyLimit, Events, create_app

    owner = web_user(user)
    data = options.data.resolve()
    options.data = data
    if options.sandbox == "strict" and not options.dask:
        Launcher.for_level("strict").check()  # says why strict cannot be had here, before anything starts
    prepare_folder(data, owner)
    organizer_hash, fresh = organizer_token(data)
    sock = bind(host, port)
    game_host = start_host(options)
    if owner is not None:
        options.view = private_view(data)
        if options.view is not None:
            open_interpreter(owner)
        closed = closed_to(options.view or data, owner)
        if closed is not None:
            game_host.stdin.close()  # type: ignore[union-attr]
            name = pwd.getpwuid(owner[0]).pw_name
            raise ConfigError(
                f"--data {data}: the web process runs as {name}, and {closed} (mode "
                f"{stat.S_IMODE(closed.stat().st_mode):o}) is closed to it: choose a data folder it can "
                "reach (e.g. /srv/arena), or another --user"
            )
    late = _Late()
    config = uvicorn.Config(
        late,
        http=guarded_http(),
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=3,
        limit_concurrency=2000,
        server_header=False,
    )
    config.load()
    preload()
    if owner is not None:
        drop_privileges(owner)
    events = Events()
    try:
        arena = Arena(options, publish=events.publish)
    except BaseException:
        if game_host.stdin is not None:
            game_host.stdin.close()  # the host (root's: no signal from us now) leaves on EOF
        raise
    try:
        if fresh:
            click.echo(f"organizer token (shown once; also in {data / TOKEN_FILE}, mode 0600):\n  {fresh}")
        else:
            click.echo(f"organizer token: in {data / TOKEN_FILE}")
        who = pwd.getpwuid(os.geteuid()).pw_name
        click.echo(
            f"arena: http://{host}:{port}/ (API docs at /api/docs), data in {data}, web process as "
            f"{who} ({grp.getgrgid(os.getegid()).gr_name}), sandbox {options.sandbox}"
        )
        arena.start(game_host)
        late.app = BodyLimit(
            create_app(
                arena,
                events,
                uploads_per_hour=options.uploads_per_hour,
                max_upload_bytes=options.max_upload_bytes,
                organizer_hash=organizer_hash,
            ),
            options.max_upload_bytes,
        )
        server = uvicorn.Server(config)
        server.run(sockets=[sock])
    finally:
        arena.close()


__all__ = ["serve"]
