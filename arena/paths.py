"""Where the harness finds the files that ship with it."""

from __future__ import annotations

from pathlib import Path


def sample_bots_dir() -> Path:
    """The sample bots that ship with the harness (the repository's sample_bots/)."""
    return Path(__file__).resolve().parents[1] / "sample_bots"
