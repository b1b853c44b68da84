"""Running a tournament's games on a Dask distributed cluster (``--dask ADDRESS``).

The coordinator keeps the results folder exactly as in a local run; only where games
are played changes. Each bot folder is packed once into a deterministic tar archive
named by its SHA-256, scattered to every worker once (``broadcast=True``), and
unpacked there into a cache keyed by that hash (execute bits kept), then built by each
worker thread's pool (under strict: confined, in a private copy that the pool then runs).
Each worker thread keeps its own bot processes across the games it plays. Results
stream back with ``as_completed`` and are stored by the coordinator, so resuming works
the same as locally. A worker that dies has its games rescheduled by Dask; a scheduler
that is lost ends the run with one line (the games stored so far are kept).
"""

from __future__ import annotations

import asyncio
import atexit
import dataclasses
import fcntl
import hashlib
import io
import logging
import os
import socket
import tarfile
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import CancelledError
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from arena.errors import ArenaError
from arena.tournament.schedule import GameSpec
from arena.tournament.scheduler import DONE, as_scheduler
from arena.tournament.series import STUCK, Lineup, Played, Source, build_lineup
from arena.untrusted import check_name, copy_folder, file_name, inside, walk

CACHE_ENV = "ARENA_DASK_CACHE"
log = logging.getLogger(__name__)


def pack_bot(folder: Path) -> bytes:
    """A deterministic tar of a bot folder: same files and modes give the same bytes.

    The folder is copied first (:func:`~arena.untrusted.copy_folder`: never through a link,
    even one swapped in meanwhile; within the bot folder limits) and the private copy is
    packed: packing the folder itself read a file swapped for a link to /etc/shadow after
    the check, as root. Raises ArenaError if the folder holds a symbolic link (it would
    unpack as a link to anywhere on the worker), anything but files and folders, or too much.
    """
    with tempfile.TemporaryDirectory(prefix="arena-pack-") as private:
        copy = Path(private) / "bot"
        copy_folder(folder, copy, links_inside=False)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            # walk, not rglob: Python 3.11's rglob recurses once per folder level (RecursionError)
            for path in sorted(Path(root, name) for root, dirs, files in walk(copy) for name in dirs + files):
                relative = path.relative_to(copy)
                if "__pycache__" in relative.parts:
                    continue
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


def _probe(address: str, timeout_s: float) -> None:
    """Fail at once, in one line, when nothing listens at a tcp:// address (the Dask client
    would retry a refused connection until its timeout)."""
    if not address.startswith("tcp://"):
        return
    host, _, port = address[len("tcp://"):].rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except ValueError:
        raise ArenaError(f"cannot reach the Dask scheduler at {address}: expected tcp://HOST:PORT") from None
    except OSError as exc:
        raise ArenaError(f"cannot reach the Dask scheduler at {address}: "
                         f"{exc.strerror or type(exc).__name__}") from None


class DaskExecutor:
    """Plays a lineup's games as Dask tasks on the cluster whose scheduler is at ``address``
    (an executor of :func:`arena.tournament.series.run_series`)."""

    def __init__(self, lineup: Lineup, address: str, *, timeout_s: float = 15.0) -> None:
        try:
            from distributed import Client
        except ImportError:
            raise ArenaError("--dask needs Dask's distributed package, which is not installed: "
                             "pip install 'patchwork-arena[dask]'") from None

        self.lineup = lineup
        self.address = address
        _quiet_dask_logs()
        _probe(address, timeout_s)
        try:
            self.client = Client(address, timeout=timeout_s)
        except (OSError, TimeoutError, ValueError) as exc:
            raise ArenaError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
        self._futures: list[Any] = []
        self._key: tuple[Any, ...] | None = None  # the workers' pools of this tournament (pool_key)

    def run(self, specs: Source) -> Iterator[Played]:
        from distributed import KilledWorker, as_completed

        try:
            bundles = {}
            for label, folder in zip(self.lineup.labels, self.lineup.folders, strict=True):
                data = pack_bot(folder)
                bundles[label] = (bundle_hash(data), data)
            # One transfer per bot and worker, whatever the number of games; the lineup too
            # (its rules are ~5 KB pickled: too much to send with every game).
            self._key = pool_key(self.lineup, {label: digest for label, (digest, _) in bundles.items()})
            shipped = self.client.scatter(bundles, broadcast=True, hash=False)
            lineup = self.client.scatter(self.lineup, broadcast=True, hash=False)
            # The scheduler is asked as games finish, a window ahead of the cluster's threads (twice
            # their number): a schedule with no end (arena serve's ladder) streams, and a format that
            # hears results (Swiss, knockout) has each one recorded before its next games are asked for.
            scheduler = as_scheduler(specs)
            window = max(4, 2 * sum(self.client.nthreads().values()))

            def submit() -> list[Any]:
                """The scheduler's games, as new tasks, until the window is full or it has none now."""
                new = []
                while len(self._futures) < window and isinstance(spec := scheduler.next(), GameSpec):
                    future = self.client.submit(play_on_worker, lineup, shipped, spec, pure=False,
                                                key=f"arena-{os.getpid()}-{spec.game_id}")
                    self._futures.append(future)
                    new.append(future)
                return new

            finished = as_completed(submit())
            for future in finished:
                self._futures.remove(future)
                played: Played = future.result()
                scheduler.record(played[0], played[1].winner)
                for following in submit():  # a result may free more games (the next Swiss round)
                    finished.add(following)
                yield played
            if scheduler.next() is not DONE:
                raise ArenaError(STUCK)
        except KilledWorker as exc:  # Dask retried it on other workers; each of them died too
            raise ArenaError(f"Dask workers kept dying while playing a game, so it was given up: "
                             f"{exc} The games stored so far are kept; run the same command again "
                             "to retry it") from None
        except ArenaError:  # ours (a bot folder that cannot be packed)
            raise
        except (Exception, asyncio.CancelledError) as exc:
            if self.client.status == "running" and not isinstance(exc, (OSError, asyncio.CancelledError,
                                                                        CancelledError)):
                raise ArenaError(f"a game failed on a Dask worker: {type(exc).__name__}: "
                                 f"{str(exc)[:300]}") from None
            if self.client.status == "running":  # the scheduler is there: the workers went
                raise ArenaError(f"every Dask worker holding the bots was lost at once (killed, or out of "
                                 f"memory?), so Dask cancelled the games in flight ({type(exc).__name__}); "
                                 "the games stored so far are kept: run the same command again to play "
                                 "the rest") from None
            raise ArenaError(f"lost the Dask scheduler at {self.address} ({type(exc).__name__}); the "
                             "games stored so far are kept: run the same command again to play the "
                             "rest") from None

    def close(self) -> None:
        for future in self._futures:
            future.cancel()
        if self._key is not None and self.client.status == "running":
            try:  # the workers' bots of this tournament go now, not when the workers exit
                self.client.run(close_pools, self._key)
            except Exception as exc:  # noqa: BLE001 - a lost worker's bots went with it
                log.info("closing the workers' bot pools: %s", exc)
        self.client.close()


def _quiet_dask_logs() -> None:
    """Dask's client logs its connection troubles on stderr (with tracebacks); here they
    end as one ArenaError instead. Its config gives some loggers levels of their own."""
    names = [name for name in logging.root.manager.loggerDict if name.split(".")[0] == "distributed"]
    for name in ["distributed", *names]:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


# ------------------------------------------------------------------ on the worker
_pools: dict[tuple[int, tuple[Any, ...]], tuple[Any, Lineup]] = {}  # (thread, pool_key) -> (pool, lineup)
_pools_lock = threading.Lock()
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


def pool_key(lineup: Lineup, digests: dict[str, str]) -> tuple[Any, ...]:
    """What a worker's pools of one tournament are known by: its bots' bundles and settings."""
    return (tuple(sorted(digests.items())), lineup.labels, lineup.launcher.level, lineup.pondering)


def close_pools(key: tuple[Any, ...]) -> int:
    """Run on every worker when a tournament ends (:meth:`DaskExecutor.close`): close its bot
    pools, in whatever thread they were made. Without it a worker kept every tournament's bots
    (frozen, or running under none) until the worker exited. Returns how many were closed."""
    with _pools_lock:
        mine = [found for found in _pools if found[1] == key]
        pools = [_pools.pop(found)[0] for found in mine]
    for pool in pools:
        atexit.unregister(pool.close)
        pool.close()
    return len(pools)


def play_on_worker(lineup: Lineup, bundles: dict[str, tuple[str, bytes]], spec: GameSpec) -> Played:
    """A Dask task: play one game with this worker thread's bot processes."""
    key = pool_key(lineup, {name: digest for name, (digest, _) in bundles.items()})
    thread_key = (threading.get_ident(), key)
    with _pools_lock:
        pool_entry = _pools.get(thread_key)
    if pool_entry is None:
        log_dir = _cache_dir() / "logs" / f"{os.getpid()}-{threading.get_ident()}"
        with _cache_lock():
            folders = {name: _unpack(name, digest, data) for name, (digest, data) in bundles.items()}
            lineup.launcher.check(pondering=lineup.pondering)
            # Under strict each pool builds confined in private copies of its own, and runs them.
            unpacked = dataclasses.replace(lineup, folders=tuple(folders[n] for n in lineup.labels))
            built = build_lineup(unpacked, log_dir, _cache_dir() / "builds" / log_dir.name)
        pool = built.pool(log_dir)
        atexit.register(pool.close)  # idempotent: close_pools may have closed it already
        pool_entry = (pool, built)
        with _pools_lock:
            _pools[thread_key] = pool_entry
    pool, built = pool_entry
    # this tournament's secret (a pool is shared by the tournaments with the same bots and settings)
    return spec, dataclasses.replace(built, hidden_key=lineup.hidden_key).play(pool, spec)
