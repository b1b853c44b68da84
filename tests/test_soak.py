"""A short soak (`make soak` runs the long one): sample and misbehaving bots under strict."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.soak import SHORT, SHORT_SAMPLES, soak


@pytest.mark.slow
def test_short_soak_accounts_for_every_game_and_leaves_nothing(tmp_path: Path) -> None:
    report = soak(50, kinds=SHORT, samples=SHORT_SAMPLES, concurrency=2, out=tmp_path / "soak",
                  quiet=True)
    summary = "\n".join(report.lines())
    assert report.ok, summary
    assert report.stored == report.scheduled >= 50
    # the fork bomb, the network prober and the SIGTERM ignorer play on; the balloon is
    # killed in every game it plays, the crasher crashes
    assert set(report.by_bot) == {"bad-balloon", "bad-crash"}, summary
    assert report.by_bot["bad-balloon"] == {"crash": 14} and set(report.by_bot["bad-crash"]) == {"crash"}
