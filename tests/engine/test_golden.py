"""Golden playthroughs (OpenSpiel style): seeded random games dumped move by move.

To regenerate the files on purpose, after a deliberate change of the rules or the JSON:

    REGENERATE_GOLDEN=1 .venv/bin/pytest tests/engine/test_golden.py

and review the diff before committing it. Each file starts with comment lines, then
``state <json>`` for the initial position and, for every move, ``move <json>`` followed by
``state <json>`` (the state after it), and ends with ``result <json>``. Moves are chosen
by ``random.Random(seed).choice(state.legal_moves())``, so the files also pin the order of
the legal moves and the setup shuffle.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from arena.engine import GameState

GOLDEN = Path(__file__).parent / "golden"
CASES = [  # (seed, edition, first_player)
    (1, "revised", 0),
    (2, "original", 1),
    (3, "revised", 1),
]


def path_for(seed: int, edition: str, first_player: int) -> Path:
    return GOLDEN / f"seed{seed}-{edition}-p{first_player}.txt"


def dump(data: object) -> str:
    return json.dumps(data, separators=(",", ":"))


def playthrough(seed: int, edition: str, first_player: int) -> list[str]:
    state = GameState.new(seed, edition, first_player)
    rng = random.Random(seed)
    lines = [
        f"# golden playthrough: seed={seed} edition={edition} first_player={first_player}",
        "# regenerate on purpose only: REGENERATE_GOLDEN=1 pytest tests/engine/test_golden.py",
        f"state {dump(state.to_json())}",
    ]
    while not state.is_terminal():
        move = rng.choice(state.legal_moves())
        state.apply(move)
        lines.append(f"move {dump(move.to_json())}")
        lines.append(f"state {dump(state.to_json())}")
    lines.append(f"result {dump({'scores': list(state.scores()), 'winner': state.winner()})}")
    return lines


@pytest.mark.parametrize("case", CASES, ids=[path_for(*c).stem for c in CASES])
def test_golden_playthrough(case) -> None:
    path = path_for(*case)
    lines = playthrough(*case)
    if os.environ.get("REGENERATE_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        pytest.skip(f"regenerated {path.name}")
    expected = path.read_text(encoding="utf-8").splitlines()
    for number, (got, want) in enumerate(zip(lines, expected, strict=False), start=1):
        assert got == want, f"{path.name}:{number} differs"
    assert len(lines) == len(expected), f"{path.name}: {len(lines)} lines, golden has {len(expected)}"


@pytest.mark.parametrize("case", CASES, ids=[path_for(*c).stem for c in CASES])
def test_golden_moves_replay_through_the_json_api(case) -> None:
    """The recorded moves alone, applied as JSON, reproduce every recorded state."""
    lines = [line for line in path_for(*case).read_text(encoding="utf-8").splitlines()
             if not line.startswith("#")]
    state = GameState.from_json(json.loads(lines[0].removeprefix("state ")))
    assert state == GameState.new(*case)
    for move_line, state_line in zip(lines[1:-1:2], lines[2:-1:2], strict=True):
        state.apply_json(json.loads(move_line.removeprefix("move ")))
        assert state.to_json() == json.loads(state_line.removeprefix("state "))
    assert state.is_terminal()
    result = json.loads(lines[-1].removeprefix("result "))
    assert result == {"scores": list(state.scores()), "winner": state.winner()}
