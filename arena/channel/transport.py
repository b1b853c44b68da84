"""Transports: one message interface, two implementations (ZeroMQ and stdio lines).

A :class:`Channel` moves whole messages (JSON texts, no newline) between the referee
and one bot, and turns every way a bot can misbehave at this level into an error:

* :class:`BotTerminatedError`: the process exited, or closed its stdout (stdio);
* :class:`OversizeMessageError`: a message over ``max_bytes`` (the text gives the size);
* :class:`ProtocolViolationError`: a flood (more than ``max_pending`` unread messages),
  or a bot that does not read what the referee sends;
* :class:`MalformedMessageError`: bytes that are not UTF-8, or a multipart zmq message.

``recv`` never blocks for longer than its timeout (``None`` means it ran out) and
checks every ~50 ms whether the process is still alive, so a crash is reported at once
rather than at the end of the bot's thinking time. Messages that arrived before a
failure are still delivered first; the error comes once they are read.

ZeroMQ (:class:`ZmqHub`, :class:`ZmqChannel`): the referee owns one ROUTER socket in a
private temporary folder (mode 0700); each bot gets a random identity token and its
own endpoint on that socket (``ipc://<folder>/bot-<n>.sock``, or a tcp port), passed
in ``ARENA_ENDPOINT`` / ``ARENA_TOKEN``, and connects a DEALER with
``zmq.IDENTITY = token``. The endpoint per bot is what makes a dropped connection
attributable: libzmq enforces ``MAXMSGSIZE`` by silently closing the connection of a
peer that announces a larger message (the message is lost and the DEALER reconnects
~100 ms later), and the socket monitor's ``DISCONNECTED`` event names only the local
endpoint. A bot whose connection drops while its process lives gets an
:class:`OversizeMessageError` instead of a silent timeout.

stdio (:class:`StdioChannel`): one line per message on the bot's stdin/stdout pipes,
read with non-blocking ``os.read`` calls and ``poll`` (no thread, no unbounded buffer:
an over-long line is counted and discarded, never accumulated).

Neither class is thread-safe: a referee drives its channels from one thread.
"""

from __future__ import annotations

import logging
import math
import os
import secrets
import select
import shutil
import struct
import tempfile
import time
from collections import deque
from pathlib import Path
from types import TracebackType
from typing import Protocol

import zmq

from arena.channel.process import BotProcess
from arena.errors import (
    ArenaError,
    BotTerminatedError,
    ConfigError,
    MalformedMessageError,
    OversizeMessageError,
    ProtocolViolationError,
)

log = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 1 << 20
DEFAULT_MAX_PENDING = 64
DEFAULT_RCVHWM = 128  # messages per bot connection inside libzmq (memory: 128 x max_bytes);
# above max_pending, so that a flood can pile up past max_pending and be seen
DEFAULT_SEND_TIMEOUT_S = 5.0

_ALIVE_CHECK_S = 0.05  # how often a waiting recv looks at the process
_OUTPUT_CHECK_S = 0.25  # how often it looks whether a sandboxed stdio bot still holds its stdout
_EXIT_GRACE_S = 0.5  # after EOF / a dropped connection: time for the exit status to show
_FLUSH_GRACE_S = 0.2  # after the process died: time for its last bytes to reach us
_DRAIN_BUDGET = 1024  # zmq messages read per pump (a flood must not starve recv)
_READ_CHUNK = 1 << 18
_READ_BUDGET = 8 << 20  # stdio bytes read per pump
_IPC_PATH_MAX = 107  # sun_path is 108 bytes with its NUL

_MONITOR_EVENTS = (zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED | zmq.EVENT_HANDSHAKE_SUCCEEDED
                   | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
                   | zmq.EVENT_HANDSHAKE_FAILED_AUTH)
_HANDSHAKE_FAILED = (zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
                     | zmq.EVENT_HANDSHAKE_FAILED_AUTH)
_EVENT_HEADER = struct.Struct("=Hi")
_NOBLOCK = int(zmq.NOBLOCK)  # plain ints: or-ing the enum members costs microseconds
_SNDMORE_NOBLOCK = int(zmq.SNDMORE) | _NOBLOCK

Item = str | ArenaError  # a queued message, or an error to raise when it is its turn


class Channel(Protocol):
    """One bot's message stream, whatever the transport."""

    name: str

    def send(self, text: str) -> None:
        """Send one message (a JSON text without newline)."""
        ...

    def recv(self, timeout_s: float) -> str | None:
        """The next message, or None after ``timeout_s`` seconds without one."""
        ...

    def close(self) -> None:
        """Stop using the channel (idempotent); the process is the caller's to kill."""
        ...


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


# -- ZeroMQ -----------------------------------------------------------------------------


class _Peer:
    """What the hub knows about one token: its endpoint, queue and connection state."""

    __slots__ = ("token", "endpoint", "bound", "name", "queue", "flooded", "connections",
                 "failed_handshakes", "dropped", "reconnected")

    def __init__(self, token: bytes, endpoint: str, bound: str) -> None:
        self.token = token
        self.endpoint = endpoint  # what the bot connects to
        self.bound = bound  # what the socket bound (the monitor reports this one)
        self.name = token.decode()[:8]
        self.queue: deque[Item] = deque()
        self.flooded = False
        self.connections = 0  # live handshaked connections on this endpoint
        self.failed_handshakes = 0  # their DISCONNECTED events are not the bot's
        self.dropped = False  # a handshaked connection went away
        self.reconnected = False  # ... and a new one came back: the bot's socket lives


class ZmqHub:
    """One referee's ROUTER socket, shared by all its ZeroMQ bots::

        with ZmqHub() as hub:
            token = hub.new_token()
            bot = BotProcess.start(argv, cwd=folder, env=hub.env(token))
            channel = hub.channel(token, bot, name="greedy")

    ``tcp_host`` binds each bot's endpoint to a tcp port on that address instead of an
    ipc socket file (for bots on another machine; ``advertise_host`` is then the address
    they should connect to, when it differs, e.g. for ``tcp_host="0.0.0.0"``).
    """

    def __init__(self, *, max_bytes: int = DEFAULT_MAX_BYTES,
                 max_pending: int = DEFAULT_MAX_PENDING, rcvhwm: int = DEFAULT_RCVHWM,
                 tcp_host: str | None = None, advertise_host: str | None = None,
                 folder_parent: Path | None = None) -> None:
        if max_bytes < 1 or max_pending < 1 or rcvhwm < 1:
            raise ConfigError("max_bytes, max_pending and rcvhwm must be positive")
        self.max_bytes = max_bytes
        self.max_pending = max_pending
        self._tcp_host = tcp_host
        self._advertise_host = advertise_host
        self.folder = Path(tempfile.mkdtemp(prefix="arena-zmq-", dir=folder_parent))  # 0700
        self._ctx = zmq.Context()
        try:
            router = self._ctx.socket(zmq.ROUTER)
            router.setsockopt(zmq.LINGER, 0)
            router.setsockopt(zmq.MAXMSGSIZE, max_bytes)
            router.setsockopt(zmq.ROUTER_MANDATORY, 1)
            router.setsockopt(zmq.RCVHWM, rcvhwm)
            self._router = router
            self._monitor = router.get_monitor_socket(_MONITOR_EVENTS)
            self._monitor.setsockopt(zmq.LINGER, 0)
        except BaseException:
            self._ctx.destroy(linger=0)
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        self._rcvtimeo = -1
        # A poll(0) costs ~1 us where a recv that raises zmq.Again costs ~12 us.
        self._router_ready = zmq.Poller()
        self._router_ready.register(self._router, zmq.POLLIN)
        self._monitor_ready = zmq.Poller()
        self._monitor_ready.register(self._monitor, zmq.POLLIN)
        self._peers: dict[bytes, _Peer] = {}
        self._by_endpoint: dict[bytes, _Peer] = {}
        self._count = 0
        self._closed = False

    # -- bots -------------------------------------------------------------------------

    def new_token(self) -> str:
        """A fresh random identity for one bot, with its own endpoint on the socket."""
        self._check_open()
        token = secrets.token_hex(16)
        self._count += 1
        if self._tcp_host is None:
            path = self.folder / f"bot-{self._count}.sock"
            if len(str(path)) > _IPC_PATH_MAX:
                raise ConfigError(f"ipc socket path too long ({len(str(path))} > "
                                  f"{_IPC_PATH_MAX} bytes): {path}; use a shorter TMPDIR")
            self._router.bind(f"ipc://{path}")
        else:
            host = f"[{self._tcp_host}]" if ":" in self._tcp_host else self._tcp_host
            self._router.bind(f"tcp://{host}:*")
        bound = self._router.getsockopt_string(zmq.LAST_ENDPOINT)
        endpoint = bound
        if self._advertise_host is not None:
            host = self._advertise_host
            host = f"[{host}]" if ":" in host else host
            endpoint = f"tcp://{host}:{bound.rsplit(':', 1)[1]}"
        peer = _Peer(token.encode(), endpoint, bound)
        self._peers[peer.token] = peer
        self._by_endpoint[bound.encode()] = peer
        return token

    def endpoint_for(self, token: str) -> str:
        """The endpoint the bot with this token connects its DEALER to."""
        return self._peer(token).endpoint

    def env(self, token: str) -> dict[str, str]:
        """``ARENA_ENDPOINT`` and ``ARENA_TOKEN`` for the bot's environment."""
        return {"ARENA_ENDPOINT": self.endpoint_for(token), "ARENA_TOKEN": token}

    def channel(self, token: str, process: BotProcess, *, name: str | None = None) -> ZmqChannel:
        """The channel to the bot holding ``token`` (messages it sent already are kept)."""
        peer = self._peer(token)
        peer.name = name or f"pid-{process.pid}"
        return ZmqChannel(self, peer, process)

    def close(self) -> None:
        """Close the socket and the context and remove the folder (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            for peer in list(self._peers.values()):
                self._release(peer)
            try:
                self._router.disable_monitor()
            except zmq.ZMQError:
                pass
            self._monitor.close(linger=0)
            self._router.close(linger=0)
            self._ctx.term()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> ZmqHub:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._peers)} bots"
        return f"<ZmqHub {self.folder} {state}>"

    # -- internals ------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the ZmqHub is closed")

    def _peer(self, token: str) -> _Peer:
        self._check_open()
        try:
            return self._peers[token.encode()]
        except KeyError:
            raise KeyError(f"unknown token {token[:8]}... (not made by this hub)") from None

    def _release(self, peer: _Peer) -> None:
        if self._peers.pop(peer.token, None) is None:
            return
        self._by_endpoint.pop(peer.bound.encode(), None)
        try:
            self._router.unbind(peer.bound)  # also closes the connections accepted there
        except zmq.ZMQError:
            pass
        if peer.bound.startswith("ipc://"):  # libzmq unlinks it too, but later, from its thread
            Path(peer.bound[len("ipc://"):]).unlink(missing_ok=True)

    def _pump(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for a message and queue it; then look at the monitor.

        A blocking recv with RCVTIMEO costs the referee less CPU than zmq_poll on two
        sockets; monitor events are seen after each message or slice of the wait.
        """
        ms = _ms(timeout_s)
        if ms > 0:
            router = self._router
            if ms != self._rcvtimeo:
                router.setsockopt(zmq.RCVTIMEO, ms)
                self._rcvtimeo = ms
            try:
                self._accept(router.recv_multipart())
            except zmq.Again:
                pass
            else:
                self._drain_router()  # whatever else is ready: a flood shows up at once
        else:
            self._drain_router()
        if self._monitor_ready.poll(0):
            self._drain_monitor()

    def _drain_router(self) -> None:
        """Queue every message that is ready now (up to a budget: a flood must not stall us)."""
        router, is_ready = self._router, self._router_ready.poll
        for _ in range(_DRAIN_BUDGET):
            if not is_ready(0):
                return
            self._accept(router.recv_multipart(_NOBLOCK))

    def _accept(self, frames: list[bytes]) -> None:
        peer = self._peers.get(frames[0])
        if peer is None:
            log.debug("dropped a message from unknown identity %r", frames[0][:40])
            return
        if peer.flooded or peer.dropped:
            return  # the channel is broken already; the error is waiting
        if len(frames) != 2:
            item: Item = MalformedMessageError(
                f"bot {peer.name}: a multipart message ({len(frames) - 1} frames); "
                "send each message as one frame")
        elif len(frames[1]) > self.max_bytes:  # libzmq enforces it; belt and braces
            item = _oversize(peer.name, len(frames[1]), self.max_bytes)
        else:
            item = _decode(peer.name, frames[1])
        if len(peer.queue) >= self.max_pending:
            peer.flooded = True
            peer.queue.clear()
        else:
            peer.queue.append(item)

    def _drain_monitor(self) -> None:
        while self._monitor_ready.poll(0):
            try:
                header, endpoint = self._monitor.recv_multipart(_NOBLOCK)
            except ValueError:  # not the two frames of an event: ignore
                continue
            event, _value = _EVENT_HEADER.unpack(header)
            peer = self._by_endpoint.get(endpoint)
            if peer is None:
                continue
            if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                peer.connections += 1
                if peer.dropped:
                    peer.reconnected = True
            elif event & _HANDSHAKE_FAILED:
                peer.failed_handshakes += 1  # a stray connection: its close is not the bot's
            elif event == zmq.EVENT_DISCONNECTED:
                if peer.failed_handshakes:
                    peer.failed_handshakes -= 1
                elif not peer.dropped:
                    self._drain_router()
                    peer.dropped = True
                    peer.connections = max(0, peer.connections - 1)
                    log.debug("bot %s: connection on %s dropped", peer.name, peer.bound)
                else:
                    peer.connections = max(0, peer.connections - 1)


class ZmqChannel:
    """One bot's side of a :class:`ZmqHub` (made by :meth:`ZmqHub.channel`)."""

    def __init__(self, hub: ZmqHub, peer: _Peer, process: BotProcess) -> None:
        self._hub = hub
        self._peer = peer
        self._process = process
        self.name = peer.name
        self.token = peer.token.decode()
        self.endpoint = peer.endpoint
        self._closed = False

    def send(self, text: str) -> None:
        """Send one message. Raises BotTerminatedError when the bot has exited,
        ProtocolViolationError when it is not connected or does not read its messages."""
        self._check_open()
        router = self._hub._router
        try:
            router.send(self._peer.token, _SNDMORE_NOBLOCK)
        except zmq.ZMQError as exc:
            if exc.errno == zmq.EHOSTUNREACH:
                raise self._unreachable() from None
            if exc.errno == zmq.EAGAIN:
                raise ProtocolViolationError(
                    f"bot {self.name}: does not read its messages (its queue is full)") from None
            raise
        router.send(text.encode(), _NOBLOCK)

    def recv(self, timeout_s: float) -> str | None:
        """The next message, or None after ``timeout_s`` seconds (see the module docs)."""
        peer, hub = self._peer, self._hub
        if peer.queue:  # the bot sent more than was asked for: look for a flood first
            self._check_open()
            hub._pump(0)
            if not peer.flooded:
                return self._pop()
        self._check_open()
        now = time.monotonic()
        deadline = now + timeout_s
        next_check = now
        looked = False  # even recv(0) looks at the socket once
        while True:
            if peer.flooded:
                raise ProtocolViolationError(
                    f"bot {self.name}: a flood (more than {hub.max_pending} unread messages)")
            if peer.queue:
                return self._pop()
            if peer.dropped:
                raise self._dropped_error()
            now = time.monotonic()
            if now >= next_check:
                if not self._process.is_alive():
                    return self._after_exit()
                next_check = now + _ALIVE_CHECK_S
            if now >= deadline and looked:
                return None
            hub._pump(min(max(deadline - now, 0.0), _ALIVE_CHECK_S))
            looked = True

    def close(self) -> None:
        """Forget the token and unbind its endpoint (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if not self._hub._closed:
            self._hub._release(self._peer)

    def __enter__(self) -> ZmqChannel:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ZmqChannel {self.name} {self.endpoint}>"

    # -- internals ------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed or self._hub._closed:
            raise RuntimeError(f"the channel to bot {self.name} is closed")

    def _pop(self) -> str:
        item = self._peer.queue.popleft()
        if isinstance(item, ArenaError):
            raise item
        return item

    def _terminated(self) -> BotTerminatedError:
        return BotTerminatedError(f"bot {self.name}: {self._process.describe_exit()}")

    def _after_exit(self) -> str:
        """The process is gone: deliver what it sent before dying, then say how it died."""
        peer, hub = self._peer, self._hub
        deadline = time.monotonic() + _FLUSH_GRACE_S
        hub._pump(0)
        # Its last bytes may still be on their way; the disconnect event comes after them.
        while not peer.queue and peer.connections and not peer.dropped:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            hub._pump(min(remaining, 0.01))
        if peer.queue and not peer.flooded:
            return self._pop()
        raise self._terminated()

    def _dropped_error(self) -> ArenaError:
        # A connection closes both when a bot exits and when libzmq drops it (oversize,
        # bad frame): the exit status, or the DEALER coming back, tells which.
        deadline = time.monotonic() + _EXIT_GRACE_S
        while True:
            if not self._process.is_alive():
                return self._terminated()
            if self._peer.reconnected:
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            self._hub._pump(min(remaining, 0.01))
        return OversizeMessageError(
            f"bot {self.name}: the connection was dropped while the bot runs: a message over "
            f"the {self._hub.max_bytes}-byte limit (or a malformed ZMTP frame, or a closed "
            "socket)")

    def _unreachable(self) -> ArenaError:
        if self._peer.dropped:
            return self._dropped_error()
        if _wait_exit(self._process, _FLUSH_GRACE_S):
            return self._terminated()
        return ProtocolViolationError(
            f"bot {self.name}: not connected to {self.endpoint} (it must connect a DEALER "
            "with its ARENA_TOKEN as identity and keep it open)")


# -- stdio ------------------------------------------------------------------------------


class StdioChannel:
    """JSON lines over the stdin/stdout pipes of a process started with ``pipes=True``."""

    def __init__(self, process: BotProcess, *, name: str | None = None,
                 max_bytes: int = DEFAULT_MAX_BYTES, max_pending: int = DEFAULT_MAX_PENDING,
                 send_timeout_s: float = DEFAULT_SEND_TIMEOUT_S) -> None:
        if process.stdin is None or process.stdout is None:
            raise ValueError("StdioChannel needs a process started with pipes=True")
        self._process = process
        self.name = name or f"pid-{process.pid}"
        self.max_bytes = max_bytes
        self.max_pending = max_pending
        self.send_timeout_s = send_timeout_s
        self._in_fd = process.stdin.fileno()
        self._out_fd = process.stdout.fileno()
        os.set_blocking(self._in_fd, False)
        os.set_blocking(self._out_fd, False)
        self._poll = select.poll()
        self._poll.register(self._out_fd, select.POLLIN)
        # bwrap keeps its own copy of a sandboxed bot's stdout, so the bot closing it never
        # shows as EOF: once the bot has written, look in /proc for it (see BotProcess.holds_pipe).
        self._watch_pipe = process.sandbox is not None
        self._out_inode = os.fstat(self._out_fd).st_ino
        self._seen_output = False
        self._next_pipe_check = 0.0
        self._queue: deque[Item] = deque()
        self._partial = bytearray()  # the current line, never more than max_bytes
        self._discarding: int | None = None  # size so far of an over-long line being skipped
        self._oversize_reported = False
        self._flooded = False
        self._eof = False
        self._closed = False

    def send(self, text: str) -> None:
        """Write one line. Raises BotTerminatedError when the bot's stdin is closed,
        ProtocolViolationError when it does not read it within ``send_timeout_s``."""
        if self._closed:
            raise RuntimeError(f"the channel to bot {self.name} is closed")
        if "\n" in text:
            raise ValueError("a message must not contain a newline")
        data = memoryview(text.encode() + b"\n")
        deadline: float | None = None
        while data:
            try:
                written = os.write(self._in_fd, data)
            except BlockingIOError:
                written = 0
            except (BrokenPipeError, ConnectionResetError):
                raise self._input_closed() from None
            data = data[written:]
            if data:
                now = time.monotonic()
                if deadline is None:
                    deadline = now + self.send_timeout_s
                elif now >= deadline:
                    raise ProtocolViolationError(
                        f"bot {self.name}: does not read its input ({len(data)} bytes unsent "
                        f"after {self.send_timeout_s:g} s)")
                select.select([], [self._in_fd], [], deadline - now)

    def recv(self, timeout_s: float) -> str | None:
        """The next line, or None after ``timeout_s`` seconds (see the module docs)."""
        if self._closed:
            raise RuntimeError(f"the channel to bot {self.name} is closed")
        if self._queue:  # the bot sent more than was asked for: look for a flood first
            self._read_available()
            if not self._flooded:
                return self._pop()
        now = time.monotonic()
        deadline = now + timeout_s
        next_check = now
        looked = False  # even recv(0) looks at the pipe once
        while True:
            if self._flooded:
                raise ProtocolViolationError(
                    f"bot {self.name}: a flood (more than {self.max_pending} unread messages)")
            if self._queue:
                return self._pop()
            if self._eof:
                raise self._output_closed()
            now = time.monotonic()
            if now >= next_check:
                if not self._process.is_alive():
                    # Deliver what it wrote before dying (a grandchild may keep the pipe
                    # open, so do not wait for EOF).
                    self._read_available()
                    if self._queue and not self._flooded:
                        return self._pop()
                    raise BotTerminatedError(f"bot {self.name}: {self._process.describe_exit()}")
                next_check = now + _ALIVE_CHECK_S
                if self._watch_pipe and self._seen_output and now >= self._next_pipe_check:
                    self._next_pipe_check = now + _OUTPUT_CHECK_S
                    if not self._process.holds_pipe(self._out_inode):
                        self._read_available()
                        if self._queue and not self._flooded:
                            return self._pop()
                        raise self._output_closed()
            if now >= deadline and looked:
                return None
            if self._poll.poll(_ms(min(max(deadline - now, 0.0), _ALIVE_CHECK_S))):
                self._read_available()
            looked = True

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

    def __enter__(self) -> StdioChannel:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<StdioChannel {self.name}>"

    # -- internals ------------------------------------------------------------------------

    def _pop(self) -> str:
        item = self._queue.popleft()
        if isinstance(item, ArenaError):
            raise item
        return item

    def _push(self, item: Item) -> None:
        if self._flooded:
            return
        if len(self._queue) >= self.max_pending:
            self._flooded = True
            self._queue.clear()
        else:
            self._queue.append(item)

    def _read_available(self) -> None:
        """Read what the pipe holds now (up to a budget) and split it into lines."""
        total = 0
        while total < _READ_BUDGET and not self._eof:
            try:
                chunk = os.read(self._out_fd, _READ_CHUNK)
            except BlockingIOError:
                break
            except OSError:  # EBADF after close, EIO: treat as the end of the output
                chunk = b""
            if not chunk:
                self._eof = True
                if self._partial:
                    line, self._partial = bytes(self._partial), bytearray()
                    self._line(line)
                break
            total += len(chunk)
            self._seen_output = True
            self._feed(chunk)
        if self._discarding is not None and not self._oversize_reported:
            # Report now rather than when (if ever) the newline comes.
            self._push(_oversize(self.name, self._discarding, self.max_bytes, complete=False))
            self._oversize_reported = True

    def _feed(self, chunk: bytes) -> None:
        start = 0
        limit = self.max_bytes
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                rest = len(chunk) - start
                if self._discarding is not None:
                    self._discarding += rest
                elif len(self._partial) + rest > limit:
                    self._discarding = len(self._partial) + rest
                    self._partial = bytearray()
                else:
                    self._partial += chunk[start:]
                return
            if self._discarding is not None:
                size = self._discarding + end - start
                if not self._oversize_reported:
                    self._push(_oversize(self.name, size, limit))
                self._discarding = None
                self._oversize_reported = False
            elif self._partial:
                if len(self._partial) + end - start > limit:
                    self._push(_oversize(self.name, len(self._partial) + end - start, limit))
                else:
                    self._partial += chunk[start:end]
                    self._line(bytes(self._partial))
                self._partial = bytearray()
            elif end - start > limit:
                self._push(_oversize(self.name, end - start, limit))
            else:
                self._line(chunk[start:end])
            start = end + 1

    def _line(self, line: bytes) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        if line.strip():  # blank lines are not messages
            self._push(_decode(self.name, line))

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
