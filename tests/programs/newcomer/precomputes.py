"""Mistake: computes its tables (a busy loop) before it says hello, saying nothing. With an
argument, it computes that many seconds (default 25: past the 20 s start limit)."""
import json
import sys
import time

end = time.monotonic() + (float(sys.argv[1]) if len(sys.argv) > 1 else 25)
table = 0
while time.monotonic() < end:
    table = (table * 31 + 7) % 1_000_003
print(json.dumps({"type": "hello", "name": "precomputes", "version": "1", "protocol": 1,
                  "capabilities": {"legal_moves": True}}), flush=True)
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        print(json.dumps({"type": "move", "seq": message["seq"], "move": message["legal_moves"][0]}),
              flush=True)
    elif message["type"] == "shutdown":
        break
