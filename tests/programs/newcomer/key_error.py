"""Mistake: reads a key the state does not have; dies with a traceback on its first move."""
import json
import sys


def send(message):
    print(json.dumps(message), flush=True)


send({"type": "hello", "name": "key-error", "version": "1", "protocol": 1,
      "capabilities": {"legal_moves": True}})
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        buttons = message["state"]["my_buttons"]
        send({"type": "move", "seq": message["seq"], "move": message["legal_moves"][0]})
