"""The bridge against a bot speaking ZMTP by hand (tests/programs/zmq_stacks/rawbot.py), without
the referee or a sandbox: each event the bridge reports, from the wire up."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from arena.channel import zmq_bridge

RAWBOT = Path(__file__).resolve().parents[1] / "programs" / "zmq_stacks" / "rawbot.py"


class Bridge:
    def __init__(self, mode: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-m", "arena.channel.zmq_bridge", "--max-bytes", "1000", "--",
             sys.executable, str(RAWBOT), mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)

    def read(self, size: int) -> bytes:
        assert self.proc.stdout is not None
        data = b""
        while len(data) < size:
            chunk = self.proc.stdout.read(size - len(data))
            assert chunk, f"the bridge's output ended: {data!r}"
            data += chunk
        return data

    def frame(self) -> tuple[bytes, bytes]:
        kind, size = zmq_bridge.FRAME_HEADER.unpack(self.read(zmq_bridge.FRAME_HEADER.size))
        return kind, self.read(size)

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def bridge() -> object:
    made: list[Bridge] = []

    def make(mode: str) -> Bridge:
        made.append(Bridge(mode))
        return made[-1]

    yield make
    for each in made:
        each.close()


@pytest.mark.parametrize(("mode", "frames"), [
    ("oversize", [(b"M", b"hello"), (b"O", b"1000000000")]),
    ("multipart", [(b"M", b"hello"), (b"P", b"2 empty-first"), (b"M", b"ok")]),
    ("junk", [(b"M", b"hello"), (b"E", b"a malformed ZMTP frame (flags 0x08)")]),
    ("foreign", [(b"I", b"intruder")]),
    ("second", [(b"C", b"")]),
])
def test_what_the_bot_sends(bridge, mode: str, frames: list[tuple[bytes, bytes]]) -> None:  # type: ignore[no-untyped-def]
    run = bridge(mode)
    assert [run.frame() for _ in frames] == frames


def test_a_refused_mechanism_is_a_start_failure(bridge) -> None:  # type: ignore[no-untyped-def]
    kind, payload = bridge("curve").frame()
    assert kind == b"S", payload
    assert payload.startswith(b"cannot talk to its ZeroMQ socket: it asks for the CURVE"), payload


def test_a_drop_is_reported_with_the_time_waited(bridge) -> None:  # type: ignore[no-untyped-def]
    run = bridge("drop")
    assert run.frame() == (b"M", b"hello")
    started = time.monotonic()
    kind, payload = run.frame()
    assert kind == b"D" and float(payload) >= 2.0 and time.monotonic() - started >= 1.9, payload


def test_a_message_before_any_connection_is_unreachable(bridge) -> None:  # type: ignore[no-untyped-def]
    run = bridge("unreachable")
    time.sleep(0.3)
    run.send(b"{}")
    assert run.frame() == (b"U", b"")


def test_a_pong_waits_for_the_half_written_frame(bridge) -> None:  # type: ignore[no-untyped-def]
    run = bridge("ping_midframe")
    assert run.frame() == (b"M", b"hello")
    run.send(b"y" * (4 << 20))  # more than the socket's buffer: written in parts
    assert run.frame() == (b"M", b"ok %d" % (4 << 20))


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def test_pings_never_read_cost_the_bridge_one_pong(bridge) -> None:  # type: ignore[no-untyped-def]
    """Red team: a bot that sends PINGs and never reads had the bridge keep every PONG (8 MB of
    PINGs: +7 MiB; 12 MiB/s under strict until the cgroup killed it)."""
    run = bridge("pings_unread")
    assert run.frame() == (b"M", b"hello")
    before = _rss_kib(run.proc.pid)
    assert run.frame() == (b"M", b"flooded")
    grown = _rss_kib(run.proc.pid) - before
    assert grown < 2048, f"the bridge grew by {grown} KiB"
