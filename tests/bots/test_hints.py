"""Failure reports an author can act on (issue 15): one real newcomer bot per common
mistake, run through the `arena` command line; each report must name the mistake and say
what to change, show the bot's log tail, and keep the log."""

from __future__ import annotations

import re
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.helpers import arena, misbehaving_bot, write_bot

NEWCOMER = Path(__file__).parents[1] / "programs" / "newcomer"


def newcomer(tmp_path: Path, script: str, *args: str, protocol: str = "stdio",
             command: list[str] | None = None, name: str | None = None) -> Path:
    """A bot folder holding ``tests/programs/newcomer/SCRIPT`` and a bot.toml running it."""
    folder = tmp_path / (name or Path(script).stem.replace("_", "-"))
    folder.mkdir(parents=True)
    folder.chmod(0o755)
    shutil.copy(NEWCOMER / script, folder / script)
    write_bot(folder, folder.name, command or ["python", script, *args], protocol=protocol)
    return folder


def check_bot(folder: Path, *args: str, logs: bool = True) -> tuple[int, str]:
    """``arena check-bot FOLDER``, its logs beside the folder (``logs=False``: the default, a
    new temporary folder, kept when the check finds a problem)."""
    where = ["--logs", str(folder.parent / f"{folder.name}-logs")] if logs else []
    proc = arena("check-bot", str(folder), "--games", "2", *where, *args)
    assert not re.search("^Traceback", proc.stderr, re.M), proc.stderr  # the bot's are indented
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.slow
def test_no_hello_hints_name_the_cause(tmp_path: Path) -> None:
    """Bots whose hello never gets through (20 s each, run side by side): unflushed stdout,
    a message without its newline, a stdio bot whose manifest says zmq, and a ZeroMQ bot
    that never connects."""
    bots = [newcomer(tmp_path, "unflushed.py"), newcomer(tmp_path, "no_newline.py"),
            newcomer(tmp_path, "stdio_bot.py", protocol="zmq", name="zmq-manifest"),
            misbehaving_bot(tmp_path / "silent", "slow_start").folder]
    with ThreadPoolExecutor(len(bots)) as pool:
        (code1, out1), (code2, out2), (code3, out3), (code4, out4) = pool.map(check_bot, bots)
    for code, out in ((code1, out1), (code2, out2), (code4, out4)):
        assert code == 1 and "no hello within 20 s" in out, out
    assert "connects a DEALER socket, identity ARENA_TOKEN, to ARENA_ENDPOINT" in out4, out4
    assert code3 == 1 and "a bot must play many games" not in out3, out3  # its stdin is empty: it exits
    assert "it wrote nothing on stdout: flush your stdout after each message" in out1, out1
    assert "it wrote part of a line and no newline" in out2, out2
    assert 'this bot\'s log holds a hello' in out3 and 'set protocol = "stdio"' in out3, out3
    # the log is kept, and its path printed; its tail shows what the bot printed
    log = re.search(r"the bot's log is kept: (\S+)", out3)
    assert log is not None and Path(log.group(1)).is_file(), out3
    assert '"type": "hello"' in Path(log.group(1)).read_text()
    assert "lines of its log" in out3 and '"type": "hello"' in out3, out3


def test_dealer_without_identity_is_told_to_set_it(tmp_path: Path) -> None:
    bot = misbehaving_bot(tmp_path / "noid", "no_identity")
    code, out = check_bot(bot.folder)
    assert code == 1
    assert "set ZMQ_IDENTITY to ARENA_TOKEN before connecting" in out, out


def test_a_traceback_is_shown_and_the_log_kept(tmp_path: Path) -> None:
    code, out = check_bot(newcomer(tmp_path, "key_error.py"), logs=False)
    assert code == 1 and "crash" in out, out
    assert "KeyError: 'my_buttons'" in out, out  # the log tail, in the report
    log = re.search(r"the bot's log is kept: (\S+)", out)
    assert log is not None, out
    try:
        assert "KeyError" in Path(log.group(1)).read_text()
    finally:
        shutil.rmtree(Path(log.group(1)).parent)


def test_a_bot_that_stops_after_one_game(tmp_path: Path) -> None:
    code, out = check_bot(newcomer(tmp_path, "one_game.py"))
    assert code == 1, out
    assert "a bot must play many games, one after another, until the referee sends shutdown" in out, out


def test_pretty_printed_json_gets_one_message_per_line(tmp_path: Path) -> None:
    code, out = check_bot(newcomer(tmp_path, "pretty.py"))
    assert code == 1 and "not JSON" in out, out
    assert "hint: one message per line" in out, out


def test_shell_syntax_in_command(tmp_path: Path) -> None:
    folder = newcomer(tmp_path, "stdio_bot.py", command=["cd", ".", "&&", "python", "stdio_bot.py"],
                      name="shell")
    code, out = check_bot(folder)
    assert code == 1 and "cannot start 'cd'" in out, out
    assert "no shell is run" in out and "put the commands in a script" in out, out


def test_a_program_in_the_bot_folder_named_without_dot_slash(tmp_path: Path) -> None:
    folder = newcomer(tmp_path, "stdio_bot.py", command=["stdio_bot.py"], name="bare")
    script = folder / "stdio_bot.py"
    script.write_text(f"#!{sys.executable}\n" + script.read_text())
    script.chmod(0o755)
    code, out = check_bot(folder)
    assert code == 1 and "cannot start 'stdio_bot.py'" in out, out
    assert 'write "./stdio_bot.py" in bot.toml' in out, out


def test_every_manifest_problem_at_once(tmp_path: Path) -> None:
    folder = tmp_path / "bad-manifest"
    folder.mkdir()
    (folder / "bot.toml").write_text('protocol = "tcp"\nbuild = 3\nlanguage = "python"\n')
    code, out = check_bot(folder)
    assert code == 1
    path = folder / "bot.toml"
    for problem in (f"{path}: key 'name': expected 1 to 64 characters", "got nothing (the key is missing)",
                    f"{path}: key 'command': expected a command line",
                    f"{path}: key 'protocol': expected \"zmq\" or \"stdio\", got 'tcp'",
                    f"{path}: key 'build': expected a shell command (a string), got 3",
                    f"{path}: key 'language': expected one of the keys (name, command, protocol, build, "
                    "description), got an unknown key"):
        assert problem in out, out
    assert "5 problem(s)" in out and "got None" not in out, out


def test_build_failure_shows_its_error_line(tmp_path: Path) -> None:
    """The compiler's error line comes before pages of context: the report keeps it."""
    folder = tmp_path / "badbuild"
    folder.mkdir()
    context = "; ".join(f"echo '   context line {i}'" for i in range(30))
    write_bot(folder, "badbuild", ["./bot"], protocol="stdio",
              build=f"echo 'bot.c:3:5: error: unknown type name uint' ; {context} ; exit 1")
    code, out = check_bot(folder)
    assert code == 1
    assert "bot.c:3:5: error: unknown type name uint" in out and "context line 29" in out, out


def test_timeout_says_limit_bank_and_time(tmp_path: Path) -> None:
    bot = misbehaving_bot(tmp_path / "slow", "sleep_past_limit", stdio=True)
    proc = arena("play", str(bot.folder), "sample_bots/random", "--games", "1",
                 "--time-per-move", "300", "--bank-ms", "400", "--logs", str(tmp_path / "logs"))
    assert proc.returncode == 0, proc.stderr
    line = next(line for line in proc.stdout.splitlines() if line.startswith("game 1"))
    assert "(timeout)" in line, proc.stdout
    assert re.search(r"its limit was 300 ms plus 400 ms left in its bank", line), line
    assert re.search(r"(took|after) \d+ ms", line) and "overrun" not in line, line


def test_aborted_game_prints_no_fake_scores(tmp_path: Path) -> None:
    bot = misbehaving_bot(tmp_path / "dies", "exit_at_start", stdio=True)
    proc = arena("play", str(bot.folder), "sample_bots/random", "--games", "1",
                 "--logs", str(tmp_path / "logs"))
    assert proc.returncode == 0, proc.stderr
    line = next(line for line in proc.stdout.splitlines() if line.startswith("game 1"))
    assert "aborted, bad-exit_at_start lost by crash" in line, line
    assert not re.search(r"-\d+ : -\d+", proc.stdout), proc.stdout
    assert "exit code 7" in line, line


@pytest.mark.slow
def test_a_slow_first_move_passes(tmp_path: Path) -> None:
    """2 s on each first move: within the 5 s first-move limit (arena.clock), so it passes."""
    code, out = check_bot(newcomer(tmp_path, "stdio_bot.py", "2"))
    assert code == 0, out
    assert re.search(r"slowest first move: 2\d\d\d ms \(limit 5000 ms\)", out), out
    assert re.search(r"slowest other move: \d+ ms \(limit 1000 ms\)", out), out


def test_stale_replies_are_warned_about(tmp_path: Path) -> None:
    bot = misbehaving_bot(tmp_path / "twice", "late_reply", stdio=True)
    code, out = check_bot(bot.folder)
    assert code == 0, out
    assert re.search(r"warning: \d+ stale replies: the bot answered a request it had already", out), out


@pytest.mark.parametrize("command", ["play", "check-bot"])
def test_trace_prints_every_message_both_ways(tmp_path: Path, command: str) -> None:
    bot = newcomer(tmp_path, "stdio_bot.py")
    args = [str(bot), "sample_bots/random"] if command == "play" else [str(bot), "--games", "1"]
    proc = arena(command, *args, "--games", "1", "--trace")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert 'stdio-bot >> {"type": "hello"' in proc.stderr, proc.stderr[:2000]
    assert 'stdio-bot << {"type":"welcome"' in proc.stderr.replace(": ", ":"), proc.stderr[:2000]
    assert any(line.startswith("stdio-bot << ") and "move_request" in line for line in lines)
    assert any(line.startswith("stdio-bot >> ") and '"move"' in line for line in lines)
    assert all(len(line) <= 200 for line in lines if " << " in line or " >> " in line)
