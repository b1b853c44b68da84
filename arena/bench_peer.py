"""`make bench`'s peer section: the harness's CPU per move side by side with fastchess.

``python -m arena.bench peer [--quick] [--fastchess PATH] [--stockfish PATH]``. The target
(issue 34): **no pair above 1.0x fastchess in the same run**, each pair measured in adjacent
runs on the same machine, over at least two interleaved rounds.

* **Our side**: the harness section's null bots (:mod:`arena.bench_harness`: C over stdio,
  Python over ZeroMQ; they never ask for the legal moves, the analogue of stockfish at
  ``nodes=1``), through ``arena run-tournament``, over stdio and ZeroMQ, sandbox ``none``
  and ``strict``, concurrency 1 and 2. The harness's CPU is each harness process's own:
  the coordinator's (``RUSAGE_SELF``), each referee worker's (its threads, not its children:
  ``/proc/<pid>/stat`` as it exits, before the coordinator reaps it) and each ZeroMQ
  bridge's (read by its null bot at exit from ``/proc/<ppid>/task/*/schedstat``; the bridge
  runs inside the bot's sandbox but is harness code). The bots' CPU is never in it: no
  subtraction, and no reliance on the sandbox's processes being reaped through the worker
  (under ``strict`` they are not always). Each null bot also reports its own CPU (in its
  stats file, or under ``strict`` on a line of its log), shown for scale.
* **fastchess**: two stockfish engines at ``tc=inf nodes=1``, ``-games 2``, at concurrency
  1 and 2. Its CPU is fastchess's own, bots excluded exactly: once it exits (and before it
  is reaped: ``waitid(WNOWAIT)``) its ``/proc/<pid>/stat`` holds its threads' utime+stime,
  and the engines' CPU apart (cutime+cstime). Moves are the plies of the PGN it writes
  (``PlyCount`` tags, or the moves counted).
* **Steady state**: each figure is the difference between a short and a long run of the
  same setup, per move (``bench_harness._margin``): start-up (processes, imports, engine
  and network loading) cancels.
* **Adjacent and interleaved**: each of our setups is measured right beside fastchess at
  the same concurrency (the two runs of one, then the two of the other; which goes first
  alternates from pair to pair and round to round); every run's 1-minute load average is
  printed beside its figure.
* **Without fastchess** (no ``--fastchess``, or no stockfish), the section says so and
  compares with a **C pipe floor** instead (``bench_null_bots/pipe_floor.c``, built with gcc
  at bench time in a temporary folder): the referee side of a bare pipe loop against two
  null C bots, sending the referee's requests built ahead, reading replies buffered, its
  own CPU over the loop (getrusage). No verdict against the target is given then.
* **Greedy-bot games per second per core**: the greedy sample bot against itself over stdio
  and ZeroMQ, sandbox none, concurrency 1 and 2: games/s at the margin, the cores the whole
  tree used meanwhile (CPU seconds per wall second, bots included) and their quotient.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import orjson

from arena.bench_harness import NULL_BOTS, Bench, Run, _floor_games, _margin

T = TypeVar("T")
TARGET = 1.0  # our harness CPU per move over fastchess's, in the same run
OurPair = tuple[str, str, int]  # transport, sandbox, concurrency
OUR_PAIRS: tuple[OurPair, ...] = tuple((t, s, c) for s in ("none", "strict") for t in ("stdio", "zmq")
                                       for c in (1, 2))
STOCKFISH_PLACES = ("/usr/games/stockfish",)  # Debian's package, off PATH for non-root users
SEQ_HOLE = 999_999_999  # the C floor's placeholder for a request's seq


@dataclass(frozen=True)
class PeerSizes:
    """Games per run: short and long (the margin) for each side."""

    rounds: int
    short: int  # our null-bot games (59 moves each), sandbox none
    long: int
    strict_short: int
    strict_long: int
    peer_short: int  # fastchess games (about 117 plies each with stockfish at nodes=1)
    peer_long: int
    floor_games: int  # the C floor's loop
    greedy_short: int
    greedy_long: int


FULL = PeerSizes(rounds=2, short=40, long=400, strict_short=20, strict_long=200, peer_short=10, peer_long=150,
                 floor_games=2000, greedy_short=20, greedy_long=120)
QUICK = PeerSizes(rounds=1, short=2, long=4, strict_short=2, strict_long=4, peer_short=2, peer_long=4,
                  floor_games=20, greedy_short=2, greedy_long=4)


@dataclass
class PeerRun:
    """One run of the peer (fastchess or the C floor): its CPU with the bots excluded."""

    moves: int
    cpu_s: float
    bots_cpu_s: float
    wall_s: float
    load: float
    failures: int = 0
    detail: str = ""


@dataclass
class Figure:
    """A steady-state figure: CPU per move at the margin, and the loads of its runs."""

    per_move_s: float
    loads: tuple[float, ...]

    @property
    def load(self) -> str:
        return "-".join(f"{x:.1f}" for x in sorted({round(x, 1) for x in self.loads}))


# ------------------------------------------------------------------ pure parts (unit-tested)
_TAG = re.compile(r'^\[(\w+)\s+"((?:[^"\\]|\\.)*)"\]\s*$')
_MOVE_NUMBER = re.compile(r"^\d+\.(\.\.)?$")
_RESULTS = {"1-0", "0-1", "1/2-1/2", "*"}


@dataclass(frozen=True)
class PgnGame:
    plies: int
    termination: str  # the Termination tag; "" if none
    result: str


def pgn_games(text: str) -> list[PgnGame]:
    """The games of a PGN file: plies (the ``PlyCount`` tag, else the moves counted in the
    movetext, comments and variations left out), termination and result."""
    games: list[PgnGame] = []
    tags: dict[str, str] = {}
    movetext: list[str] = []

    def close() -> None:
        if not tags and not movetext:
            return
        body = " ".join(movetext)
        body = re.sub(r"\{[^}]*\}", " ", body)  # comments
        body = re.sub(r";[^\n]*", " ", body)
        while re.search(r"\([^()]*\)", body):  # variations, innermost first
            body = re.sub(r"\([^()]*\)", " ", body)
        counted = 0
        for token in body.split():
            token = re.sub(r"^\d+\.(\.\.)?", "", token)  # "12.e4" and "12...e5" forms
            if token and not (_MOVE_NUMBER.match(token) or token in _RESULTS or token.startswith("$")):
                counted += 1
        plies = int(tags["PlyCount"]) if tags.get("PlyCount", "").isdigit() else counted
        games.append(PgnGame(plies, tags.get("Termination", ""), tags.get("Result", "")))
        tags.clear()
        movetext.clear()

    in_movetext = False
    for line in text.splitlines():
        match = _TAG.match(line.strip())
        if match:
            if in_movetext:  # a tag after movetext: the next game
                close()
                in_movetext = False
            tags[match.group(1)] = match.group(2)
        elif line.strip():
            in_movetext = True
            movetext.append(line)
    close()
    return games


def pgn_plies(text: str) -> tuple[int, int, int, str]:
    """(plies, games, games not ended normally, the first such termination) of a PGN."""
    games = pgn_games(text)
    odd = [g for g in games if g.termination not in ("", "normal") or g.result == "*"]
    return (sum(g.plies for g in games), len(games), len(odd),
            (odd[0].termination or "unfinished") if odd else "")


def verdict(ratios: list[float], target: float = TARGET) -> str:
    """The target's verdict over the pairs' ratios of one run."""
    measured = [r for r in ratios if not math.isnan(r)]
    if not measured:
        return "no pair measured"
    above = [r for r in measured if r > target]
    worst = max(measured)
    if not above:
        return f"ok: no pair above {target:g}x (worst {worst:.2f}x)"
    return f"MISS: {len(above)} of {len(measured)} pairs above {target:g}x (worst {worst:.2f}x)"


def ratio(ours: float, peer: float) -> float:
    """ours / peer; NaN when either is not a positive figure (a margin lost in the noise)."""
    return ours / peer if ours > 0 and peer > 0 else math.nan


def table(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> list[str]:
    """Rows as aligned text lines: the first column left-aligned, the others right-aligned."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return ["  " + "  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i])
                             for i, cell in enumerate(row)).rstrip() for row in [header, *rows]]


def us(seconds: float) -> str:
    return "n/a" if math.isnan(seconds) else f"{seconds * 1e6:.1f}"


# ------------------------------------------------------------------ fastchess
def find_stockfish(given: str | None) -> str | None:
    """The stockfish to use: ``given``, else ``stockfish`` on PATH, else Debian's place."""
    if given:
        return given if shutil.which(given) or Path(given).is_file() else None
    found = shutil.which("stockfish")
    return found or next((p for p in STOCKFISH_PLACES if os.access(p, os.X_OK)), None)


def process_times(pid: int) -> tuple[float, float]:
    """(own utime+stime of all its threads, its reaped children's) in seconds, from
    /proc/<pid>/stat: read once the process exited and before it is reaped (a zombie keeps
    its totals)."""
    fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick, (int(fields[13]) + int(fields[14])) / tick


def fastchess_argv(fastchess: str, stockfish: str, games: int, concurrency: int, pgn: Path) -> list[str]:
    return [fastchess, "-engine", f"cmd={stockfish}", "name=a", "-engine", f"cmd={stockfish}", "name=b",
            "-each", "tc=inf", "nodes=1", "-rounds", str(max(1, games // 2)), "-games", "2",
            "-concurrency", str(concurrency), "-pgnout", f"file={pgn}"]


def run_fastchess(fastchess: str, stockfish: str, games: int, concurrency: int, work: Path) -> PeerRun:
    """One fastchess match; its own CPU (threads included, engines excluded)."""
    work.mkdir(parents=True, exist_ok=True)
    pgn = work / "games.pgn"
    log = work / "fastchess.log"
    load = os.getloadavg()[0]
    started = time.perf_counter()
    with open(log, "wb") as out:
        process = subprocess.Popen(fastchess_argv(fastchess, stockfish, games, concurrency, pgn), cwd=work,
                                   stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    try:
        os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)  # exited, not yet reaped
        wall = time.perf_counter() - started
        own, engines = process_times(process.pid)
    finally:
        process.wait()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # an engine left behind
    text = log.read_text(errors="replace")
    if process.returncode != 0 or not pgn.exists():
        tail = " / ".join(text.strip().splitlines()[-3:])
        raise RuntimeError(f"fastchess exited with {process.returncode}: {tail}")
    plies, played, odd, detail = pgn_plies(pgn.read_text(errors="replace"))
    shutil.rmtree(work)
    print(f"  ... fastchess concurrency {concurrency}: {played} games, {plies} plies in {wall:.1f} s "
          f"(load {load:.2f})", file=sys.stderr, flush=True)
    return PeerRun(plies, own, engines, wall, load, odd, detail)


# ------------------------------------------------------------------ the C pipe floor
def floor_script(path: Path, count: int) -> None:
    """The C floor's script: the null bots' games as the referee sends them (see pipe_floor.c)."""
    lines = []
    for game in _floor_games(count):
        lines += [b"N%d" % seat + orjson.dumps(game.new_game[seat]) for seat in (0, 1)]
        for seat, request in game.requests:
            lines.append(b"R%d" % seat + orjson.dumps({**request, "seq": SEQ_HOLE}))
        lines += [b"O%d" % seat + orjson.dumps(game.game_over) for seat in (0, 1)]
    path.write_bytes(b"\n".join(lines) + b"\n")


class CFloor:
    """The C pipe floor, built in ``root`` (gcc), against the null C bot ``bot``."""

    def __init__(self, root: Path, bot: Path) -> None:
        self.binary = root / "pipe_floor"
        source = Path(__file__).parent / NULL_BOTS / "pipe_floor.c"
        subprocess.run(["gcc", "-O2", "-std=c99", "-o", str(self.binary), str(source)], check=True)
        self.script = root / "floor-script.txt"
        floor_script(self.script, 20)
        self.bot = bot

    def run(self, games: int, concurrency: int) -> PeerRun:
        """``concurrency`` loops at once, ``games`` games each; CPU and moves summed."""
        load = os.getloadavg()[0]
        started = time.perf_counter()
        loops = [subprocess.Popen([str(self.binary), str(self.script), str(games), str(self.bot)],
                                  stdout=subprocess.PIPE, text=True) for _ in range(concurrency)]
        moves, cpu = 0, 0.0
        for loop in loops:
            out, _ = loop.communicate()
            if loop.returncode != 0:
                raise RuntimeError(f"pipe_floor exited with {loop.returncode}")
            words = out.split()
            moves += int(words[1])
            cpu += int(words[3]) / 1e9
        wall = time.perf_counter() - started
        print(f"  ... C pipe floor concurrency {concurrency}: {moves} moves in {wall:.1f} s "
              f"(load {load:.2f})", file=sys.stderr, flush=True)
        return PeerRun(moves, cpu, 0.0, wall, load)


# ------------------------------------------------------------------ the section
def _both(quick: bool, run: Callable[[int], T], lengths: tuple[int, int]) -> tuple[T, T]:
    """The short and the long run: one after the other; at once in a quick smoke run."""
    if not quick:
        return run(lengths[0]), run(lengths[1])
    with ThreadPoolExecutor(2) as pool:
        short, long = pool.map(run, lengths)
    return short, long


def _ours(bench: Bench, pair: OurPair, sizes: PeerSizes) -> tuple[Figure, str]:
    transport, sandbox, concurrency = pair
    lengths = (sizes.strict_short, sizes.strict_long) if sandbox == "strict" else (sizes.short, sizes.long)
    short, long = _both(sizes is QUICK, lambda games: bench.run(transport, games, concurrency=concurrency,
                                                                 sandbox=sandbox), lengths)
    expected = 2 * concurrency  # two null bots per referee worker
    if min(short.bot_reports, long.bot_reports) < expected:  # a bot's CPU would count as harness
        note = f"bots reported {short.bot_reports}/{long.bot_reports} of {expected}"
        return Figure(math.nan, (short.load, long.load)), note
    if min(short.workers_seen, long.workers_seen) < concurrency:  # a worker's CPU would be missing
        note = f"workers seen {short.workers_seen}/{long.workers_seen} of {concurrency}"
        return Figure(math.nan, (short.load, long.load)), note
    parts = ("coordinator_cpu_s", "workers_own_cpu_s", "bridges_cpu_s")
    split = [_margin(short, long, part) for part in parts]
    note = " / ".join(us(x) for x in (split if transport == "zmq" else split[:2]))
    failures = short.failures + long.failures
    if failures:
        detail = (short.failure_detail or long.failure_detail)[:60]
        note += f"; {failures} games not ended by the rules ({detail})"
    return Figure(_margin(short, long, "harness_cpu_s"), (short.load, long.load)), note


def _peer_margin(short: PeerRun, long: PeerRun) -> Figure:
    moves = long.moves - short.moves
    value = (long.cpu_s - short.cpu_s) / moves if moves > 0 else math.nan
    return Figure(value, (short.load, long.load))


def greedy_entrants(root: Path, transport: str) -> Path:
    """Two copies of the greedy sample bot over ``transport`` (its SDK speaks both)."""
    from arena.resources import sample_bots_dir

    folder = root / f"greedy-{transport}"
    for label in ("a", "b"):
        bot = folder / f"greedy-{label}"
        shutil.copytree(sample_bots_dir() / "greedy", bot, ignore=shutil.ignore_patterns("__pycache__"))
        toml = bot / "bot.toml"
        text = toml.read_text().replace('name = "greedy"', f'name = "greedy-{label}"')
        toml.write_text(re.sub(r'protocol = "\w+"', f'protocol = "{transport}"', text))
    return folder


def bench_peer(quick: bool = False, fastchess: str | None = None, stockfish: str | None = None) -> None:
    """Print the peer section (see the module docstring for the method)."""
    from arena.launch.bubblewrap import check_strict_available

    sizes = QUICK if quick else FULL
    load = os.getloadavg()
    engine = find_stockfish(stockfish)
    peer_name = "fastchess"
    why = ""
    if not fastchess:
        why = "fastchess not given (--fastchess PATH; make bench FASTCHESS=PATH)"
    elif not (shutil.which(fastchess) or os.access(fastchess, os.X_OK)):
        why = f"fastchess not found at {fastchess}"
    elif engine is None:
        why = f"stockfish not found ({stockfish or 'stockfish on PATH, ' + ', '.join(STOCKFISH_PLACES)})"
    if why:
        peer_name = "C floor"
    print(f"peer ({'quick smoke run, figures not meaningful' if quick else 'full'}; harness CPU per move at "
          f"steady state, bots excluded; {sizes.rounds} rounds interleaved; load average at start "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores)", flush=True)
    if why:
        print(f"  {why}: comparing with the C pipe floor instead (referee side of a bare pipe loop, null C "
              f"bots, buffered reads; no verdict against the target of <= {TARGET:g}x fastchess)", flush=True)
    else:
        print(f"  peer: {fastchess} with {engine} at tc=inf nodes=1, -games 2", flush=True)
    try:
        check_strict_available()
        strict_error = None
    except Exception as exc:  # SandboxError and friends: say why and carry on
        strict_error = str(exc).splitlines()[0]
    pairs = [p for p in OUR_PAIRS if p[1] != "strict" or strict_error is None]
    rows: list[tuple[str, ...]] = []
    per_round: list[list[float]] = []
    ratios_by_pair: dict[OurPair, list[float]] = {}
    floors: list[tuple[int, int, Figure]] = []
    with tempfile.TemporaryDirectory(prefix="arena-bench-peer-") as tmp:
        root = Path(tmp)
        bench = Bench(root / "harness")
        floor = CFloor(root, bench.binary)

        def peer(concurrency: int, number: int) -> Figure:
            if why:
                short, long = _both(quick, lambda g: floor.run(g, concurrency),
                                    (sizes.floor_games // 10, sizes.floor_games))
            else:
                assert fastchess is not None and engine is not None
                short, long = _both(quick, lambda g: run_fastchess(fastchess, engine, g, concurrency,
                                                                   root / f"fc-{number}-{g}"),
                                    (sizes.peer_short, sizes.peer_long))
            return _peer_margin(short, long)

        number = 0
        for round_number in range(1, sizes.rounds + 1):
            ratios: list[float] = []
            for index, pair in enumerate(pairs):
                number += 1
                if (round_number + index) % 2:  # which side goes first alternates
                    (ours, note), theirs = _ours(bench, pair, sizes), peer(pair[2], number)
                else:
                    theirs = peer(pair[2], number)
                    ours, note = _ours(bench, pair, sizes)
                r = ratio(ours.per_move_s, theirs.per_move_s)
                ratios.append(r)
                ratios_by_pair.setdefault(pair, []).append(r)
                mark = "-" if why or math.isnan(r) else ("ok" if r <= TARGET else "MISS")
                rows.append((str(round_number), f"{pair[0]} {pair[1]} c{pair[2]}", us(ours.per_move_s), note,
                             us(theirs.per_move_s), "n/a" if math.isnan(r) else f"{r:.2f}x",
                             f"{ours.load} / {theirs.load}", mark))
            per_round.append(ratios)
            if not why:  # the physical floor beside, for scale
                for concurrency in (1, 2):
                    short, long = (floor.run(g, concurrency)
                                   for g in (sizes.floor_games // 10, sizes.floor_games))
                    floors.append((round_number, concurrency, _peer_margin(short, long)))
    header = ("round", "pair (ours)", "ours us/move", "ours: coordinator / workers / bridges",
              f"{peer_name} us/move", "ratio", "load ours / peer", f"<= {TARGET:g}x")
    for line in table(rows, header):
        print(line)
    if strict_error is not None:
        print(f"  strict: unavailable ({strict_error[:100]})")
    for round_number, ratios in enumerate(per_round, 1):
        judged = "not judged: fastchess absent" if why else verdict(ratios)
        print(f"  round {round_number}: {judged}")
    spans = [f"{p[0]} {p[1]} c{p[2]} {min(r):.2f}-{max(r):.2f}x" for p, r in ratios_by_pair.items()
             if not any(math.isnan(x) for x in r)]
    against = "ours / C floor" if why else "ours / fastchess"
    print(f"  ratio range over the rounds ({against}): " + "; ".join(spans))
    for round_number, concurrency, figure in floors:
        print(f"  C pipe floor, round {round_number}, c{concurrency}: {us(figure.per_move_s)} us/move "
              f"(load {figure.load})")
    print("  (per move = (long run - short run) / (moves_long - moves_short); fastchess: its own CPU from "
          "/proc/<pid>/stat at exit, engines excluded; method: arena/bench_peer.py)")
    bench_greedy(sizes)


def bench_greedy(sizes: PeerSizes) -> None:
    """Greedy-bot games per second per core, stdio and ZeroMQ, sandbox none, concurrency 1 and 2."""
    rows: list[tuple[str, ...]] = []
    with tempfile.TemporaryDirectory(prefix="arena-bench-greedy-") as tmp:
        bench = Bench(Path(tmp) / "harness")
        for transport in ("stdio", "zmq"):
            entrants = greedy_entrants(Path(tmp), transport)
            for concurrency in (1, 2):
                def play(games: int, t: str = transport, c: int = concurrency, e: Path = entrants) -> Run:
                    return bench.run(t, games, concurrency=c, sandbox="none", entrants=e)

                short, long = _both(sizes is QUICK, play, (sizes.greedy_short, sizes.greedy_long))
                seconds = long.wall_s - short.wall_s
                cpu = (long.coordinator_cpu_s + long.children_cpu_s) - (short.coordinator_cpu_s
                                                                        + short.children_cpu_s)
                rate = (long.games - short.games) / seconds if seconds > 0 else math.nan
                cores = cpu / seconds if seconds > 0 else math.nan
                per_move = seconds / (long.moves - short.moves) if long.moves > short.moves else math.nan
                rows.append((f"greedy {transport} none c{concurrency}", f"{rate:.1f}", f"{cores:.2f}",
                             f"{rate / cores:.1f}" if cores > 0 else "n/a", us(per_move),
                             f"{short.load:.1f} / {long.load:.1f}"))
    print("greedy vs greedy (sample bot), games per second per core, at the margin")
    for line in table(rows, ("setup", "games/s", "cores used", "games/s per core", "wall us/move", "load")):
        print(line)
    print("  (cores used = CPU seconds of the whole tree, bots included, per wall second; games/s per "
          "core = games/s / cores used)")


def main(argv: list[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m arena.bench_peer")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--fastchess")
    parser.add_argument("--stockfish")
    args = parser.parse_args(argv)
    bench_peer(args.quick, args.fastchess, args.stockfish)


if __name__ == "__main__":
    main(sys.argv[1:])
