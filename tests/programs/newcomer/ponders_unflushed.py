"""Mistake: a bot that ponders (a thread searching all the time, as MCTS bots do) and never
flushes its move ("unflushed"), or flushes it without its newline ("no_newline"): its main
thread waits for its input, thinking it has answered, while the pondering thread computes."""
import json
import sys
import threading


def ponder() -> None:
    while True:
        pass


MODE = sys.argv[1]
print(json.dumps({"type": "hello", "name": "ponders", "version": "1", "protocol": 1,
                  "capabilities": {"legal_moves": True}}), flush=True)
threading.Thread(target=ponder, daemon=True).start()
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        reply = json.dumps({"type": "move", "seq": message["seq"], "move": message["legal_moves"][0]})
        if MODE == "unflushed":
            sys.stdout.write(reply + "\n")  # a pipe: block-buffered, never flushed
        else:
            sys.stdout.write(reply)
            sys.stdout.flush()
