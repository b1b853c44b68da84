"""The same tournament on a real Dask LocalCluster gives the same results as local processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arena.bots.pool import sample_bots_dir
from arena.tournament.distributed import bundle_hash, pack_bot
from tests.helpers import ARENA_ARGV, arena, live_bot_processes, stored_games, worker_processes
from tests.tournament.test_run import stored_results, table_lines

SAMPLES = sample_bots_dir()


def test_pack_bot_is_deterministic_and_keeps_execute_bits(tmp_path: Path) -> None:
    folder = tmp_path / "bot"
    folder.mkdir()
    (folder / "bot.toml").write_text('name = "x"\ncommand = "./run"\n')
    (folder / "run").write_text("#!/bin/sh\n")
    os.chmod(folder / "run", 0o755)
    first = pack_bot(folder)
    os.utime(folder / "run", (1, 1))
    assert pack_bot(folder) == first  # mtimes do not change the content hash
    (folder / "run").write_text("#!/bin/sh\necho\n")
    assert bundle_hash(pack_bot(folder)) != bundle_hash(first)
    import io
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(first)) as archive:
        assert archive.getmember("run").mode & 0o111


@pytest.mark.slow
def test_dask_local_cluster_gives_the_same_results_as_local_processes(tmp_path: Path,
                                                                      monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from distributed import LocalCluster

    args = ["run-tournament", "--bots", str(SAMPLES / "random"), "--bots", str(SAMPLES / "greedy"),
            "--bots", str(SAMPLES / "cbot"), "--games", "4", "--seed", "9"]
    local = arena(*args, "--out", str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    local_done = time.time()
    monkeypatch.setenv("ARENA_DASK_CACHE", str(tmp_path / "cache"))
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      worker_dashboard_address=None) as cluster:
        on_dask = arena(*args, "--out", str(tmp_path / "dask"), "--dask", cluster.scheduler_address)
        # the workers live on, their bots of this tournament do not (they lived until the workers exited)
        assert live_bot_processes() == []
    assert on_dask.returncode == 0, on_dask.stderr
    assert "Dask at" in on_dask.stdout
    assert stored_results(tmp_path / "dask") == stored_results(tmp_path / "local")
    assert table_lines(on_dask.stdout) == table_lines(local.stdout)
    # bots were shipped once, by content hash, and the C bot was built on the workers (under
    # strict, in a private copy in the cache's builds/ folder)
    shipped = [p for p in (tmp_path / "cache").iterdir() if len(p.name) == 64]
    assert len(shipped) == 3
    built = [p for p in (tmp_path / "cache").glob("builds/*/cbot/bot")]
    assert built and all(p.stat().st_mtime > local_done for p in built)


def test_unreachable_scheduler_is_a_clear_error(tmp_path: Path) -> None:
    proc = arena("run-tournament", "--bots", str(SAMPLES / "random"), "--bots", str(SAMPLES / "greedy"),
                 "--games", "2", "--out", str(tmp_path / "x"), "--dask", "tcp://127.0.0.1:9")
    assert proc.returncode == 1 and "cannot reach the Dask scheduler" in proc.stderr
    assert "Connection refused" in proc.stderr and "Traceback" not in proc.stderr
    proc = arena("run-tournament", "--bots", str(SAMPLES / "random"), "--bots", str(SAMPLES / "greedy"),
                 "--games", "2", "--out", str(tmp_path / "y"), "--dask", "tcp://127.0.0.1:port")
    assert proc.returncode == 1 and "expected tcp://HOST:PORT" in proc.stderr, proc.stderr


def test_dask_without_the_extra_installed_is_one_line_naming_it(tmp_path: Path) -> None:
    # sys.modules[name] = None makes "import distributed" fail as if it were not installed.
    without_dask = [sys.executable, "-c", "import sys; sys.modules['distributed'] = None; "
                    "from arena.cli import main; sys.exit(main())"]
    proc = subprocess.run([*without_dask, "run-tournament", "--bots", str(SAMPLES / "random"),
                           "--bots", str(SAMPLES / "greedy"), "--games", "2", "--out", str(tmp_path / "x"),
                           "--sandbox", "none", "--dask", "tcp://127.0.0.1:9"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert "pip install 'patchwork-arena[dask]'" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "x").exists() or not list((tmp_path / "x").glob("*.sqlite*"))


@pytest.mark.slow
def test_a_dask_worker_killed_mid_game_loses_no_game_and_stores_none_twice(
        tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import os
    import signal
    import subprocess
    import time

    from distributed import Client, LocalCluster

    from tests.helpers import ARENA_ARGV

    monkeypatch.setenv("ARENA_DASK_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "dask"
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      worker_dashboard_address=None) as cluster, Client(cluster) as client:
        runner = subprocess.Popen(
            [*ARENA_ARGV, "run-tournament", "--bots", str(SAMPLES / "random"), "--bots",
             str(SAMPLES / "greedy"), "--games", "8", "--sandbox", "none", "--out", str(out), "--dask",
             cluster.scheduler_address], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and runner.poll() is None:  # kill a worker while it plays
            busy = [w for w, keys in client.processing().items() if keys]
            try:  # read-only; the database may not exist yet, or not have its tables
                with sqlite3.connect(f"file:{out / 'tournament.db'}?mode=ro", uri=True) as conn:
                    stored = conn.execute("SELECT COUNT(*) FROM games").fetchone()[0]
            except sqlite3.Error:
                stored = 0
            if busy and stored >= 1:
                pid = client.run(os.getpid, workers=busy[:1])[busy[0]]
                os.kill(pid, signal.SIGKILL)
                break
            time.sleep(0.1)
        else:
            pytest.fail("no worker was busy before the run ended")
        stdout, stderr = runner.communicate(timeout=180)
    assert runner.returncode == 0, stdout + stderr
    with sqlite3.connect(out / "tournament.db") as conn:
        assert [r[0] for r in conn.execute("SELECT idx FROM games ORDER BY idx")] == list(range(8))
    assert len((out / "games.jsonl").read_text().splitlines()) == 8


# ------------------------------------------------------------------ a cluster as the README runs it
DASK = str(Path(sys.executable).with_name("dask"))


_LOOPBACK_UP = """
import fcntl, socket, struct, sys, time
IFF_UP, IFF_LOOPBACK, IFF_RUNNING, SIOCSIFFLAGS = 0x1, 0x8, 0x40, 0x8914
fcntl.ioctl(socket.socket(), SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", IFF_UP | IFF_LOOPBACK | IFF_RUNNING))
print("up", flush=True)
time.sleep(600)
"""


class _Cluster:
    """``dask scheduler`` and ``dask worker`` (each behind its nanny) as separate processes, as
    the README starts them. As root they share a network namespace of their own (``unshare
    --net``, loopback only), entered with ``nsenter`` by every process of the test; otherwise
    they listen on the host's loopback."""

    def __init__(self, tmp_path: Path, workers: int) -> None:
        self.tmp = tmp_path
        self.processes: list[subprocess.Popen[bytes]] = []
        self.prefix: list[str] = []
        try:
            self._start_cluster(workers)
        except BaseException:  # a cluster that failed to start leaves nothing running
            self.close()
            raise

    def _start_cluster(self, workers: int) -> None:
        tmp_path = self.tmp
        if os.geteuid() == 0 and shutil.which("unshare") and shutil.which("nsenter"):
            # The holder keeps the namespace alive; it brings loopback up (SIOCSIFFLAGS: no
            # iproute2 needed) and says so before anything enters its namespace.
            holder = subprocess.Popen(["unshare", "--net", sys.executable, "-c", _LOOPBACK_UP],
                                      stdout=subprocess.PIPE)
            self.processes.append(holder)
            assert holder.stdout is not None and holder.stdout.readline() == b"up\n", "no loopback"
            self.prefix = ["nsenter", f"--net=/proc/{holder.pid}/ns/net"]
        file = tmp_path / "scheduler.json"
        self.scheduler = self._start([DASK, "scheduler", "--host", "127.0.0.1", "--port", "0",
                                      "--no-dashboard", "--scheduler-file", str(file)])
        deadline = time.monotonic() + 30
        while not file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.2)  # written whole
        self.address = json.loads(file.read_text())["address"]
        self.nannies = [self._start([DASK, "worker", self.address, "--nthreads", "1", "--nworkers", "1",
                                     "--no-dashboard", "--host", "127.0.0.1"]) for _ in range(workers)]
        deadline = time.monotonic() + 90  # a loaded machine starts Python slowly
        while len(self.workers()) < workers and time.monotonic() < deadline:
            time.sleep(0.1)
        if len(self.workers()) < workers:
            pytest.fail("the Dask workers did not start: " + self.logs())
        time.sleep(1.0)  # registered with the scheduler

    def logs(self) -> str:
        return "\n".join(path.read_text(errors="replace")[-8000:]
                         for path in sorted(self.tmp.glob("cluster-*.log")))

    def _start(self, argv: list[str]) -> subprocess.Popen[bytes]:
        log = (self.tmp / f"cluster-{len(self.processes)}.log").open("wb")
        process = subprocess.Popen([*self.prefix, *argv], stdout=log, stderr=subprocess.STDOUT,
                                   env={**os.environ, "ARENA_DASK_CACHE": str(self.tmp / "cache")})
        self.processes.append(process)
        return process

    def workers(self) -> list[int]:
        """The worker processes (each a child of its nanny, started by multiprocessing)."""
        return [pid for nanny in self.nannies for pid in worker_processes(nanny.pid)]

    def arena(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([*self.prefix, *ARENA_ARGV, *args, "--dask", self.address],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def close(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
        for process in reversed(self.processes):
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _when_stored(runner: subprocess.Popen[str], out: Path, games: int) -> None:
    """Wait until ``games`` games are stored (the run still going)."""
    deadline = time.monotonic() + 60
    while stored_games(out) < games and runner.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if runner.poll() is not None:
        stdout, stderr = runner.communicate()
        pytest.fail(f"the run ended before anything could be killed:\n{stdout}\n{stderr}")


@pytest.mark.slow
def test_a_dask_cluster_of_separate_processes_survives_a_killed_worker_and_not_its_scheduler(
        tmp_path: Path) -> None:
    pytest.importorskip("distributed")  # the [dask] extra
    games = 12
    args = ["run-tournament", "--bots", str(SAMPLES / "random"), "--bots", str(SAMPLES / "greedy"),
            "--games", str(games), "--seed", "5", "--sandbox", "none"]
    local = arena(*args, "--concurrency", "2", "--out", str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    cluster = _Cluster(tmp_path, workers=2)
    try:
        out = tmp_path / "dask"
        runner = cluster.arena(*args, "--out", str(out))
        _when_stored(runner, out, 1)
        victim = cluster.workers()[0]
        os.kill(victim, signal.SIGKILL)  # mid-run: its games in flight go to the other worker
        stdout, stderr = runner.communicate(timeout=120)
        assert runner.returncode == 0, stdout + stderr
        assert stored_games(out) == games
        assert stored_results(out) == stored_results(tmp_path / "local")
        assert table_lines(stdout) == table_lines(local.stdout)
        assert len((out / "games.jsonl").read_text().splitlines()) == games
        assert f"Worker process {victim} was killed by signal 9" in cluster.logs()  # by its nanny

        lost = tmp_path / "lost"
        runner = cluster.arena(*args, "--out", str(lost))
        _when_stored(runner, lost, 1)
        cluster.scheduler.kill()
        stdout, stderr = runner.communicate(timeout=60)
    finally:
        cluster.close()
    assert runner.returncode == 1, stdout + stderr
    assert "Traceback" not in stderr, stderr
    error = stderr.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("Error: lost the Dask scheduler at "), stderr
    assert 1 <= stored_games(lost) < games  # what was stored is kept: a rerun plays the rest
