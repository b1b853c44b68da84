"""Mistake: plays one game and exits when it is over (a bot plays many, until shutdown)."""
import json
import sys


def send(message):
    print(json.dumps(message), flush=True)


send({"type": "hello", "name": "one-game", "version": "1", "protocol": 1,
      "capabilities": {"legal_moves": True}})
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        send({"type": "move", "seq": message["seq"], "move": message["legal_moves"][0]})
    elif message["type"] == "game_over":
        sys.exit(0)
