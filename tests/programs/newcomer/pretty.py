"""Mistake: pretty-prints its JSON (a message over several lines)."""
import json
import sys


def send(message):
    print(json.dumps(message, indent=2), flush=True)


send({"type": "hello", "name": "pretty", "version": "1", "protocol": 1,
      "capabilities": {"legal_moves": True}})
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        send({"type": "move", "seq": message["seq"], "move": message["legal_moves"][0]})
    elif message["type"] == "shutdown":
        break
