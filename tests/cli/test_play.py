"""`arena play` and `arena check-bot` as a user runs them: real subprocesses end to end."""

from __future__ import annotations

import json
import re
import shutil
import textwrap
import time
from pathlib import Path

import pytest

from arena.bots.pool import sample_bots_dir
from arena.records import replay
from tests.helpers import PROGRAMS, arena, arena_here, arena_patched, misbehaving_bot


def test_play_prints_a_line_per_game_and_writes_records(tmp_path: Path) -> None:
    out = tmp_path / "games.jsonl"
    proc = arena("play", str(sample_bots_dir() / "greedy"), str(sample_bots_dir() / "random"),
                 "--games", "4", "--seed", "11", "--out", str(out), "--logs", str(tmp_path / "logs"))
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("game ")]
    assert len(lines) == 4
    assert "greedy (seat 0) vs random (seat 1)" in lines[0]
    assert "random (seat 0) vs greedy (seat 1)" in lines[1]
    assert "summary: greedy" in proc.stdout
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["seed"] for r in records] == [11, 11, 12, 12]
    assert [r["players"] for r in records[:2]] == [["greedy", "random"], ["random", "greedy"]]
    for record in records:
        replay(record)
        assert all("time_ms" in m for m in record["moves"])
    # the replay command accepts what play wrote
    shown = arena("replay", str(out), "--game", "4")
    assert shown.returncode == 0 and "4 record(s) valid" in shown.stdout


def test_play_show_renders_positions(tmp_path: Path) -> None:
    proc = arena("play", str(sample_bots_dir() / "random"), str(sample_bots_dir() / "random"),
                 "--games", "1", "--show", "--logs", str(tmp_path / "logs"))
    assert proc.returncode == 0, proc.stderr
    assert "random vs random-2" not in proc.stdout  # names are made unique per seat
    assert "random-2" in proc.stdout and proc.stdout.count("time |") > 20


def test_play_records_the_failure_reason(tmp_path: Path) -> None:
    bad = misbehaving_bot(tmp_path / "bad", "illegal", name="bad").folder
    out = tmp_path / "games.jsonl"
    proc = arena("play", str(bad), str(sample_bots_dir() / "random"), "--games", "1",
                 "--out", str(out), "--logs", str(tmp_path / "logs"))
    assert proc.returncode == 0, proc.stderr
    assert "random wins (illegal_move)" in proc.stdout
    result = json.loads(out.read_text())["result"]
    assert result["reason"] == "illegal_move" and result["loser"] == 0
    assert "not one of the next choices" in result["detail"]


def test_play_rejects_a_folder_without_manifest(tmp_path: Path) -> None:
    proc = arena("play", str(tmp_path), str(sample_bots_dir() / "random"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "no bot.toml" in proc.stderr
    assert "`arena new-bot DIR --lang python`" in proc.stderr  # what to do about it


@pytest.mark.parametrize("near", ["Bot.toml", "bot.toml.txt", "bot.tml", "BOT.TOML "])
def test_check_bot_names_a_manifest_misnamed(tmp_path: Path, near: str) -> None:
    """A newcomer's editor saved bot.toml.txt, or the name's case is off: say which file."""
    (tmp_path / near).write_text('name = "x"\ncommand = "python bot.py"\n')
    proc = arena("check-bot", str(tmp_path))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr + proc.stdout
    assert f"it holds {near!r}; the file must be named exactly bot.toml" in proc.stdout + proc.stderr


def test_check_bot_passes_a_good_bot_and_fails_a_bad_one(tmp_path: Path) -> None:
    good = arena("check-bot", str(sample_bots_dir() / "greedy"), "--games", "2")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "handshake: ok" in good.stdout and "PASS" in good.stdout
    bad = misbehaving_bot(tmp_path / "bad", "schema", name="bad").folder
    proc = arena("check-bot", str(bad), "--games", "2")
    assert proc.returncode == 1
    assert "FAIL" in proc.stderr and "schema" in proc.stderr and "Traceback" not in proc.stderr


def sdk_bot(folder: Path, name: str, body: str) -> Path:
    """A Python SDK bot named ``name``: ``body`` (dedented) defines choose and, if it likes,
    on_game_over, which run() is given."""
    folder.mkdir(parents=True)
    (folder / "bot.py").write_text("import os, sys\nfrom arena.sdk import run\n" + textwrap.dedent(body)
                                   + f"\nrun(choose, name={name!r}, "
                                   "on_game_over=globals().get('on_game_over'))\n")
    (folder / "bot.toml").write_text(f'name = "{name}"\ncommand = "python bot.py"\nprotocol = "stdio"\n')
    return folder


CRASH_AT_THIRD_MOVE = """
    moves = 0
    def choose(state, legal_moves, clock):
        global moves
        moves += 1
        print(f"got {moves} moves", file=sys.stderr, flush=True)
        if moves == 3:
            os._exit(1)
        return legal_moves[0]
"""


def test_submit_prints_a_problem_s_log_tail_on_lines_of_their_own(tmp_path: Path) -> None:
    # Submit printed the detail on one line, its newlines shown as \x0a.
    bot = sdk_bot(tmp_path / "crashy", "crashy", CRASH_AT_THIRD_MOVE)
    proc = arena("submit", str(bot), "--entrants", str(tmp_path / "entrants"), "--sandbox", "none",
                 "--games", "2")
    assert proc.returncode == 1 and "REFUSED" in proc.stderr, proc.stdout + proc.stderr
    assert "\\x0a" not in proc.stderr, proc.stderr
    refused = [line for line in proc.stderr.splitlines() if line.startswith("  ")]
    assert refused[0].startswith("  - game 1: crash: bot crashy: exit code 1"), refused
    assert refused[1].startswith("      the last 3 lines of its log "), refused
    assert refused[2:4] == ["        got 1 moves", "        got 2 moves"], refused
    check = arena("check-bot", str(bot), "--games", "2")  # the same printer, but for the log's path
    failed = [line for line in check.stderr.splitlines() if line.startswith("  ")]
    assert [line.split(" /")[0] for line in failed] == [line.split(" /")[0] for line in refused], check.stderr


def test_check_bot_fails_a_bot_that_crashes_on_its_last_game_over(tmp_path: Path) -> None:
    # With --games 1 it passed: only the start of a next game noticed the crash.
    bot = sdk_bot(tmp_path / "overbot", "overbot", """
        def choose(state, legal_moves, clock):
            return legal_moves[0]
        def on_game_over(message):
            message["no such key"]
    """)
    proc = arena("check-bot", str(bot), "--games", "1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    problems = [line for line in proc.stderr.splitlines() if line.startswith("  - ")]
    assert problems == ["  - after its last game the bot ended with exit code 1 (on game_over or shutdown): "
                        "a bot waits for the next new_game or for shutdown, and exits with status 0 on "
                        "shutdown"], proc.stderr
    assert "KeyError: 'no such key'" in proc.stderr  # its log tail


@pytest.mark.slow
def test_check_bot_removes_its_temporary_logs_on_pass_and_keeps_them_on_fail(tmp_path: Path) -> None:
    # Every run left a /tmp/arena-check-* folder, even on PASS (a newcomer had 97).
    temp = tmp_path / "tmp"
    temp.mkdir()
    setup = f"""
        import tempfile
        mkdtemp = tempfile.mkdtemp
        def check_folders_in_temp(*args, **kwargs):  # the bots' sockets stay in /tmp (paths are short)
            if kwargs.get("prefix") == "arena-check-":
                kwargs["dir"] = {str(temp)!r}
            return mkdtemp(*args, **kwargs)
        tempfile.mkdtemp = check_folders_in_temp
    """
    good = arena_patched(setup, "check-bot", str(sample_bots_dir() / "random"), "--games", "1")
    assert good.returncode == 0 and "PASS" in good.stdout, good.stdout + good.stderr
    assert list(temp.iterdir()) == [] and "bot log: removed, as the check passed" in good.stdout
    logs = tmp_path / "logs"  # --logs keeps them
    kept = arena("check-bot", str(sample_bots_dir() / "random"), "--games", "1", "--logs", str(logs))
    assert kept.returncode == 0 and (logs / "random.stderr.log").is_file(), kept.stdout + kept.stderr
    bad = misbehaving_bot(tmp_path / "bad", "schema", name="bad").folder
    failed = arena_patched(setup, "check-bot", str(bad), "--games", "1")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    [folder] = temp.iterdir()
    assert f"the bot's log is kept: {folder / 'bad.stderr.log'}" in failed.stderr, failed.stderr


@pytest.mark.parametrize("command", ["check-bot", "play", "sprt", "submit"])
def test_a_path_to_bot_toml_means_its_folder(tmp_path: Path, command: str) -> None:
    # It gave click's "Directory 'handbot/bot.toml' is a file."
    bot = sdk_bot(tmp_path / "handbot", "handbot", """
        def choose(state, legal_moves, clock):
            return legal_moves[0]
    """)
    manifest, other = str(bot / "bot.toml"), str(sample_bots_dir() / "random")
    logs = ["--logs", str(tmp_path / "logs")]
    args = {"check-bot": [manifest, "--games", "1"], "play": [manifest, other, "--games", "1", *logs],
            "sprt": [manifest, other, "--max-games", "2", *logs],
            "submit": [manifest, "--entrants", str(tmp_path / "entrants"), "--sandbox", "none",
                       "--games", "2"]}
    proc = arena(command, *args[command])
    assert proc.returncode == (2 if command == "sprt" else 0), proc.stdout + proc.stderr  # sprt: no decision
    assert "handbot" in proc.stdout and "Traceback" not in proc.stderr
    if command == "submit":
        assert (tmp_path / "entrants" / "handbot" / "bot.py").is_file()
    other_file = arena(command, str(bot / "bot.py"), *args[command][1:])  # any other file: one line
    assert other_file.returncode == (3 if command == "sprt" else 2), other_file.stderr
    refusal = f"{bot / 'bot.py'}: not a folder; give the bot's folder (the one holding bot.toml)"
    assert refusal in other_file.stderr, other_file.stderr


@pytest.mark.slow
def test_submit_copies_a_conforming_bot_and_refuses_a_bad_one(tmp_path: Path) -> None:
    entrants = tmp_path / "entrants"
    ok = arena("submit", str(sample_bots_dir() / "cbot"), "--entrants", str(entrants), "--games", "2")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "ACCEPTED" in ok.stdout
    assert (entrants / "cbot" / "bot.toml").exists() and (entrants / "cbot" / "bot.c").exists()
    # the installed copy is a working entrant: a tournament can read the folder of folders
    bad = misbehaving_bot(tmp_path / "bad", "garbage", name="bad").folder
    refused = arena("submit", str(bad), "--entrants", str(entrants), "--games", "2")
    assert refused.returncode == 1 and "REFUSED" in refused.stderr and "malformed" in refused.stderr
    assert not (entrants / "bad").exists()
    again = arena("submit", str(sample_bots_dir() / "cbot"), "--entrants", str(entrants), "--games", "2",
                  "--replace")
    assert again.returncode == 0 and sorted(p.name for p in entrants.iterdir()) == [".previous", "cbot"]
    run = arena("run-tournament", "--bots", str(entrants), "--bots", str(sample_bots_dir() / "random"),
                "--games", "2", "--out", str(tmp_path / "out"))
    assert run.returncode == 0, run.stderr


@pytest.mark.slow  # real submits, one killed
def test_submit_refuses_a_name_that_differs_only_in_case_and_sweeps_killed_submits(tmp_path: Path) -> None:
    """Red team: 'Greedy' was accepted beside 'greedy' (one entrant on a case-insensitive disk,
    and read as one by people), and a submit killed mid-check left its staging folder for good."""
    import subprocess
    import sys

    entrants = tmp_path / "entrants"
    options = ["--entrants", str(entrants), "--games", "2", "--sandbox", "none"]
    first = misbehaving_bot(tmp_path / "lower", "recorder", str(tmp_path / "a"), name="greedy", stdio=True)
    ok = arena("submit", str(first.folder), *options)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a submit killed with its staging copy in place: its pid is dead
    # an entrant may be named like a staging folder (red team: the sweep removed it)
    lookalike = misbehaving_bot(tmp_path / "look", "recorder", str(tmp_path / "c"),
                                name=f"arena-p{gone.pid}-x", stdio=True)
    assert arena("submit", str(lookalike.folder), *options).returncode == 0
    stale = entrants / f".arena-p{gone.pid}-Greedy-x1y2z3"
    (stale / "bot").mkdir(parents=True)
    other = misbehaving_bot(tmp_path / "upper", "recorder", str(tmp_path / "b"), name="Greedy", stdio=True)
    for extra in ([], ["--replace"]):
        refused = arena("submit", str(other.folder), *options, *extra)
        assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
        assert "an entrant named 'greedy' already exists" in refused.stderr, refused.stderr
        assert "may not differ from another entrant's only in case ('Greedy')" in refused.stderr
    assert sorted(p.name for p in entrants.iterdir()) == [stale.name, lookalike.name, "greedy"]
    again = arena("submit", str(first.folder), *options, "--replace")
    assert again.returncode == 0, again.stdout + again.stderr
    # the stale copy is swept, the entrant named like one stays
    assert sorted(p.name for p in entrants.iterdir()) == [".previous", lookalike.name, "greedy"]


@pytest.mark.slow
def test_submit_checks_a_bot_against_the_tournament_s_time_control(tmp_path: Path) -> None:
    """A TA's 300 ms tournament: submit accepted a bot taking 400 ms a move (checked at its 1 s
    default), which then lost 20 of its 24 games on time."""
    slow = misbehaving_bot(tmp_path / "slow", "slow", "0.4", "1", name="slow", stdio=True)
    options = ["--entrants", str(tmp_path / "entrants"), "--games", "2", "--sandbox", "none"]
    refused = arena("submit", str(slow.folder), *options, "--time-per-move", "300", "--bank-ms", "50")
    assert refused.returncode == 1 and "timeout" in refused.stderr, refused.stdout + refused.stderr
    assert "limit was 300 ms plus 50 ms" in refused.stderr, refused.stderr
    accepted = arena("submit", str(slow.folder), *options)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr


def test_sprt_says_why_games_ended_abnormally(tmp_path: Path) -> None:
    """A student's sprt ended 'H0 accepted ...; 100 game(s) ended abnormally' and no reason."""
    crashy = misbehaving_bot(tmp_path / "crashy", "crash", name="crashy", stdio=True)
    proc = arena("sprt", str(crashy.folder), str(sample_bots_dir() / "random"), "--max-games", "4",
                 "--logs", str(tmp_path / "logs"))
    assert proc.returncode in (1, 2), proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    at = lines.index("abnormal endings (4 of 4 games), by the bot at fault:")
    assert lines[at + 1].startswith("  crashy: crash x4, e.g. bot crashy: exit code 3"), lines
    assert lines[at + 2] == f"the bots' logs: {tmp_path / 'logs'}", lines


@pytest.mark.slow
def test_sprt_accepts_greedy_over_random_and_rejects_random_over_greedy(tmp_path: Path) -> None:
    greedy, random_bot = str(sample_bots_dir() / "greedy"), str(sample_bots_dir() / "random")
    common = ["--elo0", "0", "--elo1", "20", "--alpha", "0.05", "--beta", "0.05", "--max-games", "200"]
    better = arena("sprt", greedy, random_bot, *common, "--logs", str(tmp_path / "a"))
    assert better.returncode == 0, better.stdout + better.stderr
    assert "H1 accepted: greedy is stronger" in better.stdout
    worse = arena("sprt", random_bot, greedy, *common, "--logs", str(tmp_path / "b"))
    assert worse.returncode == 1, worse.stdout + worse.stderr
    assert "H0 accepted: random is not stronger" in worse.stdout
    # it stopped as soon as the log-likelihood ratio left its bounds, well before max-games
    last = [line for line in worse.stdout.splitlines() if line.startswith("games")][-1]
    assert int(last.split()[1].rstrip(":")) < 200 and float(last.split("LLR")[1].split()[0]) <= -2.94


@pytest.mark.parametrize("concurrency", ["1", pytest.param("2", marks=pytest.mark.slow)])
@pytest.mark.parametrize("broken_side", ["new", "old"])
def test_sprt_gives_no_verdict_when_a_bot_cannot_start(tmp_path: Path, broken_side: str,
                                                      concurrency: str) -> None:
    # A broken OLD used to give "H1 accepted" and exit 0: a CI gate would pass.
    from tests.helpers import write_bot

    broken = write_bot(tmp_path / "broken", "broken", ["python", "-c", "import sys; sys.exit(9)"],
                       protocol="stdio").folder
    good = sample_bots_dir() / "random"
    new, old = (broken, good) if broken_side == "new" else (good, broken)
    proc = arena("sprt", str(new), str(old), "--max-games", "40", "--time-per-move", "200",
                 "--concurrency", concurrency, "--logs", str(tmp_path / "logs"))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "broken could not start, so the test cannot judge it" in proc.stderr, proc.stderr
    assert "accepted" not in proc.stdout and "Traceback" not in proc.stderr


@pytest.mark.parametrize("how", ["invalid manifest", "bad elo", "unknown option", "unexpected exception"])
def test_sprt_exits_3_without_a_verdict_on_any_error(tmp_path: Path, how: str) -> None:
    # Exit 1 means "H0 accepted" and 2 "max-games reached": an SPRT parameter error (exit 1),
    # a usage error (2) and an unexpected exception (a traceback, 1) used to look like verdicts.
    good = str(sample_bots_dir() / "random")
    invalid = tmp_path / "invalid"
    invalid.mkdir()
    (invalid / "bot.toml").write_text('name = 42\ncommand = "python bot.py"\n')
    args = {"invalid manifest": [good, str(invalid)], "bad elo": [good, good, "--elo1", "-5"],
            "unknown option": [good, good, "--bogus"], "unexpected exception": [good, good]}[how]
    setup = """
        import arena.tournament.sequential as sequential
        def broken(*args, **kwargs):
            raise RuntimeError("a bug\\nof ours")
        sequential.run_sprt = broken
    """ if how == "unexpected exception" else ""
    proc = arena_patched(setup, "sprt", *args, "--max-games", "4", "--logs", str(tmp_path / "logs"))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "accepted" not in proc.stdout and "games " not in proc.stdout
    error = proc.stderr.strip().splitlines()[-1]
    expected = {"invalid manifest": f"Error: {invalid}/bot.toml: key 'name': expected 1 to 64 characters",
                "bad elo": "Error: SPRT: elo1 must be greater than elo0, got elo0=0.0, elo1=-5.0",
                "unknown option": "Error: No such option '--bogus'.",
                "unexpected exception": "Error: unexpected error (RuntimeError): a bug\\x0aof ours"}[how]
    assert error.startswith(expected), error


@pytest.mark.slow  # real sprt workers, one killed mid-game
def test_sprt_that_loses_a_game_with_its_workers_says_it_does_not_resume(tmp_path: Path) -> None:
    # The killer (stdio, unsandboxed) SIGKILLs its parent, the worker, at its third move.
    killer = misbehaving_bot(tmp_path / "killer", "kill_referee", "SIGKILL", name="killer", stdio=True).folder
    temp = tmp_path / "tmp"
    temp.mkdir()
    proc = arena("sprt", str(killer), str(sample_bots_dir() / "random"), "--concurrency", "2",
                 "--max-games", "4", "--time-per-move", "200", "--logs", str(tmp_path / "logs"),
                 timeout=120, env={"TMPDIR": str(temp)})
    # The killed workers' bots' scratch folders are removed (they stayed in /tmp, two per kill).
    assert list(temp.iterdir()) == []
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "accepted" not in proc.stdout
    error = proc.stderr.strip().splitlines()[-1]
    assert error.startswith("Error: game sprt-0-"), error
    assert "was lost with its worker process 3 times (last: worker exited, killed by SIGKILL)" in error
    assert error.endswith("No verdict: sprt does not resume, so running it again starts the test over "
                          "from the first pair"), error
    assert "same command again" not in proc.stderr


@pytest.mark.parametrize("command", ["play", "sprt"])
def test_a_records_path_that_cannot_be_written_is_one_line_before_any_game(tmp_path: Path,
                                                                            command: str) -> None:
    folder = sample_bots_dir() / "random"
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    proc = arena(command, str(folder), str(folder), "--out", str(blocker / "records.jsonl"),
                 "--logs", str(tmp_path / "logs"))
    assert proc.returncode == (3 if command == "sprt" else 1), proc.stdout + proc.stderr
    assert "cannot write there" in proc.stderr and "Traceback" not in proc.stderr
    assert "game 1" not in proc.stdout
    proc = arena("play", str(folder), str(folder), "--logs", str(blocker / "logs"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and str(blocker) in proc.stderr


@pytest.mark.parametrize("command,ending", [("play", "/"), ("sprt", "/"), ("random-games", "/"),
                                            ("random-games", "/."), ("play", "/.."), ("random-games", "")])
def test_an_out_file_that_names_a_folder_is_refused_in_one_line(tmp_path: Path, command: str,
                                                                ending: str) -> None:
    # Path("new/") and Path("new/.") are Path("new"): they used to become a FILE named new.
    folder = str(sample_bots_dir() / "random")
    target = f"{tmp_path / 'new'}{ending}" if ending else "."
    args = ["2"] if command == "random-games" else [folder, folder, "--logs", str(tmp_path / "logs")]
    proc = arena(command, *args, "--out", target, cwd=tmp_path)
    assert proc.returncode == (3 if command == "sprt" else 1), proc.stdout + proc.stderr
    shown = target if target.endswith("/") else target + "/"
    assert proc.stderr.strip() == (f"Error: --out {target}: names a folder; --out names "
                                   f"a file (such as {shown}games.jsonl)"), proc.stderr
    assert not (tmp_path / "new").exists() and "game 1" not in proc.stdout


@pytest.mark.slow  # two real builds that sleep 1.6 s, and their games
def test_a_long_build_says_it_is_still_running_now_and_then(tmp_path: Path) -> None:
    # The notices come after 10 s, then every 30 s; this run shrinks both (0.4 s, then 0.5 s).
    slow = tmp_path / "slowbuild"
    slow.mkdir()
    (slow / "bot.py").write_text((sample_bots_dir() / "random" / "bot.py").read_text())
    (slow / "bot.toml").write_text('name = "slowbuild"\ncommand = "python bot.py"\nbuild = "sleep 1.6"\n')
    logs = tmp_path / "logs"
    args = ("play", str(slow), str(sample_bots_dir() / "random"), "--games", "2", "--logs", str(logs))
    setup = """
        import arena.bots.manifest as manifest
        manifest.BUILD_NOTICE_AFTER_S = 0.4
        manifest.BUILD_NOTICE_EVERY_S = 0.5
    """
    proc = arena_patched(setup, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    notices = [line for line in proc.stderr.splitlines() if line.startswith("building ")]
    assert 2 <= len(notices) <= 4, proc.stderr  # at 0.4, 0.9 and 1.4 s: not a line per poll
    assert all(re.fullmatch(rf"building slowbuild: still running after \d+ s \(limit 300 s; its output "
                            rf"will be in {re.escape(str(logs))}/\S*slowbuild\S*\.build\.log\)", line)
               for line in notices), notices
    proc = arena(*args)  # the real first notice is 10 s away
    assert proc.returncode == 0 and "building" not in proc.stderr, proc.stdout + proc.stderr


def test_a_bot_that_leaves_a_deep_tree_in_its_tmp_does_not_break_play(tmp_path: Path) -> None:
    # Removing the bot's scratch folder raised RecursionError (shutil.rmtree) out of play.
    digger = misbehaving_bot(tmp_path / "digger", "deep_tmp", name="digger", stdio=True).folder
    temp = tmp_path / "tmp"
    temp.mkdir()
    proc = arena("play", str(digger), str(sample_bots_dir() / "random"), "--games", "2", "--sandbox", "none",
                 "--logs", str(tmp_path / "logs"), env={"TMPDIR": str(temp)})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    assert "0 ended abnormally" in proc.stdout, proc.stdout
    assert "deep_tmp: DONE" in (tmp_path / "logs" / "digger.stderr.log").read_text()
    assert list(temp.iterdir()) == []


def test_sample_bots_go_by_their_names_from_any_folder(tmp_path: Path) -> None:
    # The README's `arena play path/to/mybot sample_bots/mcts` failed outside the checkout,
    # with no word of where the sample bots are.
    proc = arena("play", "random", "sample_bots/greedy", "--games", "2", "--time-per-move", "200",
                 cwd=tmp_path)
    assert proc.returncode == 0 and "summary: random " in proc.stdout and "greedy" in proc.stdout, \
        proc.stdout + proc.stderr
    mine = sdk_bot(tmp_path / "random", "mine", """
        def choose(state, legal_moves, clock):
            return legal_moves[0]
    """)
    assert mine.is_dir()
    proc = arena("play", "random", "greedy", "--games", "2", "--time-per-move", "200", cwd=tmp_path)
    assert "summary: mine " in proc.stdout, proc.stdout + proc.stderr  # a folder here comes first
    proc = arena("play", "nosuch", "greedy", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().endswith(
        "not a bot folder (no such directory; the sample bots that ship with arena go by their names: "
        "cbot, greedy, mcts, random)"), proc.stderr




@pytest.mark.parametrize(("pause", "per_move", "verdict"),
                         [pytest.param("5.6", "9000", "normal", marks=pytest.mark.slow),  # waits 5.6 s
                          ("60", "1000", "timeout")])
def test_a_request_the_bot_does_not_read_waits_for_its_time_for_the_move(tmp_path: Path, pause: str,
                                                                         per_move: str, verdict: str) -> None:
    """A request longer than the bot's stdin pipe waited 5 s for the bot to read it, whatever
    the time control: a bot that thinks before it reads lost by 'protocol' with time left, and
    one that never reads stalled the game 10 s (5 s more to tell it). Now the wait is the move's
    time: a ponderer within it plays on; a bot that never reads loses on time when it is up."""
    bot = tmp_path / "ponderer"
    bot.mkdir()
    shutil.copy(PROGRAMS / "ponderer.py", bot / "bot.py")
    (bot / "bot.toml").write_text(f'name = "ponderer"\ncommand = ["python3", "bot.py", "{pause}"]\n'
                                  'protocol = "stdio"\n')
    out = tmp_path / "games.jsonl"
    started = time.monotonic()
    proc = arena("play", str(bot), str(sample_bots_dir() / "random"), "--games", "1", "--out", str(out),
                 "--time-per-move", per_move, "--bank-ms", "0", "--logs", str(tmp_path / "logs"))
    took = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())["result"]
    assert result["reason"] == verdict, result
    if verdict == "timeout":
        assert result["loser"] == 0 and "did not read its input within its time" in result["detail"], result
        assert took < 5, took  # 1 s for the move, and no wait to tell it


@pytest.mark.parametrize("command", ["play", "sprt", "random-games"])
def test_an_edition_the_game_does_not_have_is_refused_as_run_tournament_refuses_it(
        tmp_path: Path, command: str) -> None:
    """`arena play --game stack-n-stuff --edition original` played stack-n-stuff, silently."""
    random_bot = str(sample_bots_dir() / "random")
    bad = ["--game", "stack-n-stuff", "--edition", "original"]
    tournament = arena_here("run-tournament", "--bots", random_bot, "--bots",  # refused at once: in process
                            str(sample_bots_dir() / "greedy"), "--out", str(tmp_path / "t"), *bad)
    args = {"play": [random_bot, random_bot, "--games", "1"],
            "sprt": [random_bot, random_bot, "--max-games", "2"],
            "random-games": ["1", "--out", str(tmp_path / "g.jsonl")]}[command]
    proc = arena_here(command, *args, "--logs", str(tmp_path / "logs"), *bad) if command != "random-games" \
        else arena_here(command, *args, *bad)
    expected = ("Error: command line: key 'edition': expected one of 'standard' (the editions of "
                "stack-n-stuff), got 'original'")
    assert tournament.stderr.strip().splitlines()[-1] == expected, tournament.stderr
    assert proc.returncode == (3 if command == "sprt" else 1), proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == expected and proc.stdout == "", proc.stdout + proc.stderr


def test_game_lines_say_whose_score_is_which_and_a_tie_reads_as_a_tie(tmp_path: Path) -> None:
    """check-bot printed the bot's score first ("won 12 : 5") and play the seats' ("12 : 5"),
    and a tie on points read as a win ("won -24 : -24"). Seed 2 is a tie for random vs random."""
    random_bot = str(sample_bots_dir() / "random")
    tie = "random -24, random-2 -24: a tie on points, random wins as the first to reach the last space"
    check = arena("check-bot", random_bot, "--games", "6")
    assert check.returncode == 0, check.stdout + check.stderr
    lines = [line for line in check.stdout.splitlines() if line.startswith("game ")]
    assert re.fullmatch(r"game 2 \(seat 1\): random-2 -?\d+, random -?\d+: random(-2)? wins; "
                        r"\d+ moves, normal", lines[1]), lines
    assert re.fullmatch(rf"game 5 \(seat 0\): {tie}; \d+ moves, normal", lines[4]), lines
    play = arena("play", random_bot, random_bot, "--games", "1", "--seed", "2",
                 "--logs", str(tmp_path / "logs"))
    assert play.returncode == 0, play.stdout + play.stderr
    assert re.fullmatch(rf"game 1: seed 2, random \(seat 0\) vs random-2 \(seat 1\): {tie} \(normal\) "
                        r"in [\d.]+ s", play.stdout.splitlines()[0]), play.stdout
