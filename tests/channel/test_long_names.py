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
