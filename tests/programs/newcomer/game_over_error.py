"""Mistake: reads a field game_over does not have, and dies of it a moment later (its
traceback written first): the referee only sees it die once the next game has begun."""
import json
import sys
import time


def send(message):
    print(json.dumps(message), flush=True)


send({"type": "hello", "name": "game-over-error", "version": "1", "protocol": 1,
      "capabilities": {"legal_moves": True}})
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        send({"type": "move", "seq": message["seq"], "move": message["legal_moves"][0]})
    elif message["type"] == "game_over":
        time.sleep(0.5)  # whatever it does at the end of a game
        print("I won!" if message["my_score"] > 0 else "I lost")
