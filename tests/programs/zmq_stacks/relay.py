"""JeroMQ 0.3 has no ipc:// of its own (it maps an ipc name to a TCP port on 127.0.0.1), so
its bot connects over TCP to this relay, which copies bytes both ways to ARENA_ENDPOINT's Unix
socket: the bridge still sees JeroMQ's own ZMTP. ``python relay.py CMD...`` runs CMD with
the relay's tcp:// endpoint as its last argument and exits with its status."""

import os
import select
import socket
import subprocess
import sys

listener = socket.create_server(("127.0.0.1", 0))
port = listener.getsockname()[1]
child = subprocess.Popen([*sys.argv[1:], f"tcp://127.0.0.1:{port}"])
listener.settimeout(30)
tcp, _ = listener.accept()
unix = socket.socket(socket.AF_UNIX)
unix.connect(os.environ["ARENA_ENDPOINT"].removeprefix("ipc://"))
other = {tcp: unix, unix: tcp}
open_ = True
while open_:
    for sock in select.select([tcp, unix], [], [])[0]:
        data = sock.recv(1 << 16)
        if not data:
            open_ = False
            break
        other[sock].sendall(data)
tcp.close()
unix.close()
sys.exit(child.wait())
