"""Monte Carlo tree search over an abstraction of Patchwork's moves.

A Patchwork decision can have over a thousand legal moves, almost all of them the same
purchase placed in different spots. The tree therefore branches on *what* to do:
advance, or buy one of the (up to) three patches on offer, each placed where the
placement heuristic puts it (at the root, the best few placements of each patch
compete). A special patch is placed by the heuristic as soon as it is won, inside
the same tree step, so the tree never branches on it.

One iteration:

1. **Select** from the root by UCT (UCB1 on the win rate of the player who moved),
   until a node with an untried action;
2. **expand** that action (the engine's ``apply_unchecked``, then the special patch
   if one was won);
3. **play out** from there with a cheap greedy policy (buy the patch worth most per
   space of time, if it beats advancing, a little randomised; place it where it
   touches most), for a fixed number of moves, then **evaluate** the position: the
   difference of the scores both players are heading for, squashed into a win
   probability. A playout that reaches the end scores the real result;
4. **back up** that value along the path.

The move played is the most visited action at the root.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

from heuristics import Knowledge, best_placement, knowledge, patch_value, projected_score, ranked_placements

from arena.engine import ADVANCE, GameState, Move


@dataclass(frozen=True)
class Settings:
    """The search's knobs (defaults tuned against the greedy bot; see README.md)."""

    exploration: float = 0.7  # UCT constant, for values in [0, 1]
    root_placements: int = 3  # placements per patch competing at the root
    placements: int = 1  # ... and below it
    horizon: int = 12  # playout moves before evaluating (0: evaluate the leaf)
    time_value: float = 1.0  # points a space of time left is worth in the evaluation
    scale: float = 6.0  # score difference that makes a 73% favourite (logistic scale)
    epsilon: float = 0.15  # playout: chance of a uniformly random action instead of the best
    cache_limit: int = 200_000  # placement cache entries before it is cleared


class Node:
    """A position reached by ``move``; its statistics are from ``player``'s side (who moved)."""

    __slots__ = ("move", "player", "state", "children", "untried", "visits", "wins")

    def __init__(self, move: Move | None, player: int, state: GameState) -> None:
        self.move = move
        self.player = player
        self.state = state
        self.children: list[Node] = []
        self.untried: list[Move] | None = None  # built on the first visit
        self.visits = 0
        self.wins = 0.0


class Search:
    """One search from a root position. ``run()`` searches until the budget is spent."""

    def __init__(self, root: GameState, rng: random.Random, settings: Settings = Settings()) -> None:
        self.settings = settings
        self.rng = rng
        self.know: Knowledge = knowledge(root.ruleset)
        self.cache: dict[tuple[int, int], Move | None] = {}
        self.root = Node(None, -1, root)
        self.fallback: Move = ADVANCE  # greedy's choice, should time run out before any iteration
        self.root.untried = self.actions(root, settings.root_placements)
        if len(self.root.untried) > 1:
            best = self.root.untried[-1]
            if patch_value(root, root.to_move(), best.patch, self.know.income_left) > 1.0:
                self.fallback = best
        self.iterations = 0
        self.playout_moves = 0

    # ------------------------------------------------------------ actions
    def placement(self, patch_id: int, quilt: int) -> Move | None:
        """The heuristic placement of a patch on a quilt (memoised: playouts from the
        same node keep asking the same questions)."""
        key = (patch_id, quilt)
        move = self.cache.get(key, False)
        if move is False:
            if len(self.cache) >= self.settings.cache_limit:
                self.cache.clear()
            move = self.cache[key] = best_placement(self.know.patches[patch_id], quilt)
        return move  # type: ignore[return-value]

    def actions(self, state: GameState, per_patch: int) -> list[Move]:
        """The abstract actions of a main decision: advance, then each affordable patch
        that fits, in its ``per_patch`` best placements; best-looking patches last (they
        are expanded first: ``untried`` is used as a stack)."""
        player = state.to_move()
        assert player is not None
        quilt, buttons = state.quilts[player], state.buttons[player]
        patches = state.ruleset.patches
        buys: list[tuple[float, list[Move]]] = []
        for patch_id in state.circle[:3]:
            if patches[patch_id].buttons_cost > buttons:
                continue
            if per_patch == 1:
                move = self.placement(patch_id, quilt)
                found = [move] if move is not None else []
            else:
                found = ranked_placements(self.know.patches[patch_id], quilt, per_patch)
            if found:
                value = patch_value(state, player, patch_id, self.know.income_left)
                buys.append((value, found[::-1]))
        buys.sort(key=lambda entry: entry[0])
        return [ADVANCE] + [move for _, moves in buys for move in moves]

    def play(self, state: GameState, move: Move) -> None:
        """Apply a move, and place the special patches it wins at once (same player; a
        Stack'n Stuff move can win several boxes)."""
        state.apply_unchecked(move)
        while (player := state.pending_special) is not None:
            special = best_placement(self.know.special, state.quilts[player])
            state.apply_unchecked(special if special is not None else state.legal_moves()[0])

    # ------------------------------------------------------------ the loop
    def run(self, should_stop: Callable[[int], bool]) -> None:
        """Iterate until ``should_stop(iterations)`` says so (checked every iteration)."""
        while not should_stop(self.iterations):
            self.iterate()

    def iterate(self) -> None:
        settings = self.settings
        node = self.root
        path = [node]
        # 1. selection
        while not node.untried and node.children:
            node = self._select(node, settings.exploration)
            path.append(node)
        # 2. expansion
        if node.untried is None:
            node.untried = (self.actions(node.state, settings.placements)
                            if node.state.to_move() is not None else [])
        if node.untried:
            move = node.untried.pop()
            player = node.state.to_move()
            assert player is not None
            state = node.state.clone()
            self.play(state, move)
            child = Node(move, player, state)
            node.children.append(child)
            node = child
            path.append(node)
        # 3. playout and evaluation
        value0 = self.playout(node.state.clone())
        # 4. backup
        for visited in path:
            visited.visits += 1
            visited.wins += value0 if visited.player == 0 else 1.0 - value0
        self.iterations += 1

    @staticmethod
    def _select(node: Node, exploration: float) -> Node:
        log_n = math.log(node.visits)
        best, best_score = node.children[0], -1.0
        for child in node.children:
            score = child.wins / child.visits + exploration * math.sqrt(log_n / child.visits)
            if score > best_score:
                best, best_score = child, score
        return best

    def playout(self, state: GameState) -> float:
        """Play the cheap policy for ``horizon`` moves; player 0's chance of winning."""
        settings = self.settings
        rng = self.rng
        patches = state.ruleset.patches
        income_left = self.know.income_left
        for _ in range(settings.horizon):
            player = state.to_move()
            if player is None:
                break
            self.playout_moves += 1
            buttons, quilt = state.buttons[player], state.quilts[player]
            options = [(patch_value(state, player, pid, income_left), pid) for pid in state.circle[:3]
                       if patches[pid].buttons_cost <= buttons]
            move: Move = ADVANCE
            if options:
                if rng.random() < settings.epsilon:
                    pick = rng.randrange(len(options) + 1)
                    options = [options[pick - 1]] if pick else []
                    threshold = -math.inf
                else:
                    options.sort(reverse=True)
                    threshold = 1.0  # advancing earns one button per space
                for value, pid in options:
                    if value <= threshold:
                        break
                    placed = self.placement(pid, quilt)
                    if placed is not None:
                        move = placed
                        break
            self.play(state, move)
        if state.is_terminal():
            winner = state.winner()
            return 1.0 if winner == 0 else 0.0
        return self.evaluate(state)

    def evaluate(self, state: GameState) -> float:
        """Player 0's chance of winning, from the difference of projected final scores."""
        settings = self.settings
        income_left = self.know.income_left
        diff = (projected_score(state, 0, income_left, settings.time_value)
                - projected_score(state, 1, income_left, settings.time_value))
        return 1.0 / (1.0 + math.exp(-diff / settings.scale))

    # ------------------------------------------------------------ results
    def _chosen(self) -> Node | None:
        """The root child to play: the most visited (ties: the better win rate)."""
        if not self.root.children:
            return None
        return max(self.root.children, key=lambda c: (c.visits, c.wins / c.visits))

    def best_move(self) -> Move:
        """The root action to play (greedy's choice if no iteration finished)."""
        best = self._chosen()
        if best is None:
            return self.fallback
        assert best.move is not None
        return best.move

    def summary(self, elapsed_s: float) -> str:
        """An info line for the game record: effort, and how the chosen action fared."""
        text = f"{self.iterations} iterations in {elapsed_s * 1000:.0f} ms"
        best = self._chosen()
        if best is not None:
            text += f"; win rate {best.wins / best.visits:.2f} over {best.visits} visits"
        return text

