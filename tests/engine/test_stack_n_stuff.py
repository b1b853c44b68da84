"""Stack'n Stuff on the shared engine: one test per rule difference, then the CLI end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.bots.pool import sample_bots_dir
from arena.engine import GameState, Move
from arena.engine.components import ruleset_for, tables
from arena.errors import ConfigError, IllegalMoveError
from arena.records import replay
from arena.schemas.components import load_components
from tests.helpers import arena
from tests.tournament.test_run import db_rows

RULES = ruleset_for("stack-n-stuff")


def new(seed: int = 1) -> GameState:
    return GameState.new(seed, ruleset=RULES)


def test_board_is_7x7() -> None:
    state = new()
    assert (RULES.rows, RULES.cols) == (7, 7) and state.empty_cells(0) == 49
    assert len(state.quilt_rows(0)) == 7 and all(len(row) == 7 for row in state.quilt_rows(0))
    two = next(p for p in RULES.patches if p.shape == ("##",))
    assert len(tables(RULES).placements[two.id].masks) == 2 * 7 * 6  # 84 placements of a 1x2
    with pytest.raises(IllegalMoveError, match="off the 7x7 quilt"):
        state.apply_json({"action": "buy", "patch": state.circle[0], "cells": [[7, 0], [7, 1]]})


def test_setup_has_only_the_15_stack_tiles_with_the_smallest_last() -> None:
    state = new(5)
    assert sorted(state.circle) == list(range(15)) and state.circle[-1] == RULES.last_patch_id == 0
    assert sorted(state.reserve) == list(range(15, 23))


def test_stuff_tiles_join_behind_the_truck_in_seeded_order_when_5_stack_tiles_remain() -> None:
    state = new(3)
    state.circle = state.circle[-6:]  # six stack tiles left; buying one leaves five
    state.buttons = [50, 50]
    reserve = state.reserve[:]
    bought = state.circle[0]
    state.apply(next(m for m in state.legal_moves() if m.action == "buy" and m.patch == bought))
    remaining = [pid for pid in state.circle if pid < 15]
    assert len(remaining) == 5 and state.reserve == []
    assert state.circle[5:] == reserve  # directly behind the truck, in the order set up from the seed
    orders = {tuple(new(seed).reserve) for seed in range(20)}
    assert len(orders) > 10 and new(3).reserve == reserve  # random, but fixed by the seed


def test_a_box_may_be_placed_or_removed() -> None:
    state = new()
    state.positions = [6, 9]
    state.apply(Move("advance"))  # 6 -> 10 passes the box on space 7
    assert state.to_move() == 0 and state.decision() == "special"
    assert state.to_json()["specials_pending"] == 1
    moves = state.legal_moves()
    assert Move("remove") in moves and sum(m.action == "special" for m in moves) == 49
    removed = state.clone()
    removed.apply_json({"action": "remove"})
    assert removed.quilts[0] == 0 and 7 not in removed.special_spaces_left
    assert removed.decision() == "main"
    placed = state.clone()
    placed.apply_json({"action": "special", "cells": [[3, 3]]})
    assert placed.empty_cells(0) == 48
    with pytest.raises(IllegalMoveError, match="no box is waiting: remove is only allowed right after"):
        placed.apply_json({"action": "remove"})
    with pytest.raises(IllegalMoveError, match="no box is waiting to be placed"):
        placed.apply_json({"action": "special", "cells": [[0, 0]]})


def test_a_move_past_several_boxes_takes_every_one_a_decision_each() -> None:
    state = new()
    state.positions = [6, 15]
    state.apply(Move("advance"))  # 6 -> 16 passes the boxes on 7, 11 and 15
    assert state.special_spaces_left == [19, 23, 27]
    decisions = []
    for cells in ([[0, 0]], None, [[6, 6]]):
        assert (state.to_move(), state.decision()) == (0, "special")
        decisions.append(state.to_json()["specials_pending"])
        again = GameState.from_json(state.public_json())  # a bot's SDK rebuilds the same decision
        assert again.legal_moves() == state.legal_moves() and again.public_json() == state.public_json()
        state.apply_json({"action": "remove"} if cells is None else {"action": "special", "cells": cells})
    assert decisions == [3, 2, 1]
    assert (state.to_move(), state.decision()) == (1, "main") and state.empty_cells(0) == 47
    assert state.to_json()["specials_pending"] == 0


def test_boxes_left_for_a_full_board_are_discarded() -> None:
    state = new()
    state.positions = [6, 11]
    state.quilts[0] = RULES.full_mask & ~1  # one free cell
    state.apply(Move("advance"))  # 6 -> 12 passes the boxes on 7 and 11
    assert state.special_spaces_left == [15, 19, 23, 27] and state.decision() == "special"
    state.apply_json({"action": "special", "cells": [[0, 0]]})  # the board is now full
    assert state.decision() == "main" and state.to_move() == 1


def test_a_custom_component_file_with_boxes_close_together(tmp_path: Path) -> None:
    """A user's time board where one patch move passes two boxes: the mover takes both,
    and games with it play, record and replay."""
    shipped = json.loads((Path(__file__).parents[2] / "arena/engine/data/stack-n-stuff.json").read_text())
    shipped["time_board"]["box_spaces"] = [2, 3, 4, 7, 8, 9]
    path = tmp_path / "close.json"
    path.write_text(json.dumps(shipped))
    rules = ruleset_for("stack-n-stuff", None, load_components(path))
    state, buy = next((s, m) for s in (GameState.new(seed, ruleset=rules) for seed in range(100))
                      for m in s.legal_moves()
                      if m.action == "buy" and rules.patch(m.patch or 0).time_cost == 3)
    state.apply(buy)  # the first move of the game: 0 -> 3 passes the boxes on 2 and 3
    assert state.to_json()["specials_pending"] == 2 and state.special_spaces_left == [4, 7, 8, 9]
    for _ in range(2):
        assert (state.to_move(), state.decision()) == (0, "special")
        state.apply(Move("remove"))
    assert (state.to_move(), state.decision()) == (1, "main")
    out = tmp_path / "g.jsonl"
    proc = arena("random-games", "20", "--game", "stack-n-stuff", "--components", str(path),
                 "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    for record in records:
        states = replay(record)
        assert list(states[-1].scores()) == record["result"]["scores"]
        assert states[-1].special_spaces_left == []  # every box was taken by someone
    boxes = [sum(m["action"] in ("special", "remove") for m in r["moves"]) for r in records]
    assert all(n <= 6 for n in boxes) and any(n >= 5 for n in boxes)


def test_requests_hide_the_join_order_and_the_seed_records_keep_them() -> None:
    state = new(3)
    public = state.public_json()
    assert public["seed"] is None and public["reserve"] == sorted(state.reserve) != state.reserve
    assert state.to_json()["seed"] == 3 and state.to_json()["reserve"] == state.reserve
    rebuilt = GameState.from_json(public)  # the SDK accepts the hidden form ...
    assert rebuilt.legal_moves() == state.legal_moves()
    hidden = {k: v for k, v in public.items() if k != "reserve"}  # ... and a state without a reserve
    assert sorted(GameState.from_json(hidden).reserve) == sorted(state.reserve)


def test_income_only_for_the_moving_player() -> None:
    state = new()
    state.positions = [4, 8]
    state.income = [2, 3]
    before = state.buttons[:]
    state.apply(Move("advance"))  # 4 -> 9 crosses income spaces 5 and 9
    assert state.buttons[0] == before[0] + 5 + 2 * 2
    assert state.buttons[1] == before[1]


def test_no_bonus_tile_and_negative_scores() -> None:
    state = new()
    state.quilts[0] = RULES.full_mask  # a full 7x7 board
    state.buttons = [3, 0]
    state.positions = [29, 29]
    state.first_to_finish = 0
    assert state.bonus_owner is None and not tables(RULES).bonus_masks
    assert state.scores() == (3, 0 - 2 * 49)


def test_ties_go_to_the_first_to_finish() -> None:
    state = new()
    state.positions = [29, 29]
    state.buttons = [4, 4]
    state.first_to_finish = 1
    assert state.scores() == (-94, -94) and state.winner() == 1


def test_random_games_replay_exactly(tmp_path: Path) -> None:
    out = tmp_path / "sns.jsonl"
    proc = arena("random-games", "30", "--game", "stack-n-stuff", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "UNVERIFIED" in proc.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(r["ruleset"] == "stack-n-stuff" and r["edition"] == "standard" for r in records)
    for record in records:
        assert sorted(record["reserve"]) == list(range(15, 23))
        assert list(replay(record)[-1].scores()) == record["result"]["scores"]
    assert any(m["action"] == "remove" for r in records for m in r["moves"])
    shown = arena("replay", str(out), "--game", "2")
    assert shown.returncode == 0 and "30 record(s) valid" in shown.stdout and "S box" in shown.stdout


@pytest.mark.slow
def test_tournament_of_sample_bots_completes(tmp_path: Path) -> None:
    out = tmp_path / "sns"
    bots = [arg for name in ("random", "greedy", "cbot", "mcts")
            for arg in ("--bots", str(sample_bots_dir() / name))]
    proc = arena("run-tournament", "--game", "stack-n-stuff", *bots, "--games", "2", "--out", str(out),
                 "--time-per-move", "100", "--first-move-ms", "300")
    assert proc.returncode == 0, proc.stderr
    assert "UNVERIFIED" in proc.stderr
    games = db_rows(out, "SELECT reason FROM games")
    assert len(games) == 12 and all(g[0] == "normal" for g in games)
    record = json.loads((out / "games.jsonl").read_text().splitlines()[0])
    assert record["ruleset"] == "stack-n-stuff"
    replay(record)
    report = arena("report", str(out), "--bootstrap", "50")
    assert report.returncode == 0, report.stderr
    assert "UNVERIFIED" in report.stdout  # the report says the components are proxy data ...
    page = (out / "report" / "index.html").read_text()
    assert "UNVERIFIED" in page and "stack-n-stuff" in page  # ... and so does the page
    viewer = arena("replay", str(out / "games.jsonl"), "--html", str(tmp_path / "sns.html"))
    assert viewer.returncode == 0, viewer.stderr
    viewer_page = (tmp_path / "sns.html").read_text()
    assert '"ruleset":"stack-n-stuff"' in viewer_page and "UNVERIFIED" in viewer_page


def test_play_both_games_through_the_protocol_and_schema(tmp_path: Path) -> None:
    from arena.protocol.codec import decode
    from tests.helpers import misbehaving_bot

    log = tmp_path / "received.jsonl"
    bot = misbehaving_bot(tmp_path / "rec", "recorder", str(log), name="recorder")
    from arena.bots.manifest import Manifest
    from arena.bots.pool import BotPool

    with BotPool([bot, Manifest.load(sample_bots_dir() / "greedy")], tmp_path / "logs") as pool:
        result = pool.play(0, 1, seed=4, ruleset=RULES)
    assert result.termination.value == "normal"
    messages = [decode(line, sender="referee") for line in log.read_text().splitlines()]
    new_game = next(m for m in messages if m["type"] == "new_game")
    assert new_game["ruleset"] == "stack-n-stuff" and new_game["components"]["special_removable"]
    assert "UNVERIFIED" in new_game["components"]["unverified"]
    requests = [m for m in messages if m["type"] == "move_request"]
    assert all(len(r["state"]["quilts"][0]) == 7 for r in requests)
    # the order in which the stuff tiles join is not revealed before they join
    late = sorted(RULES.late_patch_ids)
    assert all(r["state"]["seed"] is None for r in requests)
    assert all(r["state"]["reserve"] in (late, []) for r in requests)
    assert any(r["state"]["reserve"] == late for r in requests)
    record = result.record
    assert record["seed"] == 4 and sorted(record["reserve"]) == late and record["reserve"] != late
    assert list(replay(record)[-1].scores()) == record["result"]["scores"]


def test_user_component_files_are_validated(tmp_path: Path) -> None:
    shipped = json.loads((Path(__file__).parents[2] / "arena/engine/data/stack-n-stuff.json").read_text())
    good = tmp_path / "mine.json"
    shipped["about"] = "my own tiles"
    shipped["starting_coins"] = 9
    good.write_text(json.dumps(shipped))
    rules = ruleset_for("stack-n-stuff", None, load_components(good))
    assert rules.starting_buttons == 9 and "supplied by the user" in rules.unverified
    out = tmp_path / "g.jsonl"
    proc = arena("random-games", "3", "--game", "stack-n-stuff", "--components", str(good), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    record = json.loads(out.read_text().splitlines()[0])
    assert record["components"]["starting_coins"] == 9 and replay(record)  # the record carries them
    broken = dict(shipped)
    del broken["time_board"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(broken))
    proc = arena("random-games", "3", "--game", "stack-n-stuff", "--components", str(bad), "--out", str(out))
    assert proc.returncode == 1
    assert proc.stderr == (f"Error: {bad}: key 'time_board': expected an object with final_space, "
                           "income_spaces and box_spaces, got nothing (the key is missing)\n")
    assert "Traceback" not in proc.stderr
    shipped["stack_tiles"][0]["shape"] = ["#x"]
    bad.write_text(json.dumps(shipped))
    with pytest.raises(ConfigError, match=r"stack_tiles\[0\]\.shape"):
        load_components(bad)
    proc = arena("random-games", "1", "--components", str(good), "--out", str(out))
    assert proc.returncode == 1 and "stack-n-stuff only" in proc.stderr


def test_hidden_seed_draws_the_join_order_and_replay_checks_it() -> None:
    """The circle comes from the seed whatever the hidden seed; the join order from the hidden
    seed. A record keeps it, and replay refuses a reserve it did not draw; a record without one
    (older, or random games) is checked against the seed as before."""
    from arena.errors import RecordError
    from arena.records import make_record

    public = new(5)
    hidden = [GameState.new(5, ruleset=RULES, hidden_seed=h) for h in range(40)]
    assert all(h.circle == public.circle for h in hidden)
    assert len({tuple(h.reserve) for h in hidden}) > 30
    unplayed = {"scores": [0, 0], "winner": 0, "reason": "normal"}  # replayed without the result
    record = make_record(hidden[7], ["a", "b"], [], unplayed, hidden_seed=7)
    assert record["hidden_seed"] == 7 and record["reserve"] == hidden[7].reserve
    assert replay(record, check_result=False)[0].reserve == hidden[7].reserve
    with pytest.raises(RecordError, match="reserve does not match the order drawn by hidden_seed 8"):
        replay({**record, "hidden_seed": 8}, check_result=False)
    legacy = {k: v for k, v in record.items() if k != "hidden_seed"}
    with pytest.raises(RecordError, match="reserve does not match the order drawn by seed 5"):
        replay(legacy, check_result=False)
    legacy["reserve"] = public.reserve  # an older record: the order came from the seed
    assert replay(legacy, check_result=False)[0].reserve == public.reserve
