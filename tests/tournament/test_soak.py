"""A short soak (`make soak` runs the long one): sample and misbehaving bots under strict."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.soak import SHORT, SHORT_SAMPLES, soak


@pytest.mark.slow
def test_short_soak_accounts_for_every_game_and_leaves_nothing(tmp_path: Path) -> None:
    report = soak(50, kinds=SHORT, samples=SHORT_SAMPLES, concurrency=2, out=tmp_path / "soak",
                  quiet=True, worker_kills=1, hidden_games=12)
    summary = "\n".join(report.lines())
    assert report.ok, summary
    assert report.hidden and report.hidden[0].startswith("12 games;"), summary  # the Stack'n Stuff phase ran
    assert report.stored == report.scheduled >= 50
    # the fork bomb, the network prober, the SIGTERM ignorer, the keyring user, the
    # spinner and the snooping build play on (a slow fork may still cost one its move on a
    # busy machine); the balloon loses every game it plays (killed out of memory, or out of
    # time first when the machine is slow to give it memory); the crasher, the connection
    # flooder and the hostile error lose every game their opponent did not lose first
    losers = {"bad-balloon", "bad-crash", "bad-connection_flood", "bad-hostile_error"}
    assert losers <= set(report.by_bot), summary
    assert all(set(report.by_bot[bot]) == {"timeout"} for bot in set(report.by_bot) - losers), summary
    games_each = 2 * (len(SHORT) + len(SHORT_SAMPLES) - 1)
    assert sum(report.by_bot["bad-balloon"].values()) == games_each, summary
    assert set(report.by_bot["bad-balloon"]) <= {"crash", "timeout"}, summary
    assert set(report.by_bot["bad-connection_flood"]) == {"protocol"}, summary
    assert set(report.by_bot["bad-crash"]) == set(report.by_bot["bad-hostile_error"]) == {"crash"}, summary
