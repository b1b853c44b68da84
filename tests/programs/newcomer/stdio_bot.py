"""A correct stdio bot; with a manifest that says protocol "zmq" (the default) it is the
mistake "stdio bot, zmq manifest". With an argument it thinks that many seconds over its
first move of each game (allowed: a first move has a larger limit)."""
import json
import sys
import time

first_move_s = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0


def send(message):
    print(json.dumps(message), flush=True)


send({"type": "hello", "name": "stdio-bot", "version": "1", "protocol": 1,
      "capabilities": {"legal_moves": True}})
moved = False
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "new_game":
        moved = False
    elif message["type"] == "move_request":
        if not moved:
            time.sleep(first_move_s)
            moved = True
        send({"type": "move", "seq": message["seq"], "move": message["legal_moves"][0]})
    elif message["type"] == "shutdown":
        break
