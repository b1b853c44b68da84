"""Says hello at once, as advised, then loads its tables for longer than the first move's
limit before it reads its first request (the bank pays for it)."""
import json
import sys
import time

print(json.dumps({"type": "hello", "name": "loads-after-hello", "version": "1", "protocol": 1,
                  "capabilities": {"legal_moves": True}}), flush=True)
time.sleep(float(sys.argv[1]))
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        print(json.dumps({"type": "move", "seq": message["seq"], "move": message["legal_moves"][0]}),
              flush=True)
