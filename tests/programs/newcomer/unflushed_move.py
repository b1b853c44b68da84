"""Mistake: flushes its hello but not its moves (a pipe is block-buffered): every move
times out."""
import json
import sys

print(json.dumps({"type": "hello", "name": "unflushed-move", "version": "1", "protocol": 1,
                  "capabilities": {"legal_moves": True}}), flush=True)
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        print(json.dumps({"type": "move", "seq": message["seq"], "move": message["legal_moves"][0]}))
    elif message["type"] == "shutdown":
        break
