"""A pyzmq bot with ZMTP heartbeats on (tests/channel/test_zmq_stacks.py): libzmq PINGs every
20 ms and drops the connection when no answer comes within 500 ms; the bot sleeps a second on
its first move, so the game goes on only if the bridge answers with PONG."""

import json
import os
import time

import zmq

ctx = zmq.Context()
sock = ctx.socket(zmq.DEALER)
sock.setsockopt(zmq.IDENTITY, os.environ["ARENA_TOKEN"].encode())
sock.setsockopt(zmq.LINGER, 0)
sock.setsockopt(zmq.HEARTBEAT_IVL, 20)
sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, 500)
sock.setsockopt(zmq.HEARTBEAT_TTL, 2000)
sock.connect(os.environ["ARENA_ENDPOINT"])
sock.send(json.dumps({"type": "hello", "name": "heartbeat", "version": "0.1", "protocol": 1,
                      "capabilities": {"legal_moves": True}}).encode())
slept = False
while True:
    msg = json.loads(sock.recv())
    if msg["type"] == "move_request":
        if not slept:
            time.sleep(1.0)
            slept = True
        sock.send(json.dumps({"type": "move", "seq": msg["seq"], "move": msg["legal_moves"][0]}).encode())
    elif msg["type"] == "shutdown":
        break
sock.close()
ctx.term()
