"""Mistake: loads its tables (sleeps, with a word on stderr) before it says hello. With an
argument, it sleeps that many seconds (default 25: past the 20 s start limit)."""
import json
import sys
import time

print("loading tables...", file=sys.stderr, flush=True)
time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 25)
print(json.dumps({"type": "hello", "name": "slow-start", "version": "1", "protocol": 1,
                  "capabilities": {"legal_moves": True}}), flush=True)
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        print(json.dumps({"type": "move", "seq": message["seq"], "move": message["legal_moves"][0]}),
              flush=True)
    elif message["type"] == "shutdown":
        break
