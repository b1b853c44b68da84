"""The strict sandbox with real bubblewrap and real misbehaving programs.

Each test starts a bot that tries one way out (tests/programs/misbehave.py reports every
attempt on its stderr), plays it against the random bot in a strict pool, and checks
that the attempt failed harmlessly or lost the game with a recorded reason, and that
nothing of the bot is left running (no process with its marker, its cgroups removed,
which the kernel allows only once they are empty).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.bots.manifest import Manifest
from arena.bots.pool import BotPool, sample_bots_dir
from arena.engine import Termination
from arena.errors import BotStartError, SandboxError
from arena.launch.bubblewrap import UID_BASE, Sandbox, SandboxLimits, check_strict_available, runtime_paths
from arena.launch.launcher import BubblewrapLauncher, Launcher
from arena.referee import GameResult, TimeControl
from tests.helpers import ARENA_ARGV, live_bot_processes, misbehaving_bot

REPO = Path(__file__).resolve().parents[2]
# The attempts happen before the first move: give it room.
TC = TimeControl(per_move_ms=500, bank_ms=1000, first_move_ms=10_000)


def sandboxed_bot(tmp_path: Path, kind: str, *args: str, stdio: bool = False) -> Manifest:
    """The misbehaving bot KIND in the folder tmp_path/bad-KIND."""
    return misbehaving_bot(tmp_path / f"bad-{kind}", kind, *args, stdio=stdio)

STRICT = Launcher.for_level("strict")
NONE = Launcher.for_level("none")


def play(tmp_path: Path, manifest: Manifest, launcher: Launcher = STRICT,
         games: int = 1) -> tuple[list[GameResult], str]:
    """Games against random (the bad bot in seat 0); returns the results and the bad bot's
    stderr log, after checking that nothing of either bot is left."""
    opponent = Manifest.load(sample_bots_dir() / "random")
    with BotPool([manifest, opponent], tmp_path / "logs", launcher=launcher) as pool:
        results = [pool.play(0, 1, seed=game, time_control=TC, game_id=f"g{game}")
                   for game in range(games)]
    assert_nothing_left(pool)
    return results, pool.handles[0].stderr_log.read_text(errors="replace")


def assert_nothing_left(pool: BotPool) -> None:
    markers = [m for handle in pool.handles for m in handle.markers]
    assert markers and live_bot_processes(markers) == [], "a bot process survived"
    if isinstance(pool.launcher, BubblewrapLauncher) and pool.launcher.use_cgroups:
        groups = [g for handle in pool.handles for g in handle.cgroups]
        assert groups and not any(g.exists() for g in groups), "a bot cgroup was not emptied"


@pytest.fixture(scope="module", autouse=True)
def strict_available() -> None:
    check_strict_available()  # a clear error (and failure) when the host cannot sandbox


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP port on 127.0.0.1 that accepts connections."""
    server = socket.create_server(("127.0.0.1", 0))
    yield server.getsockname()[1]
    server.close()


def lines(log: str, prefix: str) -> list[str]:
    return [line for line in log.splitlines() if line.startswith(prefix)]


# ---------------------------------------------------------------- what strict provides
def test_start_up_says_which_limits_are_in_force() -> None:
    said = "\n".join(check_strict_available())
    assert "no network" in said and "a uid of its own (60000 + n)" in said
    for what in ("memory", "processes", "CPU"):
        assert what in said


def test_command_exposes_only_the_runtime_and_the_bot(tmp_path: Path) -> None:
    sandbox = Sandbox(uid=UID_BASE + 3)
    argv = sandbox.command(["python", "bot.py"], folder=tmp_path / "bot")
    binds = {argv[i + 1]: argv[i] for i, word in enumerate(argv) if word in ("--ro-bind", "--bind")}
    assert binds[str(tmp_path / "bot")] == "--ro-bind"
    assert binds[str(REPO / "arena")] == "--ro-bind"
    assert str(REPO) not in binds and not any(p.startswith(str(REPO / "results")) for p in binds)
    assert not any(p == "/" or p == str(Path.home()) or p.startswith("/home") for p in binds)
    assert {"--unshare-net", "--unshare-pid", "--die-with-parent", "--new-session"} <= set(argv)
    assert f"--reuid={UID_BASE + 3}" in argv and argv[-2:] == ["python", "bot.py"]


def test_sample_bots_play_normally_under_strict(tmp_path: Path) -> None:
    names = ["random", "greedy", "cbot"]
    manifests = [Manifest.load(sample_bots_dir() / name) for name in names]
    with BotPool(manifests, tmp_path / "logs", launcher=STRICT) as pool:
        results = [pool.play(a, b, seed=a + b, time_control=TC) for a, b in ((0, 1), (1, 2), (2, 0))]
    assert all(r.termination is Termination.NORMAL for r in results), [r.detail for r in results]
    assert_nothing_left(pool)


def test_every_bot_runs_under_a_uid_of_its_own(tmp_path: Path) -> None:
    bots = [sandboxed_bot(tmp_path / name, "snoop") for name in ("a", "b", "c")]
    with BotPool(bots[:2], tmp_path / "one", launcher=STRICT) as one, \
            BotPool(bots[2:], tmp_path / "two", launcher=STRICT) as two:
        handles = one.handles + two.handles
        for handle in handles:
            handle.ensure_started()
            deadline = time.monotonic() + 5
            while "snoop: uid" not in handle.stderr_log.read_text() and time.monotonic() < deadline:
                time.sleep(0.01)
            assert isinstance(handle.launcher, BubblewrapLauncher)
            assert f"snoop: uid {handle.launcher.uid}\n" in handle.stderr_log.read_text()
        uids = {handle.launcher.uid for handle in handles if isinstance(handle.launcher, BubblewrapLauncher)}
        assert len(uids) == 3 and min(uids) >= UID_BASE


# ---------------------------------------------------------------- attempts that must fail
def test_no_network(tmp_path: Path, listener: int) -> None:
    (result,), log = play(tmp_path, sandboxed_bot(tmp_path, "net", str(listener)))
    assert result.termination is Termination.NORMAL, result.detail
    attempts = lines(log, "net ")
    assert len(attempts) == 2 and all("blocked" in a for a in attempts), log


def test_no_reading_other_bots_the_results_or_home(tmp_path: Path) -> None:
    # Another entrant's folder (the sample bots are package data, bound read-only for the SDK).
    other = tmp_path / "other-bot" / "bot.py"
    other.parent.mkdir()
    other.write_text("print('my secret strategy')\n")
    results = tmp_path / "results"
    results.mkdir()
    (results / "tournament.db").write_bytes(b"SQLite format 3\0secret")
    # (/etc/passwd is readable: a generated one naming no host account, see test_languages.py)
    targets = [str(other), str(results / "tournament.db"), str(REPO / "results"), "/etc/shadow",
               str(REPO / "README.md"), str(Path.home() / ".profile")]
    home = str(Path.home())
    (result,), log = play(tmp_path, sandboxed_bot(tmp_path, "snoop", *targets, home))
    assert result.termination is Termination.NORMAL, result.detail
    attempts = lines(log, "read ")
    assert len(attempts) == len(targets) + 1 and all("blocked" in a for a in attempts[:-1]), log
    # The home folder shows at most the folders leading to the Python runtime (here the
    # interpreter may live in ~/.pyenv), never its files.
    runtime = {p.relative_to(home).parts[0] for p in runtime_paths() if p.is_relative_to(home)}
    assert "blocked" in attempts[-1] or set(attempts[-1].split("entries")[1].split()) <= runtime


def test_no_writing_outside_its_temporary_folder(tmp_path: Path) -> None:
    targets = [str(tmp_path / "bad-write" / "x.txt"), str(tmp_path / "outside.txt"), "/x.txt",
               "/usr/x.txt", "/etc/x.txt", "/dev/x.txt", str(REPO / "results" / "x.txt")]
    (result,), log = play(tmp_path, sandboxed_bot(tmp_path, "write", *targets))
    assert result.termination is Termination.NORMAL, result.detail
    attempts = lines(log, "write ")
    assert len(attempts) == len(targets) + 1
    assert all("blocked" in a for a in attempts[:-1]), log
    assert attempts[-1].startswith("write /tmp/mine.txt: DONE"), log  # its own tmp works
    assert not any(Path(t).exists() for t in targets)


def test_the_same_attempts_succeed_without_a_sandbox(tmp_path: Path, listener: int) -> None:
    """The probes are real: with --sandbox none they connect, read and write."""
    _, log = play(tmp_path / "net", sandboxed_bot(tmp_path / "net", "net", str(listener)), NONE)
    assert "DONE" in lines(log, f"net 127.0.0.1:{listener}")[0]
    secret = tmp_path / "secret.db"
    secret.write_text("secret")
    _, log = play(tmp_path / "snoop", sandboxed_bot(tmp_path / "snoop", "snoop", str(secret)), NONE)
    assert "DONE 6 bytes" in lines(log, "read ")[0]
    outside = tmp_path / "outside.txt"
    _, log = play(tmp_path / "w", sandboxed_bot(tmp_path / "w", "write", str(outside)), NONE)
    assert outside.read_text() == "pwned\n"


# ---------------------------------------------------------------- resources
def test_memory_balloon_is_killed_and_loses(tmp_path: Path) -> None:
    (result,), log = play(tmp_path, sandboxed_bot(tmp_path, "balloon"))
    assert result.termination is Termination.CRASH and result.loser == 0, result.detail
    assert "out of memory" in result.detail and "1024 MiB" in result.detail
    # why it died, not when (newcomer trial: a JVM killed so was told "it died before its first move")
    assert "hint: it used more memory than a bot may have: use less" in result.detail, result.detail
    assert "died before its first move" not in result.detail


def test_fork_bomb_stops_at_the_process_limit(tmp_path: Path) -> None:
    (result,), log = play(tmp_path, sandboxed_bot(tmp_path, "fork_bomb"))
    assert result.termination is Termination.NORMAL, result.detail  # it plays on; the children die
    (line,) = lines(log, "fork_bomb: blocked")
    children = int(lines(log, "fork_bomb: ")[-1].split()[1])
    assert "Resource temporarily unavailable" in line and 100 < children < SandboxLimits().processes


def test_cpu_is_capped_at_one_core(tmp_path: Path) -> None:
    _, log = play(tmp_path, sandboxed_bot(tmp_path, "cpu_hog"))
    (line,) = lines(log, "cpu_hog:")
    cores = float(line.split("=")[1].split()[0])
    assert cores < 1.3, line


def test_disk_filler_hits_the_tmpfs_cap(tmp_path: Path) -> None:
    (result,), log = play(tmp_path, sandboxed_bot(tmp_path, "disk_fill"))
    assert result.termination is Termination.NORMAL, result.detail
    cap = SandboxLimits().tmp_bytes >> 20
    for folder in ("/tmp", "/dev/shm"):
        assert "No space left on device" in lines(log, f"disk_fill {folder}: blocked")[0], log
        written = int(lines(log, f"disk_fill {folder}: wrote")[0].split()[-2])
        assert cap - 8 <= written <= cap


def test_stderr_spam_is_capped(tmp_path: Path) -> None:
    (result,), log = play(tmp_path, sandboxed_bot(tmp_path, "stderr_spam"))
    assert result.termination is Termination.NORMAL, result.detail
    assert len(log.encode()) < (1 << 20) + 200 and "[arena: stderr truncated after" in log


# ---------------------------------------------------------------- process control
def test_bot_that_closes_its_output_and_runs_on_loses_and_is_killed(tmp_path: Path) -> None:
    (result,), _ = play(tmp_path, sandboxed_bot(tmp_path, "close_output", stdio=True))
    assert result.termination is Termination.CRASH and result.loser == 0
    assert "closed its output" in result.detail


@pytest.mark.parametrize("kind", ["setsid_daemon", "ignore_term"])
def test_daemons_and_sigterm_ignorers_are_killed(tmp_path: Path, kind: str) -> None:
    results, _ = play(tmp_path, sandboxed_bot(tmp_path, kind), games=2)
    assert all(r.termination is Termination.NORMAL for r in results)
    # play() asserts no marked process is left and the bot's cgroups could be removed


def test_without_cgroups_the_fallback_limits_are_stated_and_hold(tmp_path: Path) -> None:
    said = "\n".join(check_strict_available(use_cgroups=False))
    assert "memory: NO cgroup limit" in said and "RLIMIT_NPROC" in said
    launcher = Launcher.for_level("strict", sandbox_limits=SandboxLimits(processes=64), use_cgroups=False)
    (result,), log = play(tmp_path, sandboxed_bot(tmp_path, "fork_bomb"), launcher)
    assert result.termination is Termination.NORMAL, result.detail
    children = int(lines(log, "fork_bomb: ")[-1].split()[1])
    assert 0 < children < 64


# ---------------------------------------------------------------- when strict cannot be had
def test_a_missing_bwrap_is_a_clear_error_never_a_downgrade(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path)}  # no bwrap on it
    proc = subprocess.run([*ARENA_ARGV, "run-tournament", "--games", "2", "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1
    assert "bwrap is not installed" in proc.stderr and "--sandbox none" in proc.stderr
    assert not (tmp_path / "out" / "tournament.db").exists()


def test_strict_needs_root(monkeypatch: pytest.MonkeyPatch) -> None:
    from arena.launch import bubblewrap as sandbox_module

    monkeypatch.setattr(sandbox_module.os, "geteuid", lambda: 1000)
    with pytest.raises(SandboxError, match="needs root"):
        sandbox_module._check(SandboxLimits(memory_bytes=12345 << 20), True)


def test_an_unreadable_bot_folder_is_a_start_failure_that_says_why(tmp_path: Path) -> None:
    bot = sandboxed_bot(tmp_path, "snoop")
    bot.folder.chmod(0o700)
    with BotPool([bot, Manifest.load(sample_bots_dir() / "random")], tmp_path / "logs",
                 launcher=STRICT) as pool:
        result = pool.play(0, 1, seed=0, time_control=TC)
    assert result.termination is Termination.START_FAILURE and "chmod -R o+rX" in result.detail
    with pytest.raises(BotStartError, match="mode 700"):
        Sandbox().wrap(["true"], folder=bot.folder)


@pytest.mark.parametrize(("pattern", "handler"), [
    ("core\n", ""), ("/var/crash/core.%p", ""), ("|/usr/lib/systemd/systemd-coredump %P %u %g",
     "/usr/lib/systemd/systemd-coredump"), ("|/usr/share/apport/apport -p%p", "/usr/share/apport/apport"),
    ("|", "")])
def test_a_piped_core_pattern_is_named_for_the_start_up_warning(pattern: str, handler: str) -> None:
    from arena.launch.bubblewrap import pipe_handler

    assert pipe_handler(pattern) == handler
