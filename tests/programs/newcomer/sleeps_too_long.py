"""Not a mistake of the protocol: it sleeps past the limit on every move (a bot pacing itself
wrongly), so the flush hint would send its author the wrong way."""
import json
import sys
import time

print(json.dumps({"type": "hello", "name": "sleeps-too-long", "version": "1", "protocol": 1,
                  "capabilities": {"legal_moves": True}}), flush=True)
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        time.sleep(3)
        reply = {"type": "move", "seq": message["seq"], "move": message["legal_moves"][0]}
        print(json.dumps(reply), flush=True)
