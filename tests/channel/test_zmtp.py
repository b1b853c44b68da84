"""The bridge's ZMTP codec (arena.channel.zmtp), without a socket: handshakes of each version,
framing, heartbeats and what it refuses."""

from __future__ import annotations

import struct

import pytest

from arena.channel import zmtp
from arena.channel.zmtp import Peer, ZmtpError

TOKEN = b"0123456789abcdef0123456789abcdef"


def greeting(major: int = 3, minor: int = 1, mechanism: bytes = b"NULL") -> bytes:
    return zmtp.SIGNATURE + bytes((major, minor)) + mechanism.ljust(20, b"\0") + bytes(32)


def handshake(socket_type: str = "DEALER", identity: bytes | None = TOKEN, minor: int = 1) -> bytes:
    return greeting(minor=minor) + zmtp.ready(socket_type, identity)


def ready_peer(max_bytes: int = 100) -> Peer:
    peer = Peer(max_bytes)
    assert peer.feed(handshake()) == [(zmtp.READY, TOKEN)]
    peer.out.clear()
    return peer


def test_a_zmtp_3_1_dealer_gets_our_greeting_then_our_ready_after_its_own() -> None:
    peer = Peer(100)
    assert bytes(peer.out) == zmtp.GREETING_START  # the signature and major version, at once
    assert peer.feed(greeting()) == []
    assert bytes(peer.out) == zmtp.GREETING_START + zmtp.GREETING_REST  # no READY before theirs
    assert peer.feed(zmtp.ready("DEALER", TOKEN)) == [(zmtp.READY, TOKEN)]
    assert bytes(peer.out).endswith(zmtp.ready("ROUTER"))
    assert len(zmtp.GREETING_START + zmtp.GREETING_REST) == 64
    assert peer.version == (3, 1) and peer.socket_type == "DEALER" and peer.ready


@pytest.mark.parametrize("socket_type", ["DEALER", "REQ", "ROUTER"])
def test_the_socket_types_a_router_talks_to(socket_type: str) -> None:
    assert Peer(100).feed(handshake(socket_type)) == [(zmtp.READY, TOKEN)]


def test_a_zmtp_3_0_peer_and_one_without_identity() -> None:
    peer = Peer(100)
    assert peer.feed(handshake(identity=None, minor=0)) == [(zmtp.READY, b"")]
    assert peer.version == (3, 0)


def test_a_zmtp_2_0_peer_jeromq_0_3_style() -> None:
    peer = Peer(100)
    events = peer.feed(zmtp.SIGNATURE + b"\x01" + bytes((zmtp.SOCKET_TYPES.index("DEALER"),))
                       + zmtp.frame(TOKEN) + zmtp.frame(b"hello"))
    assert events == [(zmtp.READY, TOKEN), (zmtp.MESSAGE, b"hello")]
    # our revision byte (3: the peer reads at least 1), then our type and an empty identity
    assert bytes(peer.out) == zmtp.GREETING_START + b"\x06" + b"\x00\x00"
    assert peer.version == (2, 0)


def test_byte_at_a_time_is_the_same_as_all_at_once() -> None:
    wire = handshake() + zmtp.frame(b"a" * 10) + zmtp.frame(b"b" * 300) + zmtp.command(b"PING", b"\x00\x0a")
    whole, single = Peer(1000), Peer(1000)
    events = whole.feed(wire)
    assert [e for i in range(len(wire)) for e in single.feed(wire[i:i + 1])] == events
    assert events == [(zmtp.READY, TOKEN), (zmtp.MESSAGE, b"a" * 10), (zmtp.MESSAGE, b"b" * 300)]
    assert whole.out == single.out


def test_short_and_long_frames() -> None:
    assert zmtp.frame(b"x" * 255)[:2] == b"\x00\xff"
    assert zmtp.frame(b"x" * 256)[:9] == b"\x02" + struct.pack(">Q", 256)
    peer = ready_peer(max_bytes=1 << 20)
    body = bytes(range(256)) * 1000
    wire = zmtp.frame(body) + zmtp.frame(b"")
    assert peer.feed(wire[:5000]) == []
    assert peer.feed(wire[5000:]) == [(zmtp.MESSAGE, body), (zmtp.MESSAGE, b"")]


def test_ping_is_answered_with_pong_echoing_the_context() -> None:
    peer = ready_peer()
    assert peer.feed(zmtp.command(b"PING", b"\x00\x64ctx") + zmtp.frame(b"m")) == [(zmtp.MESSAGE, b"m")]
    assert bytes(peer.out) == zmtp.command(b"PONG", b"ctx") == b"\x04\x08\x04PONGctx"
    peer.out.clear()
    assert peer.feed(zmtp.command(b"PONG")) == [] and not peer.out


def test_a_peer_that_pings_and_never_reads_has_one_pong_waiting() -> None:
    """Red team: 10 MB of PINGs from a bot that never reads had the bridge keep a PONG for each
    (its memory grew by 12 MiB/s until the cgroup killed it, or without end unconfined). As with
    libzmq, one PONG waits at most, behind what was queued before it."""
    peer = ready_peer()
    peer.out += b"m" * 1000  # a message of the referee's being written
    ping = zmtp.command(b"PING", b"\x00\x10" + b"c" * 16)
    pong = zmtp.command(b"PONG", b"c" * 16)
    for _ in range(40):
        assert peer.feed(ping * 10_000) == []
    assert bytes(peer.out) == b"m" * 1000 + pong  # 9.2 MB before
    peer.sent(1000 + len(pong) - 1)
    assert peer.feed(ping) == [] and bytes(peer.out) == pong[-1:]  # its last byte is not written
    peer.sent(1)
    assert peer.feed(ping) == [] and bytes(peer.out) == pong  # written: the next PING is answered


def test_a_multipart_message_is_counted_not_kept() -> None:
    peer = ready_peer()
    wire = zmtp.frame(b"", zmtp.MORE) + zmtp.frame(b"x" * 50, zmtp.MORE) + zmtp.frame(b"y" * 60)
    assert peer.feed(wire[:-70]) == []
    # known from the last frame's header; its body is then skipped as it comes
    assert peer.feed(wire[-70:-30]) == [(zmtp.MULTIPART, (3, True))]
    assert peer.feed(wire[-30:] + zmtp.frame(b"ok")) == [(zmtp.MESSAGE, b"ok")]
    assert len(peer.buf) == 0


def test_an_oversize_frame_is_refused_from_its_header() -> None:
    peer = ready_peer(max_bytes=100)
    header = b"\x02" + struct.pack(">Q", 1 << 40)
    assert peer.feed(header + b"z" * 10) == [(zmtp.OVERSIZE, 1 << 40)]
    assert len(peer.buf) == 0 and peer.feed(b"z" * 1000) == []  # nothing more is read
    assert ready_peer(100).feed(b"\x00\x67") == [(zmtp.OVERSIZE, 103)]  # over max + 2


def test_a_trailing_newline_is_not_counted() -> None:
    peer = ready_peer(max_bytes=10)
    assert peer.feed(zmtp.frame(b"x" * 10 + b"\r\n")) == [(zmtp.MESSAGE, b"x" * 10)]
    assert peer.feed(zmtp.frame(b"x" * 11 + b"\n")) == [(zmtp.OVERSIZE, 11)]


@pytest.mark.parametrize(("wire", "reason"), [
    (greeting(mechanism=b"PLAIN"), "asks for the PLAIN security mechanism: the arena's endpoint speaks NULL"),
    (greeting(mechanism=b"CURVE"), "asks for the CURVE security mechanism"),
    (handshake("PUSH"), "is a PUSH socket, which cannot talk to the arena's ROUTER: connect a DEALER"),
    (handshake("PUB"), "is a PUB socket"),
    (zmtp.SIGNATURE + b"\x01\x07" + zmtp.frame(b""), "is a PULL socket"),
    (b"\x01\x00hello", "speaks ZMTP 1.0 (libzmq 2.x)"),
    (zmtp.SIGNATURE + b"\x02", "an unknown ZMTP revision (2)"),
    (greeting() + zmtp.frame(b"hi"), "a message before the handshake's READY command"),
    (greeting() + zmtp.command(b"ERROR", b"\x03bad"), "refused the handshake: 'bad'"),
    (greeting() + zmtp.command(b"HELLO"), "'HELLO' command where the handshake's READY was due"),
    (greeting() + b"\x04\x05\x05READY", "a malformed ZMTP command"),
])
def test_what_it_does_not_speak_is_a_start_up_error(wire: bytes, reason: str) -> None:
    with pytest.raises(ZmtpError) as caught:
        Peer(100).feed(wire)
    assert caught.value.handshake and reason in caught.value.reason, caught.value.reason


@pytest.mark.parametrize(("wire", "reason"), [
    (b"\x08\x00", "a malformed ZMTP frame (flags 0x08)"),
    (zmtp.command(b"SHOUT"), "a ZMTP command the arena does not speak ('SHOUT')"),
    (zmtp.command(b"PING", b"\x00"), "a malformed PING command"),
])
def test_after_the_handshake_junk_is_a_protocol_error(wire: bytes, reason: str) -> None:
    with pytest.raises(ZmtpError) as caught:
        ready_peer().feed(wire)
    assert not caught.value.handshake and reason in caught.value.reason


def test_the_messages_before_an_error_come_with_it() -> None:
    with pytest.raises(ZmtpError) as caught:
        ready_peer().feed(zmtp.frame(b"hello") + b"\x08\x00")
    assert caught.value.events == [(zmtp.MESSAGE, b"hello")]
