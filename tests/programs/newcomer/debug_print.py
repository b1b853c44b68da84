"""Mistake: prints a debug line on stdout (where only protocol messages may go)."""
import json
import sys


def send(message):
    print(json.dumps(message), flush=True)


send({"type": "hello", "name": "debug-print", "version": "1", "protocol": 1,
      "capabilities": {"legal_moves": True}})
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        print("DEBUG: got request", message["seq"], "with", len(message["legal_moves"]), "moves")
        send({"type": "move", "seq": message["seq"], "move": message["legal_moves"][0]})
    elif message["type"] == "shutdown":
        break
