"""A scripted misbehaving bot for the referee tests (fastchess-style test engines).

Usage: python misbehave.py KIND [stdio] [ARG ...]. It plays like the random bot (first legal
move from the engine) until its KIND of misbehaviour kicks in; ``stdio`` makes it speak JSON
lines on stdin/stdout instead of ZeroMQ (the ZeroMQ-only kinds ``no_identity``,
``multipart``, ``close_and_exit_slowly``, ``connection_flood`` and ``identity_flood`` abuse
the socket; ``reconnect`` closes its socket and opens another to send its move, and
``reconnect_per_game`` does so after each game_over, as a socket per game); the ``recorder``
kind plays normally and appends every message it receives to LOG (the last argument);
``cpu_per_game S`` plays normally but burns S seconds of CPU when each game begins;
``hostile_error`` gives up with an ``error`` message full of control sequences and a lone
surrogate, and ``hostile_info`` plays normally with such an ``info`` string on every move;
``spin_helpers N`` plays normally with N helper processes that spin forever (computing
between its moves); ``spin_after_reply`` plays normally with one helper that spins forever and
reports on stderr (``spin_after_reply: {json}``) the helper's CPU between each reply and the
next request, and from its hello to its first request (what it got while its opponent
started); ``predict_order`` plays Stack'n Stuff (buying when it can) and tries to predict the
hidden order in which the stuff tiles join: from guessable seeds (those of ``arena play`` and
of a tournament, with the public engine) and from an earlier game in this process with the
same circle (the other game of a seat-swapped pair); it reports each prediction before the
tiles join, and what it saw once they had (``predict_order: {json}``); ``slow S K`` plays
normally but takes S seconds (sleeping) over K of its moves (from its third); ``lingers
FILE`` plays normally but, told to shut down, writes FILE and sleeps a minute before it
exits.
Unsandboxed stdio bots, whose parent is the referee: ``kill_referee [SIG]`` sends it SIG
(SIGKILL) at every move from its third; ``stop_referee_once MARKER`` stops it (SIGSTOP) at
its third move unless the file MARKER exists (it creates it), then plays on normally;
``keep_referee_stopped`` leaves a helper that stops it every millisecond until it is gone.

The sandbox kinds (``ATTEMPTS``) try to break out right after their hello, report each
attempt on stderr as ``<kind>: DONE ...`` or ``<kind>: blocked (<error>)`` (the tests
read the bot's stderr log), then play on if they still can. Their ARGs are the ports,
paths or folders to try.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

from arena.engine import GameState

KIND = sys.argv[1]
STDIO = "stdio" in sys.argv[2:]
ARGS = [arg for arg in sys.argv[2:] if arg != "stdio"]
# A lone surrogate (valid JSON, not Unicode), a window-title OSC, an OSC 52 clipboard
# write, a clear-screen CSI, a C1 CSI, a bidi override and mathtext (hostile_error, hostile_info).
HOSTILE_TEXT = ("lone \ud800 surrogate \x1b]0;pwned title\x07 \x1b]52;c;cm0gLXJmIH4=\x07 "
                "\x1b[2J\x1b[31mred \x9b1m \u202eevil\u202c $\\frac{$ \r\noverwrite")
TRIGGER_MOVE = 3  # misbehave on this move of the game (1-based), so the game is under way
MIB = 2**20
SAFETY_CAP = 8192 * MIB  # no attempt goes further, whatever the limits (runs without a sandbox)


def report(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def attempt(label: str, action) -> None:  # type: ignore[no-untyped-def]
    """Run one attempt; report DONE and what it achieved, or blocked and why."""
    try:
        detail = action()
    except (OSError, MemoryError) as exc:
        report(f"{label}: blocked ({type(exc).__name__}: {exc})")
    else:
        report(f"{label}: DONE {detail}")


def try_net() -> None:
    """Connect to each local port given, and to a public address."""
    for port in ARGS:
        attempt(f"net 127.0.0.1:{port}", lambda p=int(port): socket.create_connection(
            ("127.0.0.1", p), timeout=2).getpeername())
    attempt("net 1.1.1.1:53", lambda: socket.create_connection(("1.1.1.1", 53), timeout=2).getpeername())


def try_snoop() -> None:
    """Read each path given (a folder is listed)."""
    report(f"snoop: uid {os.getuid()}")

    def read(path: str) -> str:
        if os.path.isdir(path):
            return "entries " + " ".join(sorted(os.listdir(path)))
        with open(path, "rb") as handle:
            return f"{len(handle.read())} bytes"

    for path in ARGS:
        attempt(f"read {path}", lambda p=path: read(p))


def try_write() -> None:
    """Write a file at each path given, then in TMPDIR (which must work)."""
    def write(path: str) -> str:
        with open(path, "w") as handle:
            handle.write("pwned\n")
        return "wrote it"

    for path in ARGS + [os.path.join(os.environ.get("TMPDIR", "/tmp"), "mine.txt")]:
        attempt(f"write {path}", lambda p=path: write(p))


def try_balloon() -> None:
    """Allocate (and touch) memory until it fails; the kernel may kill us first."""
    chunks = []

    def grow() -> str:
        while len(chunks) * 32 * MIB < SAFETY_CAP:
            chunks.append(b"\x01" * (32 * MIB))
        return f"{len(chunks) * 32} MiB"

    try:
        attempt("balloon", grow)
        report(f"balloon: held {len(chunks) * 32} MiB")
    finally:
        chunks.clear()


def try_fork_bomb() -> None:
    """Fork children that sleep forever until fork fails."""
    children = 0

    def bomb() -> str:
        nonlocal children
        while children < 5000:
            if os.fork() == 0:
                while True:
                    signal.pause()
            children += 1
        return f"{children} processes"

    attempt("fork_bomb", bomb)
    report(f"fork_bomb: {children} children running")


def try_cpu_hog() -> None:
    """Three busy children for a second: how many cores' worth of CPU did they get?"""
    started = time.monotonic()
    pids = []
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            while time.monotonic() - started < 1.5:
                pass
            os._exit(0)
        pids.append(pid)
    cpu = sum(os.wait4(pid, 0)[2].ru_utime for pid in pids)
    wall = time.monotonic() - started
    report(f"cpu_hog: {cpu:.2f} s of CPU in {wall:.2f} s = {cpu / wall:.2f} cores")


def try_disk_fill() -> None:
    """Fill TMPDIR (then /dev/shm) with 32 MiB files until a write fails."""
    block = b"\x02" * (4 * MIB)
    for folder in (os.environ.get("TMPDIR", "/tmp"), "/dev/shm"):
        written = 0

        def fill(folder: str = folder) -> str:
            nonlocal written
            while written < SAFETY_CAP:
                with open(os.path.join(folder, f"fill-{written // (32 * MIB)}"), "ab") as handle:
                    for _ in range(8):
                        handle.write(block)
                        handle.flush()
                        written += len(block)
            return f"{written // MIB} MiB"

        attempt(f"disk_fill {folder}", fill)
        report(f"disk_fill {folder}: wrote {written // MIB} MiB")


def try_deep_tmp() -> None:
    """Leave a chain of folders in TMPDIR deeper than Python's recursion limit and than
    PATH_MAX (each made relative to its parent), with a link to / at every level."""
    def dig() -> str:
        fd = os.open(os.environ.get("TMPDIR", "/tmp"), os.O_RDONLY)
        for _ in range(int(ARGS[0]) if ARGS else 3000):
            os.mkdir("deep", dir_fd=fd)
            os.symlink("/", "root", dir_fd=fd)
            child = os.open("deep", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = child
        os.close(fd)
        return "dug"
    attempt("deep_tmp", dig)


def try_stderr_spam() -> None:
    line = b"spam " * 13000 + b"\n"  # ~64 KiB
    for _ in range(320):  # ~20 MiB
        os.write(2, line)


def try_ignore_term() -> None:
    """Ignore SIGTERM, and leave behind a child and a setsid grandchild with a clean
    environment (no arena marker) that ignore it too."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if os.fork() == 0:
        if os.fork() == 0:
            os.setsid()
            os.execve(sys.executable, [sys.executable, "-c", "import signal, time\n"
                      "signal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True: time.sleep(1)"], {})
        while True:
            time.sleep(1)
    report("ignore_term: child and grandchild started")


def try_keyring() -> None:
    """Leave a key readable by every uid in the kernel keyring (as two bots would to talk),
    and look for keys others left (request_key, /proc/keys). x86_64 system call numbers."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long

    def call(number: int, *args: object) -> int:
        result = libc.syscall(ctypes.c_long(number), *args)
        if result < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        return int(result)

    payload = b"arena-keyring-leak"
    key_user, key_session, keyctl_setperm = -4, -3, 5
    for label, ring in (("user", key_user), ("session", key_session)):
        def add(ring: int = ring) -> str:
            size = ctypes.c_size_t(len(payload))
            key = call(248, b"user", b"arena-leak", payload, size, ctypes.c_int(ring))
            call(250, ctypes.c_int(keyctl_setperm), ctypes.c_int(key), ctypes.c_uint(0x3F3F3F3F))
            return f"key {key}"
        attempt(f"keyring add_key {label}", add)
    attempt("keyring request_key", lambda: f"key {call(249, b'user', b'arena-leak', None, ctypes.c_int(0))}")

    def proc_keys() -> str:
        with open("/proc/keys") as handle:
            keys = handle.read().splitlines()
        return f"{len(keys)} keys, {sum('arena-leak' in k for k in keys)} leaks"
    attempt("keyring /proc/keys", proc_keys)


def try_covert() -> None:
    """Two bots talking through the files they share read-only (/usr): ``covert send`` holds
    an exclusive flock on /usr/bin/env and opens /usr/bin/env again and again (inotify
    IN_OPEN events); ``covert recv`` reports whether it sees either (in its first 3 s)."""
    import ctypes
    import fcntl

    shared = "/usr/bin/env"
    if ARGS[0] == "send":
        held = open(shared, "rb")  # noqa: SIM115 - kept open (and locked) for the bot's life
        attempt("covert flock LOCK_EX", lambda: fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB))
        globals()["_held"] = held
        if os.fork() == 0:
            while True:  # a beacon for inotify and dnotify; frozen with the bot off its turn
                with open(shared, "rb") as beacon:
                    beacon.read(1)
                time.sleep(0.01)
        return
    libc = ctypes.CDLL(None, use_errno=True)

    def inotify() -> str:
        fd = libc.inotify_init1(os.O_NONBLOCK)
        if fd < 0 or libc.inotify_add_watch(fd, shared.encode(), 0x20) < 0:  # IN_OPEN
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            try:
                return f"saw {len(os.read(fd, 4096))} bytes of IN_OPEN events from another bot"
            except BlockingIOError:
                time.sleep(0.05)
        raise OSError("no event")

    def lock() -> str:
        with open(shared, "rb") as handle:
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:
                try:
                    fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    fcntl.flock(handle, fcntl.LOCK_UN)
                except BlockingIOError:
                    return "another bot holds an exclusive lock on " + shared
                time.sleep(0.05)
        raise OSError("no lock seen")
    def dnotify() -> str:  # fcntl(F_NOTIFY): a signal when a file of the folder is opened
        seen = []
        signal.signal(signal.SIGIO, lambda *_: seen.append(1))
        folder = os.open(os.path.dirname(shared), os.O_RDONLY)
        fcntl.fcntl(folder, fcntl.F_NOTIFY, fcntl.DN_ACCESS | getattr(fcntl, "DN_MULTISHOT", 0x80000000)
                    | 0x20)  # DN_OPEN is not in every fcntl module; 0x20 is DN_ATTRIB, harmless
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and not seen:
            time.sleep(0.05)
        if not seen:
            raise OSError("no signal")
        return "SIGIO: another bot used a file of " + os.path.dirname(shared)

    attempt("covert inotify", inotify)
    attempt("covert flock", lock)
    attempt("covert dnotify", dnotify)


def _held_by_children(label: str, children: int, hold, measure=None) -> None:  # type: ignore[no-untyped-def]
    """Run ``hold()`` (returns how much it took) in ``children`` processes, each with a
    descriptor limit of its own; each keeps what it took and sleeps until the bot is killed.
    Reports DONE with the total (``measure()`` when given), or blocked with the first error."""
    results = []
    for _ in range(children):
        read_end, write_end = os.pipe()
        if os.fork() == 0:
            os.close(read_end)
            try:
                said = str(hold())
            except OSError as exc:
                said = f"0 {type(exc).__name__}: {exc}"
            os.write(write_end, said.encode() + b"\n")
            while True:
                signal.pause()
        os.close(write_end)
        with os.fdopen(read_end) as pipe:
            results.append(pipe.readline().strip())
    taken = sum(int(r.split()[0]) for r in results if r)
    errors = sorted({r.split(" ", 1)[1] for r in results if " " in r})
    if taken == 0:
        report(f"{label}: blocked ({errors[0] if errors else 'nothing taken'})")
    else:
        report(f"{label}: DONE {measure() if measure else taken} "
               f"(stopped by: {'; '.join(errors)[:200] or 'its own cap'})")


def _sockstat_mem() -> dict[str, int]:
    """TCP and UDP pages in use on the whole machine (/proc/net/sockstat's mem is global)."""
    found = {}
    with open("/proc/net/sockstat") as handle:
        for line in handle:
            name, _, rest = line.partition(":")
            words = rest.split()
            if "mem" in words:
                found[name] = int(words[words.index("mem") + 1])
    return found


def _queued_mib(table: str) -> str:
    """The bytes queued in every socket of /proc/net/TABLE (the bot's own network namespace)."""
    total = sockets = 0
    with open(f"/proc/net/{table}") as handle:
        for line in handle.readlines()[1:]:
            tx, rx = line.split()[4].split(":")
            total += int(tx, 16) + int(rx, 16)
            sockets += 1
    return f"held {total // MIB} MiB in {sockets} sockets"


def try_socket_hog() -> None:
    """Hold kernel memory in loopback TCP (ARGS[0] MiB, 1024 by default) and UDP (ARGS[1],
    256) buffers nobody reads, from 8 processes each (issue 31). Reports what its sockets
    hold, and the machine's socket memory (pages) before and after."""
    budget = {"tcp": int(ARGS[0]) if ARGS else 1024, "udp": int(ARGS[1]) if len(ARGS) > 1 else 256}
    before = _sockstat_mem()
    chunk = b"\x03" * 65536

    def tcp() -> int:
        held, queued = [], 0
        server = socket.create_server(("127.0.0.1", 0), backlog=128)
        held.append(server)
        while queued < budget["tcp"] * MIB // 8:
            try:
                client = socket.create_connection(server.getsockname())
                held += [client, server.accept()[0]]
            except OSError:
                if queued:
                    break
                raise
            client.setblocking(False)
            try:
                while True:
                    queued += client.send(chunk)
            except BlockingIOError:
                pass
        globals()["_held"] = held
        return queued

    def udp() -> int:
        held, queued = [], 0
        while queued < budget["udp"] * MIB // 8:
            try:
                sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                sink.bind(("127.0.0.1", 0))
                sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * MIB)  # capped by rmem_max
                source = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                held += [sink, source]
            except OSError:
                if queued:
                    break
                raise
            room = sink.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
            sent = 0
            while sent + 70000 < room:  # (a datagram past the room is dropped, not queued)
                sent += source.sendto(chunk[:60000], sink.getsockname())
            queued += sent
        globals()["_held"] = held
        return queued

    _held_by_children("socket_hog tcp", 8, tcp, lambda: _queued_mib("tcp"))
    _held_by_children("socket_hog udp", 8, udp, lambda: _queued_mib("udp"))
    after = _sockstat_mem()
    report("socket_hog: the machine's socket memory (pages) " + ", ".join(
        f"{name} {before.get(name, 0)} -> {after.get(name, 0)}" for name in ("TCP", "UDP")))


def try_unix_hog() -> None:
    """Queue ARGS[0] MiB (2048 by default) in AF_UNIX socket pairs nobody reads, 8 MiB a
    pair (SO_SNDBUF as large as the host allows): kernel memory that must count against the
    bot's own limit, which kills it first under strict."""
    wanted = (int(ARGS[0]) if ARGS else 2048) * MIB
    held: list[socket.socket] = []
    queued = 0
    chunk = b"\x04" * 65536

    def fill() -> str:
        nonlocal queued
        while queued < wanted:
            one, two = socket.socketpair()
            held.extend((one, two))
            one.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 * MIB)
            one.setblocking(False)
            try:
                while queued < wanted:
                    queued += one.send(chunk)
            except BlockingIOError:
                pass
        return f"held {queued // MIB} MiB in {len(held) // 2} pairs"

    attempt("unix_hog", fill)


def try_aio_hog() -> None:
    """Take every asynchronous I/O event of the machine (io_setup until it fails, up to
    ARGS[0] contexts of 4096 events): the budget fs.aio-max-nr, shared by all."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    contexts = []

    def take() -> str:
        while len(contexts) < (int(ARGS[0]) if ARGS else 64):
            context = ctypes.c_ulong(0)
            if libc.syscall(ctypes.c_long(206), ctypes.c_uint(4096), ctypes.byref(context)) < 0:  # io_setup
                code = ctypes.get_errno()
                if contexts:
                    break
                raise OSError(code, os.strerror(code))
            contexts.append(context)
        return f"held {len(contexts)} contexts of 4096 events"

    attempt("aio_hog io_setup", take)
    with open("/proc/sys/fs/aio-nr") as nr, open("/proc/sys/fs/aio-max-nr") as limit:
        report(f"aio_hog: aio-nr {nr.read().strip()} of {limit.read().strip()}")


def try_pty_hog() -> None:
    """Open pseudo-terminals (kept open, masters only) from 16 processes until it fails, up
    to ARGS[0] (4096): the budget kernel.pty.max, shared by every devpts instance."""
    wanted = int(ARGS[0]) if ARGS else 4096

    def take() -> int:
        masters: list[int] = []
        while len(masters) < wanted // 16 + 1:
            try:
                master, slave = os.openpty()
            except OSError:
                if masters:
                    break
                raise
            os.close(slave)
            masters.append(master)
        globals()["_held"] = masters
        return len(masters)

    _held_by_children("pty_hog ptys", 16, take)
    try:
        with open("/proc/sys/kernel/pty/nr") as nr:
            report(f"pty_hog: pty nr {nr.read().strip()}")
    except OSError as exc:
        report(f"pty_hog: pty nr unreadable ({exc})")


def try_hugepage_hog() -> None:
    """Take huge pages (2 MiB each, touched) until it fails, up to ARGS[0] (512): the pool
    vm.nr_hugepages, shared by all and charged to no memory cgroup on v1."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                          ctypes.c_long]
    pages = []

    def take() -> str:
        while len(pages) < (int(ARGS[0]) if ARGS else 512):
            address = libc.mmap(None, 2 * MIB, 3, 0x22 | 0x40000, -1, 0)  # RW, PRIVATE|ANON|HUGETLB
            if address in (None, ctypes.c_void_p(-1).value):
                code = ctypes.get_errno()
                if pages:
                    break
                raise OSError(code, os.strerror(code))
            ctypes.memset(address, 1, 1)  # faulted in: taken from the pool
            pages.append(address)
        return f"held {len(pages)} huge pages"

    attempt("hugepage_hog mmap", take)


ATTEMPTS = {"net": try_net, "snoop": try_snoop, "write": try_write, "balloon": try_balloon,
            "fork_bomb": try_fork_bomb, "cpu_hog": try_cpu_hog, "disk_fill": try_disk_fill,
            "stderr_spam": try_stderr_spam, "ignore_term": try_ignore_term, "keyring": try_keyring,
            "covert": try_covert, "deep_tmp": try_deep_tmp, "socket_hog": try_socket_hog,
            "aio_hog": try_aio_hog, "pty_hog": try_pty_hog, "hugepage_hog": try_hugepage_hog,
            "unix_hog": try_unix_hog}


class Link:
    def __init__(self) -> None:
        if STDIO:
            self.sock = None
            return
        import zmq

        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        if KIND != "no_identity":  # that one forgets it: its hello must get the hint
            self.sock.setsockopt(zmq.IDENTITY, os.environ["ARENA_TOKEN"].encode())
        self.sock.setsockopt(zmq.LINGER, 2000)
        self.sock.connect(os.environ["ARENA_ENDPOINT"])

    def send_raw(self, data: bytes) -> None:
        if self.sock is None:
            sys.stdout.buffer.write(data + b"\n")
            sys.stdout.buffer.flush()
        else:
            self.sock.send(data)

    def send(self, message: dict) -> None:
        self.send_raw(json.dumps(message).encode())

    def recv(self) -> dict | None:
        if self.sock is None:
            raw = sys.stdin.readline()
            if not raw:
                return None
        else:
            raw = self.sock.recv().decode()
        if KIND == "recorder":  # keep every message the referee sent, verbatim
            with open(sys.argv[-1], "a") as log:
                log.write(raw.rstrip("\n") + "\n")
        return json.loads(raw)


def connection_flood(processes: int = 16) -> None:
    """Thousands of connections to the bot's own endpoint, from many processes (each up to
    its descriptor limit), held open; then hang."""
    path = os.environ["ARENA_ENDPOINT"][len("ipc://"):]
    for _ in range(processes):
        if os.fork() == 0:
            held = []
            while True:
                try:
                    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    conn.connect(path)
                    held.append(conn)
                except OSError:
                    break
            report(f"connection_flood: pid {os.getpid()} holds {len(held)} connections")
            time.sleep(300)
            os._exit(0)
    time.sleep(300)


def identity_flood(connections: int = 32) -> None:
    """DEALERs under identities that are not the token, streaming 1 MiB frames; then hang."""
    import zmq

    ctx = zmq.Context.instance()
    socks = []
    for i in range(connections):
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.IDENTITY, f"intruder-{i}".encode())
        sock.setsockopt(zmq.SNDHWM, 1000)
        sock.connect(os.environ["ARENA_ENDPOINT"])
        socks.append(sock)
    frame = b"x" * (MIB - 100)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        for sock in socks:
            try:
                sock.send(frame, zmq.NOBLOCK)
            except zmq.Again:
                time.sleep(0.001)


def _plain_move(seq: int, state: GameState) -> bytes:
    return json.dumps(move_reply(seq, state)).encode()[:-1]


# Replies that are valid JSON but pathological for a parser or a validator (red team).
PATHOLOGICAL = {
    # Nested 700 deep with a \u escape: parses, but a recursive post-pass overflows the stack.
    "deep_nesting": lambda seq, state: _plain_move(seq, state) + b', "x-a": ' + b"[" * 700
    + b'"\\u0041"' + b"]" * 700 + b"}",
    # cells nested 500 deep: the validators recurse into them.
    "deep_cells": lambda seq, state: b'{"type": "move", "seq": %d, "move": {"action": "buy", "patch": 1, '
    b'"cells": ' % seq + b"[" * 500 + b"]" * 500 + b"}}",
    # A 4000-digit integer (just under Python's 4300-digit conversion limit) as seq.
    "big_int": lambda seq, state: b'{"type": "move", "seq": ' + b"9" * 4000
    + b', "move": {"action": "advance"}}',
    # 1e999 (inf in Python) where an integer is expected, and in an x- field.
    "huge_number": lambda seq, state: _plain_move(seq, state) + b', "x-n": 1e999}',
    # 60,000 x- keys just under 1 MiB.
    "many_keys": lambda seq, state: _plain_move(seq, state)
    + b"".join(b', "x-%d": 0' % i for i in range(60000)) + b"}",
    # Almost 1 MiB of \u escapes (lone surrogates) in an x- field.
    "escapes": lambda seq, state: _plain_move(seq, state) + b', "x-s": "' + b"\\ud800" * 170000 + b'"}',
    # A buy with 110,000 cells (just under 1 MiB): costly for a validator to explain.
    "huge_cells": lambda seq, state: b'{"type": "move", "seq": %d, "move": {"action": "buy", "patch": 1, '
    b'"cells": [' % seq + b",".join([b'[0, "a"]'] * 110000) + b"]}}",
    # NUL bytes (escaped) in every string.
    "nul": lambda seq, state: b'{"type": "move\\u0000", "seq": %d, '
    b'"move": {"action": "advance\\u0000"}}' % seq,
}


class OrderPredictor:
    """The ``predict_order`` kind: what a bot can compute of the hidden join order."""

    def __init__(self) -> None:
        self.players: list[str] = []
        self.game_id = ""
        self.circle: tuple[int, ...] | None = None  # this game's circle at setup, once found
        self.seen: dict[tuple[int, ...], list[int]] = {}  # setup circle -> the join order observed
        self.predicted = self.observed = False

    def new_game(self, message: dict) -> None:
        self.players, self.game_id = list(message["players"]), message["game_id"]
        self.circle, self.predicted, self.observed = None, False, False

    def tell(self, route: str, **fields: object) -> None:
        report("predict_order: " + json.dumps({"game": self.game_id, "route": route, **fields}))

    def guessable_seeds(self) -> list[tuple[str, int]]:
        """`arena play`'s (0 + game number, and nearby --seed values) and a tournament's
        (pair_seed of base seeds near the default 1, both orders of the names, pairs 0..63)."""
        from arena.tournament.schedule import pair_seed

        seeds = [("play", s) for s in range(256)]
        names = sorted(self.players)
        for base in range(4):
            for pairing in (tuple(names), tuple(names[::-1])):
                seeds += [("tournament", pair_seed(base, pairing, k)) for k in range(64)]  # type: ignore[arg-type]
        return seeds

    def move_request(self, state: GameState) -> None:
        rules = state.ruleset
        late = set(rules.late_patch_ids)
        if not late:
            return
        placed = {entry[0] for side in state.placed for entry in side}
        if not self.predicted and state.reserve:
            self.predicted = True
            for route, seed in self.guessable_seeds():
                setup = GameState.new(seed, ruleset=rules)
                left = [pid for pid in setup.circle if pid not in placed]
                if _rotation_of(left, state.circle):
                    self.circle = tuple(setup.circle)
                    self.tell("seed", how=route, seed=seed, order=setup.reserve)
                    break
            else:
                self.tell("seed", how=None)
            if self.circle is not None and self.circle in self.seen:
                known = self.seen[self.circle]
                guess = known + sorted(late - set(known))
                self.tell("pair", order=guess)
        if not self.observed and not state.reserve:
            self.observed = True
            order = _joined_order(state.circle, late)
            self.tell("observed", order=order)
            if self.circle is not None and order and self.circle not in self.seen:
                self.seen[self.circle] = order


def _rotation_of(items: list[int], circle: list[int]) -> bool:
    return len(items) == len(circle) and any(items[i:] + items[:i] == circle for i in range(len(items)))


def _joined_order(circle: list[int], late: set[int]) -> list[int]:
    """The stuff tiles still in the circle, in the order they joined: cyclically, the run of
    them that follows the last stack tile ([] when no stack tile is left to tell)."""
    stack = [i for i, pid in enumerate(circle) if pid not in late]
    if not stack:
        return []
    start = stack[-1] + 1
    turned = circle[start:] + circle[:start]
    return [pid for pid in turned if pid in late]


class SpinAfterReply:
    """The ``spin_after_reply`` kind: a helper spins forever; the bot reads the helper's CPU
    clock (clock_gettime of another process's CPU clock) before each reply and when the next
    request comes, which bounds what the helper computed while the bot waited (it includes the
    moment from the thaw until the bot reads the request)."""

    def __init__(self) -> None:
        self.helper = os.fork()
        if self.helper == 0:
            while True:
                pass
        self.clock = ((~self.helper) << 3) | 2  # CPUCLOCK_SCHED of a process (linux/posix-timers.h)
        self.mark: tuple[float, float] | None = (time.clock_gettime(self.clock), time.monotonic())
        self.first = True

    def request(self) -> None:
        if self.mark is not None:
            used_ms = (time.clock_gettime(self.clock) - self.mark[0]) * 1000
            wall_ms = (time.monotonic() - self.mark[1]) * 1000
            report("spin_after_reply: " + json.dumps({"wait": "start" if self.first else "move",
                                                      "helper_cpu_ms": round(used_ms, 3),
                                                      "wall_ms": round(wall_ms, 3)}))
        self.first = False
        self.mark = None

    def replying(self) -> None:
        self.mark = (time.clock_gettime(self.clock), time.monotonic())


def move_reply(seq: int, state: GameState) -> dict:
    moves = state.legal_moves()
    if KIND == "predict_order":  # buys when it can, so that the stuff tiles join before the end
        moves = [m for m in moves if m.to_json(state.ruleset.cols)["action"] == "buy"] or moves
    return {"type": "move", "seq": seq, "move": moves[0].to_json(state.ruleset.cols)}


def main() -> None:
    if KIND == "exit_at_start":
        sys.exit(7)
    if KIND == "spam_and_exit":  # every start fills its log's cap, then exits: restarted per game
        try_stderr_spam()
        sys.exit(7)
    if KIND == "slow_start":
        time.sleep(60)
    link = Link()
    if KIND == "bad_hello":
        link.send({"type": "hello", "name": "x"})
    elif KIND == "wrong_protocol":
        link.send({"type": "hello", "name": "future", "version": "9", "protocol": 2})
    elif KIND == "huge_hello":  # a hello of 2 MiB
        link.send_raw(b'{"type": "hello", "name": "big", "version": "1", "protocol": 1, "x-pad": "'
                      + b"p" * (2 * MIB) + b'"}')
    elif KIND == "move_first":
        link.send({"type": "move", "seq": 1, "move": {"action": "advance"}})
    else:
        link.send({"type": "hello", "name": f"misbehave-{KIND}", "version": "1", "protocol": 1,
                   "capabilities": {"legal_moves": KIND == "recorder" or "legal_moves" in ARGS}})
    if KIND == "forks":
        for _ in range(3):
            subprocess.Popen(["sleep", "300"])
    if KIND == "setsid_daemon":
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execvp("sleep", ["sleep", "300"])
            os._exit(0)
    if KIND in ATTEMPTS:
        ATTEMPTS[KIND]()
    predictor = OrderPredictor() if KIND == "predict_order" else None
    spinner = SpinAfterReply() if KIND == "spin_after_reply" else None
    if KIND == "spin_helpers":
        for _ in range(int(ARGS[0])):
            if os.fork() == 0:
                while True:
                    pass
    moves_made = 0
    while True:
        message = link.recv()
        if message is None or message["type"] == "shutdown":
            if KIND == "lingers" and message is not None:  # slow to go: says so in the file ARGS[0]
                with open(ARGS[0], "w") as marker:
                    marker.write("shutdown\n")
                time.sleep(60)
            return
        if message["type"] == "game_over" and KIND == "reconnect_per_game":  # a socket per game
            assert link.sock is not None
            link.sock.close(linger=0)
            link = Link()
        if message["type"] == "new_game" and KIND == "cpu_per_game":  # legal, but CPU-hungry
            end = time.process_time() + float(ARGS[0])
            while time.process_time() < end:
                pass
        if message["type"] == "new_game" and predictor is not None:
            predictor.new_game(message)
        if message["type"] != "move_request":
            continue
        if spinner is not None:
            spinner.request()
        seq = message["seq"]
        state = GameState.from_json(message["state"])
        moves_made += 1
        if predictor is not None:
            predictor.move_request(state)
        if spinner is not None:
            spinner.replying()
        if moves_made < TRIGGER_MOVE:
            link.send(move_reply(seq, state))
            continue
        if KIND == "hang":
            while True:
                time.sleep(1)
        elif KIND == "sleep_past_limit":
            per_move = message["clocks"][state.to_move()]["per_move_ms"]
            bank = message["clocks"][state.to_move()]["bank_ms"]
            time.sleep((per_move + bank) / 1000 + 0.5)
            link.send(move_reply(seq, state))
        elif KIND == "uses_bank":
            if moves_made == TRIGGER_MOVE:  # overrun once, well within the bank
                per_move = message["clocks"][state.to_move()]["per_move_ms"]
                time.sleep(per_move / 1000 + 0.3)
            link.send(move_reply(seq, state))
        elif KIND == "crash":
            os._exit(3)
        elif KIND == "kill_referee":  # unsandboxed stdio: its parent is the referee (a tournament worker)
            os.kill(os.getppid(), getattr(signal, ARGS[0]) if ARGS else signal.SIGKILL)
            link.send(move_reply(seq, state))
        elif KIND == "stop_referee_once":  # unsandboxed stdio: stop the referee, once in all
            if moves_made == TRIGGER_MOVE and not os.path.exists(ARGS[0]):
                open(ARGS[0], "x").close()
                os.kill(os.getppid(), signal.SIGSTOP)
            link.send(move_reply(seq, state))
        elif KIND == "keep_referee_stopped":  # unsandboxed stdio: stop the referee, again and again
            referee = os.getppid()
            if moves_made == TRIGGER_MOVE and os.fork() == 0:
                # A helper that outlives the bot's tree kill (setsid, no marker in its
                # environment) and stops its referee every millisecond until the referee is gone.
                if os.fork() == 0:
                    os.setsid()
                    os.execve(sys.executable, [sys.executable, "-c", "import os, signal, time\ntry:\n"
                              f" while True:\n  os.kill({referee}, signal.SIGSTOP)\n  time.sleep(0.001)\n"
                              "except OSError:\n pass"], {})
                os._exit(0)
            if moves_made == TRIGGER_MOVE:  # wait until the helper runs (the game could be over first)
                until = time.monotonic() + 5
                while time.monotonic() < until and b") T " not in open(f"/proc/{referee}/stat", "rb").read():
                    time.sleep(0.001)
            link.send(move_reply(seq, state))
        elif KIND == "close_output":  # stdio: close stdout and keep running
            os.close(1)
            while True:
                time.sleep(1)
        elif KIND in ("exact_size", "over_size"):  # replies of exactly 1 MiB (or 1 byte more) + \r\n or \n
            base = _plain_move(seq, state) + b', "x-pad": "'
            size = MIB + (KIND == "over_size")
            link.send_raw(base + b"x" * (size - len(base) - 2) + b'"}' + (b"\r" if STDIO else b"\n"))
        elif KIND == "blank_flood":  # blank lines for 0.1 s, then the reply
            until = time.monotonic() + 0.1
            while time.monotonic() < until:
                link.send_raw(b"\n" * 65535)
            link.send(move_reply(seq, state))
        elif KIND == "garbage":
            link.send_raw(b"\x00\xffthis is not json at all")
        elif KIND == "truncated":
            link.send_raw(b'{"type": "move", "seq": ' + str(seq).encode() + b', "move": {"act')
        elif KIND == "schema":
            link.send({"type": "move", "seq": seq, "move": {"action": "fly", "to": "moon"}})
        elif KIND == "illegal":
            link.send({"type": "move", "seq": seq,
                       "move": {"action": "buy", "patch": state.circle[5], "cells": [[0, 0], [0, 1]]}})
        elif KIND == "huge":
            link.send_raw(b'{"type": "move", "seq": 1, "info": "' + b"x" * (10 * 2**20) + b'"}')
        elif KIND == "flood":
            for _ in range(5000):
                link.send(move_reply(seq - 1, state))
        elif KIND == "hostile_error":  # give up with a message no terminal or encoder should trust
            report("stderr tail: NUL \0 " + HOSTILE_TEXT)  # and a log tail like it
            link.send({"type": "error", "message": HOSTILE_TEXT + " NUL \0"})
        elif KIND == "multipart":
            link.sock.send_multipart([json.dumps(move_reply(seq, state)).encode(), b"more"])
        elif KIND == "reconnect":  # close its socket, open another with the same identity, answer
            assert link.sock is not None
            if moves_made == TRIGGER_MOVE:  # once a game
                link.sock.close(linger=0)
                link = Link()
            link.send(move_reply(seq, state))
        elif KIND == "close_and_exit_slowly":  # like a bot whose interpreter takes long to exit
            link.sock.close(linger=0)
            time.sleep(1.0)
            os._exit(5)
        elif KIND == "connection_flood":
            connection_flood()
        elif KIND == "identity_flood":
            identity_flood()
        elif KIND == "late_reply":
            # Answer every request twice: the stale copy of the previous answer arrives
            # during the next request and must be dropped, not taken as the answer.
            link.send(move_reply(seq - 1, state))
            link.send(move_reply(seq, state))
        elif KIND == "slow":
            if moves_made - TRIGGER_MOVE < int(ARGS[1]):
                time.sleep(float(ARGS[0]))
            link.send(move_reply(seq, state))
        elif KIND in ("forks", "setsid_daemon", "bad_hello", "recorder", "cpu_per_game",
                      "spin_helpers", "reconnect_per_game", "lingers", "predict_order",
                      "spin_after_reply") or KIND in ATTEMPTS:
            link.send(move_reply(seq, state))
        elif KIND == "bridge_forge":  # ZeroMQ: write a frame of the bridge's own into its pipe
            import struct
            with open(f"/proc/{os.getppid()}/fd/1", "wb") as pipe:
                text = ("forged start failure " + HOSTILE_TEXT).encode("utf-8", "surrogatepass")
                pipe.write(struct.pack(">cI", ARGS[0].encode() if ARGS else b"S", len(text)) + text)
            time.sleep(30)
        elif KIND == "bridge_stop":  # ZeroMQ: stop (or kill) the bridge, the bot's parent
            os.kill(os.getppid(), getattr(signal, ARGS[0]) if ARGS else signal.SIGSTOP)
            link.send(move_reply(seq, state))
            time.sleep(30)
        elif KIND in PATHOLOGICAL:  # valid JSON (or nearly), costly or odd to parse
            link.send_raw(PATHOLOGICAL[KIND](seq, state))
        elif KIND == "hostile_info":  # legal moves, each with an info string full of traps
            link.send({**move_reply(seq, state), "info": "=HYPERLINK(1) " + HOSTILE_TEXT})
        else:
            raise SystemExit(f"unknown kind {KIND}")


if __name__ == "__main__":
    main()
