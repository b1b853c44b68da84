"""Transports end to end: real bot subprocesses, real sockets and pipes, no mocks."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from arena.channel.transport import (
    BridgeChannel,
    BridgeFramer,
    Channel,
    Inbox,
    LineFramer,
    StdioChannel,
    bridge_argv,
)
from arena.errors import (
    BotTerminatedError,
    MalformedMessageError,
    OversizeMessageError,
    ProtocolViolationError,
)
from arena.launch.process import BotProcess

ZMQ_BOT = r"""
import os, sys, time, zmq

sock = zmq.Context().socket(zmq.DEALER)
sock.setsockopt(zmq.LINGER, 0)
sock.setsockopt(zmq.IDENTITY, os.environ["ARENA_TOKEN"].encode())
sock.connect(os.environ["ARENA_ENDPOINT"])
mode = sys.argv[1]
tag = sys.argv[2] if len(sys.argv) > 2 else ""

def send(data):
    sock.send(data)

send(b"hello " + tag.encode())
if mode == "echo":
    while (msg := sock.recv()) != b"quit":
        send(msg)
elif mode == "burst":  # on "go": 20 tagged messages, paced so two bots interleave
    sock.recv()
    for i in range(20):
        send(f"{tag}-{i}".encode())
        time.sleep(0.002)
    time.sleep(60)
elif mode == "crash":
    sock.recv()
    time.sleep(0.3)
    os._exit(7)
elif mode == "silent":
    time.sleep(60)
elif mode == "oversize":
    sock.recv()
    send(b"x" * 10_000_000)
    time.sleep(60)
elif mode == "garbage":
    sock.recv()
    send(b'{"a": "\xff\xfe"}')
    send(b'{"after": 1}')
    time.sleep(60)
elif mode == "flood":
    sock.recv()
    for i in range(1000):
        send(b'{"n": %d}' % i)
    time.sleep(60)
elif mode == "newlines":  # JSON may hold raw newlines as whitespace: they must arrive as sent
    sock.recv()
    send(b'{"a":\n 1,\r\n "b": "\xc3\xa9"}')
    time.sleep(60)
elif mode == "intruder":  # a second DEALER under another identity
    sock.recv()
    other = zmq.Context.instance().socket(zmq.DEALER)
    other.setsockopt(zmq.IDENTITY, b"somebody-else")
    other.connect(os.environ["ARENA_ENDPOINT"])
    other.send(b"{}")
    time.sleep(60)
elif mode == "second":  # a second connection under the token itself
    sock.recv()
    other = zmq.Context.instance().socket(zmq.DEALER)
    other.setsockopt(zmq.IDENTITY, os.environ["ARENA_TOKEN"].encode())
    other.connect(os.environ["ARENA_ENDPOINT"])
    time.sleep(60)
elif mode == "killed":
    sock.recv()
    os.kill(os.getpid(), 9)
"""

STDIO_BOT = r"""
import os, sys, time

out = sys.stdout.buffer
def send(data):
    out.write(data + b"\n")
    out.flush()

mode = sys.argv[1]
send(b"hello")
if mode == "echo":
    for line in sys.stdin.buffer:
        if line == b"quit\n":
            break
        send(line.rstrip(b"\n"))
elif mode == "crash":
    sys.stdin.buffer.readline()
    time.sleep(0.3)
    os._exit(7)
elif mode == "silent":
    time.sleep(60)
elif mode == "close_stdout":
    sys.stdin.buffer.readline()
    os.close(1)
    time.sleep(60)
elif mode == "oversize":
    sys.stdin.buffer.readline()
    send(b"x" * 10_000_000)
    time.sleep(60)
elif mode == "garbage":
    sys.stdin.buffer.readline()
    send(b'{"a": "\xff\xfe"}')
    send(b'{"after": 1}')
    time.sleep(60)
elif mode == "flood":
    sys.stdin.buffer.readline()
    for i in range(1000):
        out.write(b'{"n": %d}\n' % i)
    out.flush()
    time.sleep(60)
elif mode == "tiny_flood":  # one-character lines, as fast as it can
    sys.stdin.buffer.readline()
    blob = b"1\n" * (1 << 20)
    while True:
        os.write(1, blob)
"""

Start = Callable[..., BotProcess]


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Start]:
    """Start a bot script in a subprocess; every one is killed at teardown."""
    (tmp_path / "zmq_bot.py").write_text(ZMQ_BOT)
    (tmp_path / "stdio_bot.py").write_text(STDIO_BOT)
    started: list[BotProcess] = []

    def _start(script: str, *args: str, env: dict[str, str] | None = None,
               pipes: bool = False, bridge: bool = False) -> BotProcess:
        n = len(started)
        argv = [sys.executable, str(tmp_path / script), *args]
        bot = BotProcess.start(bridge_argv(argv) if bridge else argv,
                               cwd=tmp_path / f"bot{n}", env=env, pipes=pipes,
                               stderr_log=tmp_path / f"bot{n}.stderr.log")
        started.append(bot)
        return bot

    yield _start
    for bot in started:
        bot.kill_tree()


def zmq_bot(start: Start, mode: str, tag: str = "") -> Channel:
    channel = BridgeChannel(start("zmq_bot.py", mode, tag, pipes=True, bridge=True), name=mode)
    assert channel.recv(10.0) == f"hello {tag}"
    return channel


def stdio_bot(start: Start, mode: str) -> Channel:
    channel = StdioChannel(start("stdio_bot.py", mode, pipes=True), name=mode)
    assert channel.recv(10.0) == "hello"
    return channel


@pytest.fixture(params=["zmq", "stdio"])
def make_bot(request: pytest.FixtureRequest, start: Start) -> Callable[[str], Channel]:
    if request.param == "zmq":
        return lambda mode: zmq_bot(start, mode)
    return lambda mode: stdio_bot(start, mode)


def test_echo_round_trip(make_bot: Callable[[str], Channel]) -> None:
    channel = make_bot("echo")
    for text in ['{"type": "ping"}', '{"s": "' + "é" * 1000 + '"}', "{}"]:
        channel.send(text)
        assert channel.recv(5.0) == text
    channel.send('{"late": true}')
    time.sleep(0.2)
    assert channel.recv(0) == '{"late": true}'  # a zero timeout still looks once
    channel.close()
    channel.close()  # idempotent


def test_two_bots_interleave(start: Start) -> None:
    a = zmq_bot(start, "burst", "a")
    b = zmq_bot(start, "burst", "b")
    a.send("go")
    b.send("go")
    # Read all of a's first: b's messages arrive meanwhile and must be kept for b.
    assert [a.recv(5.0) for _ in range(20)] == [f"a-{i}" for i in range(20)]
    assert [b.recv(5.0) for _ in range(20)] == [f"b-{i}" for i in range(20)]
    assert a.recv(0.05) is None and b.recv(0.05) is None


def test_message_bytes_arrive_unaltered(start: Start) -> None:
    channel = zmq_bot(start, "newlines")
    channel.send("go")
    assert channel.recv(5.0) == '{"a":\n 1,\r\n "b": "é"}'


def test_foreign_identity_loses(start: Start) -> None:
    channel = zmq_bot(start, "intruder")
    channel.send("go")
    with pytest.raises(ProtocolViolationError, match="b'somebody-else', not its ARENA_TOKEN"):
        channel.recv(5.0)


def test_second_connection_loses(start: Start) -> None:
    channel = zmq_bot(start, "second")
    channel.send("go")
    with pytest.raises(ProtocolViolationError, match="more than one connection"):
        channel.recv(5.0)


def test_killed_by_a_signal_is_reported_as_such(start: Start) -> None:
    channel = zmq_bot(start, "killed")
    channel.send("go")
    with pytest.raises(BotTerminatedError, match="killed by signal 9"):
        channel.recv(5.0)


def test_junk_on_the_bridge_pipe_is_malformed_never_a_crash() -> None:
    inbox = Inbox("junk")
    BridgeFramer(inbox).feed(b"Z\x00\x00\x00\x02hiM\x00\x00\x00\x02{}M\xff\xff\xff\xff")
    with pytest.raises(MalformedMessageError, match="kind b'Z'"):
        inbox.take()
    assert inbox.take() == "{}"
    with pytest.raises(OversizeMessageError, match="4294967295 bytes"):
        inbox.take()


# -- the inbox and the framers, without a process: the same code every channel reads through


def test_inbox_delivers_messages_before_the_error_behind_them() -> None:
    inbox = Inbox("b")
    LineFramer(inbox).feed(b'{"a": 1}\n\xff\n{"b": 2}\r\n\n  \n')
    assert len(inbox) == 3  # blank lines are not messages
    assert inbox.take() == '{"a": 1}'
    with pytest.raises(MalformedMessageError, match="not UTF-8"):
        inbox.take()
    assert inbox.take() == '{"b": 2}'


def test_inbox_flood_drops_the_queue_and_stays_a_flood() -> None:
    inbox = Inbox("b", max_pending=4)
    framer = LineFramer(inbox)
    framer.feed(b"{}\n" * 5)
    assert inbox.flooded and len(inbox) == 0
    framer.feed(b"{}\n")
    for _ in range(2):
        with pytest.raises(ProtocolViolationError, match="more than 4 unread messages"):
            inbox.take()


def test_line_framer_reports_an_over_long_line_before_its_end_and_only_once() -> None:
    inbox = Inbox("b")
    framer = LineFramer(inbox, max_bytes=10)
    framer.feed(b"x" * 8)
    framer.feed(b"x" * 8)  # never kept: counted
    assert framer.partial == b""
    framer.read_done()
    with pytest.raises(OversizeMessageError, match="at least 16 bytes so far, over the 10-byte"):
        inbox.take()
    framer.feed(b"xx\n{}\n")
    framer.read_done()
    assert inbox.take() == "{}" and len(inbox) == 0
    framer.feed(b"y" * 11 + b"\n")
    with pytest.raises(OversizeMessageError, match="a message of 11 bytes"):
        inbox.take()


def test_line_framer_takes_a_message_of_the_limit_ending_in_crlf() -> None:
    # The \r of an allowed \r\n was counted: exactly the limit, then \r\n, was "oversize".
    inbox = Inbox("b")
    framer = LineFramer(inbox, max_bytes=10)
    framer.feed(b'"' + b"x" * 8 + b'"\r\n')
    assert inbox.take() == '"' + "x" * 8 + '"'
    framer.feed(b'"xxxx')
    framer.feed(b'xxxx"\r\n')  # the same, cut across reads
    assert inbox.take() == '"' + "x" * 8 + '"'
    for line in (b"y" * 11 + b"\r\n", b"y" * 12 + b"\r\n", b"y" * 11 + b"\n"):
        framer.feed(line)
    for size in (11, 12, 11):
        with pytest.raises(OversizeMessageError, match=f"a message of {size} bytes, over the 10-byte"):
            inbox.take()


def test_line_framer_skips_blank_lines_by_the_run_and_refuses_too_many() -> None:
    # 8 MiB of newlines cost the referee 3.2 s of CPU, one loop pass per line, counted nowhere.
    inbox = Inbox("b")
    framer = LineFramer(inbox, max_bytes=100)
    framer.feed(b"\n" * 60 + b" \r\n" * 10 + b"{}\n" + b"\n" * 60)
    framer.feed(b"\n" * 60)
    assert inbox.take() == "{}"
    with pytest.raises(MalformedMessageError, match="more than 100 bytes of blank lines in a row"):
        inbox.take()
    framer.feed(b"\n" * 50 + b"{}\n" + b"\n" * 50 + b"{}\n")  # counted from the last message
    assert inbox.take() == "{}" and inbox.take() == "{}" and len(inbox) == 0
    lines = []
    framer._line = lines.append  # type: ignore[method-assign]  # the slow path, line by line
    framer.feed(b"\x0c\n" * 60 + b"\x0b \r\n" * 60 + b"{}\n")  # form feeds, as strip() sees them:
    assert lines == [b"{}"]  # skipped as one run (line by line, they cost 314 ms a MiB)
    framer = LineFramer(Inbox("c"))
    framer.feed(b"\n" * (8 << 20))  # one run, skipped at once: one report
    with pytest.raises(MalformedMessageError, match="more than 1048576 bytes of blank lines"):
        framer.inbox.take()
    assert len(framer.inbox) == 0


def test_line_framer_keeps_a_line_cut_across_reads_and_ends_it_at_eof() -> None:
    inbox = Inbox("b")
    framer = LineFramer(inbox)
    for piece in (b'{"a"', b": 1}\n{", b'"b": 2}'):
        framer.feed(piece)
    assert inbox.take() == '{"a": 1}' and len(inbox) == 0
    framer.at_eof()
    assert inbox.take() == '{"b": 2}'


def test_the_look_at_who_holds_a_bots_output_is_paced_by_its_cost(start: Start,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # Under strict each look reads every descriptor of every process of the bot, every 250 ms:
    # a bot of 240 processes holding 256 files each made it 10.4 s of referee CPU in a 20 s game.
    channel = stdio_bot(start, "silent")
    assert isinstance(channel, StdioChannel)
    process = channel._process
    looks = []

    def costly_look(inode: int) -> bool:  # as a bot of many processes makes it
        looks.append(time.monotonic())
        time.sleep(0.05)
        return True

    monkeypatch.setattr(process, "bot_holds_output", costly_look)
    channel._watch_pipe = True  # as a launcher that keeps a copy of the bot's stdout
    assert channel.recv(1.5) is None
    assert 1 <= len(looks) <= 2, looks  # 20 x 50 ms apart at least (250 ms apart: 6 looks)


def test_pipe_holders_can_stop_at_the_first_holder() -> None:
    from arena.launch.proctree import pipe_holders

    read_end, write_end = os.pipe()
    children = [subprocess.Popen(["sleep", "30"], pass_fds=(write_end,)) for _ in range(3)]
    try:
        inode = os.fstat(write_end).st_ino
        pids = {child.pid for child in children}
        assert pipe_holders(inode, pids) == pids
        assert pipe_holders(inode, pids, first=True) == {min(pids)}
    finally:
        for child in children:
            child.kill()
            child.wait()
        os.close(read_end)
        os.close(write_end)


def test_recv_timeout_returns_none(make_bot: Callable[[str], Channel]) -> None:
    channel = make_bot("silent")
    t0 = time.monotonic()
    assert channel.recv(0.3) is None
    assert 0.3 <= time.monotonic() - t0 < 2.0
    assert channel.recv(0) is None


def test_crash_while_waiting(make_bot: Callable[[str], Channel]) -> None:
    channel = make_bot("crash")
    channel.send("go")
    t0 = time.monotonic()
    with pytest.raises(BotTerminatedError, match="exit code 7"):
        channel.recv(20.0)
    assert time.monotonic() - t0 < 5.0  # it dies after 0.3 s; the timeout is 20 s


def test_send_to_a_dead_bot(make_bot: Callable[[str], Channel]) -> None:
    channel = make_bot("crash")
    channel.send("go")
    with pytest.raises(BotTerminatedError):
        channel.recv(20.0)
    with pytest.raises(BotTerminatedError, match="exit code 7"):
        for _ in range(100):  # a pipe may take a write or two to notice
            channel.send("{}")


def test_stdio_bot_closes_stdout(start: Start) -> None:
    channel = stdio_bot(start, "close_stdout")
    channel.send("go")
    with pytest.raises(BotTerminatedError, match="closed its output"):
        channel.recv(20.0)


def test_oversize_message(make_bot: Callable[[str], Channel]) -> None:
    channel = make_bot("oversize")
    # A request: a ZeroMQ bot's bridge tells a message libzmq dropped from a bot reconnecting
    # by whether the bot owed a reply (zmq_bridge.check_connections).
    channel.send('{"type":"move_request","seq":1}')
    t0 = time.monotonic()
    with pytest.raises(OversizeMessageError, match="1048576-byte limit"):
        channel.recv(20.0)
    assert time.monotonic() - t0 < 5.0


def test_not_utf8(make_bot: Callable[[str], Channel]) -> None:
    channel = make_bot("garbage")
    channel.send("go")
    with pytest.raises(MalformedMessageError, match="not UTF-8"):
        channel.recv(5.0)
    assert channel.recv(5.0) == '{"after": 1}'  # one bad message does not wreck the stream


def test_flood(make_bot: Callable[[str], Channel]) -> None:
    channel = make_bot("flood")
    channel.send("go")
    time.sleep(0.5)  # let it write everything
    with pytest.raises(ProtocolViolationError, match="flood"):
        for _ in range(1000):
            channel.recv(5.0)


def test_a_flood_stops_the_reading(start: Start) -> None:
    """Red team: once the inbox is flooded nothing more is kept, yet each pump read on to its
    8 MiB budget: one-character lines cost the referee 2.8 s of CPU (4 s of wall time) in one
    recv, each game. Now it stops reading at the flood."""
    channel = StdioChannel(start("stdio_bot.py", "tiny_flood", pipes=True), name="tiny")
    assert channel.recv(10.0) == "hello"
    channel.send("go")
    time.sleep(0.3)  # the pipe is full
    cpu = time.process_time()
    with pytest.raises(ProtocolViolationError, match="flood"):
        for _ in range(100):
            channel.recv(5.0)
    cpu = time.process_time() - cpu
    assert channel.bytes_read <= 256 << 10 and cpu < 0.5, (channel.bytes_read, cpu)


def test_messages_before_a_crash_are_delivered(start: Start) -> None:
    channel = zmq_bot(start, "echo")
    channel.send("last words")
    channel.send("quit")  # the bot's loop ends and it exits with code 0
    assert channel.recv(5.0) == "last words"
    with pytest.raises(BotTerminatedError, match="exit code 0"):
        channel.recv(5.0)


def _latency(channel: Channel, rounds: int = 2000) -> str:
    """Wall time of send + recv of a 2 KB message to an echo bot, and the referee's CPU
    time in it (what the referee pays; the rest is the bot and the kernel)."""
    text = '{"type": "move_request", "pad": "' + "x" * 2000 + '"}'
    for _ in range(100):  # warm up
        channel.send(text)
        channel.recv(5.0)
    wall, cpu = [], []
    for _ in range(rounds):
        t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        channel.send(text)
        reply = channel.recv(5.0)
        cpu.append(time.thread_time_ns() - c0)
        wall.append(time.perf_counter_ns() - t0)
        assert reply == text
    wall.sort()
    return (f"round trip p50 {statistics.median(wall) / 1000:.0f} us, "
            f"p99 {wall[int(0.99 * len(wall))] / 1000:.0f} us; "
            f"referee CPU p50 {statistics.median(cpu) / 1000:.0f} us")


def test_round_trip_latency(start: Start, capsys: pytest.CaptureFixture[str]) -> None:
    """Not a timed assertion: prints the figures (see them with ``pytest -s``)."""
    results = {"zmq": _latency(zmq_bot(start, "echo")),
               "stdio": _latency(stdio_bot(start, "echo"))}
    with capsys.disabled():
        for name, figures in results.items():
            print(f"\n{name:5} 2 KB echo: {figures}", end="")
