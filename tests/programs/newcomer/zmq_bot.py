"""A ZeroMQ bot (DEALER, as PROTOCOL.md says). Mistakes made with it: a manifest that says
protocol "stdio" (it finds no ARENA_TOKEN), and with the argument "req" a REQ socket."""
import json
import os
import sys

import zmq

socket = zmq.Context().socket(zmq.REQ if sys.argv[1:] == ["req"] else zmq.DEALER)
socket.setsockopt(zmq.IDENTITY, os.environ["ARENA_TOKEN"].encode())
socket.connect(os.environ["ARENA_ENDPOINT"])
socket.send_string(json.dumps({"type": "hello", "name": "zmq-bot", "version": "1", "protocol": 1,
                               "capabilities": {"legal_moves": True}}))
while (message := json.loads(socket.recv()))["type"] != "shutdown":
    if message["type"] == "move_request":
        socket.send_string(json.dumps({"type": "move", "seq": message["seq"],
                                       "move": message["legal_moves"][0]}))
