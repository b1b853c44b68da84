"""Process trees through /proc (arena.launch.proctree), with real processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.launch import proctree
from arena.launch.process import BotProcess
from arena.launch.proctree import MARKER_VAR, ProcessTree, boot_ticks, pipe_holders, read_stat


def py(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.005)
    raise AssertionError(f"timed out after {timeout} s waiting for {predicate}")


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Callable[..., BotProcess]]:
    started: list[BotProcess] = []

    def start(argv: list[str], **kwargs: Any) -> BotProcess:
        bot = BotProcess.start(argv, cwd=tmp_path / "bot", **kwargs)
        started.append(bot)
        return bot

    yield start
    for bot in started:
        bot.kill_tree()


class CountingScans:
    """Counts ProcessTree.scan calls (the real scan still runs)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = ProcessTree.scan

        def scan(tree: ProcessTree) -> dict[int, proctree.Stat]:
            self.calls += 1
            return real(tree)

        monkeypatch.setattr(ProcessTree, "scan", scan)


def test_cpu_over_does_not_scan_while_the_bot_cannot_have_used_that_much(
        spawn: Callable[..., BotProcess], monkeypatch: pytest.MonkeyPatch) -> None:
    bot = spawn(py("while True: pass"))
    scans = CountingScans(monkeypatch)
    for _ in range(1000):  # what the per-game check costs a reused bot: no /proc reads
        assert not bot.cpu_over(1800.0)
    assert scans.calls == 0


def test_cpu_over_sees_a_spinning_bot_go_over(spawn: Callable[..., BotProcess],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    bot = spawn(py("while True: pass"))
    scans = CountingScans(monkeypatch)
    started = time.monotonic()
    wait_for(lambda: bot.cpu_over(0.3))
    assert bot.cpu_seconds() >= 0.3
    # It can only have used 0.3 s once that much wall time has passed on every core.
    assert time.monotonic() - started >= 0.3 / (os.cpu_count() or 1) - 0.05
    assert scans.calls >= 1


def test_cpu_over_counts_a_busy_child_too(spawn: Callable[..., BotProcess]) -> None:
    """RLIMIT_CPU counts each process: the busiest one of the tree is what is measured."""
    bot = spawn(py("""
        import os, time
        if os.fork() == 0:
            while True:
                pass
        time.sleep(100)
    """))
    wait_for(lambda: bot.cpu_over(0.3))
    assert bot.cpu_seconds() >= 0.3
    assert len(bot.tree_pids()) == 2


def test_cpu_over_after_a_scan_waits_for_the_bound_again(spawn: Callable[..., BotProcess],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    bot = spawn(["/bin/sleep", "100"])
    wait_for(lambda: bot.tree_pids() == {bot.pid})
    assert bot.cpu_seconds() < 0.1  # a scan: the bound restarts from this figure, now
    scans = CountingScans(monkeypatch)
    assert not bot.cpu_over(10.0)
    assert scans.calls == 0
    assert not bot.cpu_over(0.0001 + bot.tree._cpu_seen / os.sysconf("SC_CLK_TCK"))  # must look
    assert scans.calls == 1


def test_a_tree_is_found_by_marker_outside_the_session(tmp_path: Path) -> None:
    """A process started outside the session (no common parent) carrying the marker."""
    marker = uuid.uuid4().hex
    born = boot_ticks() - 1
    env = {**os.environ, MARKER_VAR: marker}
    stranger = subprocess.Popen(["/bin/sleep", "100"], env=env, start_new_session=True)
    try:
        tree = ProcessTree(os.getpid() + 10**7, marker, born)  # a root that does not exist
        tree.root_pinned = False
        assert wait_for(lambda: tree.pids() == {stranger.pid})
        tree.kill(grace_s=0.05)
        assert stranger.wait(5) != 0
        assert tree.pids() == set()
    finally:
        stranger.kill()
        stranger.wait()


def test_older_processes_are_never_members(tmp_path: Path) -> None:
    """A scan skips processes started before the tree: here one with the marker."""
    marker = uuid.uuid4().hex
    old = subprocess.Popen(["/bin/sleep", "100"], env={**os.environ, MARKER_VAR: marker})
    try:
        stat = wait_for(lambda: read_stat(str(old.pid)))
        tree = ProcessTree(os.getpid() + 10**7, marker, stat.start + 1)
        tree.root_pinned = False
        assert tree.pids() == set()
    finally:
        old.kill()
        old.wait()


def test_pipe_holders_names_the_processes_holding_a_pipe(tmp_path: Path) -> None:
    read_fd, write_fd = os.pipe()
    inode = os.fstat(read_fd).st_ino
    holder = subprocess.Popen(["/bin/sleep", "100"], pass_fds=(write_fd,))
    other = subprocess.Popen(["/bin/sleep", "100"])
    try:
        assert pipe_holders(inode, {holder.pid, other.pid}) == {holder.pid}
        assert pipe_holders(inode, {os.getpid()}) == {os.getpid()}
        os.close(write_fd)
        os.close(read_fd)
        assert pipe_holders(inode, {os.getpid()}) == set()
    finally:
        for proc in (holder, other):
            proc.kill()
            proc.wait()


def test_read_stat_survives_a_command_name_with_parentheses(tmp_path: Path) -> None:
    odd = tmp_path / "a) b (c"
    odd.symlink_to("/bin/sleep")
    proc = subprocess.Popen([str(odd), "100"])
    try:
        stat = wait_for(lambda: read_stat(str(proc.pid)))
        assert stat.ppid == os.getpid() and stat.is_alive()
    finally:
        proc.kill()
        proc.wait()
    assert read_stat(str(proc.pid)) is None
