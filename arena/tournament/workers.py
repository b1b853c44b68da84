"""Local worker processes for :func:`arena.tournament.series.run_series`.

Each worker is a spawned process with its own pool of bot processes, reused across the
games it plays; the coordinator hands it one game at a time over a pipe of its own.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import pickle
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

from arena.bots.session import START_TIMEOUT_S
from arena.clock import TimeControl
from arena.engine import Ruleset, patchwork
from arena.errors import ArenaError
from arena.launch.proctree import read_stat, send_signal
from arena.signals import die_with_parent, ignore_termination, unwind_on_termination
from arena.tournament.schedule import GameSpec
from arena.tournament.scheduler import DONE, WAIT, as_scheduler
from arena.tournament.series import STUCK, Lineup, Played, Source

MAX_WORKER_DEATHS = 3
"""A game that loses this many worker processes (crash, kill, OOM) in one run stops the run."""
SILENT_S = 1.0
"""A worker that has held its game this long is looked at (in /proc) about once a second."""

log = logging.getLogger(__name__)


@dataclass
class _Worker:
    """A worker process, the coordinator's end of its pipe, and the game it is playing;
    ``slot`` is the place it holds among the ``concurrency`` (a replacement takes its
    predecessor's), which names its log folder."""

    number: int
    slot: int
    process: Any
    conn: Any
    game: GameSpec | None = None


class WorkerProcesses:
    """``concurrency`` worker processes, each playing games with its own bot processes
    (the lineup's bots, built already: see :func:`arena.tournament.series.build_lineup`).

    The coordinator hands each worker its next game itself, over a pipe of its own, when
    the worker reports the previous one (or ``None`` when nothing is left), before it
    passes the finished game on to be stored. So the game
    of a worker that dies, however it dies (a signal, OOM, an abort, an early exit even
    with status 0), is always known: it is put back at the head of the queue and played
    again by a fresh worker with fresh bots. A worker killed mid-message only breaks its
    own pipe. A game that took down MAX_WORKER_DEATHS workers stops the run with an
    ArenaError naming it, the logs and then ``advice``: what the user can do next, which
    depends on the command (a tournament resumes, sprt starts over).

    A worker that a bot stopped (SIGSTOP, same uid under ``--sandbox none``) is continued,
    and a game still unfinished after :func:`game_deadline_s` has its worker killed and is
    handled like any other worker death (see :class:`_Watchdog`).
    """

    def __init__(self, lineup: Lineup, log_dir: Path, concurrency: int = 1, *, advice: str = "",
                 on_move: Callable[[GameSpec, dict[str, Any]], None] | None = None) -> None:
        self.lineup = lineup
        self.on_move = on_move  # given: every move of every game is sent back as it is made (arena serve)
        self.log_dir = log_dir
        self.concurrency = max(1, concurrency)
        self.advice = advice
        rules = lineup.ruleset or patchwork(lineup.edition)
        self._watchdog = _Watchdog(game_deadline_s(lineup.time_control, rules))
        self._ctx = mp.get_context("spawn")
        self._workers: list[_Worker] = []  # every worker started, for close()
        self._started = 0
        self.deaths: Counter[str] = Counter()  # game id -> workers lost while it was being played

    def _start_worker(self, game: GameSpec, slot: int | None = None) -> _Worker:
        number = self._started
        self._started += 1
        slot = number if slot is None else slot
        parent, child = self._ctx.Pipe()
        # The logs of a slot's workers go to one folder: each bot's log there has its size
        # limit whatever the number of workers lost (a bot that killed its worker at each game
        # had a fresh log, and 16 MiB more of disk, each time).
        process = self._ctx.Process(
            target=_worker_main, name=f"arena-worker-{number}", daemon=True,
            args=(self.lineup, str(self.log_dir / f"worker-{slot}"), child, self.on_move is not None))
        process.start()
        child.close()  # the worker's end: only the worker holds it, so its death closes the pipe
        worker = _Worker(number, slot, process, parent)
        self._workers.append(worker)
        self._hand(worker, game)
        return worker

    @staticmethod
    def _hand(worker: _Worker, game: GameSpec | None) -> None:
        worker.game = game
        try:
            worker.conn.send(game)
        except OSError:  # it died between games: the wait loop sees its pipe close
            pass

    def run(self, specs: Source) -> Iterator[Played]:
        scheduler = as_scheduler(specs)
        busy: list[_Worker] = []  # each holds a game
        idle: list[_Worker] = []  # alive, waiting for a game the scheduler did not have yet (WAIT)

        def put(worker: _Worker | None, game: GameSpec) -> None:
            """``game`` to ``worker`` (None, or dead: to a new worker in a free slot, or its slot)."""
            if worker is not None and worker.process.is_alive():
                self._hand(worker, game)
                busy.append(worker)
                return
            if worker is not None:  # it died after its game (not that game's fault)
                self._reap(worker)
                slot = worker.slot
            else:
                taken = {w.slot for w in busy + idle}
                slot = min(s for s in range(self.concurrency) if s not in taken)
            busy.append(self._start_worker(game, slot))

        def fill() -> None:
            """Games for the idle workers and the free slots, as long as the scheduler has some."""
            while idle or len(busy) + len(idle) < self.concurrency:
                game = scheduler.next()
                if not isinstance(game, GameSpec):
                    if game is DONE:
                        for worker in idle:
                            self._hand(worker, None)
                        idle.clear()
                    return
                put(idle.pop() if idle else None, game)

        try:
            fill()
            while busy:
                ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in busy],
                                 timeout=SILENT_S))
                self._watchdog.check(busy)
                for worker in [w for w in busy if w.conn in ready or w.process.sentinel in ready]:
                    message, why = self._receive(worker)
                    game = worker.game
                    assert game is not None
                    if message is not None:
                        # The result is recorded and the next game goes out before the caller
                        # stores and rates this one, so the worker plays on meanwhile (the gap
                        # between games stays in the worker).
                        busy.remove(worker)
                        scheduler.record(game, message[1].winner)
                        following = scheduler.next()
                        if isinstance(following, GameSpec):
                            put(worker, following)
                        elif following is WAIT and worker.process.is_alive():
                            worker.game = None
                            idle.append(worker)
                        elif following is DONE:
                            self._hand(worker, None)
                        else:  # it died after its game, and the scheduler waits: no worker for now
                            self._reap(worker)
                        fill()  # a result may free a whole round for the idle workers
                        yield message
                        continue
                    if why is None:  # the pipe is readable but the message is not whole yet
                        continue
                    why = self._watchdog.killed.pop(worker.number, why)
                    busy.remove(worker)
                    self.lineup.launcher.remove_stale()  # thaw and kill its bots (frozen ones ignore SIGKILL)
                    self.deaths[game.game_id] += 1
                    if self.deaths[game.game_id] >= MAX_WORKER_DEATHS:
                        raise ArenaError(
                            f"game {game.game_id} ({game.seat0} vs {game.seat1}) was lost with its worker "
                            f"process {self.deaths[game.game_id]} times (last: {why}); stopping (the logs "
                            f"are in {self.log_dir})" + (f". {self.advice}" if self.advice else ""))
                    busy.append(self._start_worker(game, worker.slot))  # first of all: schedule order
            if scheduler.next() is not DONE:
                raise ArenaError(STUCK)
        finally:
            for worker in idle:
                self._hand(worker, None)

    def _receive(self, worker: _Worker) -> tuple[Played | None, str | None]:
        """The worker's finished game, or (None, why it is lost), or (None, None): still playing."""
        try:
            if worker.conn.poll():
                message = worker.conn.recv()
                if message[0] == "move":
                    if self.on_move is not None and worker.game is not None:
                        self.on_move(worker.game, message[1])
                    return None, None
                if message[0] == "done":
                    return message[1], None
                why = f"worker failed: {message[1]}"
            elif worker.process.is_alive():
                return None, None
            else:
                why = "worker exited"
        except (EOFError, OSError, pickle.UnpicklingError, ValueError, TypeError, IndexError):
            why = "worker exited"
        self._reap(worker)
        return None, f"{why}, {_exit_status(worker.process.exitcode)}"

    @staticmethod
    def _reap(worker: _Worker) -> None:
        worker.conn.close()
        worker.process.join(5)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join(5)

    def close(self) -> None:
        for worker in self._workers:
            if worker.process.is_alive():
                worker.conn.close()  # EOF: one waiting for a game (deaf to SIGTERM then) closes and exits
                worker.process.terminate()  # SIGTERM: one playing unwinds, kills its bots and exits
                _continue(worker.process.pid)  # a stopped worker would not see it
        deadline = time.monotonic() + 5
        for worker in self._workers:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join(1)
            worker.conn.close()
        self._workers.clear()
        self.lineup.launcher.remove_stale()  # of workers that had to be killed before they cleaned up


def game_deadline_s(time_control: TimeControl, ruleset: Ruleset) -> float:
    """How long a worker may take over one game before it is presumed stuck and killed.

    Twice the most a game can legitimately take, plus a minute: both bots' starts
    (START_TIMEOUT_S each), both first moves and banks, and the per-move limit for every
    move a game can have (each move advances a token by at least one space, buys a patch
    or places a special one: a bound, not a typical length). About 8 minutes at the
    default 1 s per move; games that are merely slow never come near it."""
    moves = 2 * (ruleset.final_space + 1) + len(ruleset.patches) + len(ruleset.special_spaces)
    return 2 * (time_control.game_time_ms(moves) / 1000 + 2 * START_TIMEOUT_S) + 60


class _Watchdog:
    """Looks after the workers from the coordinator's wait loop, cheaply: at most once per
    SILENT_S, and in /proc only for workers that have held their game that long.

    A worker found stopped (state T or t: a bot under ``--sandbox none`` runs as the same
    user and can SIGSTOP its parent) is continued, once logged per game; one still on its
    game past the deadline (stopped again and again, or stuck) is SIGKILLed, and
    :attr:`killed` says why, for the worker-death message."""

    def __init__(self, deadline_s: float) -> None:
        self.deadline_s = deadline_s
        self.killed: dict[int, str] = {}  # worker number -> why the watchdog killed it
        self._since: dict[int, tuple[GameSpec, float]] = {}  # worker number -> its game, first seen at
        self._stopped: set[int] = set()  # workers already reported stopped during their current game
        self._next = time.monotonic() + SILENT_S

    def check(self, busy: list[_Worker]) -> None:
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + SILENT_S
        seen = {}
        for worker in busy:
            game = worker.game
            if game is None or worker.number in self.killed:
                continue
            held = self._since.get(worker.number)
            if held is None or held[0] is not game:  # a new game: its clock starts now
                held = (game, now)
                self._stopped.discard(worker.number)
            seen[worker.number] = held
            if now - held[1] < SILENT_S:
                continue
            if now - held[1] > self.deadline_s:
                self.killed[worker.number] = (
                    f"the game was unfinished after {self.deadline_s:.0f} s, far more than its time "
                    "control allows (a stuck or repeatedly stopped worker), so its worker was killed")
                log.warning("worker %d (pid %d): %s", worker.number, worker.process.pid,
                            self.killed[worker.number])
                worker.process.kill()
            elif _stopped(worker.process.pid):
                _continue(worker.process.pid)
                if worker.number not in self._stopped:
                    self._stopped.add(worker.number)
                    log.warning("worker %d (pid %d) was stopped during game %s (%s vs %s), probably by "
                                "a bot (SIGSTOP to its parent); continued it (SIGCONT)", worker.number,
                                worker.process.pid, game.game_id, game.seat0, game.seat1)
        self._since = seen


def _stopped(pid: int) -> bool:
    """The process is stopped (by a signal, or traced): state T or t."""
    stat = read_stat(str(pid))
    return stat is not None and stat.state in ("T", "t")


def _continue(pid: int) -> None:
    send_signal(pid, signal.SIGCONT)


def _exit_status(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"




def _worker_main(lineup: Lineup, log_dir: str, conn: Any, live: bool = False) -> None:
    """A worker: play each game the coordinator sends until it sends None; ``live``: send
    each move back as it is made, before the game's end."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the coordinator's business
    unwind_on_termination(0)  # SIGTERM unwinds, once: the pool kills (and thaws) its bots
    die_with_parent()
    try:
        pool = lineup.pool(Path(log_dir))
        try:
            while True:
                # Waiting for a game, the pipe says all there is to say: a game, None, or EOF once
                # the coordinator is gone. The SIGTERM Linux sends then, just behind the EOF, could
                # land between the EOFError and the closing below and cut it off (a red team's
                # kill -9 left a worker's bots frozen, 3 times in 30): it is not heeded here.
                ignore_termination()
                if (spec := conn.recv()) is None:
                    break
                unwind_on_termination(0)  # playing: a SIGTERM unwinds (and the pool closes)
                hook = (lambda state, entry: conn.send(("move", entry))) if live else None
                conn.send(("done", (spec, lineup.play(pool, spec, hook))))
        finally:
            # All played, the coordinator gone (EOF, with its SIGTERM close behind: PDEATHSIG) or
            # a SIGTERM unwinding us: from here a SIGTERM would cut the closing short and leave
            # bots running, or frozen under strict, until the next run swept them.
            ignore_termination()
            pool.close()
    except (EOFError, BrokenPipeError):  # the coordinator is gone
        sys.exit(1)
    except Exception as exc:  # a bug: tell the coordinator in one line rather than print a traceback
        try:
            conn.send(("error", f"{type(exc).__name__}: {exc}"[:500]))
        except OSError:
            pass
        sys.exit(1)


__all__ = ["MAX_WORKER_DEATHS", "WorkerProcesses", "game_deadline_s"]
