"""Mistake: on its first move_request writes thousands of blank lines (an empty print()
in a loop) and no move, then waits."""
import json
import sys


def send(message):
    print(json.dumps(message), flush=True)


send({"type": "hello", "name": "blank-lines", "version": "1", "protocol": 1,
      "capabilities": {"legal_moves": True}})
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        for _ in range(5000):
            print(flush=True)
    elif message["type"] == "shutdown":
        break
