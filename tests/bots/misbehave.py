"""A scripted misbehaving bot for the referee tests (fastchess-style test engines).

Usage: python misbehave.py KIND [stdio] [LOG]. It plays like the random bot (first legal
move from the engine) until its KIND of misbehaviour kicks in; ``stdio`` makes it speak
JSON lines on stdin/stdout instead of ZeroMQ; the ``recorder`` kind plays normally and
appends every message it receives to LOG (the last argument).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from arena.engine import GameState

KIND = sys.argv[1]
STDIO = "stdio" in sys.argv[2:]
TRIGGER_MOVE = 3  # misbehave on this move of the game (1-based), so the game is under way


class Link:
    def __init__(self) -> None:
        if STDIO:
            self.sock = None
            return
        import zmq

        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.setsockopt(zmq.IDENTITY, os.environ["ARENA_TOKEN"].encode())
        self.sock.setsockopt(zmq.LINGER, 2000)
        self.sock.connect(os.environ["ARENA_ENDPOINT"])

    def send_raw(self, data: bytes) -> None:
        if self.sock is None:
            sys.stdout.buffer.write(data + b"\n")
            sys.stdout.buffer.flush()
        else:
            self.sock.send(data)

    def send(self, message: dict) -> None:
        self.send_raw(json.dumps(message).encode())

    def recv(self) -> dict | None:
        if self.sock is None:
            raw = sys.stdin.readline()
            if not raw:
                return None
        else:
            raw = self.sock.recv().decode()
        if KIND == "recorder":  # keep every message the referee sent, verbatim
            with open(sys.argv[-1], "a") as log:
                log.write(raw.rstrip("\n") + "\n")
        return json.loads(raw)


def move_reply(seq: int, state: GameState) -> dict:
    return {"type": "move", "seq": seq, "move": state.legal_moves()[0].to_json(state.ruleset.cols)}


def main() -> None:
    if KIND == "exit_at_start":
        sys.exit(7)
    if KIND == "slow_start":
        time.sleep(60)
    link = Link()
    if KIND == "bad_hello":
        link.send({"type": "hello", "name": "x"})
    elif KIND == "wrong_protocol":
        link.send({"type": "hello", "name": "future", "version": "9", "protocol": 2})
    elif KIND == "move_first":
        link.send({"type": "move", "seq": 1, "move": {"action": "advance"}})
    else:
        link.send({"type": "hello", "name": f"misbehave-{KIND}", "version": "1", "protocol": 1,
                   "capabilities": {"legal_moves": KIND == "recorder"}})
    if KIND == "forks":
        for _ in range(3):
            subprocess.Popen(["sleep", "300"])
    if KIND == "setsid_daemon":
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execvp("sleep", ["sleep", "300"])
            os._exit(0)
    moves_made = 0
    while True:
        message = link.recv()
        if message is None or message["type"] == "shutdown":
            return
        if message["type"] != "move_request":
            continue
        seq = message["seq"]
        state = GameState.from_json(message["state"])
        moves_made += 1
        if moves_made < TRIGGER_MOVE:
            link.send(move_reply(seq, state))
            continue
        if KIND == "hang":
            while True:
                time.sleep(1)
        elif KIND == "sleep_past_limit":
            per_move = message["clocks"][state.to_move()]["per_move_ms"]
            bank = message["clocks"][state.to_move()]["bank_ms"]
            time.sleep((per_move + bank) / 1000 + 0.5)
            link.send(move_reply(seq, state))
        elif KIND == "uses_bank":
            if moves_made == TRIGGER_MOVE:  # overrun once, well within the bank
                per_move = message["clocks"][state.to_move()]["per_move_ms"]
                time.sleep(per_move / 1000 + 0.3)
            link.send(move_reply(seq, state))
        elif KIND == "crash":
            os._exit(3)
        elif KIND == "garbage":
            link.send_raw(b"\x00\xffthis is not json at all")
        elif KIND == "truncated":
            link.send_raw(b'{"type": "move", "seq": ' + str(seq).encode() + b', "move": {"act')
        elif KIND == "schema":
            link.send({"type": "move", "seq": seq, "move": {"action": "fly", "to": "moon"}})
        elif KIND == "illegal":
            link.send({"type": "move", "seq": seq,
                       "move": {"action": "buy", "patch": state.circle[5], "cells": [[0, 0], [0, 1]]}})
        elif KIND == "huge":
            link.send_raw(b'{"type": "move", "seq": 1, "info": "' + b"x" * (10 * 2**20) + b'"}')
        elif KIND == "flood":
            for _ in range(5000):
                link.send(move_reply(seq - 1, state))
        elif KIND == "late_reply":
            # Answer every request twice: the stale copy of the previous answer arrives
            # during the next request and must be dropped, not taken as the answer.
            link.send(move_reply(seq - 1, state))
            link.send(move_reply(seq, state))
        elif KIND in ("forks", "setsid_daemon", "bad_hello", "recorder"):
            link.send(move_reply(seq, state))
        else:
            raise SystemExit(f"unknown kind {KIND}")


if __name__ == "__main__":
    main()
