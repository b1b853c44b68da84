"""A bot that speaks ZMTP by hand over the bridge's Unix socket (tests/channel/test_zmq_bridge_wire.py):
``rawbot.py MODE``, each mode one thing a socket may do."""

import os
import socket
import struct
import sys
import time

from arena.channel import zmtp

mode = sys.argv[1]
path = os.environ["ARENA_ENDPOINT"].removeprefix("ipc://")
TOKEN = os.environ["ARENA_TOKEN"].encode()


def connect(identity: bytes = TOKEN, mechanism: bytes = b"NULL") -> socket.socket:
    sock = socket.socket(socket.AF_UNIX)
    for _ in range(200):
        try:
            sock.connect(path)
            break
        except OSError:
            time.sleep(0.01)
    sock.sendall(zmtp.SIGNATURE + bytes((3, 1)) + mechanism.ljust(20, b"\0") + bytes(32)
                 + zmtp.ready("DEALER", identity))
    want = 64 + len(zmtp.ready("ROUTER"))
    got = b""
    while mechanism == b"NULL" and identity == TOKEN and len(got) < want:
        got += sock.recv(want - len(got))
    return sock


def recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return bytes(data)


if mode == "unreachable":
    time.sleep(30)
elif mode == "curve":
    kept = connect(mechanism=b"CURVE")
    time.sleep(30)
elif mode == "foreign":
    kept = connect(identity=b"intruder")
    time.sleep(30)
elif mode == "second":
    first, second = connect(), connect()
    time.sleep(30)
else:
    sock = connect()
    sock.sendall(zmtp.frame(b"hello"))
    if mode == "oversize":
        sock.sendall(b"\x02" + struct.pack(">Q", 10**9) + b"x" * 100)
    elif mode == "multipart":
        sock.sendall(zmtp.frame(b"", zmtp.MORE) + zmtp.frame(b"x") + zmtp.frame(b"ok"))
    elif mode == "junk":
        sock.sendall(b"\x08\x00")
    elif mode == "drop":
        sock.close()
    elif mode == "pings_unread":  # 8 MB of PINGs, never reading the PONGs
        sock.sendall(zmtp.command(b"PING", b"\x00\x10" + b"c" * 16) * 320_000 + zmtp.frame(b"flooded"))
    elif mode == "ping_midframe":  # the referee's message is big; a PING while it is half written
        sock.recv(1, socket.MSG_PEEK)  # its first bytes are here: the bridge is writing the rest
        sock.sendall(zmtp.command(b"PING", b"\x00\x10ctx"))
        time.sleep(0.2)
        frames = []
        for _ in range(2):
            flags, = recv_exactly(sock, 1)
            long = flags & zmtp.LONG
            size = struct.unpack(">Q", recv_exactly(sock, 8))[0] if long else recv_exactly(sock, 1)[0]
            frames.append((flags, recv_exactly(sock, size)))
        (flags, body), pong = frames  # the PONG after the whole message, not inside it
        good = flags == zmtp.LONG and body == b"y" * len(body) and pong == (zmtp.COMMAND, b"\x04PONGctx")
        sock.sendall(zmtp.frame(b"ok %d" % len(body) if good else b"bad"))
    time.sleep(30)
