"""`make bench-bots`: how strong is a bot? Win rates against the sample bots, printed.

Run as ``python -m arena.bench_bots [--games 200] [--per-move-ms 1000] [--concurrency 2]
[--bot sample_bots/mcts] [--opponents greedy random]``. Not a timed test: at the default
1 s per move, 200 games against each of two opponents take over an hour on two cores.

Every opponent plays game pairs on one seed (the same patch circle) with the seats
swapped, as `arena play` does: games 2k and 2k+1 use seed S+k, the bot under test in
seat 0 and then in seat 1 (seat 0 moves first). Pairs alternate between the opponents,
so a run cut short is still balanced (:func:`arena.tournament.schedule.gauntlet_schedule`). The
bots are built once, then the games run ``--concurrency`` at a time through the series
runner, each worker process with its own bot processes kept across games (a worker that
dies has its game played again by a fresh one). A line is printed per finished game and
the table every ``--table-every`` games, so a partial run has partial results; the table
again at the end:

    opponent, games, wins, win rate, 95% Wilson interval, mean score margin,
    mean and max think time per move of the bot under test, moves over the per-move
    limit (drawn on the bank), failures (games not ended by the rules).

A machine busy with other work makes a time-limited bot weaker, never stronger.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.clock import TimeControl
from arena.referee import GameResult
from arena.report.stats import wilson_interval
from arena.tournament.schedule import GameSpec, gauntlet_schedule

if TYPE_CHECKING:
    from arena.tournament.series import Lineup


@dataclass
class GameSummary:
    """What a worker sends back for one game."""

    opponent: int  # its index in the pool (the tested bot is 0)
    seed: int
    seat: int  # the tested bot's seat
    won: bool
    margin: int  # tested bot's score minus the opponent's
    termination: str
    detail: str
    think_ms: list[float]  # the tested bot's time per move, as the referee measured it
    duration_s: float
    record: dict[str, Any] | None = None


@dataclass
class Tally:
    games: int = 0
    wins: int = 0
    margins: list[int] = field(default_factory=list)
    think_ms: list[float] = field(default_factory=list)
    over_limit: int = 0
    failures: list[str] = field(default_factory=list)

    def add(self, game: GameSummary, per_move_ms: int, first_move_ms: int) -> None:
        self.games += 1
        self.wins += game.won
        self.margins.append(game.margin)
        self.think_ms.extend(game.think_ms)
        tc = TimeControl(per_move_ms, 0, first_move_ms)  # its limits, as arena.clock says
        limits = [tc.limit_ms(first_move=i == 0) for i in range(len(game.think_ms))]
        self.over_limit += sum(t > limit for t, limit in zip(game.think_ms, limits, strict=True))
        if game.termination != "normal":
            self.failures.append(f"seed {game.seed} seat {game.seat}: {game.termination}: {game.detail}")


def format_table(bot: str, tallies: dict[str, Tally]) -> str:
    header = (f"| opponent | games | {bot} wins | win rate | 95% interval | mean margin | "
              "think ms/move (mean / max) | over limit | failures |")
    lines = [header, "|---|---:|---:|---:|---|---:|---|---:|---:|"]
    for name, tally in tallies.items():
        if tally.games == 0:
            continue
        low, high = wilson_interval(tally.wins, tally.games)  # 95%
        think = tally.think_ms or [0.0]
        lines.append(
            f"| {name} | {tally.games} | {tally.wins} | {tally.wins / tally.games:.1%} | "
            f"{low:.1%} - {high:.1%} | {sum(tally.margins) / tally.games:+.1f} | "
            f"{sum(think) / len(think):.0f} / {max(think):.0f} | {tally.over_limit} | "
            f"{len(tally.failures)} |")
    return "\n".join(lines)


def summarize(lineup: Lineup, spec: GameSpec, result: GameResult, keep_record: bool) -> GameSummary:
    """What the table needs of one game of the bot under test (``lineup.labels[0]``)."""
    seat = 0 if spec.seat0 == lineup.labels[0] else 1
    opponent = lineup.labels.index((spec.seat0, spec.seat1)[1 - seat])
    scores = result.scores
    think = [m["time_ms"] for m in result.record["moves"] if m["player"] == seat]
    return GameSummary(
        opponent=opponent, seed=spec.seed, seat=seat, won=result.winner == seat,
        margin=scores[seat] - scores[1 - seat], termination=result.termination.value,
        detail=result.detail, think_ms=think, duration_s=result.duration_s,
        record=result.record if keep_record else None)


def main(argv: list[str] | None = None) -> int:
    from arena.bots.pool import sample_bots_dir
    from arena.records import append_record
    from arena.tournament.series import Lineup, build_lineup, run_series
    from arena.tournament.workers import WorkerProcesses

    samples = sample_bots_dir()
    parser = argparse.ArgumentParser(prog="python -m arena.bench_bots", description=__doc__.splitlines()[0])
    parser.add_argument("--bot", default=str(samples / "mcts"), help="the bot folder under test")
    parser.add_argument("--opponents", nargs="+", default=[str(samples / "greedy"), str(samples / "random")],
                        help="opponent bot folders (or names of sample bots)")
    parser.add_argument("--games", type=int, default=200, help="games per opponent (even)")
    parser.add_argument("--per-move-ms", type=int, default=1000)
    parser.add_argument("--bank-ms", type=int, default=10_000)
    parser.add_argument("--first-move-ms", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=2, help="games at once (worker processes)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the first pair")
    parser.add_argument("--edition", default="revised", choices=["revised", "original"])
    parser.add_argument("--table-every", type=int, default=20, help="print the table every N games")
    parser.add_argument("--out", type=Path, help="append the game records to this .jsonl file")
    parser.add_argument("--logs", type=Path, help="folder for the bots' logs (default: temporary)")
    args = parser.parse_args(argv)
    if args.games < 2 or args.games % 2:
        parser.error("--games must be even and at least 2 (seat-swapped pairs)")
    if args.concurrency < 1:
        parser.error("--concurrency must be at least 1")

    def folder(name: str) -> str:
        path = Path(name)
        return str(path if path.is_dir() else samples / name)

    time_control = TimeControl(args.per_move_ms, args.bank_ms, args.first_move_ms)
    lineup = Lineup.of([Path(folder(name)) for name in [args.bot, *args.opponents]],
                       time_control=time_control, edition=args.edition)
    labels = lineup.labels
    bot_name = labels[0]
    schedule = gauntlet_schedule(bot_name, labels[1:], args.games, args.seed)
    total = args.games * (len(labels) - 1)
    tallies = {label: Tally() for label in labels[1:]}
    print(f"{bot_name} vs {', '.join(tallies)}: {args.games} games each, {args.per_move_ms} ms per "
          f"move (bank {args.bank_ms}, first move {args.first_move_ms}), {args.edition}, "
          f"concurrency {args.concurrency}, seeds from {args.seed}", flush=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-bots-") as tmp:
        log_root = args.logs or Path(tmp)
        lineup = build_lineup(lineup, log_root, log_root / "builds")  # once, before the workers start
        if lineup.broken:
            raise SystemExit(f"build failed: {dict(lineup.broken)}")
        done = 0

        def count(spec: GameSpec, result: GameResult) -> None:
            nonlocal done
            game = summarize(lineup, spec, result, args.out is not None)
            done += 1
            tallies[labels[game.opponent]].add(game, args.per_move_ms, args.first_move_ms)
            if args.out is not None:
                args.out.parent.mkdir(parents=True, exist_ok=True)
                append_record(args.out, result.record)
            print(_game_line(done, total, labels, game, started), flush=True)
            if done % args.table_every == 0 and done < total:
                print(format_table(bot_name, tallies), flush=True)

        executor = WorkerProcesses(lineup, log_root, args.concurrency)
        try:
            run_series(schedule, executor, count)
        except KeyboardInterrupt:
            print("interrupted: the table holds the games finished so far", flush=True)
        finally:
            executor.close()
    print(f"\n{bot_name}: {sum(t.games for t in tallies.values())} games in "
          f"{(time.monotonic() - started) / 60:.1f} min")
    print(format_table(bot_name, tallies))
    for name, tally in tallies.items():
        for failure in tally.failures:
            print(f"failure vs {name}: {failure}")
    return 0


def _game_line(done: int, total: int, labels: Sequence[str], game: GameSummary, started: float) -> str:
    elapsed = time.monotonic() - started
    eta = elapsed / done * (total - done)
    outcome = "wins" if game.won else "loses"
    text = (f"[{done}/{total}] vs {labels[game.opponent]} seed {game.seed} seat {game.seat}: "
            f"{labels[0]} {outcome} "
            f"by {game.margin:+d} ({game.termination}) in {game.duration_s:.0f} s; "
            f"think max {max(game.think_ms or [0]):.0f} ms; elapsed {elapsed / 60:.1f} min, "
            f"eta {eta / 60:.1f} min")
    return text + (f": {game.detail}" if game.detail else "")


if __name__ == "__main__":
    sys.exit(main())
