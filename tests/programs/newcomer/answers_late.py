"""Not a mistake of the protocol: it computes a little past the limit, then answers (too slow
for the time control: its late reply came in while the referee gave up)."""
import json
import sys
import time

print(json.dumps({"type": "hello", "name": "answers-late", "version": "1", "protocol": 1,
                  "capabilities": {"legal_moves": True}}), flush=True)
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        end = time.monotonic() + 0.45  # limit 200 ms + 200 ms of bank: just past it
        while time.monotonic() < end:
            pass
        reply = {"type": "move", "seq": message["seq"], "move": message["legal_moves"][0]}
        print(json.dumps(reply), flush=True)
