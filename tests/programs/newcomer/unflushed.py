"""Mistake: writes its messages but never flushes stdout (a pipe is block-buffered)."""
import json
import sys

sys.stdout.write(json.dumps({"type": "hello", "name": "unflushed", "version": "1", "protocol": 1,
                             "capabilities": {"legal_moves": True}}) + "\n")
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        sys.stdout.write(json.dumps({"type": "move", "seq": message["seq"],
                                     "move": message["legal_moves"][0]}) + "\n")
    elif message["type"] == "shutdown":
        break
