"""The bot process layer, with real misbehaving subprocesses (no mocks)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.errors import BotStartError, ConfigError
from arena.launch.process import MARKER_VAR, BotProcess, ResourceLimits
from tests.helpers import py, wait_for

Spawn = Callable[..., BotProcess]


def is_dead(pid: int) -> bool:
    """Gone or a zombie with no threads left (an orphan may wait a while for init to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return True
    fields = stat[stat.rfind(b")") + 2:].split()
    return fields[0] in (b"Z", b"X") and int(fields[17]) <= 1


def marker_holders(marker: str) -> set[int]:
    entry = f"{MARKER_VAR}={marker}".encode()
    found = set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                environ = Path(f"/proc/{name}/environ").read_bytes()
            except OSError:
                continue
            if entry in environ.split(b"\0") and not is_dead(int(name)):
                found.add(int(name))
    return found


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Spawn]:
    """Start bots in tmp_path/bot; at teardown kill them and check nothing with a marker lives."""
    started: list[BotProcess] = []

    def start(argv: list[str], **kwargs: Any) -> BotProcess:
        kwargs.setdefault("cwd", tmp_path / "bot")
        bot = BotProcess.start(argv, **kwargs)
        started.append(bot)
        return bot

    yield start
    for bot in started:
        bot.kill_tree()
    for bot in started:
        assert marker_holders(bot.marker) == set()
        assert bot.poll() is not None


def test_environment_is_scrubbed(spawn: Spawn, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_TEST_SECRET", "hunter2")
    monkeypatch.setenv("PYTHONPATH", "/nonexistent")
    bot = spawn(py("""
        import json, os
        json.dump({"env": dict(os.environ), "cwd": os.getcwd()}, open("out.json", "w"))
    """), env={"ARENA_TOKEN": "t0k"})
    wait_for(lambda: bot.poll() is not None)
    assert bot.describe_exit() == "exit code 0"
    folder = tmp_path / "bot"
    seen = json.loads((folder / "out.json").read_text())
    assert seen["cwd"] == str(folder.resolve())
    assert seen["env"] == {
        "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(folder.resolve()), "LANG": "C.UTF-8",
        "TMPDIR": str(folder.resolve()), "ARENA_TOKEN": "t0k", MARKER_VAR: bot.marker}


def test_caller_env_overrides_home_but_not_the_marker(spawn: Spawn, tmp_path: Path) -> None:
    bot = spawn(py("""
        import os
        open("out.txt", "w").write(os.environ["HOME"] + " " + os.environ["ARENA_BOT_MARKER"])
    """), env={"HOME": "/elsewhere", MARKER_VAR: "forged"})
    wait_for(lambda: bot.poll() is not None)
    assert (tmp_path / "bot" / "out.txt").read_text() == f"/elsewhere {bot.marker}"


def test_resource_limits_are_in_force(spawn: Spawn, tmp_path: Path) -> None:
    limits = ResourceLimits(cpu_seconds=7, address_space_bytes=2**30, file_size_bytes=2**20,
                            open_files=64)
    bot = spawn(py("""
        import json, resource as r
        names = ["RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CORE"]
        json.dump({n: r.getrlimit(getattr(r, n)) for n in names}, open("limits.json", "w"))
    """), limits=limits)
    wait_for(lambda: bot.poll() is not None)
    assert json.loads((tmp_path / "bot" / "limits.json").read_text()) == {
        "RLIMIT_CPU": [7, 8], "RLIMIT_AS": [2**30, 2**30], "RLIMIT_FSIZE": [2**20, 2**20],
        "RLIMIT_NOFILE": [64, 64], "RLIMIT_CORE": [0, 0]}


def test_file_size_limit_kills_the_writer(spawn: Spawn, tmp_path: Path) -> None:
    bot = spawn(["/bin/sh", "-c", "exec head -c 200000 /dev/zero > big"],
                limits=ResourceLimits(file_size_bytes=100_000))
    wait_for(lambda: bot.poll() is not None)
    assert bot.describe_exit() == "killed by signal 25 (SIGXFSZ)"
    assert (tmp_path / "bot" / "big").stat().st_size == 100_000


def test_cpu_limit_kills_a_busy_loop(spawn: Spawn) -> None:
    bot = spawn(py("while True: pass"), limits=ResourceLimits(cpu_seconds=1))
    wait_for(lambda: bot.poll() is not None, timeout=5)
    assert bot.describe_exit() == "killed by signal 24 (SIGXCPU)"


def test_address_space_limit(spawn: Spawn) -> None:
    bot = spawn(py("""
        try:
            block = bytearray(1 << 30)
        except MemoryError:
            raise SystemExit(3)
    """), limits=ResourceLimits(address_space_bytes=512 * 2**20))
    wait_for(lambda: bot.poll() is not None)
    assert bot.describe_exit() == "exit code 3"


def test_stderr_is_capped_and_drained(spawn: Spawn, tmp_path: Path) -> None:
    cap = 64 * 1024
    log = tmp_path / "logs" / "bot.stderr.log"
    bot = spawn(py("""
        import sys
        sys.stdout.write("hello from stdout\\n"); sys.stdout.flush()
        chunk = b"x" * 65535 + b"\\n"
        for _ in range(160):  # 10 MB, far beyond a pipe buffer
            sys.stderr.buffer.write(chunk)
        sys.stderr.flush()
    """), stderr_log=log, stderr_cap_bytes=cap)
    wait_for(lambda: bot.poll() is not None, timeout=10)  # it was never blocked
    assert bot.describe_exit() == "exit code 0"
    bot.kill_tree()  # joins the drain thread
    data = log.read_bytes()
    line = f"[arena: stderr truncated after {cap} bytes]\n".encode()
    assert data.startswith(b"hello from stdout\nxxx")
    assert data.endswith(b"\n" + line)
    assert len(data) <= cap + 1 + len(line)
    assert data.count(b"truncated") == 1


def test_stderr_past_the_cap_is_dropped_at_a_bounded_rate(spawn: Spawn, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # Reading a spammer's stderr as fast as it wrote cost the harness 5.2 s of CPU in 12.6 s
    # (outside the bot's cgroup). Past the cap the bot now waits on its own full pipe.
    from arena.launch import process

    monkeypatch.setattr(process, "DISCARD_BYTES_PER_S", 4 << 20)
    log = tmp_path / "logs" / "bot.stderr.log"
    bot = spawn(py("""
        import sys
        chunk = b"x" * 65535 + b"\\n"
        for _ in range(192):  # 12 MiB
            sys.stderr.buffer.write(chunk)
        sys.stderr.flush()
    """), stderr_log=log, stderr_cap_bytes=1 << 20)
    started = time.monotonic()
    wait_for(lambda: bot.poll() is not None, timeout=30)
    assert time.monotonic() - started > 1.5  # 11 MiB dropped at 4 MiB/s: about 2.7 s
    assert bot.describe_exit() == "exit code 0"
    bot.kill_tree()
    assert log.read_bytes().endswith(f"[arena: stderr truncated after {1 << 20} bytes]\n".encode())


@pytest.mark.parametrize("cap", [1 << 20, 10], ids=["logged", "past_the_cap"])
def test_a_stderr_trickle_costs_the_drain_little_cpu(spawn: Spawn, tmp_path: Path, cap: int) -> None:
    # A bot writing stderr a byte at a time made the drain read once per byte: 5.9 s of
    # harness CPU in an 8.9 s game. The drain's own thread is measured here (its CPU, not time).
    bot = spawn(py("""
        import os, time
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            os.write(2, b"x")
    """), stderr_log=tmp_path / "logs" / "bot.stderr.log", stderr_cap_bytes=cap)
    drain = next(t for t in threading.enumerate() if t.name == f"bot-stderr-{bot.pid}")
    time.sleep(1.2)  # the bot trickles meanwhile (1.5 s in all)
    task = Path(f"/proc/self/task/{drain.native_id}/stat").read_text()
    ticks = sum(int(field) for field in task[task.rindex(")") + 2:].split()[11:13])  # utime, stime
    cpu_s = ticks / os.sysconf("SC_CLK_TCK")
    wait_for(lambda: bot.poll() is not None, timeout=30)
    bot.kill_tree()
    assert cpu_s < 0.25, f"the drain used {cpu_s:.2f} s of CPU on 1.2 s of a one-byte trickle"


def test_stderr_without_log_is_discarded(spawn: Spawn, tmp_path: Path) -> None:
    bot = spawn(py("import sys; sys.stderr.write('e' * 5_000_000)"))
    wait_for(lambda: bot.poll() is not None, timeout=10)
    assert bot.describe_exit() == "exit code 0"
    assert os.listdir(tmp_path / "bot") == []


def test_stderr_log_is_appended_below_the_cap(spawn: Spawn, tmp_path: Path) -> None:
    log = tmp_path / "bot.log"
    for word in ("one", "two"):
        bot = spawn(["/bin/sh", "-c", f"echo {word} >&2"], stderr_log=log)
        while bot.poll() is None:
            time.sleep(0.005)
        bot.kill_tree()
    assert log.read_text() == "one\ntwo\n"


def test_pipes_for_stdio_bots(spawn: Spawn) -> None:
    bot = spawn(py("""
        import sys
        for line in sys.stdin:
            print("echo " + line.strip(), flush=True)
    """), pipes=True)
    assert bot.stdin is not None and bot.stdout is not None
    bot.stdin.write(b"ping\n")
    assert bot.stdout.readline() == b"echo ping\n"
    bot.stdin.close()
    wait_for(lambda: bot.poll() is not None)
    assert bot.describe_exit() == "exit code 0"


def test_without_pipes_stdin_is_dev_null(spawn: Spawn, tmp_path: Path) -> None:
    bot = spawn(py("import sys; open('in.txt', 'w').write(repr(sys.stdin.read()))"))
    assert bot.stdin is None and bot.stdout is None
    wait_for(lambda: bot.poll() is not None)
    assert (tmp_path / "bot" / "in.txt").read_text() == "''"


def test_describe_exit(spawn: Spawn) -> None:
    bot = spawn(py("raise SystemExit(3)"))
    wait_for(lambda: bot.poll() is not None)
    assert bot.poll() == 3
    assert not bot.is_alive()
    assert bot.describe_exit() == "exit code 3"
    sleeper = spawn(["/bin/sleep", "100"])
    assert sleeper.is_alive() and sleeper.describe_exit() == "running"
    sleeper.kill_tree()
    assert sleeper.describe_exit() == "killed by signal 15 (SIGTERM)"


def test_child_that_ignores_sigterm_is_killed(spawn: Spawn, tmp_path: Path) -> None:
    bot = spawn(py("""
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        open("ready", "w").close()
        time.sleep(100)
    """))
    wait_for(lambda: (tmp_path / "bot" / "ready").exists())
    t0 = time.monotonic()
    bot.kill_tree(grace_s=0.1)
    assert time.monotonic() - t0 < 1.0
    assert bot.poll() == -signal.SIGKILL
    assert bot.describe_exit() == "killed by signal 9 (SIGKILL)"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_kill_tree_comes_after_the_whole_tree_is_dead(spawn: Spawn, tmp_path: Path,
                                                                       signum: int) -> None:
    """Ctrl-C (or a SIGTERM unwinding the harness) in a kill's grace period cut it short: the
    bot and its helper, both deaf to SIGTERM, lived on, and the next kill_tree returned at
    once (the tree counted as killed). The signal now waits for the kill to end."""
    from arena.signals import unwind_on_termination

    bot = spawn(py("""
        import os, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if os.fork() == 0:
            time.sleep(100)
        open("ready", "w").close()
        time.sleep(100)
    """))
    pids = wait_for(lambda: len(bot.tree_pids()) == 2 and (tmp_path / "bot" / "ready").exists()
                    and bot.tree_pids())
    previous = {number: signal.getsignal(number) for number in (signal.SIGTERM, signal.SIGHUP)}
    unwind_on_termination()
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signum))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt if signum == signal.SIGINT else SystemExit):
            bot.kill_tree(grace_s=1.0)
            time.sleep(1)  # (without the signal: the test fails here)
    finally:
        timer.cancel()
        for number, handler in previous.items():
            signal.signal(number, handler)
    assert all(is_dead(pid) for pid in pids)
    assert bot.poll() == -signal.SIGKILL


def test_a_ctrl_c_while_a_bot_starts_kills_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C after the bot's process exists but before start returns it: nobody held it, so
    nobody killed it. The interrupt now waits for start's end, which kills what it started."""
    import arena.launch.process as process

    markers: list[str] = []

    def interrupted_tree(pid: int, marker: str, *args: Any, **kwargs: Any) -> Any:
        markers.append(marker)
        os.kill(os.getpid(), signal.SIGINT)  # the worst moment: the process runs, nobody has it yet
        time.sleep(0.05)
        return ProcessTree(pid, marker, *args, **kwargs)

    from arena.launch.proctree import ProcessTree

    monkeypatch.setattr(process, "ProcessTree", interrupted_tree)
    with pytest.raises(KeyboardInterrupt):
        BotProcess.start(["/bin/sleep", "100"], cwd=tmp_path / "bot")
    [marker] = markers
    assert marker_holders(marker) == set()


_FORK_CHAIN = r"""
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
int main(void) {  /* each process forks and exits at once; a count of generations in "beat" */
    struct timespec s, n;
    clock_gettime(CLOCK_MONOTONIC, &s);
    for (long g = 1;; g++) {
        clock_gettime(CLOCK_MONOTONIC, &n);
        if (n.tv_sec - s.tv_sec >= 30) _exit(0);
        if (g % 500 == 0) {
            int fd = open("beat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
            char b[32];
            write(fd, b, snprintf(b, sizeof b, "%ld\n", g));
            close(fd);
        }
        if (fork() != 0) _exit(0);
    }
}
"""


def test_a_fork_and_exit_chain_is_killed(spawn: Spawn, tmp_path: Path) -> None:
    """A chain of processes that each fork and exit at once outran the /proc scan of the kill
    (each is gone before it is found): a red team's lived on after the bot was killed. Its
    process group is signalled at once, which reaches every member, forks under way too."""
    import shutil

    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the chain")
    (tmp_path / "bot").mkdir()
    (tmp_path / "bot" / "chain.c").write_text(_FORK_CHAIN)
    subprocess.run(["gcc", "-O2", "-o", "chain", "chain.c"], cwd=tmp_path / "bot", check=True)
    bot = spawn(["./chain"])
    beat = tmp_path / "bot" / "beat"
    wait_for(lambda: beat.exists() and beat.read_text().strip(), timeout=10)
    bot.kill_tree()
    time.sleep(0.2)
    counted = beat.read_text()
    time.sleep(0.5)
    assert beat.read_text() == counted, "the chain goes on after the kill"


def test_kill_tree_is_idempotent(spawn: Spawn) -> None:
    with spawn(["/bin/sleep", "100"]) as bot:
        bot.kill_tree()
        first = bot.describe_exit()
        bot.kill_tree()
        bot.kill_tree(grace_s=0)
    assert bot.describe_exit() == first == "killed by signal 15 (SIGTERM)"
    assert bot.tree_pids() == set()


def test_kill_tree_after_a_normal_exit(spawn: Spawn) -> None:
    bot = spawn(["/bin/true"])
    wait_for(lambda: bot.poll() is not None)
    bot.kill_tree()
    assert bot.describe_exit() == "exit code 0"


def test_children_are_found_and_killed(spawn: Spawn, tmp_path: Path) -> None:
    bot = spawn(py("""
        import os, time
        for i in range(5):
            if os.fork() == 0:
                time.sleep(100)
                os._exit(0)
        time.sleep(100)
    """))

    def all_six() -> set[int] | None:
        found = bot.tree_pids()
        return found if len(found) == 6 else None

    pids = wait_for(all_six)
    assert bot.pid in pids and os.getpid() not in pids
    bot.kill_tree()
    assert all(is_dead(pid) for pid in pids)


def test_setsid_daemon_grandchild_is_found_and_killed(spawn: Spawn, tmp_path: Path) -> None:
    # The classic daemon: fork, setsid, fork again, the middle process exits, so the
    # grandchild is in another session and process group and its parent is init.
    # The bot itself exits right away too.
    bot = spawn(py("""
        import os, signal, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                open("daemon.pid.tmp", "w").write(str(os.getpid()))
                os.rename("daemon.pid.tmp", "daemon.pid")
                time.sleep(100)
            os._exit(0)
        os.wait()
    """))
    pid_file = tmp_path / "bot" / "daemon.pid"
    daemon = int(wait_for(lambda: pid_file.exists() and pid_file.read_text()))
    wait_for(lambda: bot.poll() is not None)
    assert bot.describe_exit() == "exit code 0"
    assert os.getsid(daemon) not in (bot.pid, os.getsid(0))
    assert bot.tree_pids() == {daemon}
    bot.kill_tree()
    assert is_dead(daemon)


def test_daemon_whose_main_thread_exited_is_killed(spawn: Spawn, tmp_path: Path) -> None:
    # After pthread_exit() in the main thread the process shows as a zombie and has no
    # /proc/<pid>/environ, while its other thread runs on.
    bot = spawn(py("""
        import ctypes, os, threading, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                def work():
                    time.sleep(0.1)
                    open("daemon.pid", "w").write(str(os.getpid()))
                    time.sleep(100)
                threading.Thread(target=work).start()
                ctypes.CDLL(None).pthread_exit(None)
            os._exit(0)
        os.wait()
    """))
    pid_file = tmp_path / "bot" / "daemon.pid"
    daemon = int(wait_for(lambda: pid_file.exists() and pid_file.read_text()))
    assert not is_dead(daemon)
    assert bot.tree_pids() == {daemon}
    bot.kill_tree()
    assert is_dead(daemon)


def test_only_the_tree_is_killed(spawn: Spawn, tmp_path: Path) -> None:
    bot = spawn(["/bin/sleep", "100"])
    # A process started after the bot, in its own session too, but not the bot's.
    bystander = subprocess.Popen(["/bin/sleep", "100"], start_new_session=True)
    try:
        assert bot.tree_pids() == {bot.pid}
        bot.kill_tree()
        assert bystander.poll() is None
        assert not is_dead(os.getpid())
    finally:
        bystander.kill()
        bystander.wait()


def test_fork_churn_is_frozen_and_killed(spawn: Spawn, tmp_path: Path) -> None:
    # 50 children, each forking short-lived grandchildren as fast as it can (bounded:
    # each waits for its grandchild), some of them escaping into new sessions.
    bot = spawn(py("""
        import os, time
        for i in range(50):
            if os.fork() == 0:
                if i % 10 == 0:
                    os.setsid()
                while True:
                    pid = os.fork()
                    if pid == 0:
                        os._exit(0)
                    os.waitpid(pid, 0)
        open("ready", "w").close()
        time.sleep(100)
    """))
    wait_for(lambda: (tmp_path / "bot" / "ready").exists())
    assert len(bot.tree_pids()) >= 51
    t0 = time.monotonic()
    bot.kill_tree()
    elapsed = time.monotonic() - t0
    assert bot.tree_pids() == set()
    assert elapsed < 3.0


def test_start_failure_is_a_bot_start_error(tmp_path: Path) -> None:
    with pytest.raises(BotStartError, match="no-such-bot"):
        BotProcess.start([str(tmp_path / "no-such-bot")], cwd=tmp_path)
    with pytest.raises(BotStartError):
        BotProcess.start([], cwd=tmp_path)


def test_resource_limits_are_validated() -> None:
    with pytest.raises(ConfigError, match="open_files"):
        ResourceLimits(open_files=0)
