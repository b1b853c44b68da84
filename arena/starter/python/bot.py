"""A Patchwork bot for patchwork-arena, in Python, over stdio (JSON lines).

It speaks protocol v1 directly, with nothing but the standard library, so that the whole
protocol is in view: see protocol/PROTOCOL.md in the patchwork-arena repository (section 2
for stdio, section 5 for every message). Python bots may instead use the SDK
(``arena.sdk``, protocol/SDK.md), which does all of this and gives you the rules engine.

Rules of the road: one JSON message per line on stdout, flushed at once; anything else you
want to print goes to stderr (the arena keeps it in the bot's log). Play games until
``shutdown``: one process plays many games.
"""

import json
import random
import sys

NAME = "@NAME@"


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()  # an unflushed move never arrives


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
    send({"type": "hello", "name": NAME, "version": "0.1", "protocol": 1,
          "capabilities": {"legal_moves": True}})
    for line in sys.stdin:  # end of input: the referee is gone
        message = json.loads(line)
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


if __name__ == "__main__":
    main()
