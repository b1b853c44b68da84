"""The engine's command line, end to end through real subprocesses and click's runner (in
process, through tests.helpers.arena_here, where a test checks only the output)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from arena.cli import main
from arena.records import replay
from tests.helpers import arena_here as arena

ARENA = [sys.executable, "-m", "arena.cli"]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``arena ARGS`` in a real subprocess."""
    code = "import sys; from arena.cli import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120)


def test_random_games_writes_valid_records_and_summary(tmp_path: Path) -> None:
    out = tmp_path / "games.jsonl"
    proc = run_cli("random-games", "12", "--seed", "5", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "games: 12" in proc.stdout
    assert "mean decisions per game:" in proc.stdout
    assert "seat-0 win rate:" in proc.stdout
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 12
    assert [r["seed"] for r in records] == list(range(5, 17))
    assert [r["first_player"] for r in records] == [i % 2 for i in range(12)]
    for record in records:
        assert record["ruleset"] == "patchwork" and record["edition"] == "revised"
        assert record["circle"][-1] == 0 and sorted(record["circle"]) == list(range(33))
        assert record["result"]["reason"] == "normal"
        final = replay(record)[-1]
        assert list(final.scores()) == record["result"]["scores"]
    wins = sum(r["result"]["winner"] == 0 for r in records)
    assert f"seat-0 win rate: {wins / 12:.3f}" in proc.stdout


def test_random_games_original_edition(tmp_path: Path) -> None:
    out = tmp_path / "orig.jsonl"
    result = CliRunner().invoke(main, ["random-games", "3", "--out", str(out),
                                       "--edition", "original"])
    assert result.exit_code == 0, result.output
    assert all(json.loads(line)["edition"] == "original" for line in out.read_text().splitlines())


def test_replay_renders_final_position_and_steps(tmp_path: Path) -> None:
    out = tmp_path / "games.jsonl"
    CliRunner().invoke(main, ["random-games", "2", "--seed", "3", "--out", str(out)])
    final = CliRunner().invoke(main, ["replay", str(out), "--game", "2"])
    assert final.exit_code == 0, final.output
    assert "2 record(s) valid" in final.output and "game over" in final.output
    steps = CliRunner().invoke(main, ["replay", str(out), "--step"])
    record = json.loads(out.read_text().splitlines()[0])
    assert steps.output.count("\nmove ") == len(record["moves"])
    assert "ply 0:" in steps.output and "final scores" in steps.output


def _corrupt(tmp_path: Path, change) -> Path:  # type: ignore[no-untyped-def]
    out = tmp_path / "games.jsonl"
    CliRunner().invoke(main, ["random-games", "3", "--seed", "9", "--out", str(out)])
    lines = out.read_text().splitlines()
    record = json.loads(lines[1])
    change(record)
    lines[1] = json.dumps(record)
    out.write_text("\n".join(lines) + "\n")
    return out


def test_replay_names_record_move_and_reason_of_an_illegal_move(tmp_path: Path) -> None:
    def make_illegal(record: dict) -> None:
        buy = next(i for i, m in enumerate(record["moves"]) if m["action"] == "buy")
        record["moves"][buy]["cells"] = [[0, 0]]
    out = _corrupt(tmp_path, make_illegal)
    proc = arena("replay", str(out))
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "record 2: move" in proc.stderr and "not a placement of patch" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_replay_rejects_a_wrong_result(tmp_path: Path) -> None:
    def swap(record: dict) -> None:
        record["result"]["winner"] = 1 - record["result"]["winner"]
    proc = arena("replay", str(_corrupt(tmp_path, swap)))
    assert proc.returncode == 1 and "record 2: result: winner" in proc.stderr


def test_replay_reports_truncated_json_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    CliRunner().invoke(main, ["random-games", "1", "--out", str(bad)])
    with bad.open("a") as handle:
        handle.write('{"moves": [\n')  # a writer killed mid-line
    proc = arena("replay", str(bad))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "record 2: not valid JSON" in proc.stderr
    bad.write_text('{"ruleset": "patchwork"}\n')
    proc = arena("replay", str(bad))
    assert proc.returncode == 1 and "record 1: key 'first_player': expected 0 or 1" in proc.stderr
    proc = arena("replay", str(tmp_path / "missing.jsonl"))
    assert proc.returncode == 1 and "cannot read" in proc.stderr and "Traceback" not in proc.stderr


def test_bad_arguments_give_one_line_errors(tmp_path: Path) -> None:
    proc = arena("random-games", "0", "--out", str(tmp_path / "x.jsonl"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "0" in proc.stderr
    proc = arena("random-games", "2", "--out", str(tmp_path / "x.jsonl"), "--edition", "nope")
    assert proc.returncode == 2 and "nope" in proc.stderr
    out = tmp_path / "one.jsonl"
    CliRunner().invoke(main, ["random-games", "1", "--out", str(out)])
    proc = arena("replay", str(out), "--game", "5")
    assert proc.returncode == 1 and proc.stderr.strip() == (
        f"Error: {out} holds 1 game(s): --game takes 1..1 (a record's position in the file, not the number "
        "in a game id such as demo-0075) or a game id; there is no game 5")


def test_every_command_has_help() -> None:
    for command in ([], ["random-games"], ["replay"]):
        result = CliRunner().invoke(main, [*command, "--help"])
        assert result.exit_code == 0 and "Usage:" in result.output


HOSTILE = "\x1b]0;PWNED\x07\x1b[31mRED\x1b[0m\u202e"  # a title change, colours, a bidi override


def _one_record(tmp_path: Path, change) -> Path:  # type: ignore[no-untyped-def]
    """A file of one random game's record (played once per test), changed by ``change``."""
    base, out = tmp_path / "base.jsonl", tmp_path / "game.jsonl"
    if not base.exists():
        assert arena("random-games", "1", "--seed", "1", "--out", str(base)).returncode == 0
    record = json.loads(base.read_text())
    change(record)
    out.write_text(json.dumps(record) + "\n")
    return out


def _as_crash(record: dict, **result: object) -> None:
    record["moves"] = record["moves"][:3]
    record["result"] = {"reason": "crash", "winner": 1, "loser": 0, **result}


def test_replay_never_prints_record_text_raw(tmp_path: Path) -> None:
    # A record with a circle may carry any seed; a failure's scores are not replayed.
    for change in (lambda r: r.update(seed=HOSTILE),
                   lambda r: _as_crash(r, scores=[HOSTILE, HOSTILE]),
                   lambda r: _as_crash(r, scores=[HOSTILE, HOSTILE], detail="")):
        proc = arena("replay", str(_one_record(tmp_path, change)))
        shown = proc.stdout + proc.stderr
        assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown, shown
        assert "Traceback" not in shown


def test_replay_of_a_forfeited_game_shows_no_scores(tmp_path: Path) -> None:
    """As `arena play` shows it: the scores of a game cut short mean nothing (a TA read them)."""
    proc = arena("replay", str(_one_record(tmp_path, lambda r: _as_crash(r, scores=[-88, -100]))))
    assert proc.returncode == 0, proc.stderr
    result = next(line for line in proc.stdout.splitlines() if line.startswith("result: "))
    assert result.startswith("result: aborted, ") and " lost by crash after 3 moves; winner " in result
    assert "-88" not in result, result


def _set(key: str, value: object):  # type: ignore[no-untyped-def]
    return lambda record: record.update({key: value})


def test_replay_refuses_a_crafted_record_in_one_line(tmp_path: Path) -> None:
    # Each of these crashed `arena replay` (or its --html) with a traceback.
    cases = {
        "players": [_set("players", ["a"]), _set("players", None), _set("players", [{"a": 1}, "b"])],
        "result.scores": [lambda r: _as_crash(r)],
        "time_control.per_move_ms": [_set("time_control", {"per_move_ms": float("nan")})],
        "moves[0].player": [lambda r: r["moves"][0].update(player=False)],
        "moves[0].time_ms": [lambda r: r["moves"][0].update(time_ms=float("inf"))],
        "seed": [_set("seed", "1")],
        "result.winner": [lambda r: _as_crash(r, scores=[1, 2], winner=True)],
    }
    html = ["--html", str(tmp_path / "game.html")]
    for key, changes in cases.items():
        for change in changes:
            path = _one_record(tmp_path, change)
            for extra in ([], html) if key in ("players", "time_control.per_move_ms") else ([],):
                proc = arena("replay", str(path), *extra)
                assert proc.returncode == 1 and "Traceback" not in proc.stderr, (key, proc.stderr)
                assert proc.stderr.startswith(f"Error: {path}: record 1: key '{key}"), proc.stderr
                assert len(proc.stderr.strip().splitlines()) == 1


def test_replay_refuses_unreadable_json_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    for line, why in (('{"seed": ' + "9" * 5000 + "}", "an integer of more than 4300 digits"),
                      ("[" * 100_000, "nested too deeply")):
        path.write_text(line + "\n")
        proc = arena("replay", str(path))
        assert proc.returncode == 1 and "Traceback" not in proc.stderr
        assert f"record 1: not a usable record ({why})" in proc.stderr


def test_usage_errors_and_file_names_are_escaped(tmp_path: Path) -> None:
    # click repeats the arguments it refuses; any of them may be a file name holding ESC.
    hostile = tmp_path / ("a" + HOSTILE)
    hostile.write_text("")
    for args, status in ((["replay", str(hostile)], 1),  # "FILE holds 0 record(s)"
                         (["check-bot", "a", "b", str(hostile)], 2),  # unexpected extra arguments
                         (["replay", "--game", HOSTILE, str(hostile)], 1),  # no game with that id
                         ([HOSTILE], 2),  # no such command
                         (["sprt", "a", "b", str(hostile)], 3)):  # sprt shows its own usage errors
        proc = arena(*args)
        assert proc.returncode == status, (args, proc.stderr)
        assert "Error: " in proc.stderr and "\\x1b]0;PWNED\\x07" in proc.stderr, proc.stderr
        shown = proc.stdout + proc.stderr
        assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown, shown


def test_replay_into_a_reader_that_stops_early_ends_quietly(tmp_path: Path) -> None:
    """`arena replay --step FILE | head -1`: once head has gone, replay stops as a Unix tool
    killed by SIGPIPE does (status 141), without "Error: Broken pipe" or a traceback."""
    out = tmp_path / "games.jsonl"
    assert arena("random-games", "1", "--out", str(out)).returncode == 0
    code = "import sys; from arena.cli import main; sys.exit(main())"
    proc = subprocess.Popen([sys.executable, "-c", code, "replay", str(out), "--step"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert "1 record(s) valid" in proc.stdout.readline().decode()
    proc.stdout.close()  # what head does after its line: the rest (~20 KiB) meets a closed pipe
    assert proc.wait(60) == 141
    assert proc.stderr.read() == b""
