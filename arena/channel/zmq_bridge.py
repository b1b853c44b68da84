"""The ZeroMQ bridge: runs inside a ZeroMQ bot's sandbox, as the bot's top process.

``python -I -m arena.channel.zmq_bridge [--max-bytes N] -- <bot argv>``

It listens on a Unix socket in the bot's private TMPDIR (``ARENA_ENDPOINT``, an ``ipc://``
endpoint) and speaks ZMTP there itself, as a ZeroMQ ROUTER would (:mod:`arena.channel.zmtp`:
ZMTP 3.1, 3.0 and 2.0, the NULL mechanism; no libzmq in the bridge). It starts the bot command
as its child with ``ARENA_ENDPOINT`` and ``ARENA_TOKEN`` set (stdin /dev/null, stdout and
stderr to the bridge's stderr, the bot's capped log), and forwards:

* referee -> bot: one JSON text per line on the bridge's stdin, sent as one frame to the
  DEALER whose identity is the token;
* bot -> referee: frames on the bridge's stdout, each a kind byte, a 4-byte big-endian
  length and the payload (:data:`FRAME_HEADER`); kind ``M`` is a message, its bytes
  unaltered; the other kinds are events the referee turns into a loss (see :data:`KINDS`).

So every connection a bot opens, and everything buffered for it, costs the bot's own
processes (its uid, cgroup and rlimits), never the referee, which speaks to every bot over
pipes. After a fatal event (a foreign identity, a second connection, a dropped connection, a
frame over the limit, a handshake it cannot speak) the bridge closes its socket: a flood stops
here. A frame over the limit is refused from its header, never read. When the bot's child exits
the bridge forwards what is pending and exits the same way (same exit code, or killed by the
same signal), so the referee's account of the exit stays true. EOF on stdin: the bridge kills
its child and exits.

A round trip costs the bridge one poll, one read and one write each way: lines are read in
whole buffers, and each side is written in one call.
"""

from __future__ import annotations

import ctypes
import os
import resource
import secrets
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable

from arena.channel import zmtp
from arena.protocol.constants import MAX_MESSAGE_BYTES  # light: the bridge loads no codec

FRAME_HEADER = struct.Struct(">cI")
MESSAGE = b"M"
FOREIGN_IDENTITY = b"I"  # payload: the identity (first 64 bytes)
SECOND_CONNECTION = b"C"
MULTIPART = b"P"  # payload: the number of frames, ASCII, then " empty-first" if the first is empty
OVERSIZE = b"O"  # payload: the size in ASCII, or empty for a connection dropped and opened again
DROPPED = b"D"  # the bot's connection closed while its process runs; payload: the seconds waited
UNREACHABLE = b"U"  # the referee sent a message and no bot is connected
NOT_READING = b"R"  # the bot does not read its messages (its queue is full)
START_FAILED = b"S"  # payload: why the bot command could not be started, or its socket spoken to
ZMTP_ERROR = b"E"  # payload: what the bot's socket sent that ZMTP does not allow (after its handshake)
KINDS = (MESSAGE, FOREIGN_IDENTITY, SECOND_CONNECTION, MULTIPART, OVERSIZE, DROPPED, UNREACHABLE,
         NOT_READING, START_FAILED, ZMTP_ERROR)

_SNDHWM = 64  # messages to the bot it has not read yet (beyond what the kernel holds)
_OUT_LIMIT_EXTRA = 1 << 16  # read the socket only while less than max_bytes + this is unsent
_STDIN_LIMIT = 64 << 20  # a referee line longer than this is junk: dropped
_READ_SIZE = 1 << 18  # one read takes what a pipe or a socket holds
_MAX_CONNECTIONS = 64  # accepted at once; more is a flood, cut off at the third anyway
_DROP_GRACE_S = 2.0  # after a drop: time for the bot to reconnect or exit
_SECOND_GRACE_S = 0.1  # two live connections for this long: a second connection
_LAST_WORDS_S = 0.3  # after the child exited: time for its last messages to arrive
_TICK_MS = 50  # without a pidfd (before Linux 5.3): how often the child is looked at
_IPC_PATH_MAX = 107

_PR_SET_PDEATHSIG = 1


class Connection:
    """One accepted connection: its socket and its ZMTP state."""

    __slots__ = ("sock", "fd", "peer")

    def __init__(self, sock: socket.socket, max_bytes: int) -> None:
        self.sock = sock
        self.fd = sock.fileno()
        self.peer = zmtp.Peer(max_bytes)


class Bridge:
    def __init__(self, argv: list[str], max_bytes: int, bot_open_files: int | None = None) -> None:
        self.max_bytes = max_bytes
        self.token = secrets.token_hex(16).encode()
        socket_name = f"arena-{secrets.token_hex(6)}.sock"
        self.path = os.path.join(os.environ.get("TMPDIR") or "/tmp", socket_name)
        self.folder: str | None = None  # a folder of its own for the socket, removed with it
        if len(self.path) > _IPC_PATH_MAX:
            self.folder = _socket_folder()
            self.path = os.path.join(self.folder, socket_name)
        self.live: dict[int, Connection] = {}  # accepted connections, by descriptor
        self.bot: Connection | None = None  # the one whose identity is the token
        self.handshakes = 0
        self.dropped_at: float | None = None  # the bot's connection went away
        # A handshake after a drop is the bot having closed its socket and opened another (or,
        # with libzmq's bridge of old, a message over the limit): see check_connections.
        self.handshakes_at_drop = 0
        self.two_since: float | None = None
        self.out = bytearray()
        self.inbuf = bytearray()
        self.to_bot = bytearray()  # frames for the bot not written yet
        self.to_bot_count = 0  # messages in it
        self.unread = 0  # messages handed to the bot's connection not all written yet (bounded)
        self.stdin_open = True
        # one buffer every read goes into: a fresh one of this size would cost an mmap and a
        # munmap each time
        self.readbuf = bytearray(_READ_SIZE)
        self.readview = memoryview(self.readbuf)
        self.poller = select.poll()
        self.watched: dict[int, int] = {}
        env = dict(os.environ)
        env["ARENA_ENDPOINT"] = f"ipc://{self.path}"
        env["ARENA_TOKEN"] = self.token.decode()
        self.child: subprocess.Popen[bytes] | None = None
        self.child_fd: int | None = None  # a pidfd: readable when the child exits
        self.listener: socket.socket | None = None
        try:
            # Started before the socket exists, while this process has a single thread, so
            # that the child's set-up before exec is safe: it dies with the bridge (without
            # a sandbox nothing else would kill it if the referee's process is killed), and
            # it gets its own descriptor limit, smaller than the bridge's (see
            # transport.BRIDGE_OPEN_FILES). Its DEALER reconnects until the bind below.
            self.child = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=2, stderr=2,
                                          close_fds=True, preexec_fn=_child_setup(bot_open_files))
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.emit(START_FAILED, f"cannot start {argv[0]!r}: {reason}".encode())
        if self.child is not None:
            try:
                self.child_fd = os.pidfd_open(self.child.pid)
            except (AttributeError, OSError):  # before Linux 5.3: a tick instead
                self.child_fd = None
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.path)
        os.chmod(self.path, 0o600)
        listener.listen(64)
        listener.setblocking(False)
        self.listener = listener
        os.set_blocking(0, False)
        os.set_blocking(1, False)

    # -- output to the referee ----------------------------------------------------------

    def emit(self, kind: bytes, payload: bytes = b"") -> None:
        self.out += FRAME_HEADER.pack(kind, len(payload))
        self.out += payload

    def fatal(self, kind: bytes, payload: bytes = b"") -> None:
        """Report, then close the socket: whatever the bot does next costs nothing here."""
        self.emit(kind, payload)
        self.close_socket()

    def close_socket(self) -> None:
        if self.listener is None:
            return
        for fd in list(self.live):
            self.drop(fd)
        self.watch(self.listener.fileno(), 0)
        self.listener.close()
        self.listener = None
        self.bot = None
        self.to_bot.clear()
        try:
            os.unlink(self.path)
            if self.folder is not None:
                os.rmdir(self.folder)
        except OSError:
            pass

    def flush(self, timeout_s: float = 0.0) -> None:
        deadline = time.monotonic() + timeout_s
        while self.out:
            try:
                written = os.write(1, self.out)
            except BlockingIOError:
                written = 0
            except OSError:  # the referee is gone
                self.out.clear()
                self.stdin_open = False
                return
            del self.out[:written]
            if self.out:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                select.select([], [1], [], remaining)

    # -- the socket -----------------------------------------------------------------------

    def watch(self, fd: int, flags: int) -> None:  # (re)register only on a change
        if self.watched.get(fd, 0) == flags:
            return
        if flags:
            self.poller.register(fd, flags)  # registering again modifies
            self.watched[fd] = flags
        else:
            self.poller.unregister(fd)
            del self.watched[fd]

    def accept(self) -> None:
        while self.listener is not None:
            try:
                sock, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # out of descriptors: the flood is cut off below
                return
            sock.setblocking(False)
            conn = Connection(sock, self.max_bytes)
            self.live[conn.fd] = conn
            self.write_to(conn)  # the greeting's start
            if len(self.live) >= 2 and self.handshakes:
                self.check_connections(time.monotonic())  # at once: a flood is under way
                self.flush()

    def drop(self, fd: int) -> None:
        conn = self.live.pop(fd, None)
        if conn is None:
            return
        self.watch(fd, 0)
        conn.sock.close()
        if conn is self.bot:
            self.bot = None
            self.to_bot.clear()
            self.to_bot_count = 0
            self.unread = 0
            if self.dropped_at is None:
                self.dropped_at = time.monotonic()
                self.handshakes_at_drop = self.handshakes

    def read_connection(self, conn: Connection) -> None:
        """Read what the connection holds (one read of up to a whole buffer) and act on it."""
        try:
            size = conn.sock.recv_into(self.readbuf)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            size = 0
        data = self.readview[:size].tobytes()
        if not data:
            self.drop(conn.fd)
            return
        try:
            events = conn.peer.feed(data)
        except zmtp.ZmtpError as exc:
            if self.handle(conn, exc.events):  # what came before it goes first
                if exc.handshake:
                    self.fatal(START_FAILED, f"cannot talk to its ZeroMQ socket: {exc.reason}".encode())
                else:
                    self.fatal(ZMTP_ERROR, exc.reason.encode())
            return
        if self.handle(conn, events) and conn.peer.out:
            self.write_to(conn)

    def handle(self, conn: Connection, events: list[tuple[str, object]]) -> bool:
        """Act on a connection's events; False once one was fatal (the socket is closed)."""
        for kind, value in events:
            if kind == zmtp.MESSAGE:
                assert isinstance(value, bytes)
                self.emit(MESSAGE, value)
            elif kind == zmtp.READY:
                assert isinstance(value, bytes)
                if value != self.token:
                    self.fatal(FOREIGN_IDENTITY, value[:64])
                    return False
                self.handshakes += 1
                if self.bot is None:
                    self.bot = conn
            elif kind == zmtp.MULTIPART:
                assert isinstance(value, tuple)
                frames, empty_first = value
                self.emit(MULTIPART, f"{frames}{' empty-first' if empty_first else ''}".encode())
            elif kind == zmtp.OVERSIZE:
                self.fatal(OVERSIZE, str(value).encode())
                return False
        return True

    def write_to(self, conn: Connection) -> None:
        """Write what the connection's peer has to send (handshake, PONG), in one call."""
        out = conn.peer.out
        try:
            written = conn.sock.send(out)
        except (BlockingIOError, InterruptedError):
            written = 0
        except OSError:
            self.drop(conn.fd)
            return
        conn.peer.sent(written)
        if not out and conn is self.bot:
            self.unread = 0

    def check_connections(self, now: float) -> None:
        if self.listener is None:
            return
        if len(self.live) >= 2:
            if self.two_since is None:
                self.two_since = now
            elif now - self.two_since >= _SECOND_GRACE_S or len(self.live) > 2:
                self.fatal(SECOND_CONNECTION)
                return
        else:
            self.two_since = None
        if self.dropped_at is not None:
            if self.handshakes > self.handshakes_at_drop:  # a new DEALER came
                self.dropped_at = None
                self.emit(OVERSIZE)  # its detail names both causes (transport.BridgeFramer)
            elif now - self.dropped_at >= _DROP_GRACE_S:
                self.fatal(DROPPED, f"{now - self.dropped_at:.1f}".encode())

    def send_to_bot(self) -> None:
        """Hand the referee's frames to the bot's connection and write them, in one call with
        whatever it has to send (a PONG): one stream, so nothing is interleaved mid-frame."""
        if not self.to_bot:
            return
        bot = self.bot
        if bot is None:
            self.to_bot.clear()
            self.to_bot_count = 0
            if self.dropped_at is None and self.listener is not None:  # after a drop, the drop
                self.emit(UNREACHABLE)  # is what it did wrong
            return
        if self.unread > _SNDHWM:  # it does not read: said once; what comes meanwhile is dropped
            self.to_bot.clear()
            self.to_bot_count = 0
            return
        bot.peer.out += self.to_bot
        self.unread += self.to_bot_count
        self.to_bot.clear()
        self.to_bot_count = 0
        self.write_to(bot)
        if self.unread > _SNDHWM:
            self.emit(NOT_READING)

    # -- input from the referee -------------------------------------------------------

    def read_stdin(self) -> None:
        while self.stdin_open:
            try:
                chunk = self.readview[:os.readv(0, [self.readbuf])].tobytes()
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self.stdin_open = False
                return
            if not self.inbuf and chunk.endswith(b"\n") and chunk.count(b"\n") == 1:
                if len(chunk) > 1:  # the usual case: one whole line
                    self.to_bot += zmtp.frame(chunk[:-1])
                    self.to_bot_count += 1
                if len(chunk) < _READ_SIZE:
                    return
                continue
            self.inbuf += chunk
            *lines, rest = self.inbuf.split(b"\n")
            self.inbuf = bytearray(rest) if len(rest) <= _STDIN_LIMIT else bytearray()
            for line in lines:
                if line:
                    self.to_bot += zmtp.frame(bytes(line))
                    self.to_bot_count += 1
            if len(chunk) < _READ_SIZE:
                return

    # -- the loop -----------------------------------------------------------------------

    def run(self) -> int:
        """Forward until the child exits (its status) or stdin closes (0)."""
        status: int | None = None
        while True:
            self.watch(0, select.POLLIN if self.stdin_open else 0)
            self.watch(1, select.POLLOUT if self.out else 0)
            room = len(self.out) < self.max_bytes + _OUT_LIMIT_EXTRA
            if self.listener is not None:
                self.watch(self.listener.fileno(), select.POLLIN if len(self.live) < _MAX_CONNECTIONS else 0)
            for fd, conn in self.live.items():
                flags = select.POLLIN if room else 0
                if conn.peer.out:
                    flags |= select.POLLOUT
                self.watch(fd, flags)
            if self.child_fd is not None:
                self.watch(self.child_fd, select.POLLIN)
            ready = self.poller.poll(self.timeout_ms())
            for fd, events in ready:
                if fd == 0:
                    self.read_stdin()
                elif fd == self.child_fd:
                    status = self.child.poll() if self.child is not None else 127
                elif self.listener is not None and fd == self.listener.fileno():
                    self.accept()
                elif fd in self.live:
                    conn = self.live[fd]
                    if events & select.POLLOUT and conn.peer.out:
                        self.write_to(conn)
                    if events & (select.POLLIN | select.POLLHUP | select.POLLERR) and fd in self.live:
                        self.read_connection(conn)
            self.send_to_bot()
            self.check_connections(time.monotonic())
            self.flush()
            if not self.stdin_open:
                return 0
            if self.child is None:
                return 127
            if self.child_fd is None:
                status = self.child.poll()
            if status is not None:
                self.last_words()
                return status

    def timeout_ms(self) -> int:
        """Until the next deadline (a second connection's grace, a drop's), or a tick without
        a pidfd; else block."""
        waits = []
        now = time.monotonic()
        if self.two_since is not None:
            waits.append(self.two_since + _SECOND_GRACE_S - now)
        if self.dropped_at is not None:
            waits.append(self.dropped_at + _DROP_GRACE_S - now)
        if self.child_fd is None or self.out:
            waits.append(_TICK_MS / 1000)
        if not waits:
            return -1
        return max(0, int(min(waits) * 1000) + 1)

    def last_words(self) -> None:
        """The child exited: forward what it sent before (until its connection closes)."""
        deadline = time.monotonic() + _LAST_WORDS_S
        while self.live and time.monotonic() < deadline:
            if len(self.out) >= self.max_bytes + _OUT_LIMIT_EXTRA:
                self.flush(timeout_s=deadline - time.monotonic())
            ready = select.select(list(self.live), [], [], max(0.0, deadline - time.monotonic()))[0]
            for fd in ready:
                if fd in self.live:
                    self.read_connection(self.live[fd])
        self.flush(timeout_s=1.0)

    def close(self) -> None:
        self.close_socket()
        if self.child is not None and self.child.poll() is None:
            self.child.kill()
            self.child.wait()
        if self.child_fd is not None:
            os.close(self.child_fd)
            self.child_fd = None


def _socket_folder() -> str:
    """For a TMPDIR too long for a socket path (the bot's TMPDIR, where the socket goes, is a
    folder in it under none): a folder in /tmp named for this process, so that should the
    bridge be killed before it removes it, the next run's sweep does (arena.launch.scratch)."""
    from pathlib import Path

    from arena.launch import scratch  # only here: the bridge starts light

    return str(scratch.make_folder("bridge", Path("/tmp")))


def _child_setup(open_files: int | None) -> Callable[[], None]:
    """What the bot's process does before exec: die with the bridge, take its own
    RLIMIT_NOFILE. Everything is computed here; the child only makes system calls."""
    bridge = os.getpid()
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    setrlimit, nofile = resource.setrlimit, resource.RLIMIT_NOFILE

    def apply() -> None:
        if open_files is not None:
            setrlimit(nofile, (open_files, open_files))
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != bridge:  # the bridge died before prctl took effect
            os._exit(1)

    return apply


def _exit_like(status: int) -> None:
    """Exit with ``status`` as Popen reports it: a code, or death by signal ``-status``."""
    if status >= 0:
        os._exit(status)
    sig = -status
    try:
        signal.signal(sig, signal.SIG_DFL)  # not for SIGKILL and SIGSTOP: they have no handler
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
    except (OSError, ValueError):
        pass
    try:
        os.kill(os.getpid(), sig)
        time.sleep(1)
    except OSError:
        pass
    os._exit(128 + sig)


def main(args: list[str]) -> None:
    max_bytes = MAX_MESSAGE_BYTES
    bot_open_files: int | None = None
    if "--" not in args or args.index("--") == len(args) - 1:
        sys.stderr.write("usage: python -m arena.channel.zmq_bridge [--max-bytes N] [--bot-open-files N] "
                         "-- BOT ARGV...\n")
        os._exit(2)
    split = args.index("--")
    options, argv = args[:split], args[split + 1:]
    while options:
        if len(options) >= 2 and options[0] in ("--max-bytes", "--bot-open-files") and options[1].isdigit():
            if options[0] == "--max-bytes":
                max_bytes = int(options[1])
            else:
                bot_open_files = int(options[1])
            options = options[2:]
        else:
            sys.stderr.write(f"zmq_bridge: unknown options {options}\n")
            os._exit(2)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    try:
        bridge = Bridge(argv, max_bytes, bot_open_files)
    except Exception as exc:  # noqa: BLE001 - say it on the bot's log, then fail like a crash
        sys.stderr.write(f"zmq_bridge: cannot set up the bot's socket: {exc}\n")
        os._exit(125)
    try:
        status = bridge.run()
    finally:
        bridge.close()
    sys.stderr.flush()
    _exit_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
