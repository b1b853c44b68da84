"""Failure reports an author can act on (issue 15), run through the `arena` command line with
real newcomer bots: each report must name the mistake and say what to change, show the bot's
log tail, and keep the log.

Every hint's text is a row of facts in tests/bots/test_diagnose.py (no process); here a dozen
of them run end to end, one real bot for each kind of fact the probe reads (its folder, its
log, its pipe, /proc, the sandbox), and the slow suite runs every other newcomer program
(:data:`SWEEP`)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from arena.bots.pool import BotPool, load_manifests, sample_bots_dir
from arena.launch.process import STDERR_LOG_MAX_BYTES
from tests.helpers import arena, arena_patched, misbehaving_bot, needs_strict, wait_for, write_bot

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


@pytest.mark.slow
def test_a_slow_hello_is_warned_about_with_what_to_do(tmp_path: Path) -> None:
    """It passes (the hello came within 20 s), with a warning that said how long it took but
    not what to do."""
    code, out = check_bot(newcomer(tmp_path, "slow_start.py", "2.5"))
    assert code == 0, out
    assert re.search(r"warning: slow start: the hello came after 2\.\d s \(keep it under 2 s; the "
                     r"referee gives up after 20 s\): say hello first, then load \(imports, tables, a "
                     r"JVM's classes\) before or during the first move, which has a larger limit", out), out


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


def test_a_crash_shows_its_log_even_when_the_log_is_written_late(tmp_path: Path) -> None:
    """The log tail was read as soon as the bot died, while the thread copying its stderr to
    the log could still be writing it: now and then a crash said "(its log ... is empty)"
    while the log held its traceback. Here that thread starts 0.3 s late, every time."""
    slow_drain = ("import time\nimport arena.launch.process as process\n_drain = process._drain\n"
                  "def late(*args):\n    time.sleep(0.3)\n    _drain(*args)\nprocess._drain = late")
    folder = newcomer(tmp_path, "key_error.py")
    proc = arena_patched(slow_drain, "check-bot", str(folder), "--games", "1",
                         "--logs", str(tmp_path / "logs"))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "crash" in out, out
    assert "is empty" not in out and "KeyError: 'my_buttons'" in out, out


# The other modes (a JVM's heap and threads, plain, not UTF-8) are rows of tests/bots/test_diagnose.py.
@pytest.mark.parametrize(("mode", "hint"), [
    ("long", 'its next lines on stdout, as it died: "' + "x" * 200 + '" | "' + "y" * 200
     + '" | "giving up"')])
def test_a_program_dying_with_its_reason_on_stdout_gets_the_reason(tmp_path: Path, mode: str,
                                                                   hint: str) -> None:
    """Newcomer trial, Java: a JVM that cannot start writes why on stdout, and only its first line
    ("Error occurred during initialization of VM") was shown, with the debug-print hint."""
    code, out = check_bot(newcomer(tmp_path, "dies_saying_why.py", mode, name=mode))
    assert code == 1 and "not JSON" in out, out
    assert f"- hint: {hint}" in out, out
    assert "print debug output to stderr" not in out, out


@pytest.mark.parametrize(("wrong", "said"), [
    ("Type", 'missing field "type" (is "Type" meant to be "type"?)'),
    ("sequence", 'missing field "seq" (is "sequence" meant to be "seq"?)')])
def test_a_misnamed_field_is_named(tmp_path: Path, wrong: str, said: str) -> None:
    """A field in the wrong case, or under another word, was only "missing field": the field
    the bot sent instead is named."""
    code, out = check_bot(newcomer(tmp_path, "misnamed_field.py", wrong, name=wrong.lower()))
    assert code == 1 and f"schema: {'message' if wrong == 'Type' else 'move'}: at $: {said}" in out, out


@pytest.mark.parametrize("sandbox", ["none", pytest.param("strict", marks=needs_strict)])
def test_a_program_in_the_bot_folder_named_without_dot_slash(tmp_path: Path, sandbox: str) -> None:
    """Under strict the sandbox's launcher, setpriv, fails (exit code 127) where Popen raised:
    the hint was given only unconfined, and setpriv, which the author never named, was unexplained."""
    folder = newcomer(tmp_path, "stdio_bot.py", command=["stdio_bot.py"], name="bare")
    script = folder / "stdio_bot.py"
    script.write_text(f"#!{sys.executable}\n" + script.read_text())
    script.chmod(0o755)
    code, out = check_bot(folder, "--sandbox", sandbox)
    expected = "cannot start 'stdio_bot.py'" if sandbox == "none" else "exit code 127"
    assert code == 1 and expected in out, out
    assert ("hint: a command without a '/' is looked up on the PATH, not in the bot's folder: "
            'write "./stdio_bot.py" in bot.toml') in out, out
    if sandbox == "strict":
        assert "setpriv: failed to execute stdio_bot.py" in out, out
        assert "(setpriv, named in its log, is the sandbox's launcher: it executes the command)" in out, out


def script_bot(tmp_path: Path, shebang: bytes, mode: int, *, newline: bytes = b"\n") -> Path:
    """stdio_bot.py run as ``./stdio_bot.py``: with this #! line (b"": none), file mode and
    line ending."""
    folder = newcomer(tmp_path, "stdio_bot.py", command=["./stdio_bot.py"], name="script")
    script = folder / "stdio_bot.py"
    script.write_bytes((shebang + script.read_bytes()).replace(b"\n", newline))
    script.chmod(mode)
    return folder


PROGRAM_CASES = {  # the program the command runs, and what the hint says
    "not executable": (b"#!/usr/bin/env python3\n", 0o644, b"\n",
                       './stdio_bot.py is not executable: chmod +x it, or run it with its interpreter: '
                       'command = ["python3", "stdio_bot.py"]'),
    "no #! line": (b"", 0o755, b"\n", "./stdio_bot.py has no #! line: add one, e.g. #!/usr/bin/env python3"),
    "CRLF": (b"#!/usr/bin/env python3\n", 0o755, b"\r\n",
             "./stdio_bot.py has Windows (CRLF) line endings, so its #! line ends in a carriage return: "
             "convert it (sed -i 's/\\r$//' ./stdio_bot.py, or dos2unix ./stdio_bot.py)"),
    # Permission denied is what the user sees: the CRLF hint alone sent a newcomer back a second time
    "CRLF, not executable": (b"#!/usr/bin/env python3\n", 0o644, b"\r\n",
                             "./stdio_bot.py is not executable and has Windows (CRLF) line endings: chmod "
                             "+x it, and convert it (sed -i 's/\\r$//' ./stdio_bot.py, or dos2unix "
                             "./stdio_bot.py)"),
}


def program_case(tmp_path: Path, case: str, *args: str) -> None:
    shebang, mode, newline, hint = PROGRAM_CASES[case]
    code, out = check_bot(script_bot(tmp_path, shebang, mode, newline=newline), *args)
    assert code == 1 and "start: bot script:" in out, out
    assert f" - hint: {hint}" in out, out


@pytest.mark.parametrize("case", ["no #! line"])  # the others: rows of tests/bots/test_diagnose.py
def test_a_program_that_cannot_run(tmp_path: Path, case: str) -> None:
    program_case(tmp_path, case)


@needs_strict
def test_a_program_that_cannot_run_in_the_sandbox(tmp_path: Path) -> None:
    """The same mistakes under --sandbox strict (errors of setpriv or /bin/sh in the log),
    and a command naming a file outside the bot's folder, which the sandbox hides."""
    for case in ("no #! line", "not executable"):  # /bin/sh's error; setpriv's Permission denied
        program_case(tmp_path / case.replace(" ", "-").replace("#!", "shebang"), case, "--sandbox", "strict")
    elsewhere = newcomer(tmp_path / "elsewhere", "stdio_bot.py")
    folder = newcomer(tmp_path, "stdio_bot.py", command=["python", str(elsewhere / "stdio_bot.py")],
                      name="outside")
    code, out = check_bot(folder, "--sandbox", "strict")
    assert code == 1 and "No such file or directory" in out, out
    hidden = elsewhere / "stdio_bot.py"
    assert (f"hint: under the sandbox only the bot's own folder is visible, not {hidden}: use a path "
            "inside it") in out, out
    code, out = check_bot(folder)  # without the sandbox it runs
    assert code == 0, out
    # The same through a relative path: the usual newcomer form
    sibling = newcomer(tmp_path, "stdio_bot.py", command=["python", "../elsewhere/stdio-bot/stdio_bot.py"],
                       name="sibling")
    code, out = check_bot(sibling, "--sandbox", "strict")
    assert code == 1 and ("hint: under the sandbox only the bot's own folder is visible, and "
                          "../elsewhere/stdio-bot/stdio_bot.py is outside it") in out, out


def c_newcomer(tmp_path: Path, *args: str) -> Path:
    """tests/programs/newcomer/fixed_buffer.c, built by its bot.toml and run with ``args``."""
    folder = tmp_path / "fixed-buffer"
    folder.mkdir()
    folder.chmod(0o755)
    shutil.copy(NEWCOMER / "fixed_buffer.c", folder)
    write_bot(folder, "fixed-buffer", ["./bot", *args], protocol="stdio",
              build="gcc -O2 -o bot fixed_buffer.c")
    return folder


def test_a_crash_right_after_a_long_message_is_told_lines_can_be_long(tmp_path: Path) -> None:
    """A C bot reading lines into char line[4096] dies on a move_request with its legal moves."""
    code, out = check_bot(c_newcomer(tmp_path), "--games", "1")
    assert code == 1 and "crash: bot fixed-buffer: killed by signal 11 (SIGSEGV)" in out, out
    said = re.search(r"hint: it died right after a message of (\d{1,3}(?:,\d{3})*) bytes: if it reads each "
                     r"line into a fixed-size buffer, that is why: messages can be up to 1 MiB on one "
                     r"line .* read each line whole; in C, fgets into a char array cuts a longer line in "
                     r"pieces: read with getline\(&line, &cap, stdin\)", out)
    assert said and int(said[1].replace(",", "")) > 4096, out


def test_a_crash_on_game_over_is_told_it_came_before_the_next_game_s_first_move(tmp_path: Path) -> None:
    """A newcomer's bot died handling game 1's game_over; the loss was game 2's, with 0 moves."""
    code, out = check_bot(newcomer(tmp_path, "game_over_error.py"))
    assert code == 1 and "game 2: crash: bot game-over-error: exit code 1" in out, out
    assert ("hint: it died before its first move of this game: on this game's new_game or first "
            "move_request, or still on the game_over of the game before (its log says which)") in out, out
    assert "KeyError: 'my_score'" in out, out


def test_the_same_problem_in_several_games_is_told_once(tmp_path: Path) -> None:
    """A refused submit printed the same 10-line traceback for each of its 4 games."""
    bot = misbehaving_bot(tmp_path / "crashy", "crash", name="crashy", stdio=True)
    code, out = check_bot(bot.folder, "--games", "4")
    assert code == 1 and out.count("crash: bot crashy: exit code 3") == 1, out
    for game in (2, 3, 4):
        assert f"  - game {game}: crash, as in game 1" in out, out
    # newcomer trial, Rust: a panic names the pid, another each game; it is the same problem
    code, out = check_bot(newcomer(tmp_path, "panics_with_pid.py"), "--games", "4")
    assert code == 1 and out.count("panicked at src/main.rs:12:5") == 1, out
    assert "        at bot::main (src/main.rs:12)" in out and "\\x09" not in out, out  # a tab, shown as one
    assert all(f"  - game {game}: crash, as in game 1" in out for game in (2, 3, 4)), out


def test_a_hello_name_other_than_bot_toml_s_is_warned_about(tmp_path: Path) -> None:
    """A student copied a bot and renamed it in bot.toml only: which name counts?"""
    bot = misbehaving_bot(tmp_path / "copy", "recorder", str(tmp_path / "log"), name="maxbot", stdio=True)
    code, out = check_bot(bot.folder, "--games", "1")
    assert code == 0, out
    assert ("warning: its hello says name 'misbehave-recorder' and its bot.toml 'maxbot': tournaments and "
            "ratings use bot.toml's") in out, out
    # submit says so too (it printed only ACCEPTED)
    proc = arena("submit", str(bot.folder), "--entrants", str(tmp_path / "entrants"), "--games", "2",
                 "--sandbox", "none")
    assert proc.returncode == 0 and "warning: its hello says name 'misbehave-recorder'" in proc.stderr, \
        proc.stdout + proc.stderr


def test_a_tournament_says_which_bot_failed_how_and_where_the_details_are(tmp_path: Path) -> None:
    """A newcomer's tournament said "4 ended abnormally", and nothing of why or where to look."""
    out = tmp_path / "out"
    bots = ["--bots", str(c_newcomer(tmp_path)), "--bots", str(sample_bots_dir() / "random")]
    ran = arena("run-tournament", *bots, "--games", "2", "--sandbox", "none", "--out", str(out), timeout=120)
    assert ran.returncode == 0 and "2 ended abnormally" in ran.stdout, ran.stdout + ran.stderr
    lines = ran.stdout.splitlines()
    at = lines.index("abnormal endings (2 of the stored games), by the bot at fault:")
    assert lines[at + 1].startswith("  fixed-buffer: crash x2, e.g. bot fixed-buffer: killed by signal 11")
    assert lines[at + 2] == (f"every detail: arena report {out} (report/csv/abnormal_games.csv); the bots' "
                             f"logs: {out / 'logs'}")


@needs_strict
def test_writing_next_to_the_bot_under_strict_is_told_to_use_tmpdir(tmp_path: Path) -> None:
    """Both pass under --sandbox none; under strict the folder is read-only."""
    python = newcomer(tmp_path, "writes_beside.py")
    assert check_bot(python)[0] == 0
    code, out = check_bot(python, "--sandbox", "strict")
    assert code == 1 and "Read-only file system" in out, out
    assert "hint: under --sandbox strict the bot's folder is read-only: write files in $TMPDIR" in out, out
    c_bot = c_newcomer(tmp_path, "beside")  # fopen gives NULL, fprintf crashes: nothing in its log
    code, out = check_bot(c_bot, "--sandbox", "strict", "--games", "1")
    assert code == 1 and "killed by signal 11 (SIGSEGV)" in out and "is empty" in out, out
    assert ("hint: its log is empty; if it runs under --sandbox none, look at what strict changes: the bot's "
            "folder is read-only (write files in $TMPDIR") in out, out


def test_a_hint_that_fails_is_left_out_without_a_traceback(tmp_path: Path) -> None:
    # A 300-character program name: Path.is_file raised 'File name too long' in the hint, and
    # its traceback was printed on the user's terminal.
    folder = tmp_path / "longname"
    folder.mkdir()
    write_bot(folder, "longname", ["b" * 300], protocol="stdio")
    proc = arena("check-bot", str(folder), "--games", "1", "--sandbox", "none")
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    assert "the hint for longname failed" not in proc.stderr, proc.stderr  # it does not fail now


def test_zeromq_code_in_a_stdio_bot_and_a_req_socket(tmp_path: Path) -> None:
    code, out = check_bot(newcomer(tmp_path, "zmq_bot.py", name="zmq-as-stdio"))
    assert code == 1 and "KeyError: 'ARENA_TOKEN'" in out, out
    assert ("hint: its log names ARENA_TOKEN or ARENA_ENDPOINT, which only a ZeroMQ bot is given: a ZeroMQ "
            'bot needs protocol = "zmq" in its bot.toml') in out, out
    code, out = check_bot(newcomer(tmp_path, "zmq_bot.py", "req", protocol="zmq", name="req"))
    assert code == 1 and "a multipart message (2 frames, the first empty)" in out, out
    assert "hint: use a DEALER socket, not REQ" in out, out
    code, out = check_bot(newcomer(tmp_path, "zmq_bot.py", protocol="zmq", name="dealer"))
    assert code == 0, out


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
    assert "did you mean" not in out, out  # 'language' is like none of the keys


def test_a_misspelt_manifest_key_gets_its_spelling(tmp_path: Path) -> None:
    folder = tmp_path / "typo"
    folder.mkdir()
    (folder / "bot.toml").write_text('name = "typo"\ncommand = "./bot"\nprotocl = "stdio"\nBuild = "make"\n')
    code, out = check_bot(folder)
    assert code == 1
    assert "key 'protocl': expected one of the keys" in out and "(did you mean 'protocol'?)" in out, out
    assert "key 'Build'" in out and "(did you mean 'build'?)" in out, out


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
    # The bot never ran: the log named is its build's, and it exists (a newcomer was pointed
    # at a bot log that was never written).
    kept = re.search(r"the bot's log is kept: (\S+)", out)
    assert kept and kept[1].endswith("badbuild.build.log") and Path(kept[1]).is_file(), out
    assert f"build log: {kept[1]}" in out and "bot log:" not in out, out


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


@pytest.mark.slow
def test_a_log_cut_at_its_cap_is_warned_about(tmp_path: Path) -> None:
    """A stack trace every move filled the 1 MiB log cap and check-bot passed silently."""
    code, out = check_bot(newcomer(tmp_path, "stderr_spam.py"), logs=False)
    assert code == 0, out
    assert ("warning: log cut: the bot wrote more than 1 MiB to stderr in one run, so its log was cut at "
            "that cap and the rest dropped") in out, out
    log = re.search(r"bot log: (\S+)", out)
    assert log is not None, out
    kept = Path(log.group(1))
    assert "[arena: stderr truncated after 1048576 bytes]" in kept.read_text()
    shutil.rmtree(kept.parent)
    code, out = check_bot(newcomer(tmp_path, "stdio_bot.py"))
    assert code == 0 and "log cut" not in out, out
    # The same --logs folder again, the bot fixed: earlier runs' logs do not count (it warned).
    spammer = newcomer(tmp_path / "again", "stderr_spam.py")
    logs = ["--logs", str(tmp_path / "shared-logs")]
    proc = arena("check-bot", str(spammer), "--games", "2", *logs)
    assert "log cut" in proc.stderr, proc.stderr
    (spammer / "stderr_spam.py").write_text((NEWCOMER / "stdio_bot.py").read_text())
    proc = arena("check-bot", str(spammer), "--games", "2", *logs)
    assert proc.returncode == 0 and "log cut" not in proc.stderr, proc.stdout + proc.stderr


def test_stale_replies_are_warned_about(tmp_path: Path) -> None:
    bot = misbehaving_bot(tmp_path / "twice", "late_reply", stdio=True)
    code, out = check_bot(bot.folder)
    assert code == 0, out
    assert re.search(r"warning: \d+ stale replies: the bot answered a request it had already", out), out


QUICK = ("--time-per-move", "200", "--bank-ms", "200", "--first-move-ms", "200")  # timeouts in 0.4 s


def test_a_timeout_after_stale_replies_says_the_seq_was_wrong(tmp_path: Path) -> None:
    """It answered, with an old seq: the report says so, not just "did not answer"."""
    code, out = check_bot(newcomer(tmp_path, "stale_seq.py"), *QUICK)
    assert code == 1 and "did not answer" in out, out
    assert re.search(r"it sent 1 reply with seq (\d+) while request (\d+) was waiting \(stale: dropped\): "
                     "each reply must carry the seq of the request it answers", out), out


SILENT_MOVE = "it wrote nothing on stdout after the move_request and was waiting for its input: flush " \
    "stdout after every message (print(..., flush=True), fflush(stdout), System.out.flush() " \
    "(a BufferedWriter's own flush()), Go's bufio Writer.Flush(), Rust's io::stdout().flush(), " \
    "Perl's $| = 1; Node's process.stdout.write needs none), and read stdin line by line (not to end of " \
    "file)"
STOPPED = "it was stopped (state T in /proc: a SIGSTOP or SIGTSTP sent to itself or its process group), so " \
    "it could not answer: a bot must never stop itself"


# Reading its input, stopped, computing: one real bot for each state /proc shows; every other
# case (no newline, blank lines, pondering, sleeping, late) is a row of tests/bots/test_diagnose.py.
@pytest.mark.parametrize(("script", "hint"), [
    ("unflushed_move.py", SILENT_MOVE), ("stops_itself.py", STOPPED),
    # too slow, not a protocol mistake: the flush hint sent a TA's students the wrong way
    ("thinks_forever.py", "it was still computing when its time ran out: it is too slow")])
def test_a_silent_timeout_says_why(tmp_path: Path, script: str, hint: str) -> None:
    """A move that never reached the referee: the report says why (not for a bot that computes),
    and check-bot counts the move that timed out."""
    script, *args = script.split()
    code, out = check_bot(newcomer(tmp_path, script, *args), *QUICK)
    assert code == 1 and "did not answer" in out, out
    assert re.search(r"did not answer: its limit was 200 ms plus 200 ms left in its bank, and the "
                     r"referee gave up after \d+ ms - hint: ([^-]*: )?" + re.escape(hint), out), out
    assert "0 moves, then its move 1 timed out" in out, out
    assert "slowest first move: timed out (limit 200 ms)" in out, out
    # one timeout is enough to say it: the other games would each wait as long (61 s for 4 games)
    assert "stopped after game 1 of 2: the bot timed out" in out and "game 2 (" not in out, out


@pytest.mark.slow
def test_a_reply_a_few_ms_late_is_told_it_came_late_not_blank_lines(tmp_path: Path) -> None:
    """Red team: a reply landing in the pipe while the hint looked into /proc (5 to 30 ms after
    the limit) was told "it wrote only blank lines on stdout"."""
    folder = newcomer(tmp_path, "just_late.py", "100")
    out = tmp_path / "games.jsonl"
    proc = arena("play", str(folder), "sample_bots/random", "--games", "10", "--time-per-move", "100",
                 "--bank-ms", "0", "--first-move-ms", "100", "--out", str(out),
                 "--logs", str(tmp_path / "logs"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    details = [json.loads(line)["result"]["detail"] for line in out.read_text().splitlines()]
    assert len(details) == 10 and not any("blank lines" in detail for detail in details), details
    assert all("hint: its reply came after its time ran out" in detail for detail in details), details


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
    # a shortened line says how long the message was (a fixed-size line buffer in a C bot)
    requests = [line for line in lines if line.startswith("stdio-bot << ") and "move_request" in line]
    assert all(re.search(r"\.\.\. \(\d{1,3}(,\d{3})* bytes\)$", line) for line in requests), requests[:2]


@pytest.mark.parametrize("kind", ["loop", "fifo"])
def test_a_command_that_is_a_link_loop_or_a_fifo_loses_its_games_and_nothing_else(tmp_path: Path,
                                                                                   kind: str) -> None:
    """The red team's './loop' (ln -s loop loop): the hint's Path.resolve() raised RuntimeError,
    check-bot and play printed a traceback and a strict tournament stopped after losing the
    worker three times. A FIFO must not be opened (it would block or be read)."""
    folder = tmp_path / "bots" / kind
    write_bot(folder, kind, [f"./{kind}"], protocol="stdio")
    if kind == "loop":
        (folder / "loop").symlink_to("loop")
    else:
        os.mkfifo(folder / "fifo")
    code, out = check_bot(folder)
    assert code == 1 and "cannot start" in out, out
    shutil.copytree(sample_bots_dir() / "random", tmp_path / "bots" / "random")
    ran = arena("run-tournament", "--bots", str(tmp_path / "bots"), "--games", "2", "--sandbox", "none",
                "--out", str(tmp_path / "out"), timeout=120)
    assert ran.returncode == 0 and "Traceback" not in ran.stderr, ran.stdout + ran.stderr
    assert "done: 2 games played now" in ran.stdout and "2 ended abnormally" in ran.stdout, ran.stdout


# ------------------------------------------------------------------ a bot written on Windows
UTF16 = "saved as UTF-16 (Windows Notepad's \"Unicode\"), not UTF-8: save it as UTF-8"
WINDOWS_PATH = ("expected paths written with / and relative to the bot's folder (backslashes are escapes "
                "here: a Windows path?), e.g. command = \"python bot.py\"")


@pytest.mark.parametrize(("manifest", "said"), [
    ('name = "w"\ncommand = "python bot.py"\n'.encode("utf-16"), UTF16),  # with its byte-order mark
    ('name = "w"\ncommand = "python bot.py"\n'.encode("utf-16-le"), UTF16),
    (b'name = "w"\ncommand = "python C:\\Users\\me\\bot.py"\n',
     "Invalid hex value (at line 2, column 23) (a backslash starts an escape in a \"string\": a Windows "
     "path? write paths with /, relative to the bot's folder)"),
    (b'name = "w"\ncommand = "python .\\bot.py"\n', WINDOWS_PATH),  # TOML: \b is a backspace
    (b'name = "w"\ncommand = "python C:\\\\Users\\\\me\\\\bot.py"\n', WINDOWS_PATH),  # shlex drops them
    (b"name = 'w'\ncommand = 'python .\\bot.py'\n", WINDOWS_PATH)])
def test_a_bot_toml_written_on_windows_is_told_what_to_change(tmp_path: Path, manifest: bytes,
                                                               said: str) -> None:
    """Newcomer trial (a bot written on Windows): Notepad's "Unicode" bot.toml was "cannot read:
    'utf-8' codec can't decode byte 0xff", and Windows paths ran other words than written."""
    (tmp_path / "bot.toml").write_bytes(manifest)
    code, out = check_bot(tmp_path)
    assert code == 1 and said in out, out


# The other mistakes of a bot written on Windows (py, bin/Bot, bot.exe, a dict printed, a variable,
# a path from another folder, a space in a path) are rows of tests/bots/test_diagnose.py.
@pytest.mark.parametrize(("files", "command", "hint"), [
    ({"Bot.py": "stdio_bot.py"}, ["python", "bot.py"], "bot.py is not in the bot's folder, but Bot.py is: "
                                                      "file names are case-sensitive on Linux")])
def test_a_bot_written_on_windows_is_told_what_to_change(tmp_path: Path, files: dict[str, str | bytes],
                                                         command: list[str], hint: str) -> None:
    folder = tmp_path / "win"
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            shutil.copy(NEWCOMER / content, path)
        path.chmod(0o755)
    write_bot(folder, "win", command, protocol="stdio")
    code, out = check_bot(folder)
    assert code == 1 and f"hint: {hint}" in out, out


def test_a_folder_holding_the_bot_folder_names_it(tmp_path: Path) -> None:
    """A zip unpacked into a folder of its own name: mybot/mybot/bot.toml."""
    inner = newcomer(tmp_path / "mybot", "stdio_bot.py", name="mybot")
    code, out = check_bot(inner.parent)
    assert code == 1 and "it holds 'mybot/bot.toml'; give that folder ('mybot')" in out, out


@needs_strict
def test_files_the_sandbox_user_cannot_read_or_write_are_named(tmp_path: Path) -> None:
    """Newcomer trial: bot.py of mode 600 (copied from Windows) in a folder of mode 755, and a
    log file left next to the bot by a run under none, each got only Python's 'Permission
    denied' under strict."""
    private = newcomer(tmp_path, "stdio_bot.py", name="private")
    (private / "stdio_bot.py").chmod(0o600)
    code, out = check_bot(private, "--sandbox", "strict")
    assert code == 1 and ("hint: stdio_bot.py is mode 600: under --sandbox strict the bot runs as a user of "
                          "its own, which must be able to read it (chmod -R o+rX") in out, out
    beside = newcomer(tmp_path, "writes_beside.py", name="beside")
    (beside / "moves.log").write_text("from a run under --sandbox none\n")
    code, out = check_bot(beside, "--sandbox", "strict")
    assert code == 1 and ("hint: under --sandbox strict the bot's folder is read-only" in out), out


@pytest.mark.slow
def test_loading_after_the_hello_is_told_it_counts_in_the_first_move(tmp_path: Path) -> None:
    """Newcomer trial: "say hello first, then load" made a 6 s load fail check-bot as a first
    move over its limit, without saying why that move was slow."""
    code, out = check_bot(newcomer(tmp_path, "loads_after_hello.py", "2.5"), "--first-move-ms", "500",
                          "--bank-ms", "5000", "--games", "2")
    assert code == 0 and "warning: 1 move(s) over their limit, drawing on the bank" in out, out
    assert ("(its first move: loading after the hello counts in it; load within 500 ms, or before the "
            "hello, which may come up to 20 s after the start)") in out, out


@needs_strict
@pytest.mark.parametrize(("how", "said"), [
    ("sys.exit(200)", "start: bot exits: exit code 200"),  # 128 + 72: no signal has that number
    ("sys.exit(3)", "start: bot exits: exit code 3"),
    ("os.kill(os.getpid(), 11)", "start: bot exits: killed by signal 11 (SIGSEGV)")])
def test_an_exit_status_over_128_under_strict_is_not_read_as_a_signal(tmp_path: Path, how: str,
                                                                      said: str) -> None:
    """Red team: under strict an exit(200) was reported as "killed by signal 72"."""
    folder = tmp_path / "exits"
    folder.mkdir()
    folder.chmod(0o755)
    (folder / "bot.py").write_text(f"import os, sys\n{how}\n")
    write_bot(folder, "exits", ["python", "bot.py"], protocol="stdio")
    code, out = check_bot(folder, "--sandbox", "strict", "--games", "1")
    assert code == 1 and said in out, out


def test_a_crash_after_the_log_is_full_says_the_log_is_full(tmp_path: Path) -> None:
    """Red team: once a bot's log file had reached its whole-file cap, a crash's report said
    "(its log ... is empty)" (nothing more is written to it). The log is filled beforehand."""
    folder = newcomer(tmp_path, "key_error.py")
    log = tmp_path / "logs" / "key-error.stderr.log"
    log.parent.mkdir()
    with open(log, "wb") as handle:
        handle.truncate(STDERR_LOG_MAX_BYTES)  # sparse: as large as the cap, written in no time
    proc = arena("check-bot", str(folder), "--games", "1", "--logs", str(log.parent))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "crash: bot key-error: exit code 1" in out, out
    assert f"(its log {log} reached its 16 MiB limit: nothing more was kept)" in out, out
    assert "is empty" not in out, out


def test_a_bot_gone_between_games_loses_the_next_game_whenever_it_left(tmp_path: Path) -> None:
    """A bot that exits after game_over lost its next game by a crash when it was still
    exiting as that game began, and was started again silently, its game played, when it had
    gone already (a pause between its games: a tournament's other pairings). Timing chose the
    verdict; now the next game is lost either way, and the one after is played afresh."""
    folder = newcomer(tmp_path, "one_game.py")
    with BotPool(load_manifests([folder, sample_bots_dir() / "random"]), tmp_path / "logs") as pool:
        first = pool.play(0, 1, seed=1)
        assert first.termination.value == "normal", first.detail
        process = pool.handles[0].process
        assert process is not None
        wait_for(lambda: process.poll() is not None, timeout=10)  # gone before the next game
        second = pool.play(0, 1, seed=2)
        assert (second.termination.value, second.loser) == ("crash", 0), second.detail
        assert "exit code 0 between games, after the last game_over" in second.detail, second.detail
        third = pool.play(0, 1, seed=3)
        assert third.termination.value == "normal", third.detail


@pytest.mark.parametrize("game", ["patchwork", "stack-n-stuff"])
def test_cells_counted_from_1_are_told_the_convention(tmp_path: Path, game: str) -> None:
    """A student's 1-based cells lost with 'cell [1, 7] is off the 7x7 quilt' (the engine)
    or 'expected ... an integer 0..8, got 9' (Patchwork's schema), no word on how cells count."""
    bot = newcomer(tmp_path, "one_based.py")
    out = tmp_path / "games.jsonl"
    proc = arena("play", str(bot), str(sample_bots_dir() / "random"), "--games", "1", "--game", game,
                 "--out", str(out), "--logs", str(tmp_path / "logs"), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(out.read_text())["result"]
    convention = r"cells are \[row, col\], 0-based, row 0 at the top"
    if game == "patchwork":  # 9 is past the schema's 0..8, checked before the engine sees the move
        assert result["reason"] == "schema", result
        assert re.fullmatch(r"move: at \$\.move\.cells\[\d\]\[\d\]: expected a row or column index, an "
                            rf"integer 0\.\.8 \({convention}\), got 9", result["detail"]), result["detail"]
    else:
        assert result["reason"] == "illegal_move", result
        assert re.fullmatch(r"one-based played an illegal move .*: cell \[\d, \d\] is off the 7x7 quilt: "
                            rf"{convention} \(rows 0-6, columns 0-6\); patch \d+ covers \d cells",
                            result["detail"]), result["detail"]


# ------------------------------------------------------------------ the slow sweep
# Every other newcomer program, each a row of tests/bots/test_diagnose.py, run for real in the
# slow suite: the probe must find in a real bot the facts its row gives. (script and its
# arguments, check-bot's, the hint; None: no hint at all)
BLANK = ("it wrote only blank lines on stdout after the move_request, and no move: write the move as one "
         "line of JSON, and nothing else, then flush stdout")
SWEEP = [
    ("read_to_eof.py", QUICK, SILENT_MOVE),
    ("move_no_newline.py", QUICK,
     "it wrote part of a line and no newline after the move_request: end each message with a newline "
     "and flush stdout after it"),
    ("blank_lines.py", QUICK, BLANK),
    ("thinks_in_a_thread.py", QUICK, "it was still computing when its time ran out: it is too slow"),  # a JVM
    ("ponders_unflushed.py unflushed", QUICK, SILENT_MOVE),
    ("ponders_unflushed.py no_newline", QUICK,
     "it wrote part of a line and no newline after the move_request"),
    ("sleeps_too_long.py", QUICK,
     "it was sleeping when its time ran out (not reading its input, not computing)"),
    ("answers_late.py", QUICK, "it is too slow for this time control"),
    ("dies_saying_why.py heap", (),
     'its next lines on stdout, as it died: "Could not reserve enough space for 8388608KB object heap"; '
     "the JVM could not get the heap it was given: give it -Xmx well under the bot's memory (4096 MiB "
     "of address space under --sandbox none), e.g. -Xmx512m"),
    ("dies_saying_why.py threads", (),
     "a JVM writes its own warnings on stdout: give java -Xlog:disable -Xlog:all=warning:stderr (they "
     "then go to the bot's log); it could not start a thread: under --sandbox strict a bot has at most "
     "256 processes and threads"),
    ("dies_saying_why.py plain", (),
     'its next lines on stdout, as it died: "giving up"; a program that fails may write why on stdout '
     "(a JVM does)"),
    ("dies_saying_why.py binary", (),
     'its next lines on stdout, as it died: "[MalformedMessageError: bot dies-saying-why: a message '
     "that is not UTF-8"),
    ("pretty.py", (), "one message per line"),
    ("debug_print.py", (),
     "stdout carries only protocol messages: print debug output to stderr (it goes to the bot's log)"),
    ("prints_a_dict.py", (),
     "this is how Python prints a dict (single quotes, True, None), not JSON: send "
     "print(json.dumps(message), flush=True)"),
    ("bad_json.py bigint", (), None), ("bad_json.py nan", (), None), ("bad_json.py deep", (), None),
]


@pytest.mark.slow
@pytest.mark.parametrize(("script", "args", "hint"), SWEEP, ids=[case[0] for case in SWEEP])
def test_every_newcomer_program_gets_the_hint_of_its_facts(tmp_path: Path, script: str,
                                                           args: tuple[str, ...], hint: str | None) -> None:
    name, *words = script.split()
    code, out = check_bot(newcomer(tmp_path, name, *words), *args)
    hints = [line.split(" - hint: ", 1)[1] for line in out.splitlines() if " - hint: " in line]
    assert code == 1 and (hints == [] if hint is None else any(hint in said for said in hints)), out


@pytest.mark.slow
def test_a_bot_computing_before_its_hello_is_told_so_not_to_flush(tmp_path: Path) -> None:
    """Newcomer trial: a bot precomputing for 25 s before its hello (silent, on a CPU all along)
    was told "it wrote nothing on stdout: flush your stdout" (the start limit shrunk to 2 s)."""
    proc = arena_patched("from arena.bots.session import BotHandle\n"
                         "BotHandle.__init__.__kwdefaults__['start_timeout_s'] = 2.0", "check-bot",
                         str(newcomer(tmp_path, "precomputes.py", "10")), "--games", "1",
                         "--logs", str(tmp_path / "logs"))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "no hello within 2 s" in out, out
    assert ("hint: it was still computing when the start timeout (2 s) ran out: send hello first, then "
            "load or precompute") in out and "flush" not in out, out


@pytest.mark.slow
@needs_strict
@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_writing_next_to_the_bot_under_strict_is_told_to_use_tmpdir(tmp_path: Path) -> None:
    """Red team: Node says "EROFS: read-only file system" (lower case) and "EACCES: permission
    denied, open 'moves.log'": neither got the hint Python's errors get."""
    folder = newcomer(tmp_path, "writes_beside.js", command=["node", "writes_beside.js"], name="js")
    assert check_bot(folder)[0] == 0  # fine under none (and it leaves moves.log there)
    code, out = check_bot(folder, "--sandbox", "strict")
    assert code == 1 and "Error: EACCES: permission denied, open 'moves.log'" in out, out
    assert ("hint: under --sandbox strict the bot's folder is read-only and moves.log belongs to another "
            "user: write files in $TMPDIR") in out, out
    (folder / "moves.log").unlink()
    code, out = check_bot(folder, "--sandbox", "strict")
    assert code == 1 and "Error: EROFS: read-only file system, open 'moves.log'" in out, out
    assert "hint: under --sandbox strict the bot's folder is read-only: write files in $TMPDIR" in out, out
