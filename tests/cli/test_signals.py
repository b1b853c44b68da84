"""SIGTERM or SIGHUP to the harness (``timeout``, ``kill``, a closed terminal) closes its bots:
no bot process, nor a child of one, outlives the command; under strict none stays frozen."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from arena.bots.pool import sample_bots_dir
from tests.helpers import ARENA_ARGV, needs_strict, wait_for, write_bot

# A random bot that first starts a child of its own, then thinks 0.15 s per move; the token on
# both command lines finds them in /proc (under strict they run in a pid namespace of their own).
SLOW_BOT = '''
import subprocess, sys, time
from arena.sdk import run
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", sys.argv[1]])
def choose(state, legal_moves, clock):
    time.sleep(0.15)
    return legal_moves[0]
run(choose, name="slow")
'''


def _with_token(token: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if token.encode() in handle.read():
                    found.append(int(entry))
        except (OSError, ValueError):
            continue
    return found


def _stop_mid_run(tmp_path: Path, sandbox: str, command: str, signum: int) -> None:
    token = f"arena-test-{uuid.uuid4().hex}"
    bot = tmp_path / "slow"
    bot.mkdir()
    bot.chmod(0o755)
    (bot / "bot.py").write_text(SLOW_BOT)
    write_bot(bot, "slow", ["python", "bot.py", token])
    other = str(sample_bots_dir() / "random")
    args = {"play": ["play", str(bot), other, "--games", "20"],
            "run-tournament": ["run-tournament", "--bots", str(bot), "--bots", other, "--games", "20",
                               "--concurrency", "2", "--out", str(tmp_path / "out")]}[command]
    runner = subprocess.Popen([*ARENA_ARGV, *args, "--sandbox", sandbox, "--time-per-move", "2000"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        wait_for(lambda: len(_with_token(token)) >= 2, timeout=60)  # the bot and its child
        time.sleep(0.5)  # mid-game: one of them is frozen under strict
        os.killpg(runner.pid, signum)  # as timeout(1) and a closed terminal do: the whole group
        runner.wait(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode in (128 + signum, -signum), runner.stderr.read() if runner.stderr else ""
    err = runner.stderr.read().decode() if runner.stderr else ""
    assert "Traceback" not in err, err
    if command == "run-tournament":  # as Ctrl-C's line says: how far it got (it said nothing)
        assert re.search(rf"stopped by {signal.Signals(signum).name}: \d+ of 20 games are stored; run "
                         "the same command again to play the rest", err), err
    deadline = time.monotonic() + 10  # a killed process may take a moment to be reaped
    while _with_token(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _with_token(token), f"left running: {_states(_with_token(token))}"


def _states(pids: list[int]) -> list[str]:
    states = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                states.append(f"{pid} {handle.read().rsplit(')', 1)[1].split()[0]}")
        except OSError:
            pass
    return states


@pytest.mark.parametrize("command", ["play", "run-tournament"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, pytest.param(signal.SIGHUP, marks=pytest.mark.slow)],
                         ids=["TERM", "HUP"])
def test_a_terminated_harness_leaves_no_bot_behind(tmp_path: Path, command: str, signum: int) -> None:
    _stop_mid_run(tmp_path, "none", command, signum)


@needs_strict
@pytest.mark.parametrize("command", ["play", pytest.param("run-tournament", marks=pytest.mark.slow)])
def test_a_terminated_harness_leaves_no_bot_frozen_under_strict(tmp_path: Path, command: str) -> None:
    _stop_mid_run(tmp_path, "strict", command, signal.SIGTERM)


def test_a_termination_signal_during_a_finalizer_still_unwinds(tmp_path: Path) -> None:
    """Python ignores an exception raised in a finalizer or an at-fork hook, with a traceback
    on stderr: a worker terminated while it started a bot printed 'Exception ignored ...
    SystemExit' into the user's terminal and played on. The SystemExit is raised again in
    ordinary code: the clean-up runs, the status is the unwind's, stderr stays empty."""
    script = tmp_path / "finalizer.py"
    script.write_text(textwrap.dedent("""
        import os, signal, sys, time
        from arena.signals import unwind_on_termination
        unwind_on_termination(0)

        class Dying:
            def __del__(self):
                os.kill(os.getpid(), signal.SIGTERM)
                for _ in range(1000):  # the handler runs in here
                    pass

        try:
            Dying()
            time.sleep(3)
            print("carried on")
            sys.exit(5)
        finally:
            print("cleaned up")
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout, done.stderr) == (0, "cleaned up\n", "")


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_check_says_where_its_logs_are_kept(tmp_path: Path, signum: int) -> None:
    # Its /tmp/arena-check-* folder was kept and named nowhere; Ctrl-C printed click's
    # "Aborted!" and exit status 1.
    bot = tmp_path / "stuck"
    bot.mkdir()
    (bot / "bot.py").write_text("import sys, time\nprint('starting', file=sys.stderr, flush=True)\n"
                                "time.sleep(600)\n")
    write_bot(bot, "stuck", ["python3", "bot.py"], protocol="stdio")
    checker = subprocess.Popen([*ARENA_ARGV, "check-bot", str(bot), "--games", "1", "--sandbox", "none"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)  # waiting for its hello (20 s)
    checker.send_signal(signum)
    out, err = checker.communicate(timeout=30)
    assert checker.returncode == (130 if signum == signal.SIGINT else 128 + signum), out + err
    assert "Traceback" not in err and "Aborted!" not in err, err
    [kept] = [line for line in err.splitlines() if line.startswith("the bot's logs are kept: ")]
    logs = Path(kept.split(": ", 1)[1])
    try:
        assert (logs / "stuck.stderr.log").read_text() == "starting\n"
    finally:
        import shutil

        shutil.rmtree(logs)


@pytest.mark.slow  # a strict build and a check, interrupted by signals
@needs_strict
def test_an_interrupted_strict_build_leaves_no_copy_and_a_killed_check_is_swept(tmp_path: Path) -> None:
    # Ctrl-C during a build (BotPool.__init__) left /tmp/arena-p<pid>-builds-*/<bot>; a check
    # killed with SIGKILL left its folders until a tournament's workers swept them.
    temp = tmp_path / "tmp"
    temp.mkdir()
    bot = tmp_path / "slowbuild"
    bot.mkdir()
    bot.chmod(0o755)
    (bot / "bot.py").write_text("")
    write_bot(bot, "slowbuild", ["python3", "bot.py"], protocol="stdio",
              build="mkdir -p a/b/c && echo built > a/b/c/out && sleep 600")
    env = {**os.environ, "TMPDIR": str(temp)}
    for signum in (signal.SIGINT, signal.SIGKILL):
        argv = [*ARENA_ARGV, "check-bot", str(bot), "--games", "1", "--sandbox", "strict"]
        checker = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        wait_for(lambda: any(temp.glob("arena-p*-builds-*/slowbuild/a/b/c/out")), timeout=60)
        checker.send_signal(signum)
        out, err = checker.communicate(timeout=60)
        assert "Traceback" not in err, err
        left = sorted(p.name for p in temp.iterdir())
        if signum == signal.SIGINT:
            assert checker.returncode == 130 and left == [], (left, err)
        else:
            assert any(name.startswith(f"arena-p{checker.pid}-builds-") for name in left), left
    swept = subprocess.run([*ARENA_ARGV, "check-bot", str(sample_bots_dir() / "random"), "--games", "1"],
                           capture_output=True, text=True, env=env, timeout=120)
    assert swept.returncode == 0, swept.stdout + swept.stderr
    # (its arena-check-* log folder stays: the logs of a check that failed are kept on purpose)
    assert sorted(temp.glob("arena-p*")) == [], "the killed check's folders are swept"


@pytest.mark.slow
@pytest.mark.parametrize("command", ["play", "run-tournament"])
def test_a_bot_that_stops_reading_does_not_hold_up_the_exit(tmp_path: Path, command: str) -> None:
    """Closing a bot sent it shutdown and waited up to 5 s for it to be read: a bot that had
    stopped reading (its stdin pipe full) held a SIGTERM'd play 5.4 s, and each such bot held
    its worker as long, past the time the coordinator gives it (a red team's). Now shutdown
    is not waited for, and the bots of a pool share one grace period."""
    import shutil

    from tests.helpers import PROGRAMS

    bot = tmp_path / "ponderer"
    bot.mkdir()
    shutil.copy(PROGRAMS / "ponderer.py", bot / "bot.py")
    write_bot(bot, "ponderer", ["python3", "bot.py", "600"], protocol="stdio")
    other = str(sample_bots_dir() / "random")
    args = {"play": ["play", str(bot), other, "--games", "2"],
            "run-tournament": ["run-tournament", "--bots", str(bot), "--bots", other, "--games", "2",
                               "--concurrency", "1", "--out", str(tmp_path / "out")]}[command]
    log = tmp_path / "logs" / "ponderer.stderr.log"
    runner = subprocess.Popen([*ARENA_ARGV, *args, "--sandbox", "none", "--time-per-move", "60000",
                               "--bank-ms", "0", *(["--logs", str(log.parent)] if command == "play" else [])],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        time.sleep(4)  # its second request waits in a full pipe (its first move took it a moment)
        started = time.monotonic()
        os.killpg(runner.pid, signal.SIGTERM)
        runner.wait(timeout=60)
        took = time.monotonic() - started
    finally:
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGKILL)
    err = runner.stderr.read().decode() if runner.stderr else ""
    assert runner.returncode == 128 + signal.SIGTERM, err
    assert took < 2.5, (took, err)
