"""Mistake: flushes, but never ends a message with a newline."""
import json
import sys

sys.stdout.write(json.dumps({"type": "hello", "name": "no-newline", "version": "1", "protocol": 1,
                             "capabilities": {"legal_moves": True}}))
sys.stdout.flush()
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        sys.stdout.write(json.dumps({"type": "move", "seq": message["seq"],
                                     "move": message["legal_moves"][0]}))
        sys.stdout.flush()
    elif message["type"] == "shutdown":
        break
