"""A correct stdio bot that keeps a log of its moves in a file next to itself: fine under
--sandbox none, a crash under strict, where the bot's folder is read-only (it should
write in $TMPDIR)."""
import json
import sys

moves_log = open("moves.log", "w")


def send(message):
    print(json.dumps(message), flush=True)


send({"type": "hello", "name": "writes-beside", "version": "1", "protocol": 1,
      "capabilities": {"legal_moves": True}})
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        moves_log.write(json.dumps(message["legal_moves"][0]) + "\n")
        send({"type": "move", "seq": message["seq"], "move": message["legal_moves"][0]})
    elif message["type"] == "shutdown":
        break
