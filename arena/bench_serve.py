"""`make bench`'s serve section: `arena serve` measured through its real interfaces.

- ladder games/s against `arena run-tournament` with the same bots, concurrency, time
  control and sandbox (both rates from the games' own finish times, start-up excluded);
- ``GET /api/leaderboard`` latency (p50, p99) with 100 playing bots and 100,000 stored games,
  and the web process's memory with 10,000 and with 100,000 games;
- the server's CPU with 200 open event streams while the ladder plays, against none.

Each server is a real `arena serve` subprocess on loopback, queried over HTTP with httpx.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

ARENA = [sys.executable, "-c", "import sys; from arena.cli import main; sys.exit(main())"]


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _folder() -> Path:
    """A data folder the web process can reach once it runs as nobody."""
    root = Path(tempfile.mkdtemp(prefix="arena-bench-serve-"))
    root.chmod(0o755)
    return root


class _Server:
    def __init__(self, data: Path, *args: str) -> None:
        import httpx

        self.port = _port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(data.parent / "serve.log", "a")  # noqa: SIM115
        self.process = subprocess.Popen(
            [*ARENA, "serve", "--data", str(data), "--port", str(self.port), *args],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/api/ladder", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
            if self.process.poll() is not None:
                raise SystemExit(f"arena serve exited: see {data.parent / 'serve.log'}")
        raise SystemExit("arena serve did not answer within 120 s")

    def cpu_s(self) -> float:
        from arena.launch.proctree import read_stat

        stat = read_stat(str(self.process.pid))
        return stat.cpu / os.sysconf("SC_CLK_TCK") if stat is not None else float("nan")

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


def _rate(db: Path, skip: int = 10) -> tuple[float, int]:
    """Games per second between the ``skip``-th and the last finish time (start-up excluded)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    stamps = sorted(
        datetime.fromisoformat(row[0]).timestamp() for row in conn.execute("SELECT finished_at FROM games")
    )
    conn.close()
    if len(stamps) <= skip + 1:
        return float("nan"), len(stamps)
    return (len(stamps) - 1 - skip) / (stamps[-1] - stamps[skip]), len(stamps)


def bench_throughput(seconds: float = 40.0, concurrency: int = 2, sandbox: str = "none") -> None:
    """Ladder games/s against run-tournament, same two house bots (random and greedy)."""
    import httpx

    args = ["--concurrency", str(concurrency), "--sandbox", sandbox, "--time-per-move", "1000"]
    root = _folder()
    server = _Server(root / "arena", *args, "--house-bots", "random,greedy")
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            time.sleep(1)
        games = httpx.get(f"{server.url}/api/ladder", timeout=10).json()["games"]
    finally:
        server.stop()
    ladder, stored = _rate(root / "arena" / "results" / "tournament.db")
    out = root / "tournament"
    count = max(100, (stored // 2) * 2)
    started = time.monotonic()
    subprocess.run(
        [
            *ARENA,
            "run-tournament",
            "--games",
            str(count),
            "--out",
            str(out),
            *args,
            "--bots",
            str(_sample("random")),
            "--bots",
            str(_sample("greedy")),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    wall = time.monotonic() - started
    tournament, played = _rate(out / "tournament.db")
    print(
        f"serve: ladder against run-tournament (random and greedy, concurrency {concurrency}, sandbox "
        f"{sandbox}, 1 s a move)"
    )
    print(f"  ladder:          {ladder:8.1f} games/s  ({games} games in {seconds:.0f} s)")
    print(f"  run-tournament:  {tournament:8.1f} games/s  ({played} games, {wall:.1f} s with start-up)")
    print(f"  ratio:           {ladder / tournament:8.2f}  (target: within 10%, 0.90 or more)")


def _sample(name: str) -> Path:
    from arena.bots.pool import sample_bots_dir

    return sample_bots_dir() / name


def _synthetic(data: Path, bots: int, games: int) -> None:
    """A data folder with ``bots`` active versions and ``games`` stored games, made directly."""
    from arena.serve.service import results_folder
    from arena.serve.store import ArenaStore
    from arena.tournament.storage import ResultStore

    results = results_folder(data)
    results.mkdir(parents=True)
    (data / "versions").mkdir()
    ResultStore(results, create=True).close()
    store = ArenaStore(results)
    store.add_author("bench")
    labels = []
    for i in range(bots):
        name = f"bot{i:03d}"
        store.claim_bot(name, 1, f"synthetic bot {i}")
        version, _ = store.add_version(name, f"d{i}", lambda n: _sample("random"))
        assert version is not None
        store.set_state(version.id, "active")
        labels.append(version.label)
    store.set_setting("paused", True)  # the ladder does not play: only the pages are measured
    store.close()
    conn = sqlite3.connect(results / "tournament.db")
    record = json.dumps({"moves": [], "result": {"reason": "normal"}})
    rows = []
    for idx in range(games):
        a, b = labels[idx % bots], labels[(idx * 7 + 1 + idx // bots) % bots]
        if a == b:
            b = labels[(idx + 1) % bots]
        winner = (idx * 2654435761 >> 7) % 2
        rows.append(
            (
                idx,
                f"g{idx:07d}",
                idx // 2,
                idx,
                a,
                b,
                10,
                5,
                winner,
                (a, b)[winner],
                None,
                "normal",
                "",
                40,
                0.5,
                "2026-01-01T00:00:00",
                "2026-01-01T00:00:01",
                record,
            )
        )
    conn.executemany(
        "INSERT INTO games (idx, game_id, pair, seed, seat0, seat1, score0, score1, winner, "
        "winner_name, loser, reason, detail, moves, duration_s, started_at, finished_at, record) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    conn.commit()
    conn.close()
    os.system(f"chown -R nobody: {results} {data / 'versions'} 2>/dev/null")


def bench_leaderboard(requests: int = 2000) -> None:
    """GET /api/leaderboard latency with 100 bots and 100,000 games; memory against 10,000;
    the leaderboard page with 300 bots and 100,000 games."""
    import httpx

    for bots, games in ((100, 10_000), (100, 100_000), (300, 100_000)):
        print(f"serve: leaderboard with {bots} playing bots and {games:,} games (ladder paused)")
        root = _folder()
        _synthetic(root / "arena", bots, games)
        server = _Server(root / "arena", "--sandbox", "none", "--house-bots", "")
        try:
            with httpx.Client(base_url=server.url, timeout=10) as client:
                for _ in range(50):
                    client.get("/api/leaderboard")
                samples = []
                for _ in range(requests):
                    t0 = time.perf_counter()
                    answer = client.get("/api/leaderboard")
                    samples.append((time.perf_counter() - t0) * 1000)
                    assert answer.status_code == 200
                rows = len(answer.json())
                pages = []
                cpu0 = server.cpu_s()
                for _ in range(200):
                    t0 = time.perf_counter()
                    page = client.get("/")
                    pages.append((time.perf_counter() - t0) * 1000)
                    assert page.status_code == 200
                page_cpu_ms = (server.cpu_s() - cpu0) / 200 * 1000
            samples.sort()
            pages.sort()
            p50, p99 = statistics.median(samples), samples[int(len(samples) * 0.99)]
            print(
                f"  {rows} rows; GET /api/leaderboard p50 {p50:.1f} ms, p99 {p99:.1f} ms "
                f"(target p99 < 50 ms); web process RSS {server.rss_mb():.0f} MB"
            )
            print(
                f"  GET / (the page): p50 {statistics.median(pages):.1f} ms, "
                f"p99 {pages[int(len(pages) * 0.99)]:.1f} ms, the server's CPU {page_cpu_ms:.1f} ms a page "
                "(target under 100 ms)"
            )
        finally:
            server.stop()


def bench_streams(streams: int = 200, seconds: float = 20.0) -> None:
    """The web process's CPU while the ladder plays, with no event stream and with ``streams``."""
    import httpx

    root = _folder()
    server = _Server(root / "arena", "--sandbox", "none", "--concurrency", "2", "--time-per-move", "1000")
    stop = threading.Event()
    received = [0] * streams

    def reader(slot: int) -> None:
        try:
            with httpx.stream("GET", f"{server.url}/api/events", timeout=None) as response:
                for chunk in response.iter_bytes():
                    received[slot] += len(chunk)
                    if stop.is_set():
                        return
        except httpx.HTTPError:
            pass

    try:
        time.sleep(5)
        c0, t0 = server.cpu_s(), time.monotonic()
        time.sleep(seconds)
        idle = (server.cpu_s() - c0) / (time.monotonic() - t0)
        threads = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(streams)]
        for thread in threads:
            thread.start()
        time.sleep(3)
        c0, t0 = server.cpu_s(), time.monotonic()
        time.sleep(seconds)
        busy = (server.cpu_s() - c0) / (time.monotonic() - t0)
        stop.set()
    finally:
        server.stop()
    open_streams = sum(1 for r in received if r)
    print("serve: web process CPU while the ladder plays (random against greedy, concurrency 2)")
    print(f"  no event stream:      {idle:5.2f} cores")
    print(
        f"  {streams} event streams:   {busy:5.2f} cores  ({open_streams} streams received events; "
        f"{sum(received) / 1e6:.1f} MB sent; target under 1 core)"
    )


def bench_serve() -> None:
    sandbox = "strict" if os.geteuid() == 0 else "none"
    bench_throughput(sandbox=sandbox)
    bench_leaderboard()
    bench_streams()


if __name__ == "__main__":
    sections: dict[str, Callable[[], None]] = {
        "throughput": bench_throughput,
        "leaderboard": bench_leaderboard,
        "streams": bench_streams,
    }
    for name in sys.argv[1:] or list(sections):
        sections[name]()
