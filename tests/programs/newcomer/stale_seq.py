"""Mistake: answers every request of a game with the seq of the game's first request."""
import json
import sys

print(json.dumps({"type": "hello", "name": "stale-seq", "version": "1", "protocol": 1,
                  "capabilities": {"legal_moves": True}}), flush=True)
first_seq = None
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "new_game":
        first_seq = None
    elif message["type"] == "move_request":
        first_seq = first_seq or message["seq"]
        print(json.dumps({"type": "move", "seq": first_seq, "move": message["legal_moves"][0]}),
              flush=True)
    elif message["type"] == "shutdown":
        break
