"""Transports: one message interface, one receive loop, one inbox, two framings.

A :class:`Channel` moves whole messages (JSON texts, no newline) between the referee
and one bot, and turns every way a bot can misbehave at this level into an error:

* :class:`BotTerminatedError`: the process exited, or closed its stdout (stdio);
* :class:`OversizeMessageError`: a message over ``max_bytes`` (the text gives the size);
* :class:`ProtocolViolationError`: a flood (more than ``max_pending`` unread messages),
  or a bot that does not read what the referee sends;
* :class:`MalformedMessageError`: bytes that are not UTF-8, or a multipart zmq message;
* :class:`BotStartError`: the bridge could not start the bot's command.

The pieces, each written once: an :class:`Inbox` holds what a bot sent and has not been
read, messages and errors in arrival order (so messages that arrived before a failure are
delivered first; the error comes once they are read), and turns too many into a flood; a
framer cuts the bot's byte stream into that inbox, keeping at most ``max_bytes`` of a
message (:class:`LineFramer` for stdio lines, :class:`BridgeFramer` for the bridge's
frames); :class:`PipeChannel` is the receive loop over the bot's pipes. ``recv`` never
blocks for longer than its timeout (``None`` means it ran out) and checks every ~50 ms
whether the process is still alive, so a crash is reported at once rather than at the end
of the bot's thinking time.

ZeroMQ (:class:`BridgeChannel`): the referee owns no socket. A ZeroMQ bot runs under
:mod:`arena.channel.zmq_bridge`, its top process inside its sandbox, which binds the bot's
ROUTER endpoint in the bot's private tmp (speaking ZMTP itself, :mod:`arena.channel.zmtp`),
checks identity, connection count, frames and sizes, and speaks to the referee over the same
stdin/stdout pipes as a stdio bot, with length-prefixed frames on the way back (JSON may hold
raw newlines). So all a bot's connections, and what is buffered for them, cost the bot's own uid, cgroup and
rlimits; the referee pays a few pipe descriptors, a bounded queue and a bounded read per
pump, whatever the bot does. The bridge's events (a foreign identity, a second
connection, a dropped connection...) become the errors below. (The bridge keeps its own
small buffers: it runs in the bot's sandbox without this module and forwards; it refuses a
frame over the limit from its header, and the referee's inbox decides floods.)

stdio (:class:`StdioChannel`): one line per message on the bot's stdin/stdout pipes,
read with non-blocking ``os.read`` calls and ``poll`` (no thread, no unbounded buffer:
an over-long line is counted and discarded, never accumulated).

Neither class is thread-safe: a referee drives its channels from one thread.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import re
import select
import sys
import time
from collections import deque
from types import TracebackType
from typing import Protocol

from arena.channel import zmq_bridge
from arena.errors import (
    ArenaError,
    BotStartError,
    BotTerminatedError,
    BotTimeoutError,
    MalformedMessageError,
    OversizeMessageError,
    ProtocolViolationError,
)
from arena.launch.process import BotProcess
from arena.protocol.constants import MAX_MESSAGE_BYTES

log = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = MAX_MESSAGE_BYTES
DEFAULT_MAX_PENDING = 64
DEFAULT_SEND_TIMEOUT_S = 5.0

_ALIVE_CHECK_S = 0.05  # how often a waiting recv looks at the process
_OUTPUT_CHECK_S = 0.25  # how often it looks whether a bot still holds its stdout (output_copy_held)
_OUTPUT_CHECK_PACE = 20  # ... at most: at least this many times the last look's cost apart
_EXIT_GRACE_S = 0.5  # after EOF / a dropped connection: time for the exit status to show
_FLUSH_GRACE_S = 0.2  # after the process died: time for its last bytes to reach us
_READ_CHUNK = 1 << 16  # a pipe's capacity; under the mmap threshold, so the buffer comes from the heap
_READ_BUDGET = 8 << 20  # stdio bytes read per pump
_EVENT_MAX = 4096  # a bridge event's payload is short; a longer one is junk


class _UnlessExited(ArenaError):
    """Queued for an event that a bot's exit also causes: raised as ``error`` only when
    the process is still running after a grace period, else the exit is reported."""

    def __init__(self, error: ArenaError) -> None:
        super().__init__(str(error))
        self.error = error


Item = str | ArenaError  # a queued message, or an error to raise when it is its turn


class Channel(Protocol):
    """One bot's message stream, whatever the transport."""

    name: str

    def send(self, text: str, timeout_s: float | None = None) -> None:
        """Send one message (a JSON text without newline); see :meth:`PipeChannel.send`."""
        ...

    def recv(self, timeout_s: float) -> str | None:
        """The next message, or None after ``timeout_s`` seconds without one."""
        ...

    def close(self) -> None:
        """Stop using the channel (idempotent); the process is the caller's to kill."""
        ...


class Inbox:
    """What a bot sent that has not been read yet: messages and errors in arrival order.

    Bounded: past ``max_pending`` unread items the bot is flooding, the queue is dropped and
    :meth:`take` raises the flood from then on. An error is queued behind the messages that
    came before it, so they are delivered first (a bot's last words before a crash)."""

    def __init__(self, name: str, max_pending: int = DEFAULT_MAX_PENDING) -> None:
        self.name = name
        self.max_pending = max_pending
        self.flooded = False
        self._queue: deque[Item] = deque()

    def __len__(self) -> int:
        """Unread items (0 once flooded)."""
        return len(self._queue)

    def push(self, item: Item) -> None:
        if self.flooded:
            return
        if len(self._queue) >= self.max_pending:
            self.flooded = True
            self._queue.clear()
        else:
            self._queue.append(item)

    def peek(self, count: int) -> list[Item]:
        """The oldest ``count`` unread items, left in place."""
        return list(itertools.islice(self._queue, count))

    def take(self) -> str:
        """The oldest message; raises the flood, or the oldest item when it is an error
        (an :class:`_UnlessExited` is the caller's to resolve)."""
        if self.flooded:
            raise ProtocolViolationError(
                f"bot {self.name}: a flood (more than {self.max_pending} unread messages)")
        item = self._queue.popleft()
        if isinstance(item, ArenaError):
            raise item
        return item


class Framer(Protocol):
    """Cuts a byte stream from the bot into messages and errors, pushed to an inbox; keeps
    at most ``max_bytes`` of a message (a longer one is counted, never accumulated)."""

    def feed(self, chunk: bytes) -> None:
        """Take the next bytes of the stream."""
        ...

    def read_done(self) -> None:
        """Everything available for now has been fed."""
        ...

    def at_eof(self) -> None:
        """The stream ended."""
        ...


_BLANK = re.compile(rb"[ \t\r\n\x0b\x0c]+")  # what bytes.strip() takes for blank (form feeds too)


class LineFramer:
    """One message per line (``\n``, an optional ``\r`` before it, not counted in the
    size); blank lines are not messages. An over-long line is reported as soon as it is
    seen to be too long. Blank lines are skipped a run at a time (one per loop pass, 8 MiB
    of newlines cost the referee 3.2 s of CPU), and more than ``max_bytes`` of them in a
    row are malformed: they carry nothing, and they cost us to read."""

    def __init__(self, inbox: Inbox, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.inbox = inbox
        self.max_bytes = max_bytes
        self.partial = bytearray()  # the current line, never more than max_bytes + 1 (its \r)
        self._discarding: int | None = None  # size so far of an over-long line being skipped
        self._oversize_reported = False
        self._blank = 0  # bytes of blank lines since the last message

    def feed(self, chunk: bytes) -> None:
        end = chunk.find(b"\n")
        if (end == len(chunk) - 1 >= 0 and end <= self.max_bytes and not self.partial
                and self._discarding is None):
            self._line(chunk[:end])  # one whole line, the usual reply: what the loop below would do
            return
        start = 0
        limit = self.max_bytes + 1  # a line may end in \r\n: _line measures it without the \r
        name = self.inbox.name
        while True:
            if not self.partial and self._discarding is None:
                blank = _BLANK.match(chunk, start)
                if blank is not None:
                    self._skip_blank(blank.end() - start)
                    start = blank.end()
            end = chunk.find(b"\n", start)
            if end < 0:
                rest = len(chunk) - start
                if self._discarding is not None:
                    self._discarding += rest
                elif len(self.partial) + rest > limit:
                    self._discarding = len(self.partial) + rest
                    self.partial = bytearray()
                else:
                    self.partial += chunk[start:]
                return
            # the size of the line ending here, and the same without a \r before the \n
            cr = (chunk[end - 1] if end > start else self.partial[-1] if self.partial else 0) == 13
            if self._discarding is not None:
                size = self._discarding + end - start
                if not self._oversize_reported:
                    self.inbox.push(_oversize(name, size - cr, self.max_bytes))
                self._discarding = None
                self._oversize_reported = False
            elif self.partial:
                if len(self.partial) + end - start > limit:
                    self.inbox.push(_oversize(name, len(self.partial) + end - start - cr, self.max_bytes))
                else:
                    self.partial += chunk[start:end]
                    self._line(bytes(self.partial))
                self.partial = bytearray()
            elif end - start > limit:
                self.inbox.push(_oversize(name, end - start - cr, self.max_bytes))
            else:
                self._line(chunk[start:end])
            start = end + 1

    def read_done(self) -> None:
        if self._discarding is not None and not self._oversize_reported:
            # Report now rather than when (if ever) the newline comes.
            self.inbox.push(_oversize(self.inbox.name, self._discarding, self.max_bytes,
                                      complete=False))
            self._oversize_reported = True

    def at_eof(self) -> None:
        if self.partial:
            line, self.partial = bytes(self.partial), bytearray()
            self._line(line)

    def _line(self, line: bytes) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        if len(line) > self.max_bytes:
            self.inbox.push(_oversize(self.inbox.name, len(line), self.max_bytes))
        elif line.strip():  # blank lines are not messages
            self._blank = 0
            self.inbox.push(_decode(self.inbox.name, line))
        else:
            self._skip_blank(len(line) + 1)

    def _skip_blank(self, size: int) -> None:
        self._blank += size
        if self._blank > self.max_bytes:
            self._blank = 0
            self.inbox.push(MalformedMessageError(
                f"bot {self.inbox.name}: more than {self.max_bytes} bytes of blank lines in a row: "
                "stdout carries one JSON message per line"))


def _decode(name: str, data: bytes) -> Item:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return MalformedMessageError(
            f"bot {name}: a message that is not UTF-8 ({exc.reason} at byte {exc.start}): "
            f"{data[:80]!r}")


def _oversize(name: str, size: int, limit: int, *, complete: bool = True) -> OversizeMessageError:
    amount = f"{size} bytes" if complete else f"at least {size} bytes so far"
    return OversizeMessageError(
        f"bot {name}: a message of {amount}, over the {limit}-byte limit")


def _wait_exit(process: BotProcess, grace_s: float) -> bool:
    """Whether the process has exited, waiting up to ``grace_s`` for it to do so."""
    deadline = time.monotonic() + grace_s
    while process.is_alive():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)
    return True


def _ms(seconds: float) -> int:
    return max(0, math.ceil(seconds * 1000))


# -- the pipes ------------------------------------------------------------------------------


class PipeChannel:
    """A bot process started with ``pipes=True``: lines to its stdin, its stdout cut into
    messages by a :class:`Framer` into an :class:`Inbox`. The one receive loop of every
    transport; :class:`StdioChannel` and :class:`BridgeChannel` choose the framing."""

    def __init__(self, process: BotProcess, *, name: str | None = None,
                 max_bytes: int = DEFAULT_MAX_BYTES, max_pending: int = DEFAULT_MAX_PENDING,
                 send_timeout_s: float = DEFAULT_SEND_TIMEOUT_S) -> None:
        if process.stdin is None or process.stdout is None:
            raise ValueError(f"{type(self).__name__} needs a process started with pipes=True")
        self._process = process
        self.name = name or f"pid-{process.pid}"
        self.max_bytes = max_bytes
        self.send_timeout_s = send_timeout_s
        self.inbox = Inbox(self.name, max_pending)
        self.framer = self._framer()
        self._in_fd = process.stdin.fileno()
        self._out_fd = process.stdout.fileno()
        os.set_blocking(self._in_fd, False)
        os.set_blocking(self._out_fd, False)
        self._poll = select.poll()
        self._poll.register(self._out_fd, select.POLLIN)
        # When its launcher keeps a copy of the bot's stdout, the bot closing it never shows
        # as EOF: once the bot has written, ask the process (BotProcess.bot_holds_output).
        self._watch_pipe = process.output_copy_held
        self._out_inode = os.fstat(self._out_fd).st_ino
        self._seen_output = False
        self.bytes_read = 0  # of the bot's output, in all (for a hint: see wrote_since_send)
        self._read_at_send = 0  # bytes_read when the last message was sent
        self._next_pipe_check = 0.0
        self._eof = False
        self._closed = False

    def _framer(self) -> Framer:
        raise NotImplementedError

    @property
    def max_pending(self) -> int:
        return self.inbox.max_pending

    def send(self, text: str, timeout_s: float | None = None) -> None:
        """Write one line. Raises BotTerminatedError when the bot's stdin is closed. When the
        pipe is full, waits for the bot to read: ``timeout_s`` is the bot's own time to read
        it (a move request's: its time for the move), after which it is a BotTimeoutError;
        without one, ``send_timeout_s`` and then a ProtocolViolationError."""
        if self._closed:
            raise RuntimeError(f"the channel to bot {self.name} is closed")
        if "\n" in text:
            raise ValueError("a message must not contain a newline")
        data = text.encode() + b"\n"
        self._read_at_send = self.bytes_read
        written = self._write(data)
        if written < len(data):  # the pipe is full: the bot has not read what came before
            self._send_rest(memoryview(data)[written:], timeout_s)

    def _write(self, data: bytes | memoryview) -> int:
        try:
            return os.write(self._in_fd, data)
        except BlockingIOError:
            return 0
        except (BrokenPipeError, ConnectionResetError):
            raise self._input_closed() from None

    def _send_rest(self, data: memoryview, timeout_s: float | None) -> None:
        """Wait for the bot to read and write the rest (see :meth:`send`)."""
        waited = self.send_timeout_s if timeout_s is None else max(timeout_s, 0.0)
        deadline = time.monotonic() + waited
        writable = select.poll()  # not select(): descriptors may be above 1024
        writable.register(self._in_fd, select.POLLOUT)
        while data:
            writable.poll(_ms(deadline - time.monotonic()))
            data = data[self._write(data):]
            if data and time.monotonic() >= deadline:
                unread = f"{len(data)} bytes of the message unsent after {waited:g} s"
                if timeout_s is None:
                    raise ProtocolViolationError(f"bot {self.name}: does not read its input ({unread})")
                raise BotTimeoutError(f"bot {self.name}: did not read its input within its time ({unread}): "
                                      "read each message as it comes, and think after reading it")

    def recv(self, timeout_s: float) -> str | None:
        """The next message, or None after ``timeout_s`` seconds (see the module docs)."""
        if self._closed:
            raise RuntimeError(f"the channel to bot {self.name} is closed")
        inbox = self.inbox
        if inbox or inbox.flooded:
            if inbox:  # the bot sent more than was asked for: look for a flood first
                self._read_available()
            return self._take()
        if self._eof:
            raise self._output_closed()
        now = time.monotonic()
        deadline = now + timeout_s
        next_check = now + _ALIVE_CHECK_S  # a reply usually comes first: look at the pipe first
        wait_ms = _ms(min(timeout_s, _ALIVE_CHECK_S))  # even recv(0) looks at the pipe once
        while True:
            if self._poll.poll(wait_ms):
                self._read_available()
                if inbox or inbox.flooded:
                    return self._take()
                if self._eof:
                    raise self._output_closed()
            now = time.monotonic()
            if now >= next_check or now >= deadline:
                message = self._check_process(now)  # raises if the bot is gone
                if message is not None:
                    return message
                next_check = now + _ALIVE_CHECK_S
                if now >= deadline:
                    return None
            wait_ms = _ms(min(deadline, next_check) - now)

    def _check_process(self, now: float) -> str | None:
        """Raise if the bot has exited or closed its output; a message it wrote before
        that is returned first (a grandchild may keep the pipe open: no waiting for EOF)."""
        if not self._process.is_alive():
            self._read_available()
            if self.inbox:
                return self._take()
            raise BotTerminatedError(f"bot {self.name}: {self._process.describe_exit()}")
        if self._watch_pipe and self._seen_output and now >= self._next_pipe_check:
            holds = self._process.bot_holds_output(self._out_inode)
            # A scan reads every descriptor of every process of the bot: 240 processes with
            # 256 files each made it most of the referee's CPU. Its cost paces the next one.
            spent = time.monotonic() - now
            self._next_pipe_check = now + max(_OUTPUT_CHECK_S, _OUTPUT_CHECK_PACE * spent)
            if not holds:
                self._read_available()
                if self.inbox:
                    return self._take()
                raise self._output_closed()
        return None

    def close(self) -> None:
        """Close the bot's stdin (it sees EOF) and stop reading (idempotent)."""
        if self._closed:
            return
        self._closed = True
        for stream in (self._process.stdin, self._process.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass

    def __enter__(self) -> PipeChannel:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    # -- internals ------------------------------------------------------------------------

    def _take(self) -> str:
        try:
            return self.inbox.take()
        except _UnlessExited as item:
            if _wait_exit(self._process, _EXIT_GRACE_S):
                raise BotTerminatedError(f"bot {self.name}: {self._process.describe_exit()}") from None
            raise item.error from None

    def _read_available(self) -> None:
        """Read what the pipe holds now (up to a budget, and no further once the inbox is
        flooded: nothing more is kept) and frame it."""
        total = 0
        framer = self.framer
        inbox = self.inbox
        while total < _READ_BUDGET and not self._eof and not inbox.flooded:
            try:
                chunk = os.read(self._out_fd, _READ_CHUNK)
            except BlockingIOError:
                break
            except OSError:  # EBADF after close, EIO: treat as the end of the output
                chunk = b""
            if not chunk:
                self._eof = True
                framer.at_eof()
                break
            total += len(chunk)
            self._seen_output = True
            framer.feed(chunk)
            if len(chunk) < _READ_CHUNK:
                break  # a pipe read returns all the pipe holds (up to the size asked): it is empty
        self.bytes_read += total
        framer.read_done()

    def _output_closed(self) -> BotTerminatedError:
        if _wait_exit(self._process, _EXIT_GRACE_S):
            return BotTerminatedError(f"bot {self.name}: {self._process.describe_exit()}")
        return BotTerminatedError(
            f"bot {self.name}: closed its output (stdout) while still running "
            f"(pid {self._process.pid})")

    def _input_closed(self) -> BotTerminatedError:
        if _wait_exit(self._process, _FLUSH_GRACE_S):
            return BotTerminatedError(f"bot {self.name}: {self._process.describe_exit()}")
        return BotTerminatedError(
            f"bot {self.name}: closed its input (stdin) while still running "
            f"(pid {self._process.pid})")


class StdioChannel(PipeChannel):
    """JSON lines over the stdin/stdout pipes of a process started with ``pipes=True``."""

    framer: LineFramer

    def _framer(self) -> LineFramer:
        return LineFramer(self.inbox, self.max_bytes)

    def wrote_since_send(self) -> bool:
        """The bot wrote something on stdout (blank lines count) since the last message sent."""
        if not self._closed:
            self._read_available()
        return self.bytes_read > self._read_at_send

    def unread_lines(self, count: int) -> list[str]:
        """Up to ``count`` lines the bot wrote that were not read yet (for a hint); one that is
        not a message (not UTF-8, too long) is shown as what it is."""
        if not self._closed:
            self._read_available()
        return [item if isinstance(item, str) else f"[{type(item).__name__}: {str(item)[:100]}]"
                for item in self.inbox.peek(count)]

    def partial_line(self) -> bytes:
        """What the bot wrote after its last newline so far (a message it has not ended)."""
        if not self._closed:
            self._read_available()
        return bytes(self.framer.partial)


# -- ZeroMQ through the bridge -------------------------------------------------------------


BRIDGE_OPEN_FILES = 8192
"""The bridge's own descriptor limit. It is larger than its bot's (RLIMIT_NOFILE, 256 per
process by default) so that a bot opening connections from many processes is seen and cut
off by the bridge's main loop long before the bridge runs out of descriptors (libzmq, when
it ran there, aborted then); every descriptor and byte of it still counts against the bot's cgroup."""


def bridge_argv(argv: list[str], *, max_bytes: int = DEFAULT_MAX_BYTES,
                bot_open_files: int | None = None) -> list[str]:
    """The command that runs the ZeroMQ bot ``argv`` under its bridge (start it with
    ``pipes=True`` and talk to it through a :class:`BridgeChannel`). With ``bot_open_files``
    the bridge gives the bot that RLIMIT_NOFILE (start the bridge with BRIDGE_OPEN_FILES)."""
    limit = [] if bot_open_files is None else ["--bot-open-files", str(bot_open_files)]
    return [sys.executable, "-I", "-m", "arena.channel.zmq_bridge", "--max-bytes", str(max_bytes),
            *limit, "--", *argv]


class BridgeFramer:
    """The bridge's output (:mod:`~arena.channel.zmq_bridge`): kind + length + payload
    frames, each a message or an event turned into its error."""

    def __init__(self, inbox: Inbox, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.inbox = inbox
        self.max_bytes = max_bytes
        self._header = bytearray()
        self._partial = bytearray()  # the payload being read, never more than its limit
        self._kind: bytes | None = None  # the frame being read, after its header
        self._need = 0  # its payload bytes still to come
        self._skip = False  # too long: counted, not kept

    def read_done(self) -> None:
        pass

    def at_eof(self) -> None:
        pass  # a frame cut short by the end of the output: the exit says what happened

    def feed(self, chunk: bytes) -> None:
        pos, end = 0, len(chunk)
        header_size = zmq_bridge.FRAME_HEADER.size
        while pos < end:
            if self._kind is None:
                if not self._header and end - pos >= header_size:
                    kind, size = zmq_bridge.FRAME_HEADER.unpack_from(chunk, pos)
                    pos += header_size
                else:
                    take = min(header_size - len(self._header), end - pos)
                    self._header += chunk[pos:pos + take]
                    pos += take
                    if len(self._header) < header_size:
                        return
                    kind, size = zmq_bridge.FRAME_HEADER.unpack(self._header)
                    self._header.clear()
                self._kind, self._need = kind, size
                limit = self.max_bytes if kind == zmq_bridge.MESSAGE else _EVENT_MAX
                self._skip = size > limit
                if self._skip:
                    self.inbox.push(_oversize(self.inbox.name, size, self.max_bytes)
                                    if kind == zmq_bridge.MESSAGE else self._junk(kind))
                if not self._need:
                    self._frame(kind, b"")
                continue
            take = min(self._need, end - pos)
            if not self._skip:
                if not self._partial and take == self._need:
                    self._frame(self._kind, chunk[pos:pos + take])
                    pos += take
                    continue
                self._partial += chunk[pos:pos + take]
            pos += take
            self._need -= take
            if not self._need:
                payload, self._partial = bytes(self._partial), bytearray()
                self._frame(self._kind, payload)

    def _frame(self, kind: bytes, payload: bytes) -> None:
        """One whole frame from the bridge: queue its message or its error."""
        self._kind = None
        self._need = 0
        if self._skip:
            self._skip = False
            return
        self.inbox.push(self._event(kind, payload))

    def _event(self, kind: bytes, payload: bytes) -> Item:
        name = self.inbox.name
        if kind == zmq_bridge.MESSAGE:
            return _decode(name, payload)
        if kind == zmq_bridge.FOREIGN_IDENTITY:
            return ProtocolViolationError(
                f"bot {name}: a message from a connection whose identity is {payload[:40]!r}, not "
                "its ARENA_TOKEN (set ZMQ_IDENTITY to ARENA_TOKEN before connecting)")
        if kind == zmq_bridge.SECOND_CONNECTION:
            return ProtocolViolationError(
                f"bot {name}: more than one connection to its endpoint (connect one DEALER, "
                "once, and keep it open)")
        if kind == zmq_bridge.MULTIPART:
            count, _, shape = payload.partition(b" ")
            first = ", the first empty" if shape == b"empty-first" else ""
            return MalformedMessageError(
                f"bot {name}: a multipart message ({count.decode('ascii', 'replace')} frames{first}); "
                "send each message as one frame")
        if kind == zmq_bridge.OVERSIZE:
            if payload.isdigit():
                return _oversize(name, int(payload), self.max_bytes)
            # libzmq answers a frame over the limit by dropping the connection, which the DEALER
            # then reopens: from the bridge, just what a bot that reopens its socket looks like.
            return OversizeMessageError(
                f"bot {name}: its connection was dropped and opened again: either it sent a message "
                f"over the {self.max_bytes}-byte limit (libzmq drops the connection, and the DEALER "
                "reconnects by itself), or it closed its socket and opened another (keep one DEALER "
                "socket, connected once, for the whole run: every game comes over it)")
        if kind == zmq_bridge.DROPPED:
            waited = f" (its bridge waited {payload.decode('ascii', 'replace')} s for it to reconnect " \
                "or exit)" if payload else ""
            return _UnlessExited(ProtocolViolationError(
                f"bot {name}: closed its connection while still running (keep the DEALER open "
                f"until shutdown), or sent a message over the {self.max_bytes}-byte limit with "
                f"reconnection turned off (libzmq drops the connection){waited}"))
        if kind == zmq_bridge.UNREACHABLE:
            return _UnlessExited(ProtocolViolationError(
                f"bot {name}: not connected when the referee sent a message (it must connect a "
                "DEALER with its ARENA_TOKEN as identity to ARENA_ENDPOINT and keep it open)"))
        if kind == zmq_bridge.NOT_READING:
            return ProtocolViolationError(
                f"bot {name}: does not read its messages (its queue is full)")
        if kind == zmq_bridge.ZMTP_ERROR:
            return ProtocolViolationError(
                f"bot {name}: its ZeroMQ socket sent {payload.decode('utf-8', 'replace')} ("
                "the arena speaks ZMTP 3.1 as a ROUTER does)")
        if kind == zmq_bridge.START_FAILED:
            return BotStartError(f"bot {name}: {payload.decode('utf-8', 'replace')}")
        return self._junk(kind)

    def _junk(self, kind: bytes) -> MalformedMessageError:
        return MalformedMessageError(
            f"bot {self.inbox.name}: junk on its bridge's output (a frame of kind {kind!r}); "
            "something in the bot wrote to the bridge's pipe")


class BridgeChannel(PipeChannel):
    """A ZeroMQ bot, through its :mod:`~arena.channel.zmq_bridge` (started with
    :func:`bridge_argv`): lines to it, kind + length + payload frames from it."""

    def _framer(self) -> BridgeFramer:
        return BridgeFramer(self.inbox, self.max_bytes)
