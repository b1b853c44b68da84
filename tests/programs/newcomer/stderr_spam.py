"""Mistake: writes a long stack trace to stderr at every move (about 100 KB), so its log
reaches its 1 MiB cap within a game; it plays correctly otherwise."""
import json
import sys

trace = "".join(f"    at Bot.think(Bot.java:{i})\n" for i in range(3000))


def send(message):
    print(json.dumps(message), flush=True)


send({"type": "hello", "name": "stderr-spam", "version": "1", "protocol": 1,
      "capabilities": {"legal_moves": True}})
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        sys.stderr.write("java.lang.IllegalStateException: no move cached\n" + trace)
        send({"type": "move", "seq": message["seq"], "move": message["legal_moves"][0]})
    elif message["type"] == "shutdown":
        break
