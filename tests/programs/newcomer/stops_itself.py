"""Mistake: stops itself (SIGSTOP) on its first move_request, or with argv[1] "group" its
whole process group, as a bot meaning to pause for a debugger might."""
import json
import os
import signal
import sys


def send(message):
    print(json.dumps(message), flush=True)


send({"type": "hello", "name": "stops-itself", "version": "1", "protocol": 1,
      "capabilities": {"legal_moves": True}})
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        if sys.argv[1:] == ["group"]:
            os.killpg(0, signal.SIGSTOP)
        else:
            os.kill(os.getpid(), signal.SIGSTOP)
        send({"type": "move", "seq": message["seq"], "move": message["legal_moves"][0]})
    elif message["type"] == "shutdown":
        break
