"""The referee end to end: real bot processes, real sockets, one misbehaving bot per failure kind.

Each misbehaviour must end the game as a loss for the offender with the right recorded
reason, the opponent must win, and no process of either bot may survive the match.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from arena.bots.manifest import Manifest
from arena.bots.pool import BotPool, sample_bots_dir
from arena.bots.session import MAX_SILENT_STARTS
from arena.engine import Termination
from arena.launch.process import ResourceLimits
from arena.records import replay
from arena.referee import TimeControl
from tests.helpers import live_bot_processes, misbehaving_bot, write_bot

FAST = TimeControl(per_move_ms=300, bank_ms=500, first_move_ms=2000)


def misbehaving(tmp_path: Path, kind: str, stdio: bool = False) -> Manifest:
    return misbehaving_bot(tmp_path / f"{kind}{'-stdio' if stdio else ''}", kind, stdio=stdio)


def play_against_random(tmp_path: Path, manifest: Manifest, games: int = 1,
                        tc: TimeControl = FAST) -> tuple[list, BotPool]:
    opponent = Manifest.load(sample_bots_dir() / "random")
    results = []
    with BotPool([manifest, opponent], tmp_path / "logs") as pool:
        for game in range(games):
            results.append(pool.play(0, 1, seed=game, time_control=tc, game_id=f"g{game}"))
    markers = [m for handle in pool.handles for m in handle.markers]
    assert markers and live_bot_processes(markers) == [], "a bot process survived the match"
    return results, pool


CASES = [
    ("hang", False, Termination.TIMEOUT, "did not answer"),
    ("sleep_past_limit", False, Termination.TIMEOUT, "did not answer"),
    ("crash", False, Termination.CRASH, "exit code 3"),
    ("exit_at_start", False, Termination.CRASH, "exit code 7"),
    ("garbage", False, Termination.MALFORMED, ""),
    ("truncated", False, Termination.MALFORMED, ""),
    ("schema", False, Termination.SCHEMA, ""),
    ("illegal", False, Termination.ILLEGAL_MOVE, "not one of the next choices"),
    ("huge", False, Termination.OVERSIZE, ""),
    ("flood", False, Termination.PROTOCOL, ""),
    ("bad_hello", False, Termination.SCHEMA, ""),
    ("wrong_protocol", False, Termination.START_FAILURE, "speaks protocol 2"),
    ("move_first", False, Termination.START_FAILURE, "first message must be hello"),
    ("crash", True, Termination.CRASH, "exit code 3"),
    ("garbage", True, Termination.MALFORMED, ""),
    ("huge", True, Termination.OVERSIZE, ""),
    ("illegal", True, Termination.ILLEGAL_MOVE, "not one of the next choices"),
]


@pytest.mark.parametrize(("kind", "stdio", "termination", "detail"), CASES,
                         ids=[f"{c[0]}{'-stdio' if c[1] else ''}" for c in CASES])
def test_misbehaving_bot_loses_with_recorded_reason(tmp_path: Path, kind: str, stdio: bool,
                                                    termination: Termination, detail: str) -> None:
    (result,), _ = play_against_random(tmp_path, misbehaving(tmp_path, kind, stdio))
    assert result.termination is termination, result.detail
    assert result.loser == 0 and result.winner == 1
    assert detail in result.detail
    recorded = result.record["result"]
    assert recorded["reason"] == termination.value and recorded["winner"] == 1
    assert recorded["loser"] == 0 and recorded["detail"] == result.detail
    replay(result.record)  # every move that was played is legal and the record is well formed


def test_timeout_reports_the_limit_the_bank_and_the_time(tmp_path: Path) -> None:
    (result,), _ = play_against_random(tmp_path, misbehaving(tmp_path, "hang"))
    # the third move of the bot: per-move 300 ms + the untouched 500 ms bank
    assert "its limit was 300 ms plus 500 ms left in its bank" in result.detail, result.detail
    assert re.search(r"gave up after (8\d\d|9\d\d|1\d\d\d) ms", result.detail), result.detail


def test_bank_absorbs_one_slow_move_and_the_game_goes_on(tmp_path: Path) -> None:
    (result,), _ = play_against_random(tmp_path, misbehaving(tmp_path, "uses_bank"))
    assert result.termination is Termination.NORMAL, result.detail
    slow = [m for m in result.record["moves"] if m["player"] == 0 and m["time_ms"] > FAST.per_move_ms]
    assert len(slow) == 1 and slow[0]["time_ms"] < FAST.per_move_ms + FAST.bank_ms


def test_late_replies_are_dropped_not_taken_as_answers(tmp_path: Path) -> None:
    (result,), _ = play_against_random(tmp_path, misbehaving(tmp_path, "late_reply"))
    assert result.termination is Termination.NORMAL, result.detail
    assert result.stale_replies > 10
    replay(result.record)


@pytest.mark.parametrize("kind", ["forks", "setsid_daemon"])
def test_children_and_setsid_daemons_are_killed_after_the_match(tmp_path: Path, kind: str) -> None:
    (result,), _ = play_against_random(tmp_path, misbehaving(tmp_path, kind))
    assert result.termination is Termination.NORMAL, result.detail
    # play_against_random asserts no process carrying a bot marker is left


def test_crashed_bot_is_restarted_for_its_next_game(tmp_path: Path) -> None:
    results, pool = play_against_random(tmp_path, misbehaving(tmp_path, "crash"), games=2)
    assert [r.termination for r in results] == [Termination.CRASH, Termination.CRASH]
    assert pool.handles[0].starts == 2 and pool.handles[1].starts == 1


def test_a_long_lived_bot_is_restarted_before_its_cpu_limit_never_killed_mid_game(tmp_path: Path) -> None:
    # RLIMIT_CPU counts a process's whole life: 0.9 s of CPU per game against a 4 s limit
    # would kill the bot in its fourth game if it were never restarted.
    hungry = misbehaving_bot(tmp_path / "hungry", "cpu_per_game", "0.9", name="hungry")
    tc = TimeControl(per_move_ms=300, bank_ms=500, first_move_ms=5000)
    opponent = Manifest.load(sample_bots_dir() / "random")
    with BotPool([hungry, opponent], tmp_path / "logs", limits=ResourceLimits(cpu_seconds=4)) as pool:
        results = [pool.play(0, 1, seed=game, time_control=tc) for game in range(5)]
    assert [r.termination for r in results] == [Termination.NORMAL] * 5, [r.detail for r in results]
    handle = pool.handles[0]
    assert handle.recycled >= 1 and handle.starts == 1 + handle.recycled
    assert live_bot_processes(handle.markers) == []


def test_slow_start_is_a_start_failure(tmp_path: Path) -> None:
    manifest = misbehaving(tmp_path, "slow_start")
    opponent = Manifest.load(sample_bots_dir() / "random")
    with BotPool([manifest, opponent], tmp_path / "logs") as pool:
        pool.handles[0]._start_timeout_s = 0.5
        result = pool.play(0, 1, seed=0, time_control=FAST)
    assert result.termination is Termination.START_FAILURE and "no hello" in result.detail
    assert live_bot_processes(pool.handles[0].markers) == []


def test_a_bot_that_never_says_hello_is_not_started_again_and_again(tmp_path: Path) -> None:
    manifest = misbehaving(tmp_path, "slow_start")
    opponent = Manifest.load(sample_bots_dir() / "random")
    with BotPool([manifest, opponent], tmp_path / "logs") as pool:
        pool.handles[0]._start_timeout_s = 0.3
        results = [pool.play(0, 1, seed=game, time_control=FAST) for game in range(5)]
    assert all(r.termination is Termination.START_FAILURE for r in results)
    assert pool.handles[0].starts == MAX_SILENT_STARTS  # the last games cost nothing
    assert "starts in a row" in results[-1].detail and results[-1].duration_s < 1.0


def test_failing_build_loses_every_game_and_the_match_goes_on(tmp_path: Path) -> None:
    broken = write_bot(tmp_path / "broken", "broken", ["./bot"], protocol="stdio",
                       build="echo 'bot.c:1: error: nope' >&2; exit 2")
    opponent = Manifest.load(sample_bots_dir() / "random")
    with BotPool([broken, opponent], tmp_path / "logs") as pool:
        results = [pool.play(s, 1 - s, seed=0, time_control=FAST) for s in (0, 1)]
    assert all(r.termination is Termination.START_FAILURE for r in results)
    assert "exit code 2" in results[0].detail and "nope" in results[0].detail
    assert [r.winner for r in results] == [1, 0]


@pytest.mark.parametrize("stdio", [False, True], ids=["zmq", "stdio"])
def test_every_message_the_referee_sends_matches_its_schema(tmp_path: Path, stdio: bool) -> None:
    from arena.protocol.codec import decode, encode

    log = tmp_path / "received.jsonl"
    manifest = misbehaving_bot(tmp_path / "recorder", "recorder", str(log), name="recorder", stdio=stdio)
    opponent = Manifest.load(sample_bots_dir() / "random")
    with BotPool([manifest, opponent], tmp_path / "logs") as pool:
        results = [pool.play(0, 1, seed=1), pool.play(1, 0, seed=2)]
    assert all(r.termination is Termination.NORMAL for r in results)
    lines = log.read_text().splitlines()
    kinds = [decode(line, sender="referee")["type"] for line in lines]  # schema-checked
    assert kinds[0] == "welcome" and kinds.count("new_game") == 2 and kinds.count("game_over") == 2
    requests = [decode(line, sender="referee") for line in lines if '"move_request"' in line]
    assert len(requests) == sum(m["player"] == 0 for m in results[0].record["moves"]) + sum(
        m["player"] == 1 for m in results[1].record["moves"])
    assert all(r["legal_moves"] for r in requests)  # asked for in its hello
    assert all(line.isascii() for line in lines)
    # the fast encoder the referee uses says exactly what the strict one says
    assert all(encode(decode(line, sender="referee")) == line for line in lines)
