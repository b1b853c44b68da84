"""A ZeroMQ bot's name may have 64 characters, and the harness's TMPDIR any length: its
bridge's socket path (at most 107 bytes) must still fit, under --sandbox none too."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from arena.bots.pool import sample_bots_dir
from tests.helpers import ARENA_ARGV


def test_a_zmq_bot_with_a_64_character_name_plays_whatever_the_tmpdir(tmp_path: Path) -> None:
    bot = tmp_path / "long"
    shutil.copytree(sample_bots_dir() / "random", bot)
    manifest = bot / "bot.toml"
    manifest.write_text(manifest.read_text().replace('name = "random"', f'name = "{"r" * 64}"'))
    tmpdir = tmp_path / ("t" * 60)
    tmpdir.mkdir()
    done = subprocess.run([*ARENA_ARGV, "play", str(bot), str(sample_bots_dir() / "random"), "--games", "2",
                           "--sandbox", "none", "--out", str(tmp_path / "games.jsonl")],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TMPDIR": str(tmpdir)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "crash" not in done.stdout and "normal" in done.stdout, done.stdout


def _bridge_leftovers() -> set[str]:
    """What bridges left in /tmp: sockets (the old fallback) and socket folders of dead bridges."""
    from arena.launch.scratch import _alive

    found = {p.name for p in Path("/tmp").glob("arena-*.sock")}
    for folder in Path("/tmp").glob("arena-p*-bridge-*"):
        if not _alive(int(folder.name.split("-")[1][1:])):
            found.add(folder.name)
    return found


def test_a_killed_bridge_s_socket_in_tmp_is_swept(tmp_path: Path) -> None:
    """With a TMPDIR too long for a socket path, a bridge put its socket in /tmp itself, and
    one killed before it could remove it (a bot may kill its parent, the bridge) left it there
    for good (a red team found 115). The socket now goes in a folder named for its bridge,
    which the next run removes once that bridge is gone."""
    from tests.helpers import misbehaving_bot

    before = _bridge_leftovers()
    killer = misbehaving_bot(tmp_path / "killer", "bridge_stop", "SIGKILL").folder
    tmpdir = tmp_path / ("t" * 100)
    tmpdir.mkdir()
    done = subprocess.run([*ARENA_ARGV, "play", str(killer), str(sample_bots_dir() / "random"),
                           "--games", "3", "--sandbox", "none", "--out", str(tmp_path / "games.jsonl"),
                           "--logs", str(tmp_path / "logs")],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TMPDIR": str(tmpdir)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("lost by crash") == 3, done.stdout  # its bridge killed in every game
    # the next run sweeps them, as it sweeps the bots' own temporary folders
    done = subprocess.run([*ARENA_ARGV, "play", "random", "random", "--games", "1", "--sandbox", "none",
                           "--logs", str(tmp_path / "logs")], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TMPDIR": str(tmpdir)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert _bridge_leftovers() - before == set()
