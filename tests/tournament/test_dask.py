"""The same tournament on a real Dask LocalCluster gives the same results as local processes."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from arena.bots.pool import sample_bots_dir
from arena.tournament.distributed import bundle_hash, pack_bot
from tests.helpers import arena
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
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_a_dask_worker_killed_mid_game_loses_no_game_and_stores_none_twice(
        tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import os
    import signal
    import sqlite3
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
