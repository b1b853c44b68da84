"""The ZeroMQ bridge: runs inside a ZeroMQ bot's sandbox, as the bot's top process.

``python -I -m arena.channel.zmq_bridge [--max-bytes N] -- <bot argv>``

It binds a ROUTER on an ipc socket in the bot's private TMPDIR, starts the bot command
as its child with ``ARENA_ENDPOINT`` and ``ARENA_TOKEN`` set (stdin /dev/null, stdout and
stderr to the bridge's stderr, the bot's capped log), and forwards:

* referee -> bot: one JSON text per line on the bridge's stdin, sent as one frame to the
  DEALER whose identity is the token;
* bot -> referee: frames on the bridge's stdout, each a kind byte, a 4-byte big-endian
  length and the payload (:data:`FRAME_HEADER`); kind ``M`` is a message, its bytes
  unaltered; the other kinds are events the referee turns into a loss (see :data:`KINDS`).

So every connection a bot opens, and everything libzmq buffers for it, costs the bot's
own processes (its uid, cgroup and rlimits), never the referee, which speaks to every bot
over pipes. After a fatal event (a foreign identity, a second connection, a dropped
connection) the bridge closes its socket: a flood stops here. When the bot's child exits
the bridge forwards what is pending and exits the same way (same exit code, or killed by
the same signal), so the referee's account of the exit stays true. EOF on stdin: the
bridge kills its child and exits.
"""

from __future__ import annotations

import ctypes
import os
import resource
import secrets
import select
import signal
import struct
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable

from arena.protocol.constants import MAX_MESSAGE_BYTES  # light: the bridge loads no codec

FRAME_HEADER = struct.Struct(">cI")
MESSAGE = b"M"
FOREIGN_IDENTITY = b"I"  # payload: the identity (first 64 bytes)
SECOND_CONNECTION = b"C"
MULTIPART = b"P"  # payload: the number of frames, ASCII, then " empty-first" if the first is empty
OVERSIZE = b"O"  # payload: the size in ASCII, or empty when libzmq dropped it unseen
DROPPED = b"D"  # the bot's connection closed while its process runs
UNREACHABLE = b"U"  # the referee sent a message and no bot is connected
NOT_READING = b"R"  # the bot does not read its messages (its queue is full)
START_FAILED = b"S"  # payload: why the bot command could not be started
KINDS = (MESSAGE, FOREIGN_IDENTITY, SECOND_CONNECTION, MULTIPART, OVERSIZE, DROPPED, UNREACHABLE,
         NOT_READING, START_FAILED)

RCVHWM = 16  # messages per connection libzmq may hold for us
_SNDHWM = 64  # messages to the bot it has not read yet
_OUT_LIMIT_EXTRA = 1 << 16  # read the socket only while less than max_bytes + this is unsent
_STDIN_LIMIT = 64 << 20  # a referee line longer than this is junk: dropped
_DROP_GRACE_S = 2.0  # after a drop: time for the bot to reconnect (oversize) or exit
_SECOND_GRACE_S = 0.1  # two live connections for this long: a second connection
_LAST_WORDS_S = 0.3  # after the child exited: time for its last messages to arrive
_TICK_MS = 50
_IPC_PATH_MAX = 107

_PR_SET_PDEATHSIG = 1

class Bridge:
    def __init__(self, argv: list[str], max_bytes: int, bot_open_files: int | None = None) -> None:
        import zmq

        self.zmq = zmq
        self.max_bytes = max_bytes
        self.token = secrets.token_hex(16).encode()
        socket_name = f"arena-{secrets.token_hex(6)}.sock"
        self.path = os.path.join(os.environ.get("TMPDIR") or "/tmp", socket_name)
        self.folder: str | None = None  # a folder of its own for the socket, removed with it
        if len(self.path) > _IPC_PATH_MAX:
            self.folder = _socket_folder()
            self.path = os.path.join(self.folder, socket_name)
        self.live: set[int] = set()  # accepted connections (their fds in our process)
        self.handshakes = 0
        self.dropped_at: float | None = None  # the bot's connection went away
        # A handshake after a drop is libzmq having dropped a message over the limit (the
        # DEALER comes back by itself), or the bot having closed its socket and opened another:
        # both look the same from here (see check_connections).
        self.handshakes_at_drop = 0
        self.two_since: float | None = None
        self.out = bytearray()
        self.inbuf = bytearray()
        self.to_bot: deque[bytes] = deque()
        self.stdin_open = True
        env = dict(os.environ)
        env["ARENA_ENDPOINT"] = f"ipc://{self.path}"
        env["ARENA_TOKEN"] = self.token.decode()
        self.child: subprocess.Popen[bytes] | None = None
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
        self.ctx = zmq.Context(io_threads=1)
        self.router: zmq.Socket | None = self.ctx.socket(zmq.ROUTER)
        self.router.setsockopt(zmq.LINGER, 0)
        self.router.setsockopt(zmq.MAXMSGSIZE, max_bytes + 2)  # room for a tolerated \r\n
        self.router.setsockopt(zmq.RCVHWM, RCVHWM)
        self.router.setsockopt(zmq.SNDHWM, _SNDHWM)
        self.router.setsockopt(zmq.ROUTER_MANDATORY, 1)
        self.monitor: zmq.Socket | None = self.router.get_monitor_socket(
            zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED | zmq.EVENT_HANDSHAKE_SUCCEEDED)
        self.router.bind(f"ipc://{self.path}")
        os.chmod(self.path, 0o600)
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
        if self.router is None:
            return
        assert self.monitor is not None
        try:
            self.router.disable_monitor()
        except self.zmq.ZMQError:
            pass
        self.monitor.close(linger=0)
        self.router.close(linger=0)
        self.router = self.monitor = None
        self.live.clear()
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

    def read_socket(self) -> None:
        zmq = self.zmq
        while self.router is not None and len(self.out) < self.max_bytes + _OUT_LIMIT_EXTRA:
            if not self.router.getsockopt(zmq.EVENTS) & zmq.POLLIN:  # cheaper than a zmq.Again
                return
            try:
                frames = self.router.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if frames[0] != self.token:
                self.fatal(FOREIGN_IDENTITY, frames[0][:64])
            elif len(frames) != 2:  # an empty first frame: a REQ socket's envelope
                self.emit(MULTIPART, f"{len(frames) - 1}{'' if frames[1] else ' empty-first'}".encode())
            elif len(frames[1]) <= self.max_bytes:
                self.emit(MESSAGE, frames[1])
            else:  # the limit does not count a trailing newline (the codec drops it)
                body = frames[1]
                body = body[:-2] if body.endswith(b"\r\n") else body.removesuffix(b"\n")
                if len(body) > self.max_bytes:
                    self.emit(OVERSIZE, str(len(body)).encode())
                else:
                    self.emit(MESSAGE, body)

    def read_monitor(self) -> None:
        zmq = self.zmq
        while self.monitor is not None:
            try:
                header, _endpoint = self.monitor.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            except ValueError:
                continue
            event, value = struct.unpack("=Hi", header[:6])
            if event == zmq.EVENT_ACCEPTED:
                self.live.add(value)
                if len(self.live) >= 2 and self.handshakes:
                    self.check_connections(time.monotonic())  # at once: a flood is under way
                    self.flush()
            elif event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self.handshakes += 1
            elif event == zmq.EVENT_DISCONNECTED:
                self.live.discard(value)
                if self.handshakes and self.dropped_at is None:
                    self.read_socket()  # what it sent before the drop goes first
                    self.dropped_at = time.monotonic()
                    self.handshakes_at_drop = self.handshakes

    def check_connections(self, now: float) -> None:
        if self.router is None:
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
            if self.handshakes > self.handshakes_at_drop:  # the DEALER came back, or a new one
                self.dropped_at = None
                self.emit(OVERSIZE)  # its detail names both causes (transport.BridgeFramer)
            elif now - self.dropped_at >= _DROP_GRACE_S:
                self.fatal(DROPPED)

    def send_to_bot(self) -> None:
        zmq = self.zmq
        while self.to_bot:
            if self.router is None:
                self.to_bot.clear()
                return
            try:
                self.router.send_multipart([self.token, self.to_bot[0]], zmq.NOBLOCK)
            except zmq.ZMQError as exc:
                self.to_bot.clear()
                if exc.errno == zmq.EHOSTUNREACH:
                    if self.dropped_at is None:  # after a drop, the drop is what it did wrong
                        self.emit(UNREACHABLE)
                elif exc.errno == zmq.EAGAIN:
                    self.emit(NOT_READING)
                return
            self.to_bot.popleft()

    # -- input from the referee -------------------------------------------------------

    def read_stdin(self) -> None:
        while self.stdin_open:
            try:
                chunk = os.read(0, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self.stdin_open = False
                return
            self.inbuf += chunk
            *lines, rest = self.inbuf.split(b"\n")
            self.inbuf = bytearray(rest) if len(rest) <= _STDIN_LIMIT else bytearray()
            self.to_bot.extend(bytes(line) for line in lines if line)

    # -- the loop -----------------------------------------------------------------------

    def run(self) -> int:
        """Forward until the child exits (its status) or stdin closes (0)."""
        zmq = self.zmq
        poller = zmq.Poller()
        watched: dict[object, int] = {}

        def watch(item: object, flags: int) -> None:  # (re)register only on a change
            if watched.get(item, 0) == flags:
                return
            if flags:
                poller.register(item, flags)  # registering again modifies
                watched[item] = flags
            else:
                poller.unregister(item)
                del watched[item]

        while True:
            watch(0, zmq.POLLIN if self.stdin_open else 0)
            watch(1, zmq.POLLOUT if self.out else 0)
            if self.router is not None:
                room = len(self.out) < self.max_bytes + _OUT_LIMIT_EXTRA
                watch(self.monitor, zmq.POLLIN)
                watch(self.router, zmq.POLLIN if room else 0)
            else:
                for item in [i for i in watched if not isinstance(i, int)]:
                    poller.unregister(item)
                    del watched[item]
            ready = dict(poller.poll(_TICK_MS))
            if self.monitor is not None and self.monitor in ready:
                self.read_monitor()
            if self.router is not None and self.router in ready:
                self.read_socket()
            if 0 in ready:
                self.read_stdin()
            self.send_to_bot()
            self.check_connections(time.monotonic())
            self.flush()
            if not self.stdin_open:
                return 0
            status = self.child.poll() if self.child is not None else 127
            if status is not None:
                self.last_words()
                return status

    def last_words(self) -> None:
        """The child exited: forward what it sent before (until its connection closes)."""
        deadline = time.monotonic() + _LAST_WORDS_S
        while self.router is not None and time.monotonic() < deadline:
            self.read_monitor()
            self.read_socket()
            if not self.live and self.handshakes:
                self.read_socket()
                break
            time.sleep(0.005)
        self.flush(timeout_s=1.0)

    def close(self) -> None:
        self.close_socket()
        if self.child is not None and self.child.poll() is None:
            self.child.kill()
            self.child.wait()
        self.ctx.term()


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
