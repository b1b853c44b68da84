"""Not a mistake of the protocol: it computes past every limit (no flush hint for it)."""
import json
import sys

print(json.dumps({"type": "hello", "name": "thinks-forever", "version": "1", "protocol": 1,
                  "capabilities": {"legal_moves": True}}), flush=True)
for line in sys.stdin:
    if json.loads(line)["type"] == "move_request":
        while True:
            pass
