"""Running a tournament's games on a Dask distributed cluster (``--dask ADDRESS``).

The coordinator keeps the results folder exactly as in a local run; only where games
are played changes. Each bot folder is packed once into a deterministic tar archive
named by its SHA-256, scattered to every worker once (``broadcast=True``), and
unpacked there into a cache keyed by that hash (execute bits kept), then built by each
worker thread's pool (under strict: confined, in a private copy that the pool then runs).
Each worker thread keeps its own bot processes across the games it plays. Results
stream back with ``as_completed`` and are stored by the coordinator, so resuming works
the same as locally.
"""

from __future__ import annotations

import atexit
import dataclasses
import fcntl
import hashlib
import io
import os
import tarfile
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from arena.bots.manifest import Manifest
from arena.bots.pool import BotPool, build_all
from arena.errors import ArenaError
from arena.launch.launcher import Launcher
from arena.tournament.config import Entrant, TournamentConfig
from arena.tournament.runner import Finished, play_spec
from arena.tournament.schedule import GameSpec
from arena.untrusted import check_name, file_name, inside, refuse_symlinks, walk

CACHE_ENV = "ARENA_DASK_CACHE"


def pack_bot(folder: Path) -> bytes:
    """A deterministic tar of a bot folder: same files and modes give the same bytes.

    Raises ConfigError if the folder holds a symbolic link (it would pack the file it
    points at, or unpack as a link to anywhere on the worker).
    """
    refuse_symlinks(folder)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        # walk, not rglob: Python 3.11's rglob recurses once per folder level (RecursionError)
        for path in sorted(Path(root, name) for root, dirs, files in walk(folder) for name in dirs + files):
            relative = path.relative_to(folder)
            if "__pycache__" in relative.parts:
                continue
            if path.is_symlink():  # made since the check above
                refuse_symlinks(folder)
            info = archive.gettarinfo(str(path), arcname=str(relative))
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if path.is_file():
                with path.open("rb") as handle:
                    archive.addfile(info, handle)
            else:
                archive.addfile(info)
    return buffer.getvalue()


def bundle_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class DaskExecutor:
    """Plays games as Dask tasks on the cluster whose scheduler is at ``address``."""

    def __init__(self, config: TournamentConfig, address: str, *, launcher: Launcher | None = None,
                 timeout_s: float = 15.0) -> None:
        from distributed import Client

        self.config = config
        # Pickled with every task; each worker makes its sandbox's resources itself.
        self.launcher = launcher or Launcher.for_level(config.sandbox)
        try:
            self.client = Client(address, timeout=timeout_s)
        except (OSError, TimeoutError, ValueError) as exc:
            raise ArenaError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
        self._futures: list[Any] = []

    def run(self, specs: Iterable[GameSpec]) -> Iterator[Finished]:
        from distributed import KilledWorker, as_completed

        bundles = {}
        for entrant in self.config.entrants:
            data = pack_bot(entrant.folder)
            bundles[entrant.name] = (bundle_hash(data), data)
        # One transfer per bot and worker, whatever the number of games.
        shipped = self.client.scatter({name: bundle for name, bundle in bundles.items()},
                                      broadcast=True, hash=False)
        config_json = self.config.to_json()
        self._futures = [
            self.client.submit(play_on_worker, config_json, shipped, spec, self.launcher, pure=False,
                               key=f"arena-{os.getpid()}-{spec.game_id}")
            for spec in specs]
        for future in as_completed(self._futures):
            try:
                spec, record, duration = future.result()
            except KilledWorker as exc:  # Dask retried it on other workers; each of them died too
                raise ArenaError(f"Dask workers kept dying while playing a game, so it was given up: "
                                 f"{exc} The games stored so far are kept; run the same command again "
                                 "to retry it") from None
            yield spec, record, duration

    def close(self) -> None:
        for future in self._futures:
            future.cancel()
        self.client.close()


# ------------------------------------------------------------------ on the worker
_local = threading.local()
_unpack_lock = threading.Lock()


def _cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path(tempfile.gettempdir()) / "arena-dask-bots")


@contextmanager
def _cache_lock() -> Iterator[None]:
    """Serialise unpacking and building across the threads and processes of one machine."""
    cache = _cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    with _unpack_lock, (cache / ".lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _unpack(name: str, digest: str, data: bytes) -> Path:
    """Unpack a bundle into the cache once (by hash); returns the bot folder. Call locked."""
    target = inside(_cache_dir(), file_name(digest), check_name(name, "bot bundle"))
    if not target.exists():
        staging = Path(tempfile.mkdtemp(prefix="unpack-", dir=_cache_dir()))
        with tarfile.open(fileobj=io.BytesIO(data)) as archive:
            archive.extractall(staging, filter="tar")  # "tar" keeps execute bits, refuses escapes
        staging.chmod(0o755)  # mkdtemp made it 0700; a sandboxed bot runs as another uid
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging, target)
    return target


def play_on_worker(config_json: dict[str, Any], bundles: dict[str, tuple[str, bytes]],
                   spec: GameSpec, launcher: Launcher | None = None) -> Finished:
    """A Dask task: play one game with this worker thread's bot processes."""
    config = TournamentConfig.from_json(config_json)
    launcher = launcher or Launcher.for_level(config.sandbox)
    key = (tuple(sorted((name, digest) for name, (digest, _) in bundles.items())), config.edition,
           launcher, config.pondering)
    pool_entry = getattr(_local, "pools", {}).get(key)
    if pool_entry is None:
        log_dir = _cache_dir() / "logs" / f"{os.getpid()}-{threading.get_ident()}"
        with _cache_lock():
            folders = {name: _unpack(name, digest, data) for name, (digest, data) in bundles.items()}
            config = dataclasses.replace(config, entrants=tuple(
                Entrant(e.name, folders[e.name], e.description) for e in config.entrants))
            manifests = [Manifest.load(folder) for folder in config.folders]
            launcher.check()
            # Under strict each pool builds confined in private copies of its own, and runs them.
            manifests, broken = build_all(manifests, log_dir, list(config.names), launcher=launcher,
                                          build_dir=_cache_dir() / "builds" / log_dir.name)
        pool = BotPool(manifests, log_dir, labels=list(config.names), do_build=False, broken=broken,
                       launcher=launcher, pondering=config.pondering)
        atexit.register(pool.close)
        pool_entry = (pool, {name: i for i, name in enumerate(config.names)})
        if not hasattr(_local, "pools"):
            _local.pools = {}
        _local.pools[key] = pool_entry
    pool, index = pool_entry
    return play_spec(pool, index, config, spec)
