"""Stack'n Stuff's hidden join order stays hidden from a hostile bot, under the strict sandbox.

The bot (misbehave ``predict_order``) finds the public seed that gives the circle it sees
(``arena play``'s 0 + game number, a tournament's pair seed from base seed 1 and the names),
runs the public engine, and predicts the order the stuff tiles will join in; in the second
game of a seat-swapped pair it also predicts the order it saw in the first. It logs each
prediction before the tiles join and what it saw once they had. Before the order came from a
secret, both routes predicted every game exactly (4 of 4 by seed, 2 of 2 by pair). Now each
prediction must be at chance level: no whole order right (1 in 40,320 by luck) and about one
tile in 8 in its place (at most half is allowed: over 32 or more places, chance gives more
than that about once in ten million runs).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from arena.records import read_records, replay
from arena.resources import sample_bots_dir
from tests.helpers import arena, misbehaving_bot, needs_strict

pytestmark = needs_strict


def predictions(logs: Path) -> dict[str, dict[str, list[int] | None]]:
    """game id -> route ("seed", "pair", "observed") -> order, from the bot's stderr logs."""
    found: dict[str, dict[str, list[int] | None]] = {}
    for log in logs.rglob("pred*.stderr.log"):
        for line in log.read_text().splitlines():
            if line.startswith("predict_order: "):
                entry = json.loads(line.removeprefix("predict_order: "))
                found.setdefault(entry["game"], {})[entry["route"]] = entry.get("order")
    return found


def check_at_chance(records: dict[str, dict], seen: dict[str, dict[str, list[int] | None]],
                    pairs: list[tuple[str, str]]) -> None:
    assert set(seen) == set(records)
    places = right = 0
    for game_id, record in records.items():
        truth = record["reserve"]
        routes = seen[game_id]
        # the bot works: it found the public seed of the circle, and read the order once joined
        assert routes["seed"] is not None, f"{game_id}: no guessable seed gave the circle"
        assert routes.get("observed") == truth, (game_id, routes, truth)
        assert isinstance(record.get("hidden_seed"), int)
        for route in ("seed", "pair"):
            guess = routes.get(route)
            if guess is None:
                continue
            assert guess != truth, f"{game_id}: the {route} route predicted the join order exactly"
            places += len(truth)
            right += sum(a == b for a, b in zip(guess, truth, strict=True))
    for first, second in pairs:  # the pair route was tried in every second game
        assert seen[second].get("pair") is not None, (first, second, seen[second])
    assert places >= 32 and right <= places // 2, (right, places)


def test_play_strict_predicts_nothing(tmp_path: Path) -> None:
    bot = misbehaving_bot(tmp_path / "pred", "predict_order", name="pred")
    out = tmp_path / "games.jsonl"
    run = arena("play", str(bot.folder), str(sample_bots_dir() / "random"), "--game", "stack-n-stuff",
                "--games", "4", "--sandbox", "strict", "--logs", str(tmp_path / "logs"), "--out", str(out))
    assert run.returncode == 0, run.stderr
    records = {r["game_id"]: r for _, r in read_records(out)}
    assert all(r["result"]["reason"] == "normal" for r in records.values())
    check_at_chance(records, predictions(tmp_path / "logs"), [("play-1", "play-2"), ("play-3", "play-4")])
    for record in records.values():
        replay(record)  # the hidden seed in the record is all a replay needs
    shown = arena("replay", str(out))
    assert shown.returncode == 0 and "4 record(s) valid" in shown.stdout, shown.stderr


def test_strict_tournament_predicts_nothing(tmp_path: Path) -> None:
    bot = misbehaving_bot(tmp_path / "pred", "predict_order", name="pred")
    out = tmp_path / "results"
    run = arena("run-tournament", "--bots", str(bot.folder), "--bots", "random", "--game", "stack-n-stuff",
                "--games", "6", "--concurrency", "1", "--sandbox", "strict", "--out", str(out),
                "--time-per-move", "500")
    assert run.returncode == 0, run.stderr
    records = {r["game_id"]: r for _, r in read_records(out / "games.jsonl")}
    assert len(records) == 6 and all(r["result"]["reason"] == "normal" for r in records.values())
    ids = sorted(records, key=lambda game_id: int(game_id.split("-")[0]))
    pairs = [(ids[k], ids[k + 1]) for k in range(0, len(ids), 2)]
    assert all(records[a]["seed"] == records[b]["seed"] for a, b in pairs)  # same circle per pair ...
    assert all(records[a]["hidden_seed"] != records[b]["hidden_seed"] for a, b in pairs)  # own orders
    check_at_chance(records, predictions(out / "logs"), pairs)
    with sqlite3.connect(out / "tournament.db") as conn:
        (key,) = conn.execute("SELECT value FROM tournament WHERE key = 'hidden_key'").fetchone()
    assert len(bytes.fromhex(key)) == 32  # the secret is kept with the results, for the resume
