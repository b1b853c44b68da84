"""Plain-text rendering of a position for terminals (pure: returns a string)."""

from __future__ import annotations

from arena.engine.state import GameState

_UPCOMING = 6  # how many patches of the circle to show


def render(state: GameState, players: tuple[str, str] = ("seat 0", "seat 1")) -> str:
    """Both quilts, the time board with both tokens, buttons, income and the next patches."""
    rules = state.ruleset
    lines: list[str] = []
    mover = state.to_move()
    status = ("game over" if mover is None else
              f"{players[mover]} to move ({state.decision()})")
    lines.append(f"ply {state.ply}: {status}")
    heads = []
    for p in (0, 1):
        bonus = " +bonus" if state.bonus_owner == p else ""
        heads.append(f"{p}:{players[p]}"[:14].ljust(14)
                     + f" {rules.currency[0]}{state.buttons[p]:>3} i{state.income[p]:>2}{bonus}")
    width = max(len(h) for h in heads) + 3
    lines.append("".join(h.ljust(width) for h in heads))
    rows = [state.quilt_rows(p) for p in (0, 1)]
    for r in range(rules.rows):
        lines.append("".join(" ".join(rows[p][r]).ljust(width) for p in (0, 1)))
    lines.append(_time_board(state))
    if mover is not None or state.circle:
        lines.append(f"next patches (id: cost {rules.currency} / time / income):")
        lines.extend(_upcoming(state))
    if state.is_terminal():
        s0, s1 = state.scores()
        winner = state.winner()
        assert winner is not None
        lines.append(f"final scores {s0} : {s1}; {players[winner]} wins")
    return "\n".join(lines)


def _time_board(state: GameState) -> str:
    """One character per space: 0/1 a token (* both), $ income, S special patch, - plain."""
    rules = state.ruleset
    cells = []
    for space in range(rules.final_space + 1):
        here = [p for p in (0, 1) if state.positions[p] == space]
        if len(here) == 2:
            ch = "*"
        elif here:
            ch = str(here[0])
        elif space in state.special_spaces_left:
            ch = "S"
        elif space in rules.income_spaces:
            ch = "$"
        else:
            ch = "-"
        cells.append(ch)
    special = "box" if rules.special_removable else "special patch"
    return (f"time |{''.join(cells)}| positions {state.positions[0]} / {state.positions[1]}"
            f" (0/1 tokens, * both, $ income, S {special})")


def _upcoming(state: GameState) -> list[str]:
    patches = [state.ruleset.patch(pid) for pid in state.circle[:_UPCOMING]]
    if not patches:
        return ["  (none left)"]
    height = max(len(p.shape) for p in patches)
    blocks = []
    for i, patch in enumerate(patches):
        mark = "*" if i < 3 else " "
        head = f"{mark}{patch.id}: {patch.buttons_cost}/{patch.time_cost}/{patch.income}"
        shape = [row.replace(".", " ") for row in patch.shape]
        w = max(len(head), max(len(r) for r in shape)) + 2
        block = [head.ljust(w)] + [r.ljust(w) for r in shape] + [" " * w] * (height - len(shape))
        blocks.append(block)
    out = ["  " + "".join(b[i] for b in blocks).rstrip() for i in range(height + 1)]
    out.append("  (* = the three current choices)")
    if state.reserve:
        out.append(f"  ({len(state.reserve)} more join behind the token when "
                   f"{state.ruleset.late_join_at} are left)")
    return out
