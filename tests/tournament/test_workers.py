"""Worker processes of `arena run-tournament` killed from outside: every game is still
stored exactly once, the run exits 0 and nothing is left running."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from arena.bots.pool import sample_bots_dir
from arena.clock import TimeControl
from arena.engine import patchwork
from arena.engine.components import ruleset_for
from arena.tournament.workers import game_deadline_s
from tests.helpers import (
    ARENA_ARGV,
    arena,
    arena_patched,
    misbehaving_bot,
    stored_games,
    wait_for,
    worker_processes,
)

SAMPLES = sample_bots_dir()


def _processes_under(folder: Path) -> list[str]:
    """Live processes whose working folder or command line is inside ``folder`` (its bots)."""
    needle = str(folder)
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state != b"Z" and (cwd.startswith(needle) or needle in cmdline):
            found.append(f"{entry}: {cmdline[:120]}")
    return found


def _bots(tmp_path: Path) -> Path:
    """Copies of the random and greedy sample bots inside tmp_path (to find them in /proc)."""
    bots = tmp_path / "bots"
    for name in ("random", "greedy"):
        shutil.copytree(SAMPLES / name, bots / name, ignore=shutil.ignore_patterns("__pycache__"))
    tmp_path.chmod(0o755)  # strict: each bot's uid must reach its folder
    return bots


def _check_every_game_once(out: Path, total: int) -> None:
    with sqlite3.connect(out / "tournament.db") as conn:
        rows = conn.execute("SELECT idx, game_id FROM games ORDER BY idx").fetchall()
        moves = conn.execute("SELECT COUNT(DISTINCT game_id) FROM moves").fetchone()[0]
    assert [idx for idx, _ in rows] == list(range(total))
    assert moves == total
    lines = (out / "games.jsonl").read_text().splitlines()
    ids = [json.loads(line)["game_id"] for line in lines]
    assert sorted(ids) == sorted(game_id for _, game_id in rows)


def _run_killing_workers(tmp_path: Path, *, concurrency: int, kills: int, seed: int, games: int,
                         sandbox: str = "none") -> None:
    """Run a tournament and SIGKILL a random worker ``kills`` times at random moments."""
    bots = _bots(tmp_path)
    out = tmp_path / "out"
    rng = random.Random(seed)
    runner = subprocess.Popen(
        [*ARENA_ARGV, "run-tournament", "--bots", str(bots), "--games", str(games), "--seed", "4",
         "--concurrency", str(concurrency), "--sandbox", sandbox, "--time-per-move", "2000",
         "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = 0
    needs_replacement = False
    seen: set[int] = set()  # every worker pid observed
    deadline = time.monotonic() + 120
    try:
        while runner.poll() is None and time.monotonic() < deadline:
            # starting, building or playing: a 12-game run takes ~1.5 s when the machine is idle
            next_kill = time.monotonic() + rng.uniform(0.1, 1.2)
            while time.monotonic() < next_kill and runner.poll() is None:
                seen.update(worker_processes(runner.pid))
                time.sleep(0.05)
            workers = worker_processes(runner.pid)
            if workers and killed < kills:
                stored = stored_games(out)
                os.kill(rng.choice(workers), signal.SIGKILL)
                killed += 1
                # With more games left than workers, the victim was holding or about to hold one.
                needs_replacement |= stored < games - concurrency
        stdout, stderr = runner.communicate(timeout=180)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.communicate()
    context = f"seed {seed}, {killed} kill(s):\n{stdout}\n{stderr}"
    assert runner.returncode == 0, context
    assert killed >= 1, context  # the run must not be over before a worker could be killed
    assert "Traceback" not in stderr, context
    _check_every_game_once(out, games)
    assert f"done: {games} games played now" in stdout, context
    if needs_replacement:  # (a kill at the very end may find a worker with nothing left to do)
        assert len(seen) >= min(concurrency, games) + 1, context  # replacements were started
    assert _processes_under(tmp_path) == []


@pytest.mark.slow
@pytest.mark.parametrize(("concurrency", "seed"), [(1, 1), (2, 2), (2, 3)])
def test_killed_workers_lose_no_game_and_never_hang_the_run(tmp_path: Path, concurrency: int,
                                                            seed: int) -> None:
    _run_killing_workers(tmp_path, concurrency=concurrency, kills=2, seed=seed, games=12)


@pytest.mark.slow
def test_killed_workers_under_the_strict_sandbox(tmp_path: Path) -> None:
    _run_killing_workers(tmp_path, concurrency=2, kills=2, seed=5, games=12, sandbox="strict")


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "how"), [("SIGKILL", "killed by SIGKILL"),
                                         ("SIGTERM", "exit status 0")])  # a clean exit, but too early
def test_a_game_that_keeps_killing_its_worker_stops_the_run_with_one_line(tmp_path: Path, sig: str,
                                                                           how: str) -> None:
    bots = _bots(tmp_path)
    shutil.rmtree(bots / "greedy")
    misbehaving_bot(bots / "killer", "kill_referee", sig, name="killer", stdio=True)  # parent: the worker
    out = tmp_path / "out"
    proc = arena("run-tournament", "--bots", str(bots), "--games", "2", "--concurrency", "1",
                 "--sandbox", "none", "--out", str(out), timeout=180)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    error = proc.stderr.strip().splitlines()[-1]
    assert error.startswith("Error: game 0000-killer-vs-random-p0 (killer vs random) was lost with its "
                            f"worker process 3 times (last: worker exited, {how})"), error
    assert error.endswith("The games stored so far are kept: run the same command again to retry it"), error
    # each replacement logs where its predecessor did: a bot's log has one size limit, not one per worker
    assert sorted(p.name for p in (out / "logs").iterdir() if p.name.startswith("worker-")) == ["worker-0"]
    with sqlite3.connect(out / "tournament.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM games").fetchone()[0] == 0
    assert _processes_under(tmp_path) == []


# ------------------------------------------------------------------ a bot that stops its worker
# Under --sandbox none a bot runs as the organizer's user: a stdio bot's parent is its referee,
# the worker, which it can SIGSTOP. The coordinator looks at a worker silent for a second:
# a stopped one is continued, and one still on its game past its deadline is killed.


def _stopper_run(tmp_path: Path, kind: str, *args: str, time_control: tuple[str, ...],
                 games: int = 2, setup: str = "") -> subprocess.CompletedProcess[str]:
    bots = _bots(tmp_path)
    shutil.rmtree(bots / "greedy")
    misbehaving_bot(bots / "stopper", kind, *args, name="stopper", stdio=True)
    return arena_patched(setup, "run-tournament", "--bots", str(bots), "--games", str(games),
                         "--concurrency", "1", "--sandbox", "none", *time_control,
                         "--out", str(tmp_path / "out"), timeout=120)


def test_a_worker_stopped_once_by_its_bot_is_continued_and_every_game_is_stored(tmp_path: Path) -> None:
    marker = tmp_path / "stopped-once"
    started = time.monotonic()
    proc = _stopper_run(tmp_path, "stop_referee_once", str(marker), games=4,
                        time_control=("--time-per-move", "200", "--bank-ms", "8000"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert marker.exists() and "Traceback" not in proc.stderr
    assert proc.stderr.count("was stopped during game") == 1, proc.stderr
    assert "probably by a bot (SIGSTOP to its parent); continued it (SIGCONT)" in proc.stderr
    _check_every_game_once(tmp_path / "out", 4)
    with sqlite3.connect(tmp_path / "out" / "tournament.db") as conn:  # the bank absorbed the stop
        assert {r for (r,) in conn.execute("SELECT reason FROM games")} == {"normal"}
    assert time.monotonic() - started < 60
    assert _processes_under(tmp_path) == []


@pytest.mark.slow  # workers stopped every game, a real tournament
def test_a_bot_that_stops_its_worker_every_game_loses_on_time_and_the_run_ends(tmp_path: Path) -> None:
    started = time.monotonic()
    proc = _stopper_run(tmp_path, "kill_referee", "SIGSTOP",  # stops it at every move from its third
                        time_control=("--time-per-move", "100", "--bank-ms", "0"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stderr.count("was stopped during game") == 2, proc.stderr
    _check_every_game_once(tmp_path / "out", 2)
    with sqlite3.connect(tmp_path / "out" / "tournament.db") as conn:
        rows = conn.execute("SELECT seat0, seat1, winner, reason FROM games").fetchall()
    assert all(reason == "timeout" and (seat0, seat1)[winner] == "random"
               for seat0, seat1, winner, reason in rows), rows
    assert time.monotonic() - started < 60
    assert _processes_under(tmp_path) == []


@pytest.mark.slow
def test_a_worker_kept_stopped_is_killed_at_the_game_deadline_and_the_run_stops(tmp_path: Path) -> None:
    # The real deadline is minutes even at these time controls (see the test below): 3 s here.
    setup = "import arena.tournament.workers as w\nw.game_deadline_s = lambda *_: 3.0"
    started = time.monotonic()
    proc = _stopper_run(tmp_path, "keep_referee_stopped", games=2, setup=setup,
                        time_control=("--time-per-move", "100", "--bank-ms", "0"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    error = proc.stderr.strip().splitlines()[-1]
    assert error.startswith("Error: game 0000-random-vs-stopper-p0 (random vs stopper) was lost with its "
                            "worker process 3 times (last: the game was unfinished after 3 s, far more "
                            "than its time control allows (a stuck or repeatedly stopped worker), so its "
                            "worker was killed)"), error
    assert stored_games(tmp_path / "out") == 0
    assert time.monotonic() - started < 60
    assert _processes_under(tmp_path) == []


def test_the_game_deadline_covers_the_longest_legitimate_game_with_room_to_spare() -> None:
    for rules in (patchwork("revised"), patchwork("original"), ruleset_for("stack-n-stuff")):
        for tc in (TimeControl(), TimeControl(10, 0, 10), TimeControl(60_000, 600_000, 60_000)):
            # every decision at its limit, both banks spent, both bots started from scratch
            longest = (2 * (rules.final_space + len(rules.special_spaces)) * tc.per_move_ms
                       + 2 * (tc.first_move_ms + tc.bank_ms)) / 1000 + 2 * 20
            assert game_deadline_s(tc, rules) >= 1.5 * longest
    assert 5 * 60 < game_deadline_s(TimeControl(), patchwork("revised")) < 10 * 60


def test_a_worker_whose_coordinator_is_gone_closes_every_bot_despite_the_sigterm(tmp_path: Path) -> None:
    """A worker that finds its coordinator gone (its pipe closed: a kill -9) closes its bots,
    and the SIGTERM Linux sends for the coordinator's death comes a moment later. It used to
    cut that closing short: the bots not closed yet were left running (under strict, frozen
    until the next run swept them). Here the SIGTERM comes while the first bot takes its time
    to leave after its shutdown."""
    from arena.tournament.schedule import GameSpec
    from arena.tournament.series import Lineup
    from arena.tournament.workers import WorkerProcesses

    marker = tmp_path / "told-to-shut-down"
    misbehaving_bot(tmp_path / "bots" / "lingers", "lingers", str(marker), stdio=True)
    misbehaving_bot(tmp_path / "bots" / "forks", "forks", stdio=True)  # children of its own
    lineup = Lineup.of([tmp_path / "bots" / "lingers", tmp_path / "bots" / "forks"],
                       time_control=TimeControl(2000, 10000))
    workers = WorkerProcesses(lineup, tmp_path / "logs")
    [seat0, seat1] = lineup.labels
    worker = workers._start_worker(GameSpec(0, "g0", seat0, seat1, seed=1, pair=0))
    try:
        assert worker.conn.poll(60) and worker.conn.recv()[0] == "done"
        assert len(_processes_under(tmp_path / "bots")) == 5  # both bots (one with 3 children) wait
        worker.conn.close()  # as the coordinator's death closes it
        assert wait_for(marker.exists, timeout=10)
        os.kill(worker.process.pid, signal.SIGTERM)  # as Linux does (PR_SET_PDEATHSIG)
        worker.process.join(30)
        assert worker.process.exitcode is not None
        deadline = time.monotonic() + 10
        while _processes_under(tmp_path / "bots") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _processes_under(tmp_path / "bots") == []
    finally:
        if worker.process.is_alive():
            worker.process.kill()
        for left in _processes_under(tmp_path / "bots"):
            os.kill(int(left.split(":")[0]), signal.SIGKILL)


def test_the_children_of_a_killed_worker_s_bots_are_killed_too(tmp_path: Path) -> None:
    """Under none a worker killed outright (kill -9, the OOM killer, a bot) takes its bots'
    root processes with it (PR_SET_PDEATHSIG), not their children: a bot's helpers lived on
    after the run. Their TMPDIR names the dead worker's folder, which the coordinator sweeps."""
    bots = tmp_path / "bots"
    misbehaving_bot(bots / "forks", "forks", stdio=True)  # 3 children of its own
    shutil.copytree(SAMPLES / "random", bots / "random", ignore=shutil.ignore_patterns("__pycache__"))
    runner = subprocess.Popen(
        [*ARENA_ARGV, "run-tournament", "--bots", str(bots), "--games", "4", "--concurrency", "1",
         "--sandbox", "none", "--time-per-move", "2000", "--out", str(tmp_path / "out")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: len([p for p in _processes_under(bots) if "sleep 300" in p]) == 3, timeout=60)
        [worker] = worker_processes(runner.pid)
        os.kill(worker, signal.SIGKILL)
        stdout, stderr = runner.communicate(timeout=120)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.communicate()
    assert runner.returncode == 0, stdout + stderr
    assert "done: 4 games played now" in stdout, stdout
    assert _processes_under(bots) == []
