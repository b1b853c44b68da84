"""Mistake: reads its whole input (to end of file) before it answers: it waits forever."""
import json
import sys

print(json.dumps({"type": "hello", "name": "read-to-eof", "version": "1", "protocol": 1,
                  "capabilities": {"legal_moves": True}}), flush=True)
for line in sys.stdin.read().splitlines():
    message = json.loads(line)
    if message["type"] == "move_request":
        print(json.dumps({"type": "move", "seq": message["seq"], "move": message["legal_moves"][0]}),
              flush=True)
    elif message["type"] == "shutdown":
        break
