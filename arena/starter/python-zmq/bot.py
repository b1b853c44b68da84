"""A Patchwork bot for patchwork-arena, in Python, over ZeroMQ (pyzmq, no SDK).

It speaks protocol v1 directly so that the whole protocol is in view: see
protocol/PROTOCOL.md in the patchwork-arena repository (section 2 for ZeroMQ, section 5 for
every message). Python bots may instead use the SDK (``arena.sdk``, protocol/SDK.md), which
does all of this and gives you the rules engine.

ZeroMQ in short: a DEALER socket whose identity is ARENA_TOKEN (set before connecting),
connected to ARENA_ENDPOINT; one JSON message per frame; the bot speaks first (hello).
Print whatever you like: stdout and stderr both go to the bot's log. Play games until
``shutdown``: one process plays many games.
"""

import json
import os
import random
import sys

import zmq

NAME = "@NAME@"


def log(*words: object) -> None:
    print(*words, file=sys.stderr, flush=True)


def choose_move(request: dict) -> dict:
    """Your strategy goes here. ``request["state"]`` is the position (PROTOCOL.md section 4),
    ``request["legal_moves"]`` every legal move (we asked for them in hello). This one buys a
    patch when it can, else advances."""
    moves = request["legal_moves"]
    buys = [m for m in moves if m["action"] == "buy"]
    return random.choice(buys or moves)


def main() -> None:
    context = zmq.Context()
    socket = context.socket(zmq.DEALER)
    socket.setsockopt(zmq.IDENTITY, os.environ["ARENA_TOKEN"].encode())  # before connect
    socket.setsockopt(zmq.LINGER, 0)
    socket.connect(os.environ["ARENA_ENDPOINT"])

    def send(message: dict) -> None:
        socket.send(json.dumps(message, separators=(",", ":")).encode())  # one frame

    send({"type": "hello", "name": NAME, "version": "0.1", "protocol": 1,
          "capabilities": {"legal_moves": True}})
    try:
        while True:
            message = json.loads(socket.recv())
            kind = message.get("type")
            if kind == "move_request":
                send({"type": "move", "seq": message["seq"], "move": choose_move(message)})
            elif kind == "new_game":
                log(f"game {message['game_id']}: I am seat {message['seat']}")
            elif kind == "game_over":
                log(f"game {message['game_id']} over: {message['result']}")
            elif kind == "error":
                log(f"the referee says: {message['message']}")
            elif kind == "shutdown":
                break
            elif kind != "welcome":
                log(f"ignoring a message of type {kind!r}")  # later versions may add some
    finally:
        socket.close()
        context.term()


if __name__ == "__main__":
    main()
