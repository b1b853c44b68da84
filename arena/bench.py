"""`make bench`: performance figures, printed (never asserted by a timed test).

Run as ``python -m arena.bench [section ...] [--quick] [--fastchess PATH] [--stockfish PATH]``;
sections: engine, referee, tournament, sandbox, freeze, wait, harness, peer, serve (default:
all). ``--quick`` makes the harness and peer sections short smoke runs (their figures are not
meaningful). ``--fastchess`` is the fastchess binary the peer section compares the harness with
(without it, a C pipe floor), ``--stockfish`` its engine (default: ``stockfish`` on PATH, else
/usr/games/stockfish).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.bench_harness import bench_harness
from arena.bench_peer import bench_peer
from arena.bench_serve import bench_serve
from arena.engine import GameState

if TYPE_CHECKING:
    from arena.bots.manifest import Manifest
    from arena.bots.session import BotHandle

Section = Callable[[], None]


def bench_engine(seconds: float = 5.0) -> None:
    """Uniformly random games/s on one core, enumerating all legal moves at every decision."""
    games = decisions = 0
    movegen_ns: list[int] = []
    apply_ns: list[int] = []
    start = time.perf_counter()
    seed = 0
    while time.perf_counter() - start < seconds:
        state = GameState.new(seed, first_player=seed % 2)
        rng = random.Random(seed)
        while not state.is_terminal():
            moves = state.legal_moves()
            move = rng.choice(moves)
            state.apply_unchecked(move)
            decisions += 1
        games += 1
        seed += 1
    elapsed = time.perf_counter() - start
    # Separate timing pass so the clock calls do not slow the games/s figure above.
    for seed in range(200):
        state = GameState.new(10_000 + seed)
        rng = random.Random(seed)
        while not state.is_terminal():
            t0 = time.perf_counter_ns()
            moves = state.legal_moves()
            t1 = time.perf_counter_ns()
            move = rng.choice(moves)
            t2 = time.perf_counter_ns()
            state.apply_unchecked(move)
            t3 = time.perf_counter_ns()
            movegen_ns.append(t1 - t0)
            apply_ns.append(t3 - t2)
    checked_ns = []
    for seed in range(100):
        state = GameState.new(20_000 + seed)
        rng = random.Random(seed)
        while not state.is_terminal():
            move = rng.choice(state.legal_moves())
            t0 = time.perf_counter_ns()
            state.apply(move)
            checked_ns.append(time.perf_counter_ns() - t0)
    print("engine (one core, uniformly random legal moves, all moves enumerated per decision)")
    print(f"  random games/s:              {games / elapsed:10.1f}   ({games} games, "
          f"{decisions / games:.1f} decisions/game)")
    print(f"  legal-move generation/dec.:  {_us(movegen_ns)}")
    print(f"  apply_unchecked:             {_us(apply_ns)}")
    print(f"  apply (checked):             {_us(checked_ns)}")


def bench_referee(games: int = 60) -> None:
    """Referee overhead per move and random-vs-random games/s, one game at a time, bots reused."""
    import tempfile
    from pathlib import Path

    from arena.bots.manifest import Manifest
    from arena.bots.pool import BotPool, sample_bots_dir

    random_bot = Manifest.load(sample_bots_dir() / "random")
    overhead: list[int] = []
    with tempfile.TemporaryDirectory() as tmp, BotPool([random_bot, random_bot], Path(tmp)) as pool:
        pool.play(0, 1, seed=0)  # start both processes before timing
        start = time.perf_counter()
        for game in range(games):
            result = pool.play(game % 2, 1 - game % 2, seed=game, measure=True)
            overhead.extend(result.overhead_ns)
        elapsed = time.perf_counter() - start
    print("referee (random vs random over ZeroMQ, one game at a time, bots reused)")
    print(f"  games/s:                     {games / elapsed:10.1f}   ({games} games)")
    print(f"  overhead per move:           {_us(overhead)}   max {max(overhead) / 1000:.0f} us")
    print("  (overhead = referee time per move outside the bot: decode and check the reply,")
    print("   apply it, build, encode and send the next request)")


def bench_tournament(games_per_pairing: int = 100) -> None:
    """Round robin of three random bots at concurrency 1 and 2, then on a Dask LocalCluster.

    Two rates per run: over the whole run (worker and bot start-up included), and in
    steady state (from the first finished game to the last), which is what scaling is about."""
    import shutil
    import tempfile
    from pathlib import Path

    from arena.bots.pool import sample_bots_dir
    from arena.tournament.config import load_config
    from arena.tournament.runner import run_tournament

    with tempfile.TemporaryDirectory() as tmp:
        bots = Path(tmp) / "bots"
        for name in ("random-a", "random-b", "random-c"):
            shutil.copytree(sample_bots_dir() / "random", bots / name)
            toml = bots / name / "bot.toml"
            toml.write_text(toml.read_text().replace('name = "random"', f'name = "{name}"'))

        def timed(concurrency: int, label: str, executor_factory=None) -> tuple[float, float, float]:  # type: ignore[no-untyped-def]
            """(games/s overall, games/s in steady state, seconds to the first game)."""
            config = load_config(None, {"entrants": [str(bots)], "games": games_per_pairing,
                                        "concurrency": concurrency, "out": str(Path(tmp) / label)})
            executor = executor_factory(config) if executor_factory else None
            finished: list[float] = []
            started = time.monotonic()
            summary = run_tournament(config, executor=executor, on_progress=lambda p, spec: (
                finished.append(time.monotonic()) if spec is not None else None))
            steady = (len(finished) - 1) / (finished[-1] - finished[0])
            return summary.played / summary.seconds, steady, finished[0] - started

        games = 3 * games_per_pairing
        print(f"tournament (round robin of 3 random bots, {games} games, stored in SQLite, "
              "bots in the default strict sandbox)")
        rates = {}
        for concurrency in (1, 2):
            overall, steady, first = timed(concurrency, f"c{concurrency}")
            rates[concurrency] = steady
            print(f"  concurrency {concurrency}:  {overall:6.1f} games/s overall, {steady:6.1f} in steady "
                  f"state, first game after {first:.2f} s")
        print(f"  scaling 1 -> 2 (steady state): {rates[2] / rates[1]:.2f}x")
        try:
            from distributed import LocalCluster

            from arena.tournament.distributed import DaskExecutor
            from arena.tournament.runner import tournament_lineup
        except ImportError:  # pragma: no cover
            print("  dask: not installed")
            return
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster:
            overall, steady, first = timed(
                2, "dask", lambda config: DaskExecutor(tournament_lineup(config), cluster.scheduler_address))
        extra_ms = (1 / steady - 1 / rates[2]) * 2 * 1000  # two workers: per game of worker time
        print(f"  dask LocalCluster, 2 workers: {overall:6.1f} games/s overall, {steady:6.1f} in steady "
              f"state, first game after {first:.2f} s (bots shipped and started)")
        print(f"  dask extra cost per game vs local processes (steady state): {extra_ms:+.1f} ms "
              "of worker time")


def bench_sandbox(starts: int = 10, games: int = 20) -> None:
    """Strict sandbox against none: time to hello per bot start, and the referee's round
    trip per move (random vs random, bots reused)."""
    import tempfile
    from pathlib import Path

    from arena.bots.manifest import Manifest
    from arena.bots.pool import BotPool, sample_bots_dir
    from arena.launch.bubblewrap import check_strict_available
    from arena.launch.launcher import Launcher

    print("sandbox (strict vs none)")
    for line in check_strict_available():
        print(f"  in force: {line}")
    bots = [Manifest.load(sample_bots_dir() / name) for name in ("random", "cbot")]
    random_bot = bots[0]
    start_ms: dict[tuple[str, str], list[float]] = {}
    round_trip: dict[str, list[float]] = {}
    rates: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for level in ("none", "strict"):
            with BotPool(bots, Path(tmp) / level, launcher=Launcher.for_level(level)) as pool:
                for index, bot in enumerate(bots):
                    samples = start_ms.setdefault((bot.name, level), [])
                    for _ in range(starts):
                        pool.handles[index].kill()
                        samples.append(pool.start_time(index) * 1000)
            with BotPool([random_bot, random_bot], Path(tmp) / f"{level}-games",
                         launcher=Launcher.for_level(level)) as pool:
                pool.play(0, 1, seed=0)  # start both processes before timing
                times = round_trip.setdefault(level, [])
                started = time.perf_counter()
                for game in range(games):
                    result = pool.play(game % 2, 1 - game % 2, seed=game)
                    times.extend(move["time_ms"] for move in result.record["moves"])
                rates[level] = games / (time.perf_counter() - started)
    for bot in bots:
        none, strict = (statistics.median(start_ms[(bot.name, level)]) for level in ("none", "strict"))
        print(f"  start to hello, {bot.name:7s} median: none {none:7.1f} ms   strict {strict:7.1f} ms   "
              f"sandbox cost {strict - none:+6.1f} ms   ({starts} starts each)")
    none_rt, strict_rt = (statistics.fmean(round_trip[level]) for level in ("none", "strict"))
    print(f"  move round trip, mean:       none {none_rt * 1000:7.0f} us   strict {strict_rt * 1000:7.0f} us"
          f"   overhead {(strict_rt - none_rt) * 1000:+6.0f} us per move")
    for level in ("none", "strict"):
        print(f"  {level:6s} round trip {_us([int(ms * 1e6) for ms in round_trip[level]])}   "
              f"{rates[level]:5.1f} games/s ({games} games, {len(round_trip[level])} moves)")


_WORK_BOT = """import os, sys, time
from arena.sdk import run

HOG = len(sys.argv) > 1 and sys.argv[1] == "hog"
SLEEP = len(sys.argv) > 1 and sys.argv[1] == "sleep"
if HOG:  # helpers that spin forever, between moves too unless the bot is frozen
    for _ in range(int(sys.argv[2])):
        if os.fork() == 0:
            while True:
                pass


def choose(state, legal_moves, clock):
    if SLEEP:  # takes its time, uses no CPU: the hog's helpers could have it all
        time.sleep(0.05)
    elif not HOG:  # a fixed amount of work per move
        total = 0
        for i in range({work}):
            total += i * i
    return legal_moves[0]


run(choose, name=sys.argv[1] if len(sys.argv) > 1 else "work", version="1.0")
"""


def bench_freeze(games: int = 4, work: int = 150_000) -> None:
    """A fixed-work bot's time per move (both seats of a work-vs-work game), alone and beside
    CPU hog bots playing other games at the same time (one hog game per core; each hog has
    helper processes spinning, capped at one core by its cgroup; its opponent sleeps 50 ms
    per move, using no CPU), with bots frozen off their turn and with pondering; plus what
    thaw + freeze cost the referee per move."""
    import multiprocessing as mp
    import tempfile

    from arena.bots.pool import BotPool
    from arena.launch.bubblewrap import check_strict_available
    from arena.launch.cgroup import detect
    from arena.launch.launcher import Launcher

    check_strict_available()
    print(f"freeze (strict sandbox; freezer: {detect().describe('freezer')})")
    hogs = max(1, mp.cpu_count())
    rows: list[tuple[str, str, list[float], list[int]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        bots = _work_bots(Path(tmp) / "bots", work)
        for pondering in (False, True):
            for beside in (False, True):
                with _hog_games_beside(bots, Path(tmp), hogs if beside else 0, pondering), \
                        BotPool([bots["work"], bots["work"]], Path(tmp) / "logs",
                                launcher=Launcher.for_level("strict"), pondering=pondering) as pool:
                    pool.play(0, 1, seed=0)  # start both before timing (the hogs start meanwhile)
                    times: list[float] = []
                    freeze_ns: list[int] = []
                    for game in range(games):
                        result = pool.play(game % 2, 1 - game % 2, seed=game, measure=True)
                        times.extend(move["time_ms"] for move in result.record["moves"])
                        freeze_ns.extend(result.freeze_ns)
                rows.append(("pondering" if pondering else "frozen",
                             f"beside {hogs} hog game(s)" if beside else "alone", times, freeze_ns))
    print(f"  fixed-work bot, time per move ({games} games, {work} loop iterations per move):")
    print(f"  {'bots':10s} {'load':22s} {'mean ms':>8s} {'p50 ms':>8s} {'p90 ms':>8s}   thaw+freeze per move")
    for mode, load, times, freeze_ns in rows:
        ordered = sorted(times)
        cost = _us(freeze_ns) if freeze_ns and mode == "frozen" else "-"
        print(f"  {mode:10s} {load:22s} {statistics.fmean(times):8.1f} {statistics.median(times):8.1f} "
              f"{ordered[int(len(ordered) * 0.9)]:8.1f}   {cost}")


def _work_bots(folder: Path, work: int) -> dict[str, Manifest]:
    """The bench's bots of _WORK_BOT: work (fixed work a move), hog (3 helpers spinning
    forever), spin (1 such helper), sleep (50 ms a move, no CPU), readable by sandboxed bots."""
    from arena.bots.manifest import Manifest

    commands = {"work": ["python", "bot.py"], "hog": ["python", "bot.py", "hog", "3"],
                "spin": ["python", "bot.py", "hog", "1"], "sleep": ["python", "bot.py", "sleep"]}
    for name, argv in commands.items():
        bot = folder / name
        bot.mkdir(parents=True)
        (bot / "bot.py").write_text(_WORK_BOT.format(work=work))
        (bot / "bot.toml").write_text(f'name = "{name}"\ncommand = {argv!r}\nprotocol = "zmq"\n'
                                      .replace("'", '"'))
    folder.chmod(0o755)
    for path in folder.rglob("*"):
        path.chmod(0o755)
    return {name: Manifest.load(folder / name) for name in commands}


@contextlib.contextmanager
def _hog_games_beside(bots: dict[str, Manifest], tmp: Path, count: int, pondering: bool) -> Iterator[None]:
    """``count`` hog games (hog vs sleep, game after game) in processes of their own meanwhile."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    others = [ctx.Process(target=_hog_games, args=(str(bots["hog"].folder), str(bots["sleep"].folder),
                                                    str(tmp / f"hog-{i}"), pondering, stop), daemon=True)
              for i in range(count)]
    for process in others:
        process.start()
    try:
        yield
    finally:
        stop.set()
        for process in others:
            process.join(30)
            if process.is_alive():
                process.kill()


class _WaitWatch:
    """A bot (BotHandle) whose processes' CPU is read when its reply comes in and again once
    the kernel reports it frozen (or when it is thawed, had it not been frozen): the CPU it
    got while waiting for its turn. Waiting for the kernel slows the referee a little."""

    def __init__(self, handle: BotHandle) -> None:
        self.inner = handle
        self.mark: int | None = None
        self.waits_ms: list[float] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def cpu_ns(self) -> int:
        assert self.inner.process is not None and self.inner.process.cgroup is not None
        total = 0
        for pid in self.inner.process.cgroup.pids():
            try:
                total += time.clock_gettime_ns(((~pid) << 3) | 2)  # the process's CPU clock
            except OSError:  # gone meanwhile
                pass
        return total

    def receive(self, timeout_s: float) -> dict[str, Any] | None:
        message = self.inner.receive(timeout_s)
        if message is not None and message["type"] == "move":
            self.mark = self.cpu_ns()
        return message

    def freeze(self) -> None:
        self.inner.freeze()
        if self.mark is not None and self.inner.frozen:
            assert self.inner.process is not None and self.inner.process.cgroup is not None
            self.inner.process.cgroup.freeze(1.0)
            self._close()

    def thaw(self) -> None:
        if self.mark is not None:
            self._close()
        self.inner.thaw()

    def _close(self) -> None:
        assert self.mark is not None
        self.waits_ms.append((self.cpu_ns() - self.mark) / 1e6)
        self.mark = None


def bench_wait(games: int = 6) -> None:
    """The CPU a bot gets while it waits for its turn, frozen: a bot that replies at once and
    has a helper process spinning forever, against the fixed-work bot (about 15 ms a move),
    alone and beside one hog game per core. Read from the bot's processes' CPU clocks between
    its reply's arrival and the kernel's report that it is frozen (README, Sandbox)."""
    import multiprocessing as mp
    import tempfile

    from arena.bots.pool import BotPool
    from arena.launch.bubblewrap import check_strict_available
    from arena.launch.launcher import Launcher
    from arena.referee import FREEZE_GRACE_S, play_game

    check_strict_available()
    hogs = max(1, mp.cpu_count())
    print(f"wait (strict; a replying bot whose helper spins, vs a fixed-work bot; grace "
          f"{FREEZE_GRACE_S * 1000:g} ms): the spinner's CPU per wait, ms ({games} games)")
    print(f"  {'load':22s} {'waits':>6s} {'mean':>7s} {'p50':>7s} {'p90':>7s} {'p99':>7s} {'max':>7s}")
    with tempfile.TemporaryDirectory() as tmp:
        bots = _work_bots(Path(tmp) / "bots", 150_000)
        for beside in (False, True):
            with _hog_games_beside(bots, Path(tmp), hogs if beside else 0, False), \
                    BotPool([bots["spin"], bots["work"]], Path(tmp) / f"logs-{beside}",
                            launcher=Launcher.for_level("strict")) as pool:
                pool.play(0, 1, seed=0)  # both started before measuring (the hogs start meanwhile)
                watched = _WaitWatch(pool.handles[0])
                for game in range(games):
                    pair = (watched, pool.handles[1]) if game % 2 == 0 else (pool.handles[1], watched)
                    play_game(pair, seed=game)  # type: ignore[arg-type]
            ms = sorted(watched.waits_ms)
            print(f"  {f'beside {hogs} hog game(s)' if beside else 'alone':22s} {len(ms):6d} "
                  f"{statistics.fmean(ms):7.2f} {ms[len(ms) // 2]:7.2f} {ms[int(len(ms) * 0.9)]:7.2f} "
                  f"{ms[int(len(ms) * 0.99)]:7.2f} {ms[-1]:7.2f}")


def _hog_games(hog: str, opponent: str, log_dir: str, pondering: bool, stop: object) -> None:
    """Worker of :func:`bench_freeze`: hog vs the sleeping bot, game after game."""
    from pathlib import Path

    from arena.bots.manifest import Manifest
    from arena.bots.pool import BotPool
    from arena.launch.launcher import Launcher

    with BotPool([Manifest.load(Path(hog)), Manifest.load(Path(opponent))], Path(log_dir),
                 launcher=Launcher.for_level("strict"), pondering=pondering) as pool:
        game = 0
        while not stop.is_set():  # type: ignore[attr-defined]
            pool.play(game % 2, 1 - game % 2, seed=1000 + game)
            game += 1


def _us(samples_ns: list[int]) -> str:
    mean = statistics.fmean(samples_ns) / 1000
    p50 = statistics.median(samples_ns) / 1000
    p99 = sorted(samples_ns)[int(len(samples_ns) * 0.99)] / 1000
    return f"mean {mean:7.2f} us   p50 {p50:7.2f} us   p99 {p99:7.2f} us"


SECTIONS: dict[str, Section] = {"engine": bench_engine, "referee": bench_referee,
                                "tournament": bench_tournament, "sandbox": bench_sandbox,
                                "freeze": bench_freeze, "wait": bench_wait, "harness": bench_harness,
                                "peer": bench_peer, "serve": bench_serve}


def parser() -> argparse.ArgumentParser:
    """The command line of ``python -m arena.bench`` (docs/performance.md documents each option)."""
    parser = argparse.ArgumentParser(prog="python -m arena.bench", description="Print performance figures.")
    parser.add_argument("sections", nargs="*", metavar="section",
                        help=f"sections to run (default: all): {', '.join(SECTIONS)}")
    parser.add_argument("--quick", action="store_true", help="harness and peer: short smoke runs")
    parser.add_argument("--fastchess", metavar="PATH",
                        help="peer: the fastchess binary to compare with (without it: a C pipe floor)")
    parser.add_argument("--stockfish", metavar="PATH",
                        help="peer: fastchess's engine (default: stockfish on PATH, else "
                        "/usr/games/stockfish)")
    return parser


def main(argv: list[str]) -> None:
    args = parser().parse_intermixed_args(argv)
    sections = dict(SECTIONS)
    sections["harness"] = functools.partial(bench_harness, quick=args.quick)
    sections["peer"] = functools.partial(bench_peer, quick=args.quick, fastchess=args.fastchess,
                                         stockfish=args.stockfish)
    for name in args.sections:
        if name not in sections:
            raise SystemExit(f"unknown bench section {name!r}: choose from {', '.join(sections)}")
    for name in args.sections or list(sections):
        sections[name]()


if __name__ == "__main__":
    main(sys.argv[1:])
