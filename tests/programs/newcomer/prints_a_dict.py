"""Mistake: prints its messages with print(message), Python's way of showing a dict (single
quotes, True, None), not JSON."""
import sys

print({"type": "hello", "name": "prints-a-dict", "version": "1", "protocol": 1,
       "capabilities": {"legal_moves": True}}, flush=True)
sys.stdin.read()  # then waits for its input to end
