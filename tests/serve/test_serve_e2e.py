"""`arena serve` end to end, as an organizer and three authors use it: a real server (uvicorn
on loopback, its own game host, strict sandboxes), the CLI and raw HTTP through httpx, and a
kill -9 of the server in the middle of the ladder."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.helpers import ARENA_ARGV, MISBEHAVE, arena, needs_strict
from tests.serve.helpers import tgz

pytestmark = [pytest.mark.slow, needs_strict]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    def __init__(self, data: Path, *extra: str) -> None:
        self.data = data
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = [
            "serve",
            "--data",
            str(data),
            "--port",
            str(self.port),
            "--time-per-move",
            "300",
            "--concurrency",
            "2",
            *extra,
        ]
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self.log = open(self.data.parent / f"serve-{self.port}.log", "a")  # noqa: SIM115
        self.process = subprocess.Popen(
            [*ARENA_ARGV, *self.args],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/api/ladder", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert self.process.poll() is None, (self.data.parent / f"serve-{self.port}.log").read_text()
            time.sleep(0.2)
        raise AssertionError("arena serve did not answer within 60 s")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(30)
        self.log.close()

    def get(self, path: str, token: str | None = None) -> httpx.Response:
        return httpx.get(self.url + path, headers=auth(token), timeout=30)


def auth(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def bot_folder(root: Path, name: str, command: list[str], files: dict[str, str] | None = None) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    quoted = ", ".join(f'"{part}"' for part in command)
    (folder / "bot.toml").write_text(f'name = "{name}"\ncommand = [{quoted}]\nprotocol = "stdio"\n')
    for file, text in (files or {}).items():
        (folder / file).write_text(text)
    return folder


def python_bot(root: Path, name: str) -> Path:
    result = arena("new-bot", str(root / name), "--lang", "python", "--name", name)
    assert result.returncode == 0, result.stderr
    return root / name


def leftovers(data: Path) -> list[str]:
    """Processes that still mention the data folder (the host, workers, checks, sandboxed bots)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(data) in args:
            found.append(f"{pid}: {args[:200]}")
    return found


def tree(root: int) -> set[int]:
    """``root`` and every process under it (by parent links in /proc)."""
    children: dict[int, list[int]] = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(pid))
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo.extend(children.get(pid, []))
    return found


def traces_of(pids: set[int]) -> list[str]:
    """What processes ``pids`` left: live ones, their cgroups, their scratch folders."""
    left = [f"process {pid}" for pid in pids if Path(f"/proc/{pid}").exists()]
    for group in Path("/sys/fs/cgroup").glob("*/arena-*"):
        if any(group.name.startswith(f"arena-{pid}-") for pid in pids):
            left.append(str(group))
    for folder in Path(tempfile.gettempdir()).glob("arena-p*"):
        if any(folder.name.startswith(f"arena-p{pid}-") for pid in pids):
            left.append(str(folder))
    return left


def first_event(server: Server, kind: str, timeout_s: float = 30) -> dict:
    """The first server-sent event of ``kind`` on /api/events."""
    import json

    deadline = time.monotonic() + timeout_s
    with httpx.stream("GET", f"{server.url}/api/events", timeout=timeout_s) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        event = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event == kind:
                return json.loads(line[6:])
            if time.monotonic() > deadline:
                break
    raise AssertionError(f"no {kind} event within {timeout_s} s")


def game_count(server: Server) -> int:
    return int(server.get("/api/ladder").json()["games"])


@pytest.fixture
def data(tmp_path: Path) -> Iterator[Path]:
    """The data folder, in pytest's own temporary folder, which is root's alone (0700): the web
    process, once it runs as nobody, reaches it through a private bind mount."""
    folder = tmp_path / "arena"
    yield folder
    for line in leftovers(folder):  # never leave a server behind, whatever failed
        os.kill(int(line.split(":")[0]), signal.SIGKILL)


def test_an_arena_from_nothing_to_a_kill_and_back(data: Path, tmp_path: Path) -> None:
    server = Server(data, "--uploads-per-hour", "4", "--failing-streak", "3")
    server.start()
    try:
        token_file = data / "organizer.token"
        assert os.stat(token_file).st_mode & 0o777 == 0o600
        organizer = token_file.read_text().strip()
        tokens = {}
        for name in ("alice", "bob", "carol"):
            added = arena("author", "add", name, "--server", server.url, "--token-file", str(token_file))
            assert added.returncode == 0, added.stderr
            tokens[name] = added.stdout.split()[-1]
            assert tokens[name].startswith("pwa_")
        bots = tmp_path / "bots"

        def upload(who: str, folder: Path) -> subprocess.CompletedProcess[str]:
            return arena(
                "upload", str(folder), "--server", server.url, "--wait", env={"ARENA_TOKEN": tokens[who]}
            )

        # two good bots
        alpha = python_bot(bots, "alpha")
        for who, folder in (("alice", alpha), ("bob", python_bot(bots, "beta"))):
            done = upload(who, folder)
            assert done.returncode == 0 and "active" in done.stdout, done.stdout + done.stderr
        # one that crashes at start: rejected, with the cause
        crasher = bot_folder(bots, "crasher", ["python3", "misbehave.py", "exit_at_start", "stdio"])
        shutil.copy(MISBEHAVE, crasher)
        refused = upload("carol", crasher)
        assert refused.returncode == 1 and "rejected" in refused.stdout and "exit" in refused.stdout
        # one hostile version: a fork bomb right after its hello; contained, and the ladder goes on
        hostile = bot_folder(bots, "bomber", ["python3", "misbehave.py", "fork_bomb", "stdio"])
        shutil.copy(MISBEHAVE, hostile)
        hostile_done = upload("carol", hostile)
        assert "active" in hostile_done.stdout or "rejected" in hostile_done.stdout, hostile_done.stdout
        # an archive with ../ in a path: refused before anything is written
        sly_archive = tgz({"bot.toml": b'name = "sly"\ncommand = ["x"]\nprotocol = "stdio"\n',
                           "../../escaped.txt": b"x"})
        sly = httpx.post(
            f"{server.url}/api/bots/sly/versions",
            headers=auth(tokens["carol"]),
            files={"archive": ("sly.tar.gz", sly_archive)},
            timeout=30,
        )
        assert sly.status_code == 400 and "'..'" in sly.json()["detail"]
        assert not any(p.name == "escaped.txt" for p in tmp_path.rglob("escaped.txt"))
        # a name owned by another author: 403
        theirs = upload("bob", alpha)
        assert theirs.returncode == 1 and "403" in theirs.stderr and "another author" in theirs.stderr

        # 401 without or with a bad token, 403 on another's bot, 429 past the quota (carol: 4 an hour)
        assert httpx.post(f"{server.url}/api/bots/x/versions", timeout=10).status_code == 401
        assert server.get("/api/me", "pwa_forged").status_code == 401
        other = httpx.put(
            f"{server.url}/api/bots/alpha/active",
            json={"version": 1},
            headers=auth(tokens["bob"]),
            timeout=10,
        )
        assert other.status_code == 403
        answers = []
        for attempt in range(3):
            extra = bot_folder(
                bots / f"q{attempt}", "quota", ["python3", "bot.py"], {"bot.py": f"# {attempt}\n"}
            )
            answers.append(
                arena("upload", str(extra), "--server", server.url, env={"ARENA_TOKEN": tokens["carol"]})
            )
        assert "429" in answers[-1].stderr and "retry after" in answers[-1].stderr, [
            a.stderr for a in answers
        ]
        # the organizer revokes carol from the command line: her token stops at once
        revoked = arena("author", "revoke", "carol", "--server", server.url, "--token-file", str(token_file))
        assert revoked.returncode == 0, revoked.stderr
        after = arena("status", "--server", server.url, env={"ARENA_TOKEN": tokens["carol"]})
        assert after.returncode == 1 and "401" in after.stderr, after.stdout + after.stderr
        assert arena("status", "--server", server.url, env={"ARENA_TOKEN": tokens["bob"]}).returncode == 0

        # at least 10 ladder games stored within a minute
        deadline = time.monotonic() + 60
        while game_count(server) < 10 and time.monotonic() < deadline:
            time.sleep(1)
        assert game_count(server) >= 10
        board = server.get("/api/leaderboard").json()
        assert {"alpha", "beta", "random", "greedy"} <= {row["bot"] for row in board}
        assert all(row["games"] > 0 for row in board if row["bot"] in ("random", "greedy"))
        games = server.get("/api/games?limit=1000").json()
        assert games and {"id", "state", "players", "result"} <= set(games[0])
        finished = [g for g in games if g["state"] == "finished"]
        record = server.get(f"/api/games/{finished[0]['id']}").json()
        assert record["moves"] and record["result"]["reason"]

        # a second version of alpha becomes the one that plays; the first keeps its games
        (alpha / "bot.py").write_text((alpha / "bot.py").read_text() + "\n# version 2\n")
        second = upload("alice", alpha)
        assert second.returncode == 0 and "version 2: active" in second.stdout, second.stdout
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            info = server.get("/api/bots/alpha").json()
            counts = {v["number"]: v["games"] for v in info["versions"]}
            if info["playing_version"] == 2 and counts.get(2, 0) > 0:
                break
            time.sleep(1)
        assert info["playing_version"] == 2 and counts[1] > 0 and counts[2] > 0, info
        status = arena("status", "--server", server.url, env={"ARENA_TOKEN": tokens["alice"]})
        assert "alpha: version 2 plays" in status.stdout and "v1  active" in status.stdout

        # a version that passes its check (against random) but dies in every ladder game (its
        # opponents there are versions, "name.vN") is retired after 3 such games, with the cause
        flaky = python_bot(bots, "flaky")
        program = (flaky / "bot.py").read_text()
        crash = 'if any(".v" in p for p in message["players"]):\n                sys.exit(3)\n            '
        (flaky / "bot.py").write_text(program.replace("log(f\"game {message['game_id']}: I am seat", crash
                                                      + "log(f\"game {message['game_id']}: I am seat", 1))
        assert crash in (flaky / "bot.py").read_text()
        flaky_done = upload("bob", flaky)
        assert flaky_done.returncode == 0 and "active" in flaky_done.stdout, flaky_done.stderr
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            version = server.get("/api/bots/flaky").json()["versions"][0]
            if version["state"] != "active":
                break
            time.sleep(1)
        assert version["state"] == "rejected", version
        assert version["cause"].startswith(
            "retired from the ladder: it lost its last 3 games in a row by its own fault (the last: crash"
        ), version
        assert version["games"] >= 3
        status = arena("status", "--server", server.url, env={"ARENA_TOKEN": tokens["bob"]})
        assert "retired from the ladder" in status.stdout, status.stdout

        # live events: a move and a game's end arrive as they happen
        move = first_event(server, "move")
        assert move["id"].startswith("ladder-") and move["ply"] >= 1 and "action" in move["move"]
        ended = first_event(server, "game_ended")
        assert ended["state"] in ("finished", "abandoned")

        # kill -9 mid-ladder: nothing stored is lost, nothing is left running, a restart resumes
        assert server.process is not None
        everything = tree(server.process.pid)
        assert len(everything) > 5  # the web process, the host, workers, bots
        before = game_count(server)
        os.kill(server.process.pid, signal.SIGKILL)
        server.process.wait(10)
        deadline = time.monotonic() + 20
        while (leftovers(data) or traces_of(everything)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert leftovers(data) == [] and traces_of(everything) == []
        server.log.close()
        server.start()
        after = game_count(server)
        assert after >= before
        ids = [g["id"] for g in server.get("/api/games?limit=10000").json() if g["state"] == "finished"]
        assert len(ids) == len(set(ids)) == after
        deadline = time.monotonic() + 30
        while game_count(server) <= after and time.monotonic() < deadline:
            time.sleep(1)
        assert game_count(server) > after  # the ladder plays on
        assert server.get("/api/me", organizer).json()["organizer"] is True
        exported = httpx.post(f"{server.url}/api/export", headers=auth(organizer), timeout=60)
        assert exported.status_code == 200, exported.text
        export = Path(exported.json()["folder"])
        assert b"pwa_" not in (export / "tournament.db").read_bytes()
    finally:
        server.stop()
    assert leftovers(data) == []
    ratings = arena("ratings", str(data / "results"))
    assert ratings.returncode == 0 and "alpha.v2" in ratings.stdout, ratings.stderr
    exported_ratings = arena("ratings", str(export))
    assert exported_ratings.returncode == 0 and "alpha.v2" in exported_ratings.stdout, exported_ratings.stderr


def test_a_slow_build_does_not_hold_up_the_ladder(data: Path, tmp_path: Path) -> None:
    """Red team: a version whose build takes minutes stopped every game while the ladder built
    it, at each lineup change. Versions are now built once, in the background."""
    server = Server(data, "--sandbox", "none")
    server.start()
    try:
        token_file = data / "organizer.token"
        added = arena("author", "add", "slowpoke", "--server", server.url, "--token-file", str(token_file))
        token = added.stdout.split()[-1]
        bot = python_bot(tmp_path / "bots", "slowbuild")
        manifest = bot / "bot.toml"
        manifest.write_text(manifest.read_text() + 'build = "sleep 20"\n')
        done = arena("upload", str(bot), "--server", server.url, "--wait", env={"ARENA_TOKEN": token})
        assert done.returncode == 0 and "active" in done.stdout, done.stdout + done.stderr
        before = game_count(server)
        time.sleep(12)  # the ladder is building it now (20 s): the house bots play on meanwhile
        during = game_count(server)
        assert during >= before + 5, (before, during)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            counts = {row["bot"]: row["games"] for row in server.get("/api/leaderboard").json()}
            if counts.get("slowbuild", 0) > 0:
                break
            time.sleep(1)
        assert counts.get("slowbuild", 0) > 0  # and once built, it plays
    finally:
        server.stop()


def test_connections_that_send_no_request_are_closed(data: Path) -> None:
    """Red team: 2,000 connections that sent nothing (or half a request head) held every
    slot of the server for good; each is now closed after HEAD_TIMEOUT_S."""
    from arena.serve.server import HEAD_TIMEOUT_S

    server = Server(data, "--sandbox", "none", "--house-bots", "")
    server.start()
    idle = []
    try:
        for number in range(300):
            sock = socket.create_connection(("127.0.0.1", server.port))
            if number % 2:
                sock.sendall(b"GET /api/ladder HTTP/1.1\r\nHost: x\r\n")  # half a head
            idle.append(sock)
        time.sleep(HEAD_TIMEOUT_S + 3)
        closed = 0
        for sock in idle:
            sock.settimeout(5)
            try:
                closed += sock.recv(1) == b""
            except TimeoutError:  # still open: the server waits on it
                pass
            except OSError:  # reset: closed
                closed += 1
        assert closed == len(idle)
        assert server.get("/api/ladder").status_code == 200
    finally:
        for sock in idle:
            sock.close()
        server.stop()


def test_the_ladder_plays_on_a_dask_cluster(
    data: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`arena serve --dask ADDRESS`: the ladder's games are played on the cluster's workers
    (the Dask executor takes an endless schedule a window at a time) and stored as any other."""
    from distributed import LocalCluster

    monkeypatch.setenv("ARENA_DASK_CACHE", str(tmp_path / "cache"))
    with LocalCluster(
        n_workers=1,
        threads_per_worker=2,
        processes=True,
        dashboard_address=None,
        worker_dashboard_address=None,
    ) as cluster:
        server = Server(data, "--sandbox", "none", "--dask", cluster.scheduler_address)
        server.start()
        try:
            deadline = time.monotonic() + 90
            while game_count(server) < 6 and time.monotonic() < deadline:
                time.sleep(1)
            assert game_count(server) >= 6
            board = {row["bot"]: row["games"] for row in server.get("/api/leaderboard").json()}
            assert board.get("random", 0) > 0 and board.get("greedy", 0) > 0
        finally:
            server.stop()
    assert leftovers(data) == []
