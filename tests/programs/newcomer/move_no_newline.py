"""Mistake: flushes its moves but ends them without a newline."""
import json
import sys

print(json.dumps({"type": "hello", "name": "move-no-newline", "version": "1", "protocol": 1,
                  "capabilities": {"legal_moves": True}}), flush=True)
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        print(json.dumps({"type": "move", "seq": message["seq"], "move": message["legal_moves"][0]}),
              end="", flush=True)
    elif message["type"] == "shutdown":
        break
