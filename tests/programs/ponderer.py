"""A stdio bot with a one-page stdin pipe (F_SETPIPE_SZ: any request with its legal moves is
longer) that, after its first move, thinks PAUSE seconds (its argument) without reading its
input: the referee's send of its next request waits on it."""

import fcntl
import json
import sys
import time

fcntl.fcntl(0, 1031, 4096)
print(json.dumps({"type": "hello", "name": "ponderer", "version": "1", "protocol": 1,
                  "capabilities": {"legal_moves": True}}), flush=True)
moved = False
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        print(json.dumps({"type": "move", "seq": message["seq"], "move": message["legal_moves"][0]}),
              flush=True)
        if not moved:
            moved = True
            time.sleep(float(sys.argv[1]))
    elif message["type"] == "shutdown":
        break
