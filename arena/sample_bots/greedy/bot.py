"""The greedy sample bot: the best-looking move one step ahead, no search.

A patch is worth what it pays back (its income times the income spaces still
ahead), plus the 2 points per square it stops from counting against us, minus its
price; dividing by its time cost compares it with advancing, which earns one button
per space. Buying that would leave us unable to afford anything next is discounted
(keep buttons for later). Among the placements of the chosen patch, the one that
touches the most filled cells and edges keeps the quilt compact.
"""

from arena.sdk import run

RESERVE = 3  # buttons we like to keep after a purchase


def remaining_income_spaces(state, position):
    return sum(1 for space in state.ruleset.income_spaces if space > position)


def patch_value(state, player, patch):
    end = min(state.positions[player] + patch.time_cost, state.ruleset.final_space)
    payback = patch.income * remaining_income_spaces(state, end)
    value = payback + 2 * patch.size - patch.buttons_cost
    left = state.buttons[player] - patch.buttons_cost
    if left < RESERVE and state.income[player] < 3:
        value -= (RESERVE - left)
    return value / max(patch.time_cost, 1)


def contact(quilt, mask, rows, cols):
    """How many sides of the placed cells touch a filled cell or the edge of the quilt."""
    touching = 0
    bit = 0
    m = mask
    while m:
        if m & 1:
            row, col = divmod(bit, cols)
            for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                r, c = row + dr, col + dc
                if not (0 <= r < rows and 0 <= c < cols) or quilt >> (r * cols + c) & 1:
                    touching += 1
        m >>= 1
        bit += 1
    return touching


def choose(state, legal_moves, clock):
    player = state.to_move()
    quilt = state.quilts[player]
    rows, cols = state.ruleset.rows, state.ruleset.cols
    if state.decision() == "special":  # a box may also be removed: placing one always pays
        cells = [move for move in legal_moves if move.action == "special"]
        if not cells:
            return legal_moves[0]
        return max(cells, key=lambda move: contact(quilt, move.mask, rows, cols))
    best_patch, best_value = None, 1.0  # advancing earns 1 button per space
    for move in legal_moves:
        if move.action == "buy":
            value = patch_value(state, player, state.ruleset.patch(move.patch))
            if value > best_value:
                best_patch, best_value = move.patch, value
    if best_patch is None:
        return legal_moves[0]  # advance
    placements = [m for m in legal_moves if m.action == "buy" and m.patch == best_patch]
    return max(placements, key=lambda move: (contact(quilt, move.mask, rows, cols), -move.mask))


if __name__ == "__main__":
    run(choose, name="greedy", version="1.0")
