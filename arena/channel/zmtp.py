"""ZMTP, the ZeroMQ wire protocol, as the bridge's ROUTER speaks it: parsing and framing,
no I/O (:mod:`arena.channel.zmq_bridge` reads and writes the socket).

One :class:`Peer` per accepted connection: :meth:`Peer.feed` takes the bytes read and returns
the events they complete; :attr:`Peer.out` holds what to write back (the greeting, READY,
a PONG), and :meth:`Peer.sent` drops what was written. Spoken (https://rfc.zeromq.org/spec/23/ and /spec/37/):

* ZMTP 3.1, and 3.0 peers (they never send PING; we answer as 3.0 would), and ZMTP 2.0
  peers (libzmq 3.x, JeroMQ 0.3: revision 1, a socket-type byte and an identity frame);
* the NULL mechanism only, with the READY command's Socket-Type (DEALER, REQ or ROUTER:
  those libzmq lets talk to a ROUTER) and Identity properties;
* short and long frames, the MORE flag (a multipart message is counted, its bodies dropped),
  the COMMAND flag: PING is answered with PONG echoing its context (one PONG waits to be
  written at most, as with libzmq: a peer that sends PINGs and does not read costs nothing
  more), PONG is ignored.

Refused with a :class:`ZmtpError` whose reason is written for the bot's author: another
mechanism (PLAIN, CURVE, GSSAPI), an incompatible socket type, ZMTP 1.0 or an unknown
revision, a malformed frame or command. A message frame over the limit is never kept: its
size, read from its header, is the event.
"""

from __future__ import annotations

import struct

SIGNATURE = b"\xff" + bytes(8) + b"\x7f"
MAJOR, MINOR = 3, 1
# What the bridge sends at once: the signature and the major version; the rest of the greeting
# follows when the peer's major version is known (as libzmq does, so ZMTP 2.0 peers can talk).
GREETING_START = SIGNATURE + bytes([MAJOR])
GREETING_REST = bytes([MINOR]) + b"NULL".ljust(20, b"\0") + b"\0" + bytes(31)
GREETING_SIZE = 64
_START = len(GREETING_START)  # 11

SOCKET_TYPES = ("PAIR", "PUB", "SUB", "REQ", "REP", "DEALER", "ROUTER", "PULL", "PUSH", "XPUB",
                "XSUB", "STREAM")  # ZMTP 2.0's socket-type byte is the index
COMPATIBLE = frozenset({"DEALER", "REQ", "ROUTER"})  # the peers libzmq lets a ROUTER talk to
OUR_TYPE = "ROUTER"

MORE, LONG, COMMAND = 0x01, 0x02, 0x04
_COMMAND_MAX = 1 << 16  # a READY with its metadata is a few hundred bytes; PING under 20
_U64 = struct.Struct(">Q")
_U32 = struct.Struct(">I")

# events from Peer.feed: (kind, value)
READY = "ready"  # value: the peer's identity (b"" when it set none)
MESSAGE = "message"  # value: the body of a one-frame message
MULTIPART = "multipart"  # value: (frames, first frame empty)
OVERSIZE = "oversize"  # value: the size a frame's header announced, or its body's length


class ZmtpError(Exception):
    """The peer speaks something we do not: the reason is for the bot's author."""

    def __init__(self, reason: str, *, handshake: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.handshake = handshake  # refused before its first message: a start-up error
        self.events: list[tuple[str, object]] = []  # what the same bytes completed before it


def frame(body: bytes, flags: int = 0) -> bytes:
    """One frame: flags, size (one byte, or eight with LONG), body."""
    if len(body) < 256:
        return bytes((flags, len(body))) + body
    return bytes((flags | LONG,)) + _U64.pack(len(body)) + body


def command(name: bytes, data: bytes = b"") -> bytes:
    return frame(bytes((len(name),)) + name + data, COMMAND)


def ready(socket_type: str = OUR_TYPE, identity: bytes | None = None) -> bytes:
    """A NULL mechanism's READY command with its metadata."""
    props = [(b"Socket-Type", socket_type.encode())]
    if identity is not None:
        props.append((b"Identity", identity))
    data = b"".join(bytes((len(k),)) + k + _U32.pack(len(v)) + v for k, v in props)
    return command(b"READY", data)


def parse_properties(data: bytes) -> dict[str, bytes]:
    """READY's metadata: name (1-byte size) and value (4-byte size) pairs; names as lower case."""
    props: dict[str, bytes] = {}
    pos, end = 0, len(data)
    while pos < end:
        size = data[pos]
        name = data[pos + 1:pos + 1 + size]
        pos += 1 + size
        if len(name) != size or pos + 4 > end:
            raise ZmtpError("a malformed READY command (its metadata is cut short)", handshake=True)
        (length,) = _U32.unpack_from(data, pos)
        pos += 4
        if pos + length > end:
            raise ZmtpError("a malformed READY command (a property's value is cut short)", handshake=True)
        props[name.decode("ascii", "replace").lower()] = bytes(data[pos:pos + length])
        pos += length
    return props


def check_socket_type(name: str) -> None:
    if name not in COMPATIBLE:
        shown = name if name in SOCKET_TYPES else repr(name)
        raise ZmtpError(f"it is a {shown} socket, which cannot talk to the arena's "
                        "ROUTER: connect a DEALER socket", handshake=True)


class Peer:
    """One connection's ZMTP state: bytes in, events out, bytes to write in :attr:`out`."""

    def __init__(self, max_bytes: int) -> None:
        self.max_frame = max_bytes + 2  # room for a tolerated \r\n (the codec drops it)
        self.max_bytes = max_bytes
        self.out = bytearray(GREETING_START)
        self.buf = bytearray()
        self.version: tuple[int, int] | None = None  # the peer's, once its greeting is read
        self.state = "signature"  # then: greeting (ZMTP 3) or v2-type, ready, traffic
        self.identity: bytes | None = None
        self.socket_type: str | None = None
        self._frames = 0  # frames of the multipart message being counted
        self._first_empty = False
        self._skip = 0  # body bytes of a counted multipart frame still to drop
        self._major = MAJOR
        self._pong_end = 0  # where in out the PONG not written yet ends (0: none waits)

    @property
    def ready(self) -> bool:
        return self.state == "traffic"

    def sent(self, size: int) -> None:
        """The first ``size`` bytes of :attr:`out` were written."""
        del self.out[:size]
        self._pong_end = max(0, self._pong_end - size)

    def feed(self, data: bytes) -> list[tuple[str, object]]:
        """The bytes read from the connection: the events they complete, in order. Raises
        :class:`ZmtpError` on what we do not speak (the connection is then to be closed),
        with the events before it in its ``events``."""
        events: list[tuple[str, object]] = []
        try:
            return self._feed(data, events)
        except ZmtpError as exc:
            exc.events = events
            raise

    def _feed(self, data: bytes, events: list[tuple[str, object]]) -> list[tuple[str, object]]:
        if self.state == "refused":  # after an oversize frame: nothing more is read
            return events
        if self.state == "traffic" and not self.buf and not self._skip:
            pos = self._frames_from(data, 0, events)
            if pos < len(data):
                self.buf += memoryview(data)[pos:]
            return events
        self.buf += data
        pos = 0
        while self.state not in ("traffic", "refused"):
            used = self._handshake(pos, events)
            if used == 0:
                break
            pos += used
        if self.state == "traffic":
            if self._skip:
                take = min(self._skip, len(self.buf) - pos)
                self._skip -= take
                pos += take
            if not self._skip:
                pos = self._frames_from(self.buf, pos, events)
        del self.buf[:pos]
        return events

    # -- the handshake --------------------------------------------------------------------

    def _handshake(self, pos: int, events: list[tuple[str, object]]) -> int:
        buf, have = self.buf, len(self.buf) - pos
        if self.state == "signature":
            if have and buf[pos] != 0xFF:
                raise ZmtpError("its ZeroMQ library speaks ZMTP 1.0 (libzmq 2.x): the arena speaks "
                                "ZMTP 3.1, 3.0 and 2.0; use libzmq 3.2 or later", handshake=True)
            if have >= 10 and not buf[pos + 9] & 0x01:
                raise ZmtpError("its ZeroMQ library speaks ZMTP 1.0 (libzmq 2.x): the arena speaks "
                                "ZMTP 3.1, 3.0 and 2.0; use libzmq 3.2 or later", handshake=True)
            if have < _START:
                return 0
            major = buf[pos + 10]
            if major >= MAJOR:
                self._major = major
                self.state = "greeting"
                self.out += GREETING_REST
            elif major == 1:  # ZMTP 2.0: our socket type, then our (empty) identity
                self.version = (2, 0)
                self.state = "v2-type"
                self.out += bytes((SOCKET_TYPES.index(OUR_TYPE),)) + frame(b"")
            else:
                raise ZmtpError(f"its ZeroMQ library speaks an unknown ZMTP revision ({major}): "
                                "the arena speaks ZMTP 3.1, 3.0 and 2.0", handshake=True)
            return _START
        if self.state == "greeting":
            if have < GREETING_SIZE - _START:
                return 0
            self.version = (self._major, buf[pos])
            mechanism = bytes(buf[pos + 1:pos + 21]).rstrip(b"\0")
            if mechanism != b"NULL":
                name = mechanism.decode("ascii", "replace")
                raise ZmtpError(f"it asks for the {name} security mechanism: the arena's "
                                "endpoint speaks NULL only (the socket is private to the bot): set "
                                "no ZMQ_PLAIN_*, ZMQ_CURVE_* or ZMQ_GSSAPI_* options", handshake=True)
            self.state = "ready"  # ours answers the client's (RFC 37): we check it first
            return GREETING_SIZE - _START
        if self.state == "v2-type":
            if have < 1:
                return 0
            type_byte = buf[pos]
            name = SOCKET_TYPES[type_byte] if type_byte < len(SOCKET_TYPES) else f"#{type_byte}"
            check_socket_type(name)
            self.socket_type = name
            self.state = "v2-identity"
            return 1
        # "ready" (a READY command) or "v2-identity" (a frame holding the identity)
        parsed = self._header(buf, pos)
        if parsed is None:
            return 0
        flags, size, start = parsed
        if size > _COMMAND_MAX:
            raise ZmtpError(f"a handshake frame of {size} bytes", handshake=True)
        if len(buf) < start + size:
            return 0
        body = bytes(buf[start:start + size])
        if self.state == "v2-identity":
            if flags & MORE:
                raise ZmtpError("a malformed ZMTP 2.0 identity (in more than one frame)", handshake=True)
            self.identity = body
        else:
            self._ready(flags, body)
            self.out += ready()
        self.state = "traffic"
        events.append((READY, self.identity))
        return start + size - pos

    def _ready(self, flags: int, body: bytes) -> None:
        if not flags & COMMAND:
            raise ZmtpError("a message before the handshake's READY command", handshake=True)
        name, data = _command(body, handshake=True)
        if name == b"ERROR":
            reason = data[1:1 + data[0]].decode("utf-8", "replace") if data else ""
            raise ZmtpError(f"its ZeroMQ library refused the handshake: {reason!r}", handshake=True)
        if name != b"READY":
            raise ZmtpError(f"a {name.decode('ascii', 'replace')!r} command where the handshake's READY "
                            "was due", handshake=True)
        props = parse_properties(data)
        socket_type = props.get("socket-type", b"").decode("ascii", "replace")
        check_socket_type(socket_type)
        self.socket_type = socket_type
        self.identity = props.get("identity", b"")

    # -- traffic --------------------------------------------------------------------------

    def _header(self, buf: bytes | bytearray, pos: int) -> tuple[int, int, int] | None:
        """(flags, size, body start) of the frame at pos, or None if its header is incomplete."""
        end = len(buf)
        if pos >= end:
            return None
        flags = buf[pos]
        if flags & ~(MORE | LONG | COMMAND):
            raise ZmtpError(f"a malformed ZMTP frame (flags {flags:#04x})", handshake=not self.ready)
        if flags & LONG:
            if end - pos < 9:
                return None
            return flags, _U64.unpack_from(buf, pos + 1)[0], pos + 9
        if end - pos < 2:
            return None
        return flags, buf[pos + 1], pos + 2

    def _frames_from(self, buf: bytes | bytearray, pos: int, events: list[tuple[str, object]]) -> int:
        """Parse whole frames from pos on; return where the first incomplete one starts."""
        end = len(buf)
        while pos < end:
            parsed = self._header(buf, pos)
            if parsed is None:
                return pos
            flags, size, start = parsed
            if flags & COMMAND:
                if size > _COMMAND_MAX:
                    raise ZmtpError(f"a ZMTP command of {size} bytes", handshake=False)
                if end - start < size:
                    return pos
                self._command(bytes(buf[start:start + size]))
                pos = start + size
                continue
            if size > self.max_frame:  # refused from its header: never read, never kept
                events.append((OVERSIZE, size))
                self.state = "refused"
                return end
            if self._frames or flags & MORE:  # part of a multipart message: counted, dropped
                if not self._frames:
                    self._first_empty = size == 0
                self._frames += 1
                if not flags & MORE:
                    events.append((MULTIPART, (self._frames, self._first_empty)))
                    self._frames = 0
                if end - start < size:
                    self._skip = size - (end - start)
                    return end
                pos = start + size
                continue
            if end - start < size:
                return pos
            body = bytes(buf[start:start + size])
            pos = start + size
            if size > self.max_bytes:  # the limit does not count a trailing newline
                body = body[:-2] if body.endswith(b"\r\n") else body.removesuffix(b"\n")
                if len(body) > self.max_bytes:
                    events.append((OVERSIZE, len(body)))
                    self.state = "refused"
                    return end
            events.append((MESSAGE, body))
        return pos

    def _command(self, body: bytes) -> None:
        name, data = _command(body)
        if name == b"PING":
            if len(data) < 2 or len(data) > 2 + 16:
                raise ZmtpError("a malformed PING command", handshake=False)
            if not self._pong_end:  # else one waits already: the peer is not reading
                self.out += command(b"PONG", data[2:])  # the context echoed
                self._pong_end = len(self.out)
        elif name not in (b"PONG", b"SUBSCRIBE", b"CANCEL"):
            raise ZmtpError(f"a ZMTP command the arena does not speak ({name.decode('ascii', 'replace')!r})",
                            handshake=False)


def _command(body: bytes, handshake: bool = False) -> tuple[bytes, bytes]:
    if not body or len(body) < 1 + body[0]:
        raise ZmtpError("a malformed ZMTP command", handshake=handshake)
    return body[1:1 + body[0]], body[1 + body[0]:]
