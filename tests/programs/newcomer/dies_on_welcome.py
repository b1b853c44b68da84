"""Handles the messages it knows by their type and stops at any other: the welcome, which
comes right after its hello, before any game."""
import json
import sys

print(json.dumps({"type": "hello", "name": "dies-on-welcome", "version": "1", "protocol": 1,
                  "capabilities": {"legal_moves": True}}), flush=True)
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        print(json.dumps({"type": "move", "seq": message["seq"], "move": message["legal_moves"][0]}),
              flush=True)
    elif message["type"] in ("new_game", "game_over"):
        pass
    elif message["type"] == "shutdown":
        break
    else:
        raise ValueError(f"unexpected message type {message['type']}")
