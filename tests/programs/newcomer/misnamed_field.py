"""Mistake: names a field of its move wrongly: argv[1] is "Type" (capitalised "type") or
"sequence" (for "seq", a word no spelling check links to it)."""
import json
import sys

wrong = sys.argv[1]


def send(message):
    print(json.dumps(message), flush=True)


send({"type": "hello", "name": "misnamed", "version": "1", "protocol": 1,
      "capabilities": {"legal_moves": True}})
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        move = {"type": "move", "seq": message["seq"], "move": message["legal_moves"][0]}
        right = "type" if wrong == "Type" else "seq"
        move[wrong] = move.pop(right)
        send(move)
    elif message["type"] == "shutdown":
        break
