"""`make bench`'s harness section: what the harness itself costs per move and per game.

``python -m arena.bench harness [--quick]``. Two entrants, both a null bot (never asks for
the legal moves, advances, places a special patch on its first empty cell: about 59 moves
a game), play round robins through ``arena run-tournament`` in a subprocess, once over
stdio (a C bot) and once over ZeroMQ (a Python bot behind the referee's ZeroMQ bridge).

How each figure is measured:

* **Harness CPU per move, at the margin**: a short and a long run of the same tournament;
  (cpu_long - cpu_short) / (moves_long - moves_short), so start-up costs cancel. The
  coordinator (the ``arena run-tournament`` process) reports its own CPU
  (``getrusage(RUSAGE_SELF)``) and that of every process it and its descendants reaped
  (``RUSAGE_CHILDREN``: the referee workers, the bots, the ZeroMQ bridges) from an
  ``atexit`` hook. Each null bot writes its own CPU (``getrusage`` at its exit) to a
  stats file (under ``strict``, which hides that folder, to a line of its log), and a
  ZeroMQ bot also its parent bridge's (``/proc/<ppid>/stat``), so the workers' CPU is
  RUSAGE_CHILDREN minus bots minus bridges. Moves come from the results.
* **The floor**: this process plays the same requests (built ahead by the protocol's
  builders from the same null-bot games) with the same bots: ``orjson.dumps`` +
  ``os.write`` / buffered ``readline`` + ``orjson.loads`` over pipes, and ``send``/``recv`` on a
  ROUTER for ZeroMQ (no bridge). Its CPU is ``time.process_time``: bots excluded. Two
  floors: requests built ahead (transport alone), and each request built from the
  engine's state and each reply applied with the rules' checks (what any referee must
  do: the ratio's floor). Each is the least of three loops.
* **The same ratio pinned to one CPU** (stdio): the short and long runs under ``taskset``
  on one CPU, coordinator, worker and bots alike, and the floor with its bots on the same
  CPU. Every exchange is then a switch on one CPU rather than a wake-up across two, which
  makes the figure steady from run to run (the unpinned ratio moves with whatever else the
  machine runs): the one to compare changes by.
* **moves/s**: the same margin on the wall clock, at concurrency 1 and 2, ``--sandbox
  none`` and ``strict``.
* **Per-game overhead**, from the bot side: the null bots timestamp (CLOCK_MONOTONIC,
  shared by every process on the machine) each new_game, each game's first
  move_request and each game_over as they arrive. Per game: first new_game (either bot)
  to first move_request (either bot), and last game_over to the next first new_game.
* **Memory and growth**: peak RSS of the coordinator (``ru_maxrss``) and of each worker
  (``VmHWM`` of the coordinator's Python children, polled from /proc every 0.2 s) over a
  1,000- and a 10,000-game run; the coordinator's RSS while it plays (the median of the
  polled VmRSS: the peak may come from the ratings table printed at the end); and the
  coordinator's CPU per game at the margin over games 100..1,000 and 1,000..10,000.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

NULL_BOTS = "bench_null_bots"
TARGET_RATIO = 1.5  # harness CPU / floor
TARGET_SCALING = 1.8  # moves/s at concurrency 2 over concurrency 1 ("near-linear")
TARGET_GAME_OVERHEAD_MS = 1.0
TARGET_GROWTH = 1.2  # 10k-game figure over 1k-game figure ("flat")
TRANSPORTS = ("stdio", "zmq")
PINNED = "pinned"  # a run's sandbox: none, everything on one CPU (taskset)
POLL_S = 0.2
FLOOR_REPEATS = 3


@dataclass(frozen=True)
class Sizes:
    """Games per run: short and long (the margin), the growth runs, the floor."""

    short: int
    long: int
    strict_short: int
    strict_long: int
    growth: tuple[int, int, int]  # 100, 1k, 10k in the full section
    floor: int


FULL = Sizes(short=100, long=1000, strict_short=50, strict_long=300, growth=(100, 1000, 10_000), floor=200)
QUICK = Sizes(short=2, long=6, strict_short=2, strict_long=4, growth=(2, 6, 12), floor=4)


# ------------------------------------------------------------------ one tournament run
@dataclass
class Run:
    """What one ``arena run-tournament`` of null bots cost."""

    games: int
    moves: int
    wall_s: float
    coordinator_cpu_s: float
    children_cpu_s: float  # workers + bots + bridges, all reaped
    bots_cpu_s: float
    bridges_cpu_s: float
    coordinator_rss_kb: int  # peak (ru_maxrss)
    coordinator_median_rss_kb: int  # the median of the polled samples: while it plays
    worker_rss_kb: list[int]
    failures: int
    failure_detail: str
    events: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # bot label -> events
    bot_reports: int = 0  # bot processes whose CPU was reported (stats file or log line)
    load: float = math.nan  # the 1-minute load average as the run started
    workers_own_cpu_s: float = math.nan  # the referee workers' own CPU, their children apart
    workers_seen: int = 0  # workers whose own CPU was read as they exited

    @property
    def workers_cpu_s(self) -> float:
        return self.children_cpu_s - self.bots_cpu_s - self.bridges_cpu_s

    @property
    def harness_cpu_s(self) -> float:
        """Coordinator + referee workers + ZeroMQ bridges, each process's own CPU: the bots'
        never in it. (RUSAGE_CHILDREN less the bots' would be the same, but a sandboxed bot's
        processes are not always reaped through the worker: under strict they can be missing
        from it.)"""
        return self.coordinator_cpu_s + self.workers_own_cpu_s + self.bridges_cpu_s


_COORDINATOR = """\
import atexit, json, os, resource, sys
# pid -> its own CPU (every thread, no children), read as it exited and before it was reaped:
# the referee workers (and multiprocessing's resource tracker), the processes reaped by waitpid
_workers = {}
_waitpid = os.waitpid
def _own_cpu(pid):
    try:
        fields = open(f"/proc/{pid}/stat", "rb").read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
def waitpid(pid, options):  # multiprocessing reaps its workers through os.waitpid
    if pid > 0 and pid not in _workers:
        try:
            exited = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | (options & os.WNOHANG))
        except ChildProcessError:
            exited = None
        if exited is not None:
            cpu = _own_cpu(pid)
            if cpu is not None:
                _workers[pid] = cpu
    return _waitpid(pid, options)
os.waitpid = waitpid
def _report():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(os.environ["ARENA_BENCH_RUSAGE"], "w") as f:
        json.dump({"self": s.ru_utime + s.ru_stime, "children": c.ru_utime + c.ru_stime,
                   "maxrss": s.ru_maxrss, "workers_own": sum(_workers.values()),
                   "workers_seen": len(_workers)}, f)
atexit.register(_report)  # first: runs last, after multiprocessing's own exit hook
from arena.cli import main
sys.argv[0] = "arena"
main()
"""


class Bench:
    """The entrants and scratch folders of one harness section."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.binary = root / "null_stdio"
        source = Path(__file__).parent / NULL_BOTS  # package data: built here, never in the package
        subprocess.run(["gcc", "-O2", "-std=c99", "-o", str(self.binary), str(source / "null_stdio.c")],
                       check=True)
        self.zmq_script = root / "null_zmq.py"
        shutil.copy2(source / "null_zmq.py", self.zmq_script)
        self.runs = 0
        self._lock = threading.Lock()

    def entrants(self, transport: str, stats: Path, number: int) -> Path:
        """A folder with the two null entrants of ``transport``, writing to ``stats``."""
        folder = self.root / f"entrants-{number}"
        for label in ("a", "b"):
            bot = folder / f"null-{transport}-{label}"
            bot.mkdir(parents=True)
            if transport == "stdio":
                shutil.copy2(self.binary, bot / "null_stdio")
                command = ["./null_stdio", str(stats), label]
            else:
                shutil.copy2(self.zmq_script, bot / "null_zmq.py")
                command = ["python", "null_zmq.py", str(stats), label]
            (bot / "bot.toml").write_text(f'name = "null-{transport}-{label}"\n'
                                          f"command = {json.dumps(command)}\nprotocol = \"{transport}\"\n")
        return folder

    def run(self, transport: str, games: int, *, concurrency: int, sandbox: str,
            entrants: Path | None = None) -> Run:
        """One tournament; ``sandbox`` "pinned" is ``none`` with everything on one CPU.

        ``entrants``: a folder of other bots than the null bots (which report no CPU)."""
        pin = [] if sandbox != PINNED else ["taskset", "-c", str(pinned_cpu())]
        sandbox = "none" if sandbox == PINNED else sandbox
        with self._lock:
            self.runs += 1
            number = self.runs
        work = self.root / f"run-{number}"
        stats = work / "stats"
        stats.mkdir(parents=True)
        rusage = work / "rusage.json"
        out = work / "results"
        argv = [*pin, sys.executable, "-c", _COORDINATOR, "run-tournament", "--bots",
                str(entrants or self.entrants(transport, stats, number)), "--games", str(games),
                "--concurrency", str(concurrency), "--sandbox", sandbox, "--out", str(out)]
        env = {**os.environ, "ARENA_BENCH_RUSAGE": str(rusage)}
        load = os.getloadavg()[0]
        started = time.perf_counter()
        process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        peaks: dict[int, int] = {}
        coordinator_rss: list[int] = []
        poller = threading.Thread(target=_poll, args=(process, peaks, coordinator_rss), daemon=True)
        poller.start()
        _, err = process.communicate()
        wall = time.perf_counter() - started
        poller.join()
        if process.returncode != 0:
            tail = err.decode(errors="replace").strip().splitlines()[-3:]
            raise RuntimeError(f"arena run-tournament ({transport}, {sandbox}) failed: {' / '.join(tail)}")
        usage = json.loads(rusage.read_text())
        moves, failures, detail = _moves(out)
        bots = bridges = 0.0
        reports = 0
        events: dict[str, list[tuple[str, int]]] = {}
        for label, lines in [*_stats_files(stats), *_stats_lines(out / "logs")]:
            for kind, value in lines:
                if kind == "cpu_ns":
                    bots += value / 1e9
                    reports += 1
                elif kind == "bridge_cpu_ns":
                    bridges += value / 1e9
                elif kind in ("N", "R", "O"):
                    events.setdefault(label, []).append((kind, value))
        shutil.rmtree(work)  # a 10,000-game run stores ~100 MB
        print(f"  ... {transport} {sandbox} concurrency {concurrency}: {games} games, {moves} moves in "
              f"{wall:.1f} s (load {load:.2f})", file=sys.stderr, flush=True)
        return Run(games, moves, wall, usage["self"], usage["children"], bots, bridges,
                   usage["maxrss"], int(statistics.median(coordinator_rss or [0])),
                   sorted(peaks.values(), reverse=True), failures, detail, events, reports, load,
                   usage["workers_own"], usage["workers_seen"])


def _poll(process: subprocess.Popen[bytes], peaks: dict[int, int], coordinator_rss: list[int]) -> None:
    """While the coordinator runs: its RSS (VmRSS, kB) at each poll, and the peak RSS
    (VmHWM) of each referee worker: a child spawned by multiprocessing, but its resource
    tracker (a child caught between fork and exec still shows the coordinator's memory)."""
    while process.poll() is None:
        try:
            coordinator_rss += [int(line.split()[1]) for line in
                                Path(f"/proc/{process.pid}/status").read_text().splitlines()
                                if line.startswith("VmRSS:")]
        except (OSError, ValueError):
            pass
        for pid in _children(process.pid):
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                if b"--multiprocessing-fork" not in command or b"resource_tracker" in command:
                    continue  # not a worker: a child forked and not exec'd yet has the coordinator's
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        peaks[pid] = max(peaks.get(pid, 0), int(line.split()[1]))
            except (OSError, IndexError, ValueError):
                continue
        time.sleep(POLL_S)


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            found += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
    except OSError:
        pass
    return found


def _moves(out: Path) -> tuple[int, int, str]:
    """(moves, games not ended by the rules, the first one's detail) in a results folder."""
    from arena.tournament.storage import ResultStore

    moves = failures = 0
    detail = ""
    with ResultStore(out, readonly=True) as store:
        for record in store.records():
            moves += len(record["moves"])
            if record["result"]["reason"] != "normal":
                failures += 1
                detail = detail or record["result"].get("detail", "").replace("\n", " ")
    return moves, failures, detail


def _stats_files(stats: Path) -> Iterator[tuple[str, list[tuple[str, int]]]]:
    """(label, lines) of each bot process's stats file, the processes of a label in start order."""
    files = []
    for path in stats.glob("*.txt"):
        lines = [(kind, int(value)) for kind, value in
                 (line.split() for line in path.read_text().splitlines() if line.strip())]
        first = next((value for kind, value in lines if kind in "NRO"), 0)
        files.append((path.name.split("-")[0], first, lines))
    for label, _, lines in sorted(files, key=lambda f: (f[0], f[1])):
        yield label, lines


STATS_LINE = "arena-bench-stats"  # a null bot's counts in its log, when the sandbox hid its folder


def _stats_lines(logs: Path) -> Iterator[tuple[str, list[tuple[str, int]]]]:
    """(log name, counts) of each ``arena-bench-stats`` line the null bots wrote to their logs."""
    for path in sorted(logs.rglob("*.stderr.log")):  # logs/worker-N/BOT.stderr.log
        for line in path.read_text(errors="replace").splitlines():
            words = line.split()
            if words[:1] == [STATS_LINE] and len(words) % 2 == 1:
                pairs = zip(words[1::2], words[2::2], strict=True)
                yield path.name, [(kind, int(value)) for kind, value in pairs]


def pinned_cpu() -> int:
    """The CPU the pinned runs and floor use: the last one this process may run on."""
    return max(os.sched_getaffinity(0))


@contextlib.contextmanager
def pinned() -> Iterator[None]:
    """This process, and the bots it starts meanwhile, on :func:`pinned_cpu` only."""
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {pinned_cpu()})
    try:
        yield
    finally:
        os.sched_setaffinity(0, allowed)


# ------------------------------------------------------------------ the floor
def _null_move(state: dict[str, Any]) -> dict[str, Any]:
    """The null bots' policy, for building the floor's games ahead."""
    if state["decision"] == "special":
        for row, text in enumerate(state["quilts"][state["to_move"]]):
            if "." in text:
                return {"action": "special", "cells": [[row, text.index(".")]]}
    return {"action": "advance"}


@dataclass
class _FloorGame:
    seed: int
    game_id: str
    clocks: list[Any]
    new_game: list[dict[str, Any]]  # by seat
    requests: list[tuple[int, dict[str, Any]]]  # (seat, move_request without its seq)
    game_over: dict[str, Any]


def _floor_games(count: int) -> list[_FloorGame]:
    """Null-bot games as the referee would send them (built with the protocol's builders)."""
    from arena.clock import TimeControl
    from arena.engine import GameState
    from arena.protocol import messages

    control = TimeControl()
    wire_control = control.to_json()
    games = []
    for number in range(count):
        state = GameState.new(number, first_player=number % 2)
        game_id = f"floor-{number}"
        new_game = [messages.new_game(game_id, seat, state.ruleset, wire_control,  # type: ignore[arg-type]
                                      ["null-a", "null-b"]) for seat in (0, 1)]
        requests: list[tuple[int, dict[str, Any]]] = []
        clocks = [messages.clock(control.bank_ms, control.per_move_ms)] * 2
        while (mover := state.to_move()) is not None:
            request = messages.move_request(0, game_id, state, clocks)
            requests.append((mover, dict(request)))
            state.apply_json(_null_move(request["state"]))  # type: ignore[arg-type]
        winner = state.winner()
        assert winner is not None
        over = messages.game_over(game_id, scores=state.scores(), winner=winner, reason="normal")
        games.append(_FloorGame(number, game_id, clocks, new_game, requests, dict(over)))  # type: ignore[arg-type]
    return games


def floor_stdio(binary: Path, games: list[_FloorGame], rounds: int) -> dict[str, float]:
    """The bare pipe loop with two null C bots: see :func:`_floor_loops`."""
    bots = [subprocess.Popen([str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE) for _ in (0, 1)]
    assert all(b.stdin and b.stdout for b in bots)
    write = [b.stdin.fileno() for b in bots]  # type: ignore[union-attr]
    # Replies are read buffered: readline on the pipe's buffered reader (one read(2) of up to
    # 8 KiB gives the whole reply; the line is split out in C, not by slicing a bytes buffer).
    read = [b.stdout.readline for b in bots]  # type: ignore[union-attr]

    def receive(seat: int) -> dict[str, Any]:
        line = read[seat]()
        if not line:
            raise RuntimeError("null bot closed its stdout")
        message: dict[str, Any] = orjson.loads(line)
        return message

    def send(seat: int, message: dict[str, Any]) -> None:
        os.write(write[seat], orjson.dumps(message) + b"\n")

    try:
        for seat in (0, 1):
            receive(seat)  # hello
            send(seat, {"type": "welcome", "protocol": 1, "referee": "floor"})
        return _floor_loops(games, rounds, send, receive)
    finally:
        for seat, bot in enumerate(bots):
            send(seat, {"type": "shutdown"})
            bot.stdin.close()  # type: ignore[union-attr]
            bot.wait(5)
            bot.stdout.close()  # type: ignore[union-attr]


def floor_zmq(script: Path, root: Path, games: list[_FloorGame], rounds: int) -> dict[str, float]:
    """A bare ROUTER loop with two null ZeroMQ bots: see :func:`_floor_loops`."""
    import zmq

    context = zmq.Context()
    router = context.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    endpoint = f"ipc://{root}/floor.sock"
    router.bind(endpoint)
    tokens = [b"seat0", b"seat1"]
    bots = [subprocess.Popen([sys.executable, str(script)],
                             env={**os.environ, "ARENA_ENDPOINT": endpoint, "ARENA_TOKEN": token.decode()})
            for token in tokens]
    pending: dict[bytes, list[bytes]] = {token: [] for token in tokens}

    def receive(seat: int) -> dict[str, Any]:
        while not pending[tokens[seat]]:
            identity, payload = router.recv_multipart()
            pending[identity].append(payload)
        message: dict[str, Any] = orjson.loads(pending[tokens[seat]].pop(0))
        return message

    def send(seat: int, message: dict[str, Any]) -> None:
        router.send_multipart([tokens[seat], orjson.dumps(message)])

    try:
        for seat in (0, 1):
            receive(seat)  # hello
            send(seat, {"type": "welcome", "protocol": 1, "referee": "floor"})
        return _floor_loops(games, rounds, send, receive)
    finally:
        for seat, bot in enumerate(bots):
            send(seat, {"type": "shutdown"})
            bot.wait(5)
        router.close(0)
        context.term()


def _floor_loops(games: list[_FloorGame], rounds: int, send: Any, receive: Any) -> dict[str, float]:
    """CPU seconds per move of this process, playing ``rounds`` games in two ways: with the
    requests built ahead ("transport") and building each from the engine's state and
    applying each reply with the rules' checks ("engine"), as any referee must. Each is
    the least of FLOOR_REPEATS loops."""
    from arena.engine import GameState
    from arena.protocol import messages

    seqs = [0, 0]

    def exchange(seat: int, request: dict[str, Any]) -> dict[str, Any]:
        seqs[seat] += 1
        request["seq"] = seqs[seat]
        send(seat, request)
        reply: dict[str, Any] = receive(seat)
        if reply.get("seq") != seqs[seat]:
            raise RuntimeError(f"floor: null bot answered {reply!r}")
        return reply

    result = {"transport": math.inf, "engine": math.inf}
    for _ in range(FLOOR_REPEATS):  # the least of a few: a short loop is easily disturbed
        for kind in result:
            moves = 0
            started = time.process_time()
            for number in range(rounds):
                game = games[number % len(games)]
                for seat in (0, 1):
                    send(seat, game.new_game[seat])
                if kind == "transport":
                    for seat, request in game.requests:
                        exchange(seat, request)
                    moves += len(game.requests)
                else:
                    state = GameState.new(game.seed, first_player=game.seed % 2)
                    while (mover := state.to_move()) is not None:
                        built = messages.move_request(0, game.game_id, state, game.clocks)
                        reply = exchange(mover, dict(built))
                        state.apply_json(reply["move"])
                        moves += 1
                for seat in (0, 1):
                    send(seat, game.game_over)
            result[kind] = min(result[kind], (time.process_time() - started) / moves)
    return result


# ------------------------------------------------------------------ the section
def _margin(short: Run, long: Run, value: str) -> float:
    """Per move, between the two runs, of a Run attribute (seconds); NaN without moves."""
    moves = long.moves - short.moves
    return float((getattr(long, value) - getattr(short, value)) / moves) if moves > 0 else math.nan


def _rate(short: Run, long: Run) -> float:
    seconds = long.wall_s - short.wall_s
    return (long.moves - short.moves) / seconds if seconds > 0 and long.moves > short.moves else math.nan


def game_overheads(events: dict[str, list[tuple[str, int]]]) -> tuple[list[float], list[float]]:
    """(new_game -> first request, game_over -> next new_game) in ms, one per game.

    ``events`` are the two bots' arrival times in order; the k-th new_game of each bot is
    the same game (one worker plays every game at concurrency 1)."""
    per_bot = []
    for label in sorted(events):
        games: list[dict[str, int]] = []
        for kind, t in events[label]:
            if kind == "N":
                games.append({"N": t})
            elif games:
                games[-1].setdefault(kind, t)
        per_bot.append(games)
    if len(per_bot) != 2 or len(per_bot[0]) != len(per_bot[1]):
        return [], []
    to_first, between = [], []
    for number, (a, b) in enumerate(zip(*per_bot, strict=True)):
        firsts = [g["R"] for g in (a, b) if "R" in g]
        if firsts:
            to_first.append((min(firsts) - min(a["N"], b["N"])) / 1e6)
        if number + 1 < len(per_bot[0]) and "O" in a and "O" in b:
            following = min(per_bot[0][number + 1]["N"], per_bot[1][number + 1]["N"])
            between.append((following - max(a["O"], b["O"])) / 1e6)
    return to_first, between


def _ms(samples: list[float]) -> str:
    if not samples:
        return "no samples"
    ordered = sorted(samples)
    return (f"{statistics.fmean(samples):.3f} / {statistics.median(samples):.3f} / "
            f"{ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]:.3f}")


def _verdict(ok: bool) -> str:
    return "ok" if ok else "MISS"


def _us(seconds: float) -> str:
    return "n/a" if math.isnan(seconds) else f"{seconds * 1e6:.1f} us"


RunKey = tuple[str, str, int, int]  # transport, sandbox, concurrency, games


def _plan(sizes: Sizes, strict: bool, pin: bool) -> list[RunKey]:
    keys: list[RunKey] = []
    if pin:
        keys += [("stdio", PINNED, 1, sizes.short), ("stdio", PINNED, 1, sizes.long)]
    for transport in TRANSPORTS:
        keys += [(transport, "none", 1, sizes.short), (transport, "none", 1, sizes.long)]
        keys += ([("stdio", "none", 2, games) for games in sizes.growth] if transport == "stdio"
                 else [(transport, "none", 2, sizes.short), (transport, "none", 2, sizes.long)])
        if strict:
            keys += [(transport, "strict", c, games) for c in (1, 2)
                     for games in (sizes.strict_short, sizes.strict_long)]
    return keys


def bench_harness(quick: bool = False) -> None:
    """Print the harness section's table (see the module docstring for the method).

    ``quick``: tiny runs, several at once, to show the section works end to end."""
    from arena.launch.bubblewrap import check_strict_available

    sizes = QUICK if quick else FULL
    load = os.getloadavg()
    print(f"harness ({'quick smoke run, figures not meaningful' if quick else 'full'}; two null bots, "
          f"round robin; load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on "
          f"{os.cpu_count()} cores)", flush=True)
    try:
        check_strict_available()
        strict_error = None
    except Exception as exc:  # SandboxError and friends: say why and carry on
        strict_error = str(exc).splitlines()[0]
    with tempfile.TemporaryDirectory(prefix="arena-bench-harness-") as tmp:
        bench = Bench(Path(tmp))
        can_pin = shutil.which("taskset") is not None and len(os.sched_getaffinity(0)) > 1
        keys = _plan(sizes, strict_error is None, can_pin)

        def play(key: RunKey) -> Run:
            transport, sandbox, concurrency, games = key
            return bench.run(transport, games, concurrency=concurrency, sandbox=sandbox)

        with ThreadPoolExecutor(4 if quick else 1) as pool:  # full: one run at a time
            runs = dict(zip(keys, pool.map(play, keys), strict=True))
        games = _floor_games(20)
        floors = {"stdio": floor_stdio(bench.binary, games, sizes.floor),
                  "zmq": floor_zmq(bench.zmq_script, bench.root, games, sizes.floor)}
        if can_pin:
            with pinned():
                floors[PINNED] = floor_stdio(bench.binary, games, sizes.floor)

    def pair(transport: str, sandbox: str, concurrency: int) -> tuple[Run, Run]:
        if sandbox == "strict":
            short, long = sizes.strict_short, sizes.strict_long
        elif transport == "stdio" and concurrency == 2:
            short, long = sizes.growth[:2]
        else:
            short, long = sizes.short, sizes.long
        return runs[(transport, sandbox, concurrency, short)], runs[(transport, sandbox, concurrency, long)]

    rows: list[tuple[str, str, str, str]] = []  # figure, stdio, zmq, target and verdicts

    def row(label: str, cells: dict[str, str], target: str = "", ok: dict[str, bool] | None = None) -> None:
        if ok is not None:
            target = f"{target}: " + " / ".join(_verdict(ok[t]) for t in TRANSPORTS)
        rows.append((label, cells["stdio"], cells["zmq"], target))

    c1 = {t: pair(t, "none", 1) for t in TRANSPORTS}
    parts = {t: {part: _margin(*c1[t], f"{part}_cpu_s")
                 for part in ("coordinator", "workers", "bridges", "bots")} for t in TRANSPORTS}
    harness = {t: parts[t]["coordinator"] + parts[t]["workers"] + parts[t]["bridges"] for t in TRANSPORTS}
    ratio = {t: harness[t] / floors[t]["engine"] for t in TRANSPORTS}
    row("harness CPU per move, margin (c1, none)", {t: _us(harness[t]) for t in TRANSPORTS})
    row("  coordinator", {t: _us(parts[t]["coordinator"]) for t in TRANSPORTS})
    row("  referee workers", {t: _us(parts[t]["workers"]) for t in TRANSPORTS})
    row("  ZeroMQ bridges (in the bot's sandbox)", {"stdio": "-", "zmq": _us(parts["zmq"]["bridges"])})
    row("  (bots: excluded)", {t: _us(parts[t]["bots"]) for t in TRANSPORTS})
    row("floor CPU per move: bare loop, requests built ahead",
        {t: _us(floors[t]["transport"]) for t in TRANSPORTS})
    row("floor CPU per move: + state built, move applied", {t: _us(floors[t]["engine"]) for t in TRANSPORTS})
    row("harness / floor (the second)", {t: f"{ratio[t]:.2f}x" for t in TRANSPORTS}, f"<= {TARGET_RATIO}x",
        {t: ratio[t] <= TARGET_RATIO for t in TRANSPORTS})
    if PINNED in floors:
        short, long = pair("stdio", PINNED, 1)
        pinned_cpu_s = _margin(short, long, "coordinator_cpu_s") + _margin(short, long, "workers_cpu_s")
        pinned_ratio = pinned_cpu_s / floors[PINNED]["engine"]
        rows.append(("harness / floor, all on one CPU (taskset: steadier)",
                     f"{_us(pinned_cpu_s)} / {_us(floors[PINNED]['engine'])} = {pinned_ratio:.2f}x", "-",
                     f"<= {TARGET_RATIO}x: {_verdict(pinned_ratio <= TARGET_RATIO)}"))
    else:
        rows.append(("harness / floor, all on one CPU", "not measured", "-", "needs taskset and 2 CPUs"))
    for sandbox in ("none", "strict"):
        if sandbox == "strict" and strict_error is not None:
            rows.append(("moves/s, strict", "unavailable", "unavailable", strict_error[:80]))
            continue
        rates = {(t, c): _rate(*pair(t, sandbox, c)) for t in TRANSPORTS for c in (1, 2)}
        for c in (1, 2):
            row(f"moves/s, concurrency {c}, {sandbox}", {t: f"{rates[(t, c)]:,.0f}" for t in TRANSPORTS})
        scaling = {t: rates[(t, 2)] / rates[(t, 1)] for t in TRANSPORTS}
        row(f"scaling 1 -> 2, {sandbox}", {t: f"{scaling[t]:.2f}x" for t in TRANSPORTS},
            f">= {TARGET_SCALING}x", {t: scaling[t] >= TARGET_SCALING for t in TRANSPORTS})
    overheads = {t: game_overheads(c1[t][1].events) for t in TRANSPORTS}
    for index, label in ((0, "new_game -> first request"), (1, "game_over -> next new_game")):
        samples = {t: overheads[t][index] for t in TRANSPORTS}
        row(f"{label}, ms mean/p50/p99 (c1)", {t: _ms(samples[t]) for t in TRANSPORTS},
            f"<= {TARGET_GAME_OVERHEAD_MS:g} ms (mean)",
            {t: bool(samples[t]) and statistics.fmean(samples[t]) <= TARGET_GAME_OVERHEAD_MS
             for t in TRANSPORTS})
    small, middle, big = (runs[("stdio", "none", 2, games)] for games in sizes.growth)
    rss_ok = big.coordinator_rss_kb <= TARGET_GROWTH * middle.coordinator_rss_kb
    rows.append((f"coordinator peak RSS, {middle.games:,} / {big.games:,} games (c2)",
                 f"{middle.coordinator_rss_kb / 1024:.1f} / {big.coordinator_rss_kb / 1024:.1f} MB", "-",
                 f"flat (<= {TARGET_GROWTH}x): {_verdict(rss_ok)}"))
    median_ok = big.coordinator_median_rss_kb <= TARGET_GROWTH * middle.coordinator_median_rss_kb
    medians = [run.coordinator_median_rss_kb / 1024 for run in (middle, big)]
    rows.append(("coordinator RSS while playing (median of samples)",
                 f"{medians[0]:.1f} / {medians[1]:.1f} MB",
                 "-", f"flat (<= {TARGET_GROWTH}x): {_verdict(median_ok)}"))
    worker_ok = max(big.worker_rss_kb, default=0) <= TARGET_GROWTH * max(middle.worker_rss_kb, default=0)
    rows.append((f"each worker's peak RSS, {middle.games:,} / {big.games:,} games",
                 f"{_mb(middle.worker_rss_kb)} / {_mb(big.worker_rss_kb)}", "-",
                 f"flat (<= {TARGET_GROWTH}x): {_verdict(worker_ok)}"))
    early = (middle.coordinator_cpu_s - small.coordinator_cpu_s) / max(1, middle.games - small.games)
    late = (big.coordinator_cpu_s - middle.coordinator_cpu_s) / max(1, big.games - middle.games)
    rows.append((f"coordinator CPU per game, games {small.games:,}..{middle.games:,} / "
                 f"{middle.games:,}..{big.games:,}", f"{early * 1e3:.2f} / {late * 1e3:.2f} ms", "-",
                 f"flat (<= {TARGET_GROWTH}x): {_verdict(late <= TARGET_GROWTH * early)}"))
    failed = [f"{key[0]} {key[1]} c{key[2]} {key[3]} games: {run.failures} ({run.failure_detail[:150]})"
              for key, run in runs.items() if run.failures]
    rows.append(("games not ended by the rules", str(sum(r.failures for r in runs.values())), "",
                 "0: " + _verdict(not failed)))
    _print_table(rows)
    for line in failed:
        print(f"  failed: {line}")
    print("  (margin = (long run - short run) / (moves_long - moves_short); c1/c2 = concurrency;"
          " how each figure is taken: arena/bench_harness.py)")


def _mb(values: list[int]) -> str:
    return ", ".join(f"{v / 1024:.1f}" for v in values) + " MB" if values else "none seen"


def _print_table(rows: list[tuple[str, str, str, str]]) -> None:
    header = ("figure", "stdio", "zmq", "target")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(3)]
    for row in [header, *rows]:
        print(f"  {row[0]:<{widths[0]}}  {row[1]:>{widths[1]}}  {row[2]:>{widths[2]}}  {row[3]}")


def main(argv: list[str]) -> None:
    bench_harness(quick="--quick" in argv)


if __name__ == "__main__":
    main(sys.argv[1:])
