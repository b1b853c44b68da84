"""The referee: one misbehaving bot per failure kind.

Each misbehaviour must end the game as a loss for the offender with the right recorded
reason, and the opponent must win. Most cases run against scripted bots in-process
(tests/scripted.py: the real referee, session, codec and inbox; a fake clock), in
milliseconds; the real-process tests below them prove the end-to-end path (a crash, a
hang, a flood, garbage on stdout, an oversize message through each transport) and that no
process of either bot survives the match.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.bots.manifest import Manifest
from arena.bots.pool import BotPool, sample_bots_dir
from arena.bots.session import MAX_SILENT_STARTS, BotHandle
from arena.engine import GameState, Termination
from arena.launch.process import ResourceLimits
from arena.records import replay
from arena.referee import GameResult, TimeControl, play_game
from tests.helpers import live_bot_processes, misbehaving_bot, write_bot
from tests.scripted import TRIGGER_MOVE, ScriptedBot, scripted_pair

FAST = TimeControl(per_move_ms=300, bank_ms=500, first_move_ms=2000)


# ------------------------------------------------------------------ scripted bots, in-process
def play_scripted(players: tuple[BotHandle, BotHandle], *, games: int = 1,
                  tc: TimeControl = FAST) -> list[GameResult]:
    clock = players[0].launcher.clock
    return [play_game(players, seed=game, time_control=tc, game_id=f"g{game}", clock=clock)
            for game in range(games)]


def assert_lost_by_seat_0(result: GameResult, termination: Termination, detail: str,
                          logs: Path | None = None) -> None:
    """``detail`` is in the result's, where the logs' folder ``logs`` is left out of the paths."""
    assert result.termination is termination, result.detail
    assert result.loser == 0 and result.winner == 1
    assert detail in result.detail.replace(f"{logs}/", ""), result.detail
    recorded = result.record["result"]
    assert recorded["reason"] == termination.value and recorded["winner"] == 1
    assert recorded["loser"] == 0 and recorded["detail"] == result.detail
    replay(result.record)  # every move that was played is legal and the record is well formed


SCRIPTED_CASES = [
    ("hang", Termination.TIMEOUT, "did not answer: its limit was 300 ms plus 500 ms left in its bank, "
                                  "and the referee gave up after 800 ms"),
    ("sleep_past_limit", Termination.TIMEOUT, "did not answer"),
    ("crash", Termination.CRASH, "exit code 3\nthe last 2 lines of its log bad-crash.stderr.log:\n"
                                 "  Traceback (most recent call last):\n  RuntimeError: boom"),
    ("last_words", Termination.CRASH, "exit code 3"),
    ("exit_at_start", Termination.CRASH, "exit code 7\nthe last 1 lines of its log"),
    ("garbage", Termination.MALFORMED, "not UTF-8"),
    ("not_json", Termination.MALFORMED, 'not JSON (Expecting value; line 1 column 1): "this is not'),
    ("truncated", Termination.MALFORMED, "not JSON (Unterminated string"),
    ("schema", Termination.SCHEMA, "move: at $.move.action: expected one of"),
    ("illegal", Termination.ILLEGAL_MOVE, "not one of the next choices"),
    ("huge", Termination.OVERSIZE, "over the 1048576-byte limit"),
    ("flood", Termination.PROTOCOL, "a flood (more than 64 unread messages)"),
    ("stale_flood", Termination.PROTOCOL, "flooded the referee with more than 100 stale replies"),
    ("stale_padded", Termination.PROTOCOL, "or 1048576 bytes of them during request"),
    ("future_seq", Termination.PROTOCOL, "which was never sent"),
    ("hello_again", Termination.PROTOCOL, "sent 'hello' while a move was expected"),
    ("gives_up", Termination.CRASH, "gave up: I resign: out of ideas"),
    ("bad_hello", Termination.SCHEMA, 'hello: at $: missing fields "version", "protocol"'),
    ("wrong_protocol", Termination.START_FAILURE, "speaks protocol 2; this referee speaks 1"),
    ("move_first", Termination.START_FAILURE, "the first message must be hello, got move"),
]


@pytest.mark.parametrize(("kind", "termination", "detail"), SCRIPTED_CASES,
                         ids=[c[0] for c in SCRIPTED_CASES])
def test_scripted_misbehaviour_loses_with_recorded_reason(kind: str, termination: Termination,
                                                          detail: str) -> None:
    players = scripted_pair(kind)
    (result,) = play_scripted(players)
    offender, opponent = players
    assert_lost_by_seat_0(result, termination, detail, logs=offender.stderr_log.parent)
    # the offender is killed, restarted next game
    assert offender.launcher.kills == 1 and opponent.launcher.kills == 0
    over = [m for m in opponent.launcher.bot.received if m["type"] == "game_over"]
    if opponent.starts:  # (not started when its opponent failed to start first)
        assert len(over) == 1 and over[0]["result"]["loser"] == 0
        assert over[0]["result"]["detail"] == result.detail.split("\n", 1)[0]  # not the log tail
    told = [m["message"] for m in offender.launcher.bot.received if m["type"] == "error"]
    if termination in (Termination.CRASH, Termination.START_FAILURE) and kind != "wrong_protocol":
        assert told == []
    else:  # told why, in one line (PROTOCOL.md "How a game ends"; a version it does not speak: section 11)
        assert len(told) == 1 and "\n" not in told[0]


def test_scripted_timeouts_take_no_time() -> None:
    # The fake clock moves to the deadline at once: a timeout costs the test nothing.
    import time

    started = time.monotonic()
    (result,) = play_scripted(scripted_pair("hang"))
    assert result.termination is Termination.TIMEOUT and time.monotonic() - started < 1


def test_the_bank_absorbs_one_slow_move_and_the_game_goes_on() -> None:
    (result,) = play_scripted(scripted_pair("uses_bank"))
    assert result.termination is Termination.NORMAL, result.detail
    mine = [m for m in result.record["moves"] if m["player"] == 0]
    slow = [m for m in mine if m["time_ms"] > FAST.per_move_ms]
    assert [m["time_ms"] for m in slow] == [FAST.per_move_ms + 300]  # exactly: the clock is scripted
    assert all(m["time_ms"] == 0 for m in mine if m not in slow)


def test_late_replies_are_dropped_and_counted_not_taken_as_answers() -> None:
    (result,) = play_scripted(scripted_pair("late_reply"))
    assert result.termination is Termination.NORMAL, result.detail
    moves = sum(m["player"] == 0 for m in result.record["moves"])
    assert result.stale_replies == moves - 1
    replay(result.record)


def test_sequence_numbers_grow_across_games_and_restarts() -> None:
    players = scripted_pair("crash")
    play_scripted(players, games=2)
    offender = players[0]
    assert offender.starts == 2
    seqs = [m["seq"] for m in offender.launcher.bot.received if m["type"] == "move_request"]
    assert seqs and seqs[0] > TRIGGER_MOVE  # the second process goes on from the first's numbers
    assert seqs == sorted(set(seqs))


def test_every_message_a_scripted_bot_receives_is_schema_checked() -> None:
    players = scripted_pair("normal", "normal")
    results = play_scripted(players, games=2)
    assert all(r.termination is Termination.NORMAL for r in results)
    for player in players:
        kinds = [m["type"] for m in player.launcher.bot.received]  # ScriptedChannel decodes with the schemas
        assert kinds[0] == "welcome" and kinds.count("new_game") == 2 and kinds.count("game_over") == 2
        assert player.starts == 1 and player.launcher.kills == 0
        assert not any("legal_moves" in m for m in player.launcher.bot.received)


def test_legal_moves_go_to_a_bot_that_asked_for_them() -> None:
    class AsksForMoves(ScriptedBot):
        name = "asks"
        legal_moves = True

    players = scripted_pair("hang", AsksForMoves)  # a short game: seat 0 hangs on its third move
    play_scripted(players)
    requests = [m for m in players[1].launcher.bot.received if m["type"] == "move_request"]
    assert len(requests) >= 2
    for request in requests:
        state = GameState.from_json(request["state"])
        assert request["legal_moves"] == [m.to_json(state.ruleset.cols) for m in state.legal_moves()]


def test_a_failure_to_start_the_second_bot_is_its_loss() -> None:
    (result,) = play_scripted(scripted_pair("normal", "exit_at_start"))
    assert result.termination is Termination.START_FAILURE or result.termination is Termination.CRASH
    assert result.loser == 1 and result.winner == 0


# ------------------------------------------------------------------ real processes


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


# The end-to-end path of each kind of failure through real processes and pipes (ZeroMQ
# through the bridge, or stdio); every other misbehaviour runs scripted, above.
CASES = [
    ("hang", False, Termination.TIMEOUT, "did not answer: its limit was 300 ms plus 500 ms"),
    ("crash", False, Termination.CRASH, "exit code 3"),
    ("crash", True, Termination.CRASH, "exit code 3"),
    ("exit_at_start", False, Termination.CRASH, "exit code 7"),
    ("garbage", True, Termination.MALFORMED, "not UTF-8"),
    ("flood", False, Termination.PROTOCOL, ""),
    ("huge", False, Termination.OVERSIZE, "-byte limit"),
    ("huge", True, Termination.OVERSIZE, "-byte limit"),
]


@pytest.mark.parametrize(("kind", "stdio", "termination", "detail"), CASES,
                         ids=[f"{c[0]}{'-stdio' if c[1] else ''}" for c in CASES])
def test_misbehaving_bot_loses_with_recorded_reason(tmp_path: Path, kind: str, stdio: bool,
                                                    termination: Termination, detail: str) -> None:
    (result,), _ = play_against_random(tmp_path, misbehaving(tmp_path, kind, stdio))
    assert_lost_by_seat_0(result, termination, detail)


@pytest.mark.parametrize("kind", ["forks", "setsid_daemon"])
def test_children_and_setsid_daemons_are_killed_after_the_match(tmp_path: Path, kind: str) -> None:
    (result,), _ = play_against_random(tmp_path, misbehaving(tmp_path, kind))
    assert result.termination is Termination.NORMAL, result.detail
    # play_against_random asserts no process carrying a bot marker is left


def test_crashed_bot_is_restarted_for_its_next_game(tmp_path: Path) -> None:
    results, pool = play_against_random(tmp_path, misbehaving(tmp_path, "crash"), games=2)
    assert [r.termination for r in results] == [Termination.CRASH, Termination.CRASH]
    assert pool.handles[0].starts == 2 and pool.handles[1].starts == 1


@pytest.mark.slow
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


def test_every_message_the_referee_sends_matches_its_schema(tmp_path: Path) -> None:
    # One game through a real bridge and bot, from seat 1 (scripted bots check every message
    # of two games, in-process, above).
    from arena.protocol.codec import decode, encode

    log = tmp_path / "received.jsonl"
    manifest = misbehaving_bot(tmp_path / "recorder", "recorder", str(log), name="recorder")
    opponent = Manifest.load(sample_bots_dir() / "random")
    with BotPool([manifest, opponent], tmp_path / "logs") as pool:
        results = [pool.play(1, 0, seed=2)]
    assert all(r.termination is Termination.NORMAL for r in results)
    lines = log.read_text().splitlines()
    kinds = [decode(line, sender="referee")["type"] for line in lines]  # schema-checked
    assert kinds[0] == "welcome" and kinds.count("new_game") == 1 and kinds.count("game_over") == 1
    requests = [decode(line, sender="referee") for line in lines if '"move_request"' in line]
    assert len(requests) == sum(m["player"] == 1 for m in results[0].record["moves"])
    assert all(r["legal_moves"] for r in requests)  # asked for in its hello
    assert all(line.isascii() for line in lines)
    # the fast encoder the referee uses says exactly what the strict one says
    assert all(encode(decode(line, sender="referee")) == line for line in lines)


def test_a_reply_late_by_less_than_a_millisecond_reads_late() -> None:
    """Red team: 'took 30 ms for a move: its limit was 30 ms plus 0 ms' (rounded) read as on time."""
    from arena.clock import Allowance
    from arena.referee import _too_slow

    late = Allowance(limit_ms=30, bank_ms=0.0)
    assert "took 30.3 ms for a move: its limit was 30 ms plus 0 ms" in _too_slow("b", 30.3, late)
    assert "took 45 ms for a move" in _too_slow("b", 45.2, late)
