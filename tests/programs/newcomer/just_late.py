"""Not a protocol mistake: each reply comes a few milliseconds after the limit (it sleeps the
limit given as its argument, in ms, then 5 to 30 ms more): late replies that land while the
referee looks into why the bot did not answer."""
import json
import random
import sys
import time

limit_s = float(sys.argv[1]) / 1000
print(json.dumps({"type": "hello", "name": "just-late", "version": "1", "protocol": 1,
                  "capabilities": {"legal_moves": True}}), flush=True)
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        time.sleep(limit_s + random.uniform(0.005, 0.03))
        print(json.dumps({"type": "move", "seq": message["seq"], "move": message["legal_moves"][0]}),
              flush=True)
    elif message["type"] == "shutdown":
        break
