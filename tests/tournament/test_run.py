"""`arena run-tournament` end to end through the CLI, as an organizer runs it."""

from __future__ import annotations

import itertools
import os
import select
import shutil
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from arena.bots.pool import sample_bots_dir
from tests.helpers import ARENA_ARGV, arena, misbehaving_bot, stored_games, write_bot

SAMPLES = sample_bots_dir()


def db_rows(folder: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(folder / "tournament.db") as conn:
        return conn.execute(sql).fetchall()


def stored_results(folder: Path) -> tuple[list[tuple], list[tuple]]:
    """Everything that must not depend on interruptions: games and moves, minus timings."""
    games = db_rows(folder, "SELECT game_id, idx, pair, seed, seat0, seat1, score0, score1, winner, "
                            "reason, moves FROM games ORDER BY idx")
    moves = db_rows(folder, "SELECT game_id, ply, player, action, patch, cells FROM moves "
                            "ORDER BY game_id, ply")
    return games, moves


def table_lines(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("rank"))
    return lines[start:]


def test_round_robin_plays_every_pairing_in_seat_swapped_pairs(tmp_path: Path) -> None:
    out = tmp_path / "rr"
    proc = arena("run-tournament", "--bots", str(SAMPLES / "random"), "--bots", str(SAMPLES / "greedy"),
                 "--bots", str(SAMPLES / "cbot"), "--games", "4", "--seed", "3", "--concurrency", "2",
                 "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    # the default name quoted (it read "tournament tournament (patchwork)")
    assert proc.stdout.splitlines()[0] == ('tournament "tournament" (patchwork, round-robin): 3 entrants '
                                           "(random, greedy, cbot), 4 games per pairing, concurrency 2; "
                                           f"results in {out}"), proc.stdout
    # what a TA could only guess from the banner: the time control and seed in force
    assert proc.stdout.splitlines()[1] == ("time control: 1000 ms a move, a bank of 10000 ms, 5000 ms for a "
                                           "first move; seed 3, edition revised"), proc.stdout
    games = db_rows(out, "SELECT seat0, seat1, seed, reason FROM games")
    assert len(games) == 12 and all(g[3] == "normal" for g in games)
    per_pairing = Counter(frozenset(g[:2]) for g in games)
    assert per_pairing == {frozenset(p): 4 for p in itertools.combinations(["random", "greedy", "cbot"], 2)}
    by_seed: dict[int, list[tuple[str, str]]] = {}
    for seat0, seat1, seed, _ in games:
        by_seed.setdefault(seed, []).append((seat0, seat1))
    assert len(by_seed) == 6  # one seed per pair, every pair on its own circle
    for seats in by_seed.values():
        assert sorted(seats) == sorted([seats[0], seats[0][::-1]])
    table = table_lines(proc.stdout)
    order = [line.split()[1] for line in table[1:]]
    assert order.index("greedy") < order.index("random")
    assert (out / "games.jsonl").read_text().count("\n") == 12
    assert db_rows(out, "SELECT COUNT(*) FROM moves")[0][0] == sum(
        r[0] for r in db_rows(out, "SELECT moves FROM games"))
    assert db_rows(out, "PRAGMA journal_mode")[0][0] == "wal"
    ratings = arena("ratings", str(out), "--csv", str(tmp_path / "t.csv"))
    assert ratings.returncode == 0 and table_lines(ratings.stdout)[:4] == table
    assert (tmp_path / "t.csv").read_text().startswith("rank,name,mu,sigma,conservative")
    again = arena("run-tournament", "--bots", str(SAMPLES / "random"), "--bots", str(SAMPLES / "greedy"),
                  "--bots", str(SAMPLES / "cbot"), "--games", "4", "--seed", "3", "--out", str(out))
    assert again.returncode == 0 and "0 games played now, 12 were already stored" in again.stdout


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs to tell them apart")
def test_the_default_concurrency_is_the_cpus_the_command_may_use(tmp_path: Path) -> None:
    """Under `taskset -c N` it was os.cpu_count(): two workers on one CPU."""
    one_cpu = min(os.sched_getaffinity(0))
    args = ["--bots", str(SAMPLES / "random"), "--bots", str(SAMPLES / "greedy"), "--games", "2",
            "--sandbox", "none", "--out", str(tmp_path / "out")]
    proc = subprocess.run([*ARENA_ARGV, "run-tournament", *args], capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: os.sched_setaffinity(0, {one_cpu}))
    assert proc.returncode == 0, proc.stderr
    assert "2 games per pairing, concurrency 1;" in proc.stdout, proc.stdout


@pytest.mark.slow
def test_kill_9_then_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    args = ["run-tournament", "--bots", str(SAMPLES / "random"), "--bots", str(SAMPLES / "greedy"),
            "--games", "24", "--seed", "5", "--concurrency", "2"]
    straight = arena(*args, "--out", str(tmp_path / "straight"))
    assert straight.returncode == 0, straight.stderr

    killed = tmp_path / "killed"
    runner = subprocess.Popen([*ARENA_ARGV, *args, "--out", str(killed)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    stored = 0
    while time.monotonic() < deadline and runner.poll() is None:
        if (killed / "tournament.db").exists():
            try:
                stored = db_rows(killed, "SELECT COUNT(*) FROM games")[0][0]
            except sqlite3.Error:
                stored = 0
            if stored >= 6:
                break
        time.sleep(0.05)
    assert runner.poll() is None, "the run finished before it could be killed"
    os.kill(runner.pid, signal.SIGKILL)
    runner.wait()
    partial = db_rows(killed, "SELECT COUNT(*) FROM games")[0][0]
    assert 6 <= partial < 24

    resumed = arena(*args, "--out", str(killed))
    assert resumed.returncode == 0, resumed.stderr
    assert f"{24 - partial} games played now, {partial} were already stored" in resumed.stdout
    assert "ended abnormally (of all 24)" in resumed.stdout  # of every game, not of those played now
    assert stored_results(killed) == stored_results(tmp_path / "straight")
    assert table_lines(resumed.stdout) == table_lines(straight.stdout)
    jsonl = (killed / "games.jsonl").read_text().splitlines()
    assert len(jsonl) == 24 and len(set(jsonl)) == 24


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_keeps_finished_games(tmp_path: Path) -> None:
    out = tmp_path / "int"
    args = ["run-tournament", "--bots", str(SAMPLES / "random"), "--bots", str(SAMPLES / "greedy"),
            "--games", "40", "--concurrency", "2", "--out", str(out)]
    runner = subprocess.Popen([*ARENA_ARGV, *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if (out / "tournament.db").exists():
            try:
                if db_rows(out, "SELECT COUNT(*) FROM games")[0][0] >= 4:
                    break
            except sqlite3.Error:
                pass
        time.sleep(0.05)
    runner.send_signal(signal.SIGINT)
    stdout, stderr = runner.communicate(timeout=60)
    assert runner.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted:" in stdout
    kept = db_rows(out, "SELECT COUNT(*) FROM games")[0][0]
    assert f"{kept} of 40 games are stored" in stdout
    resumed = arena(*args)
    assert resumed.returncode == 0 and f"{kept} were already stored" in resumed.stdout
    assert db_rows(out, "SELECT COUNT(*) FROM games")[0][0] == 40


def test_broken_bots_lose_their_games_and_the_rest_completes(tmp_path: Path) -> None:
    bots = tmp_path / "bots"
    write_bot(bots / "nobuild", "nobuild", ["./bot"], protocol="stdio", build="exit 3")
    misbehaving_bot(bots / "diesatstart", "exit_at_start", name="diesatstart")
    proc = arena("run-tournament", "--bots", str(bots), "--bots", str(SAMPLES / "random"),
                 "--games", "2", "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert "build failed: bot nobuild" in proc.stderr
    games = db_rows(tmp_path / "out", "SELECT seat0, seat1, winner_name, reason FROM games")
    assert len(games) == 6
    versus_random = [g for g in games if "nobuild" in g[:2] and "random" in g[:2]]
    assert [g[3] for g in versus_random] == ["start_failure"] * 2
    assert all(g[2] == "random" for g in versus_random)
    # when both cannot start, the one that fails first (seat 0 starts first) loses
    both = [g for g in games if "nobuild" in g[:2] and "diesatstart" in g[:2]]
    assert sorted(g[3] for g in both) == ["crash", "start_failure"]
    dies = [g for g in games if "diesatstart" in g[:2] and "nobuild" not in g[:2]]
    assert [g[3] for g in dies] == ["crash", "crash"] and all(g[2] == "random" for g in dies)


def test_malformed_config_and_unknown_key_give_clear_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\ngames = [\n')
    proc = arena("run-tournament", str(bad))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert str(bad) in proc.stderr and "TOML" in proc.stderr
    unknown = tmp_path / "unknown.toml"
    unknown.write_text('name = "x"\ngamez = 4\n')
    proc = arena("run-tournament", str(unknown))
    assert proc.returncode == 1 and "key 'gamez': expected one of the keys (name, " in proc.stderr
    wrong = tmp_path / "wrong.toml"
    wrong.write_text('games = "many"\n')
    proc = arena("run-tournament", str(wrong))
    assert proc.returncode == 1 and "'games'" in proc.stderr


def test_config_file_with_flag_overrides(tmp_path: Path) -> None:
    config = tmp_path / "t.toml"
    config.write_text(f'name = "cup"\nentrants = ["{SAMPLES / "random"}", "{SAMPLES / "greedy"}"]\n'
                      'games = 8\nseed = 2\n[time_control]\nper_move_ms = 2000\n')
    proc = arena("run-tournament", str(config), "--games", "2", "--out", str(tmp_path / "cup"))
    assert proc.returncode == 0, proc.stderr
    assert db_rows(tmp_path / "cup", "SELECT COUNT(*) FROM games")[0][0] == 2
    changed = arena("run-tournament", str(config), "--games", "4", "--out", str(tmp_path / "cup"))
    assert changed.returncode == 1 and "games" in changed.stderr


def test_on_a_terminal_an_interrupted_run_shows_its_last_game_in_the_progress_line(tmp_path: Path) -> None:
    """The line is drawn at most 10 times a second on a terminal; when a run is interrupted
    the line it leaves behind still counts every game stored."""
    out = tmp_path / "tty"
    args = ["run-tournament", "--bots", str(SAMPLES / "random"), "--bots", str(SAMPLES / "greedy"),
            "--games", "400", "--concurrency", "2", "--sandbox", "none", "--out", str(out)]
    master, slave = os.openpty()
    runner = subprocess.Popen([*ARENA_ARGV, *args], stdout=slave, stderr=subprocess.DEVNULL,
                              stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + 120
    stored = 0
    while time.monotonic() < deadline and stored < 6:
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            chunks.append(os.read(master, 65536))
        stored = stored_games(out)
    runner.send_signal(signal.SIGINT)
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed its terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    assert runner.wait(60) == 130
    os.close(master)
    text = b"".join(chunks).decode(errors="replace")
    before, _, after = text.partition("interrupted:")
    kept = stored_games(out)
    assert f"{kept} of 400 games are stored" in after
    last = [part for part in before.split("\r") if "games " in part][-1]
    assert last.strip().startswith(f"games {kept}/400 |"), (last, kept)


@pytest.mark.slow
def test_a_folder_stored_before_long_ids_were_cut_resumes(tmp_path: Path) -> None:
    """Two 64-character names: ids are now cut to the protocol's 128 characters, but a folder
    stored before holds the uncut ids. Its resume replayed the first game and stopped ('is
    already stored as ...') on every try (red team)."""
    bots = tmp_path / "bots"
    for name in ("a" * 64, "b" * 63 + "c"):
        shutil.copytree(SAMPLES / "random", bots / name[0])
        manifest = bots / name[0] / "bot.toml"
        manifest.write_text(manifest.read_text().replace('name = "random"', f'name = "{name}"'))
    args = ["run-tournament", "--bots", str(bots), "--games", "2", "--sandbox", "none",
            "--out", str(tmp_path / "out")]
    assert arena(*args).returncode == 0
    with sqlite3.connect(tmp_path / "out" / "tournament.db") as conn:  # as the old code stored it
        (cut,) = conn.execute("SELECT game_id FROM games WHERE idx = 0").fetchone()
        uncut = f"0000-{'a' * 64}-vs-{'b' * 63}c-p0"
        conn.execute("UPDATE games SET game_id = ?, record = json_set(record, '$.game_id', ?) WHERE idx = 0",
                     (uncut, uncut))
        conn.execute("DELETE FROM games WHERE idx = 1")
    assert len(cut) <= 128 < len(uncut)
    resumed = arena(*args)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "done: 1 games played now, 1 were already stored" in resumed.stdout, resumed.stdout
    assert sorted(db_rows(tmp_path / "out", "SELECT idx FROM games")) == [(0,), (1,)]


@pytest.mark.slow  # a real tournament, then its resume
def test_a_resume_refuses_an_entrant_that_changed_version(tmp_path: Path) -> None:
    """A TA ran `submit --replace` between a run and its resume: the resumed run rated two
    versions of the bot as one, without a word. A change of its description is no new version."""
    entrants = tmp_path / "entrants"
    options = ["--entrants", str(entrants), "--games", "2", "--sandbox", "none"]
    for name in ("alice", "bob"):
        bot = misbehaving_bot(tmp_path / "hand-in" / name, "recorder", str(tmp_path / f"{name}.log"),
                              name=name, stdio=True)
        assert arena("submit", str(bot.folder), *options).returncode == 0
    run = ["run-tournament", "--bots", str(entrants), "--games", "2", "--sandbox", "none",
           "--concurrency", "1", "--out", str(tmp_path / "out")]
    assert arena(*run).returncode == 0
    manifest = entrants / "alice" / "bot.toml"
    manifest.write_text(manifest.read_text() + 'description = "now with comments"\n')
    again = arena(*run)
    assert again.returncode == 0, again.stderr
    replaced = arena("submit", str(tmp_path / "hand-in" / "alice"), *options, "--replace")
    assert replaced.returncode == 0, replaced.stderr
    refused = arena(*run)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert "'alice' changed since its games were stored" in refused.stderr, refused.stderr
    assert "entrants/.previous/" in refused.stderr


def test_run_tournament_help_says_the_defaults_in_force() -> None:
    """A TA learnt the default of 10 games per pairing from the banner of a run it had started."""
    from click.testing import CliRunner

    from arena.cli import main
    from arena.tournament.config import DEFAULTS

    text = " ".join(CliRunner().invoke(main, ["run-tournament", "--help"]).output.split())
    for option, key in (("--games", "games"), ("--seed", "seed"), ("--time-per-move", "per_move_ms"),
                        ("--bank-ms", "bank_ms"), ("--first-move-ms", "first_move_ms")):
        assert f"default {DEFAULTS[key]}" in text.split(option, 1)[1].split(" --", 1)[0], option


def test_bots_takes_a_sample_bot_s_name_as_play_does(tmp_path: Path) -> None:
    """Newcomer trial: `--bots ent --bots cbot` was 'no such folder', where play and check-bot
    take a sample bot's name; a folder of that name here still comes first."""
    (tmp_path / "random").mkdir()
    proc = arena("run-tournament", "--bots", "greedy", "--bots", "sample_bots/random", "--games", "2",
                 "--sandbox", "none", "--out", str(tmp_path / "out"), cwd=tmp_path / "random")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert stored_games(tmp_path / "out") == 2 and "greedy" in proc.stdout and "random" in proc.stdout
    local = arena("run-tournament", "--bots", "random", "--bots", "greedy", "--games", "2",
                  "--sandbox", "none", "--out", str(tmp_path / "out2"), cwd=tmp_path)
    assert local.returncode != 0 and "not a bot folder (no bot.toml)" in local.stderr, local.stderr
