"""`arena run-tournament --format swiss|knockout` end to end: the games a run plays, and a
run killed with SIGKILL and run again ends with the same pairings and games as a run
never interrupted."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from arena.bots.pool import sample_bots_dir
from arena.tournament.config import TournamentConfig, load_config
from arena.tournament.scheduler import Knockout, Swiss, replay
from arena.tournament.storage import ResultStore
from tests.helpers import ARENA_ARGV, arena

SAMPLES = sample_bots_dir()
FAST = ("--sandbox", "none", "--time-per-move", "200", "--concurrency", "2")


def field_of(tmp_path: Path, count: int) -> Path:
    """A folder of ``count`` bots: greedy, and copies of random (deterministic: seeded by the game)."""
    root = tmp_path / "bots"
    shutil.copytree(SAMPLES / "greedy", root / "greedy", ignore=shutil.ignore_patterns("__pycache__"))
    for i in range(1, count):
        folder = root / f"r{i}"
        shutil.copytree(SAMPLES / "random", folder, ignore=shutil.ignore_patterns("__pycache__"))
        toml = (folder / "bot.toml").read_text().replace('name = "random"', f'name = "rand{i}"')
        (folder / "bot.toml").write_text(toml)
    return root


def games_of(folder: Path) -> list[tuple]:
    with sqlite3.connect(folder / "tournament.db") as conn:
        return conn.execute("SELECT game_id, idx, pair, seed, seat0, seat1, score0, score1, winner, reason, "
                            "moves FROM games ORDER BY idx").fetchall()


def scheduler_of(folder: Path) -> Swiss | Knockout:
    """The format's state, rebuilt from the stored games (what the report shows)."""
    with ResultStore(folder, readonly=True) as store:
        config = store.stored_config()
        frame = store.games_frame()
    assert config is not None
    plan = TournamentConfig.from_json(config).plan
    built = replay(plan, dict(zip(frame["game_id"], map(int, frame["winner"]), strict=True)))
    assert isinstance(built, Swiss | Knockout)
    return built


@pytest.mark.slow
def test_a_swiss_run_pairs_by_wins_gives_the_bye_and_stores_only_games(tmp_path: Path) -> None:
    bots = field_of(tmp_path, 5)
    out = tmp_path / "swiss"
    proc = arena("run-tournament", "--bots", str(bots), "--format", "swiss", "--rounds", "3", "--seed", "4",
                 *FAST, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "(patchwork, swiss): 5 entrants" in proc.stdout and "3 rounds of 2-game pairings" in proc.stdout
    games = games_of(out)
    assert len(games) == 3 * 2 * 2  # 2 pairings a round (one bye), 2 games each
    swiss = scheduler_of(out)
    assert isinstance(swiss, Swiss) and len(swiss.history) == 3
    assert len({r.bye for r in swiss.history}) == 3  # a different bye each round
    # each pairing: two games on one seed with the seats swapped
    for first, second in zip(games[::2], games[1::2], strict=True):
        assert (first[3], first[4], first[5]) == (second[3], second[5], second[4])
    assert all(sum(w for _, w in r.standings) == 4 * r.number + r.number for r in swiss.history)


@pytest.mark.slow
def test_a_knockout_run_plays_the_bracket(tmp_path: Path) -> None:
    bots = field_of(tmp_path, 5)
    out = tmp_path / "ko"
    proc = arena("run-tournament", "--bots", str(bots), "--format", "knockout", "--games", "2", *FAST,
                 "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    ko = scheduler_of(out)
    assert isinstance(ko, Knockout) and ko.champion is not None
    assert [len(r) for r in ko.bracket] == [4, 2, 1]
    played = Counter(frozenset(g[4:6]) for g in games_of(out))
    matches = [m for r in ko.bracket for m in r if m.names[1] is not None]
    assert len(matches) == 4
    assert played == {frozenset(m.names): 4 if m.extra else 2 for m in matches}
    assert f"{len(games_of(out))} games played now" in proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize(("fmt", "options", "count"), [
    ("swiss", ("--rounds", "4"), 7),  # 24 games, a bye each round
    ("knockout", ("--games", "4"), 7),  # 24 games at least, seed 1 has a bye
])
def test_kill_9_then_resume_equals_an_uninterrupted_run(tmp_path: Path, fmt: str, options: tuple[str, ...],
                                                        count: int) -> None:
    bots = field_of(tmp_path, count)
    args = ["run-tournament", "--bots", str(bots), "--format", fmt, *options, "--seed", "9", *FAST]
    straight = arena(*args, "--out", str(tmp_path / "straight"))
    assert straight.returncode == 0, straight.stderr
    total = len(games_of(tmp_path / "straight"))

    killed = tmp_path / "killed"
    runner = subprocess.Popen([*ARENA_ARGV, *args, "--out", str(killed)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and runner.poll() is None:
        try:
            if len(games_of(killed)) >= 7:  # into the second round
                break
        except sqlite3.Error:
            pass
        time.sleep(0.05)
    assert runner.poll() is None, "the run finished before it could be killed"
    os.kill(runner.pid, signal.SIGKILL)
    runner.wait()
    partial = len(games_of(killed))
    assert 7 <= partial < total

    resumed = arena(*args, "--out", str(killed))
    assert resumed.returncode == 0, resumed.stderr
    assert f"{total - partial} games played now, {partial} were already stored" in resumed.stdout
    assert games_of(killed) == games_of(tmp_path / "straight")
    before, after = scheduler_of(tmp_path / "straight"), scheduler_of(killed)
    if isinstance(before, Swiss):
        assert isinstance(after, Swiss) and after.history == before.history
    else:
        assert isinstance(after, Knockout) and after.bracket == before.bracket
    assert len((killed / "games.jsonl").read_text().splitlines()) == total


def test_the_config_of_a_swiss_run_reads_back(tmp_path: Path) -> None:
    bots = field_of(tmp_path, 3)
    config = load_config(None, {"entrants": [bots], "format": "swiss", "rounds": 2})
    assert config.plan.rounds == 2 and config.names == ("greedy", "rand1", "rand2")


@pytest.mark.slow
def test_a_swiss_on_dask_plays_the_same_games_as_local_processes(tmp_path: Path,
                                                                  monkeypatch) -> None:  # type: ignore[no-untyped-def]
    distributed = pytest.importorskip("distributed")
    bots = field_of(tmp_path, 5)
    args = ["run-tournament", "--bots", str(bots), "--format", "swiss", "--rounds", "2", "--seed", "6", *FAST]
    local = arena(*args, "--out", str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    monkeypatch.setenv("ARENA_DASK_CACHE", str(tmp_path / "cache"))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  worker_dashboard_address=None) as cluster:
        on_dask = arena(*args, "--out", str(tmp_path / "dask"), "--dask", cluster.scheduler_address)
    assert on_dask.returncode == 0, on_dask.stderr
    assert games_of(tmp_path / "dask") == games_of(tmp_path / "local")
    assert len(games_of(tmp_path / "dask")) == 2 * 2 * 2
