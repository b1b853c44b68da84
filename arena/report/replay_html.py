"""A standalone HTML viewer of one game record (one file, no network, no server).

The positions are computed here, in Python, by the rules engine (the state after every
move, validated as :func:`arena.records.replay` does) and embedded as JSON; a small
vanilla JavaScript viewer draws them as SVG: both quilts (each patch in its own colour,
its buttons, the last placement outlined), the time board with both tokens, the income
and special-patch spaces, the circle of patches left with the next three marked, and the
move list with the time each move took. Step with the buttons, the arrow keys (Home/End
jump to the ends, space plays) or the slider.

:func:`replay_data` is the pure part (record in, JSON-ready dict out);
:func:`replay_html` renders it into ``templates/replay.html``, which inlines
``assets/replay.css`` and ``assets/replay.js`` and embeds the data as JSON.
"""

from __future__ import annotations

from typing import Any

from arena.engine import GameState
from arena.records import replay
from arena.report.render import render, visible_data

VIEWER_VERSION = 1


def replay_data(record: dict[str, Any], states: list[GameState] | None = None) -> dict[str, Any]:
    """Everything the viewer shows, JSON-ready. ``states`` are the record's positions
    (initial, then after each move) when the caller has replayed it already; otherwise the
    record is replayed and validated here (RecordError if it does not replay)."""
    if states is None:
        states = replay(record)
    rules = states[0].ruleset
    players = [str(p) for p in (record.get("players") or ["seat 0", "seat 1"])[:2]]
    moves = record.get("moves") or []
    result = record.get("result") or {}
    return {
        "viewer": VIEWER_VERSION,
        "game_id": record.get("game_id"),
        "players": players,
        "seed": record.get("seed"),
        "edition": rules.edition,
        "ruleset": rules.name,
        "unverified": rules.unverified,  # Stack'n Stuff's proxy components say so
        "first_player": record.get("first_player", 0),
        "time_control": record.get("time_control"),
        "started_at": record.get("started_at"),
        "board": {
            "rows": rules.rows, "cols": rules.cols, "final_space": rules.final_space,
            "income_spaces": list(rules.income_spaces), "special_spaces": list(rules.special_spaces),
            "bonus_square": rules.bonus_square, "bonus_points": rules.bonus_points,
            "empty_penalty": rules.empty_penalty, "currency": rules.currency,
        },
        "patches": {str(p.id): {"shape": list(p.shape), "cost": p.buttons_cost, "time": p.time_cost,
                                "income": p.income} for p in rules.patches},
        "moves": [_move_data(entry, before, after, players)
                  for entry, before, after in zip(moves, states, states[1:], strict=False)],
        "states": [_state_data(state) for state in states],
        "result": _result_data(result, players, len(moves)),
    }


def replay_html(record: dict[str, Any], states: list[GameState] | None = None, *,
                back_link: str | None = None) -> str:
    """The viewer page for one record (see :func:`replay_data`). ``back_link`` adds a link
    (e.g. to the report's index.html) at the top."""
    data = visible_data(replay_data(record, states))  # the viewer sets it as text: bidi overrides act
    players = data["players"]
    title = f"{players[0]} vs {players[1]}" + (f" — {data['game_id']}" if data.get("game_id") else "")
    return render("replay.html", title=title, back_link=back_link, data=data)


def _state_data(state: GameState) -> dict[str, Any]:
    full = state.to_json()
    keep = ("ply", "to_move", "decision", "positions", "buttons", "income", "quilts", "placed", "circle",
            "special_spaces_left", "bonus_owner", "on_top", "first_to_finish")
    data = {key: full[key] for key in keep}
    data["scores"] = list(state.scores())
    data["empty"] = [state.empty_cells(p) for p in (0, 1)]
    return data


def _move_data(entry: dict[str, Any], before: GameState, after: GameState,
               players: list[str]) -> dict[str, Any]:
    player = int(entry["player"])
    action = entry.get("action")
    rules = before.ruleset
    payout = after.buttons[player] - before.buttons[player]  # income collected on the way
    if action == "advance":
        spaces = after.positions[player] - before.positions[player]
        payout -= spaces
        text = (f"advances {spaces} space{'s' if spaces != 1 else ''} to {after.positions[player]} "
                f"(+{spaces} {_units(rules.currency, spaces)})")
    elif action == "buy":
        patch = rules.patch(int(entry["patch"]))
        payout += patch.buttons_cost
        text = (f"buys patch {patch.id} ({patch.buttons_cost} {_units(rules.currency, patch.buttons_cost)}, "
                f"{patch.time_cost} time"
                + (f", +{patch.income} income" if patch.income else "") + ")")
    elif action == "special":
        row, col = entry["cells"][0]
        text = f"places a special patch at row {row + 1}, column {col + 1}"
    elif action == "remove":
        text = "removes the special patch from play"
    else:
        text = str(action)
    events = []
    if payout > 0:
        events.append(f"collects {payout} income")
    if after.pending_special == player and before.pending_special is None:
        events.append("takes a special patch")
    if after.bonus_owner == player and before.bonus_owner is None:
        events.append(f"claims the {rules.bonus_square}x{rules.bonus_square} bonus")
    if events:
        text += "; " + ", ".join(events)
    out: dict[str, Any] = {"player": player, "action": action, "text": text,
                           "time_ms": entry.get("time_ms")}
    if entry.get("cells") is not None:
        out["cells"] = entry["cells"]
    if entry.get("patch") is not None:
        out["patch"] = entry["patch"]
    if entry.get("info"):
        out["info"] = str(entry["info"])[:300]
    return out


def _units(currency: str, count: int) -> str:
    """ "1 button", "2 buttons"."""
    return currency[:-1] if count == 1 and currency.endswith("s") else currency


def _result_data(result: dict[str, Any], players: list[str], moves: int) -> dict[str, Any]:
    reason = result.get("reason", "normal")
    winner = result.get("winner")
    scores = result.get("scores") or [None, None]
    name = players[winner] if winner in (0, 1) else "?"
    if reason == "normal":
        text = f"{name} wins {scores[0]} : {scores[1]}"
    else:
        loser = result.get("loser")
        if loser not in (0, 1) and winner in (0, 1):
            loser = 1 - winner
        culprit = players[loser] if loser in (0, 1) else "a bot"
        what = {"timeout": "ran out of time", "crash": "crashed", "illegal_move": "played an illegal move",
                "malformed": "sent a malformed message", "schema": "sent a message that breaks the schema",
                "oversize": "sent an oversize message", "protocol": "broke the protocol",
                "start_failure": "failed to start", "interrupted": "was interrupted"}.get(reason, reason)
        text = f"{culprit} {what} after {moves} moves: {name} wins"
    return {"reason": reason, "winner": winner, "scores": scores, "loser": result.get("loser"),
            "detail": str(result.get("detail") or ""), "text": text}



__all__ = ["replay_data", "replay_html"]
