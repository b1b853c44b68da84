"""The bench's null bot over ZeroMQ (``python -m arena.bench harness``).

The same policy and statistics as ``null_stdio.c``: never asks for the legal moves,
advances in a ``main`` decision, places the special patch on the first empty cell of its
quilt. ``python null_zmq.py [STATS_DIR LABEL]`` writes STATS_DIR/LABEL-PID.txt at exit
with the arrival times (CLOCK_MONOTONIC ns) of each new_game, first move_request and
game_over, its move count, its own CPU time and, under the referee's ZeroMQ bridge (its
parent process), the bridge's CPU time so far (read from /proc). When it cannot write there
(the strict sandbox hides the folder) it writes those counts on one line to stderr instead,
``arena-bench-stats moves n cpu_ns n bridge_cpu_ns n``, which the harness keeps in its log.
"""

from __future__ import annotations

import os
import resource
import sys
import time

import orjson
import zmq


def _first_empty(quilt: list[str]) -> list[int] | None:
    for row, text in enumerate(quilt):
        col = text.find(".")
        if col >= 0:
            return [row, col]
    return None


def _parent_cpu_ns() -> int | None:
    """The CPU time of the parent if it is the ZeroMQ bridge (harness code, not the bot)."""
    ppid = os.getppid()
    try:
        with open(f"/proc/{ppid}/cmdline", "rb") as f:
            if b"zmq_bridge" not in f.read():
                return None
        with open(f"/proc/{ppid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    try:  # each live thread's run time in ns (schedstat): finer than stat's clock ticks
        threads = os.listdir(f"/proc/{ppid}/task")
        return sum(int(open(f"/proc/{ppid}/task/{t}/schedstat").read().split()[0]) for t in threads)
    except (OSError, ValueError, IndexError):
        ticks = int(fields[11]) + int(fields[12])  # utime, stime
        return ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def main(argv: list[str]) -> None:
    socket = zmq.Context().socket(zmq.DEALER)
    socket.setsockopt(zmq.IDENTITY, os.environ["ARENA_TOKEN"].encode())
    socket.setsockopt(zmq.LINGER, 0)
    socket.connect(os.environ["ARENA_ENDPOINT"])
    socket.send(b'{"type":"hello","name":"null-zmq","version":"1","protocol":1}')
    events: list[tuple[str, int]] = []
    moves = 0
    awaiting_first = False
    while True:
        try:
            raw = socket.recv()
        except zmq.ZMQError:
            break
        t = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        msg = orjson.loads(raw)
        kind = msg.get("type")
        if kind == "move_request":
            if awaiting_first:
                events.append(("R", t))
                awaiting_first = False
            state = msg["state"]
            move: dict[str, object] = {"action": "advance"}
            if state["decision"] == "special":
                cell = _first_empty(state["quilts"][state["to_move"]])
                if cell is not None:
                    move = {"action": "special", "cells": [cell]}
            socket.send(orjson.dumps({"type": "move", "seq": msg["seq"], "move": move}))
            moves += 1
        elif kind == "new_game":
            events.append(("N", t))
            awaiting_first = True
        elif kind == "game_over":
            events.append(("O", t))
            awaiting_first = False
        elif kind == "shutdown":
            break
    if len(argv) >= 2:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        lines = [f"{kind} {t}" for kind, t in events]
        lines += [f"moves {moves}", f"cpu_ns {int((usage.ru_utime + usage.ru_stime) * 1e9)}"]
        bridge = _parent_cpu_ns()
        if bridge is not None:
            lines.append(f"bridge_cpu_ns {bridge}")
        try:
            with open(os.path.join(argv[0], f"{argv[1]}-{os.getpid()}.txt"), "w") as out:
                out.write("\n".join(lines) + "\n")
        except OSError:  # under the strict sandbox its folder is not there: its log (stderr)
            counts = [line for line in lines if line.split()[0] in ("moves", "cpu_ns", "bridge_cpu_ns")]
            print("arena-bench-stats " + " ".join(counts), file=sys.stderr, flush=True)
    socket.close(0)


if __name__ == "__main__":
    main(sys.argv[1:])
