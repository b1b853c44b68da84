"""`arena sprt`: play seat-swapped game pairs between NEW and OLD until the SPRT decides."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from arena.bots.manifest import Manifest
from arena.bots.pool import BotPool
from arena.engine import Ruleset
from arena.launch.launcher import Launcher
from arena.records import append_record
from arena.referee import TimeControl
from arena.tournament.schedule import pair_seed
from arena.tournament.sprt import SPRT, Status


@dataclass
class SprtState:
    """Counts so far; ``pairs[k]`` = pairs in which NEW won k of the 2 games."""

    sprt: SPRT
    wins: int = 0
    losses: int = 0
    failures: int = 0
    pairs: list[int] = field(default_factory=lambda: [0, 0, 0])

    @property
    def games(self) -> int:
        return self.wins + self.losses

    @property
    def llr(self) -> float:
        return self.sprt.llr_pairs(*self.pairs)

    @property
    def status(self) -> Status:
        return self.sprt.status_pairs(*self.pairs)


def run_sprt(new: Path, old: Path, sprt: SPRT, *, max_games: int, seed: int, log_dir: Path,
             time_control: TimeControl, ruleset: Ruleset | None = None, out: Path | None = None,
             on_pair: Callable[[SprtState], None] | None = None,
             launcher: Launcher | None = None) -> SprtState:
    """Play pairs (same circle, seats swapped) until the test accepts H0 or H1 or
    ``max_games`` are played. H1 is "NEW is stronger by elo1"."""
    manifests = [Manifest.load(new), Manifest.load(old)]
    state = SprtState(sprt)
    with BotPool(manifests, log_dir, launcher=launcher) as pool:
        names = tuple(pool.labels)
        k = 0
        while state.status == "continue" and state.games + 2 <= max_games:
            game_seed = pair_seed(seed, (names[0], names[1]), k)
            won = 0
            for seats in ((0, 1), (1, 0)):
                result = pool.play(*seats, seed=game_seed, ruleset=ruleset,
                                   time_control=time_control, game_id=f"sprt-{k}-{seats[0]}")
                if out is not None:
                    append_record(out, result.record)
                new_won = seats[result.winner] == 0
                won += new_won
                state.wins += new_won
                state.losses += not new_won
                state.failures += result.loser is not None
            state.pairs[won] += 1
            k += 1
            if on_pair is not None:
                on_pair(state)
    return state
