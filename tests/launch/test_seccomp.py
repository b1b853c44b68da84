"""The seccomp filter of the strict sandbox, with real bubblewrap and real programs.

A probe program (below) runs inside a strict sandbox, tries each denied system call with
ctypes ``syscall()`` (x86_64 numbers) and each allowed thing, and prints what happened as
JSON. The same probe under bwrap without the filter shows the attempts are real: there the
calls reach the kernel and do something else.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from arena.bots.manifest import Manifest
from arena.bots.pool import BotPool, sample_bots_dir
from arena.engine import Termination
from arena.launch import seccomp
from arena.launch.bubblewrap import Sandbox, UidClaim, check_strict_available
from arena.launch.launcher import BubblewrapLauncher, Launcher
from arena.referee import TimeControl
from tests.helpers import ARENA_ARGV, misbehaving_bot, write_bot

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64", reason="x86_64 system call numbers")

TC = TimeControl(per_move_ms=500, bank_ms=2000, first_move_ms=10_000)

PROBE = r'''
import ctypes, json, os, signal, socket, subprocess, sys, threading

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long


def call(number, *args):
    """The errno of the system call (0 when it succeeded)."""
    ctypes.set_errno(0)
    result = libc.syscall(L(number), *[L(a) if isinstance(a, int) else a for a in args])
    return ctypes.get_errno() if result == -1 else 0


def on_fd(path, number, *args, flags=os.O_RDONLY):
    """The errno of the system call ``number(fd, *args)`` on a new descriptor of ``path``."""
    fd = os.open(path, flags, 0o600)
    try:
        return call(number, fd, *args)
    finally:
        os.close(fd)


def clone_newuser():
    result = libc.syscall(L(56), L(0x10000000 | signal.SIGCHLD), L(0), L(0), L(0), L(0))
    if result == 0:
        os._exit(0)  # the child of an allowed clone
    if result > 0:
        os.waitpid(result, 0)
        return 0
    return ctypes.get_errno()


def clone3_newuser():
    args = (ctypes.c_uint64 * 11)(0x10000000, 0, 0, 0, signal.SIGCHLD, 0, 0, 0, 0, 0, 0)
    result = libc.syscall(L(435), args, L(ctypes.sizeof(args)))
    if result == 0:
        os._exit(0)
    if result > 0:
        os.waitpid(result, 0)
        return 0
    return ctypes.get_errno()


def x32_call():
    """getpid through the x32 ABI, in a child: its wait status (or the errno)."""
    pid = os.fork()
    if pid == 0:
        result = libc.syscall(L(0x40000000 | 39))
        os._exit(0 if result >= 0 else 100 + ctypes.get_errno() % 100)
    status = os.waitpid(pid, 0)[1]
    return "signal %d" % os.WTERMSIG(status) if os.WIFSIGNALED(status) else "exit %d" % os.WEXITSTATUS(status)


def ptrace_child():
    """PTRACE_ATTACH to a child of ours (allowed to a parent without the filter)."""
    pid = os.fork()
    if pid == 0:
        signal.pause()
        os._exit(0)
    result = call(101, 16, pid, 0, 0)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return result


def sock(family, kind=socket.SOCK_STREAM, protocol=0):
    try:
        socket.socket(family, kind, protocol).close()
    except OSError as exc:
        return exc.errno
    return 0


def unix_pair():
    one, two = socket.socketpair()
    one.sendall(b"ping")
    return two.recv(4).decode()


def thread():
    out = []
    worker = threading.Thread(target=lambda: out.append(sum(range(1000))))
    worker.start()
    worker.join()
    return out[0]


seccomp_mode = [l.split()[1] for l in open("/proc/self/status") if l.startswith("Seccomp:")]
def read_keys(path="/proc/keys"):
    try:
        return open(path, "rb").read().decode(errors="replace")
    except OSError as exc:
        return exc.errno


keys = read_keys()
hidden = {path: read_keys(path) for path in ("/proc/1/cmdline", "/proc/cmdline", "/proc/config.gz")}
denied = {
    "keyctl": call(250, 0, -4, 0),
    "add_key": call(248, b"user", b"probe", b"x", 1, -4),
    "request_key": call(249, b"user", b"probe", None, 0),
    "setns": call(308, -1, 0),
    "clone_newuser": clone_newuser(),
    "clone3": clone3_newuser(),
    "vsock": sock(40),
    "packet": sock(17, socket.SOCK_DGRAM),
    "alg": sock(38, socket.SOCK_SEQPACKET),
    "unix_high_bits": call(41, (1 << 32) | 1, 1, 0),
    "mount": call(165, b"none", b"/tmp", b"tmpfs", 0, None),
    "ptrace": ptrace_child(),
    "process_vm_readv": call(310, os.getpid(), None, 0, None, 0, 0),
    "bpf": call(321, 0, None, 0),
    "perf_event_open": call(298, None, 0, -1, -1, 0),
    "io_uring_setup": call(425, 1, None),
    "userfaultfd": call(323, 1),
    "inotify_add_watch": on_fd("/usr", 254, b"/usr", 0x20),
    "fanotify_init": call(300, 0x200, 0),
    "dnotify": on_fd("/usr", 72, 1026, 0x1),
    "netlink_uevent": sock(socket.AF_NETLINK, socket.SOCK_DGRAM, 15),
    "inet": sock(socket.AF_INET),
    "inet6": sock(socket.AF_INET6),
    "udp": sock(socket.AF_INET, socket.SOCK_DGRAM),
    "netlink": sock(socket.AF_NETLINK, socket.SOCK_RAW),
    "io_setup": call(206, 1, ctypes.byref(ctypes.c_ulong(0))),
    "mmap_hugetlb": call(9, 0, 2 << 20, 3, 0x22 | 0x40000, -1, 0),  # PROT_READ|WRITE, PRIVATE|ANON
    "memfd_hugetlb": call(319, b"probe", 4),
    "shmget_hugetlb": call(29, 0, 2 << 20, 0o1600 | 0o4000),
    "memfd_secret": call(447, 0),
    "fallocate": on_fd("/tmp/probe-falloc", 285, 0, 0, 4096, flags=os.O_RDWR | os.O_CREAT),
    "modify_ldt": call(154, 0, ctypes.create_string_buffer(16), 16),  # read the LDT: 0 bytes
    "x32": x32_call(),
    "unshare": call(272, 0x10000000),  # last: when it works, the probe is in a new namespace
}
allowed = {
    "unix": sock(socket.AF_UNIX),
    "unix_pair": unix_pair(),
    "thread": thread(),
    "exec": subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True,
                           text=True).stdout.strip(),
    "getaddrinfo": len(socket.getaddrinfo("127.0.0.1", 80)) > 0,
    # glibc asks netlink which families are configured (refused): it assumes both
    "getaddrinfo_addrconfig": len(socket.getaddrinfo("localhost", 80, flags=socket.AI_ADDRCONFIG)) > 0,
    "flock_sh": on_fd("/usr", 73, 1 | 4),
    "flock_ex": on_fd("/usr", 73, 2 | 4),  # a JVM flocks its perf-data file: allowed
    # F_SETLK with a struct flock of zeros: F_RDLCK of the whole file
    "fcntl_lock": on_fd("/tmp/probe-lock", 72, 6, bytes(32), flags=os.O_RDWR | os.O_CREAT),
}
print(json.dumps({"seccomp": seccomp_mode, "keys": keys, "hidden": hidden, "denied": denied,
                  "allowed": allowed, "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd"))}))
'''

EXPECTED_DENIED = {
    "keyctl": errno.EPERM, "add_key": errno.EPERM, "request_key": errno.EPERM,
    "unshare": errno.EPERM, "setns": errno.EPERM, "clone_newuser": errno.EPERM,
    "clone3": errno.ENOSYS, "vsock": errno.EAFNOSUPPORT, "packet": errno.EAFNOSUPPORT,
    "alg": errno.EAFNOSUPPORT, "unix_high_bits": errno.EAFNOSUPPORT, "mount": errno.EPERM,
    "ptrace": errno.EPERM, "process_vm_readv": errno.EPERM, "bpf": errno.EPERM,
    "perf_event_open": errno.EPERM, "io_uring_setup": errno.EPERM, "userfaultfd": errno.EPERM,
    "inotify_add_watch": errno.EPERM, "fanotify_init": errno.EPERM, "dnotify": errno.EPERM,
    "netlink_uevent": errno.EAFNOSUPPORT, "memfd_secret": errno.ENOSYS, "fallocate": errno.EOPNOTSUPP,
    "modify_ldt": errno.EPERM,
    # issue 31: buffers outside the bot's memory cgroup, an event budget of the machine
    "inet": errno.EAFNOSUPPORT, "inet6": errno.EAFNOSUPPORT, "udp": errno.EAFNOSUPPORT,
    "netlink": errno.EAFNOSUPPORT, "io_setup": errno.ENOSYS,
    "mmap_hugetlb": errno.EPERM, "memfd_hugetlb": errno.EPERM, "shmget_hugetlb": errno.EPERM,
    "x32": f"signal {signal.SIGSYS.value}",  # killed, not just refused
}
EXPECTED_ALLOWED = {"unix": 0, "unix_pair": "ping", "thread": 499500, "exec": "42", "getaddrinfo": True,
                    "getaddrinfo_addrconfig": True, "flock_sh": 0, "flock_ex": 0, "fcntl_lock": 0}


@pytest.fixture(scope="module", autouse=True)
def strict_available() -> None:
    check_strict_available()  # a clear error (and failure) when the host cannot sandbox


def run_probe(tmp_path: Path, *, with_filter: bool = True) -> dict:
    """The probe's report from inside a strict sandbox (started as a bot is: BotProcess), or
    from bwrap with the same command line less the filter."""
    folder = tmp_path / "probe"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    (folder / "probe.py").write_text(PROBE)
    log = tmp_path / "probe.log"
    claim = UidClaim()
    try:
        sandbox = Sandbox(uid=claim.uid)
        argv = [sys.executable, "probe.py"]
        if with_filter:
            launcher = BubblewrapLauncher(uid=claim.uid)
            bot = launcher.start(argv, cwd=folder, pipes=True, stderr_log=log)
            try:
                assert bot.stdout is not None
                out = bot.stdout.read()
            finally:
                bot.kill_tree()
        else:
            out = subprocess.run(sandbox.command(argv, folder=folder), capture_output=True,
                                 timeout=60).stdout
    finally:
        claim.release()
    assert out, log.read_text(errors="replace") if log.exists() else "no output"
    return dict(json.loads(out))


def test_denied_calls_fail_with_the_expected_errno(tmp_path: Path) -> None:
    report = run_probe(tmp_path)
    assert report["seccomp"] == ["2"]
    assert report["denied"] == EXPECTED_DENIED
    assert report["keys"] == errno.EACCES  # /dev/null (on a nodev bind) over /proc/keys
    # and over what told a red team the host's paths (bwrap's command line, in pid 1's) and kernel
    assert report["hidden"] == {path: errno.EACCES if Path(path).exists() else errno.ENOENT
                                for path in ("/proc/1/cmdline", "/proc/cmdline", "/proc/config.gz")}
    assert report["fds"] == [0, 1, 2, 3]  # 3: listdir's own; the filter's memfd did not leak


def test_allowed_things_still_work(tmp_path: Path) -> None:
    assert run_probe(tmp_path)["allowed"] == EXPECTED_ALLOWED


def test_without_the_filter_the_same_calls_reach_the_kernel(tmp_path: Path) -> None:
    """The probe is real: under bwrap alone the calls are not refused the filter's way."""
    report = run_probe(tmp_path, with_filter=False)
    assert report["seccomp"] == ["0"]
    differ = {name for name, value in report["denied"].items() if value != EXPECTED_DENIED[name]}
    # bpf, mount, AF_PACKET and SHM_HUGETLB (outside vm.hugetlb_shm_group) are refused by the
    # kernel too (no capabilities), AF_ALG where the kernel lacks it: the same errno either way.
    assert differ >= {"keyctl", "add_key", "request_key", "unshare", "setns", "clone_newuser", "clone3",
                      "vsock", "unix_high_bits", "ptrace", "process_vm_readv", "perf_event_open",
                      "io_uring_setup", "userfaultfd", "x32", "inotify_add_watch", "dnotify",
                      "netlink_uevent", "fallocate", "modify_ldt", "inet", "inet6", "udp", "netlink",
                      "io_setup", "mmap_hugetlb", "memfd_hugetlb"},\
        report["denied"]
    assert report["allowed"] == EXPECTED_ALLOWED


def test_keyring_exchange_between_two_bots_fails(tmp_path: Path) -> None:
    """Two strict bots, one after the other on the same uid and side by side, each try to
    leave a key readable by all and to find the other's: every attempt is refused."""
    bots = [misbehaving_bot(tmp_path / name, "keyring", name=f"keys-{name}") for name in ("a", "b")]
    with BotPool(bots, tmp_path / "logs", launcher=Launcher.for_level("strict")) as pool:
        results = [pool.play(0, 1, seed=seed, time_control=TC, game_id=f"g{seed}") for seed in (1, 2)]
    assert all(r.termination is Termination.NORMAL for r in results), [r.detail for r in results]
    for handle in pool.handles:
        log = handle.stderr_log.read_text(errors="replace")
        attempts = [line for line in log.splitlines() if line.startswith("keyring ")]
        # two games: each bot was started once per game or kept; at least one round each
        assert attempts, log
        for line in attempts:
            if line.startswith("keyring /proc/keys"):
                assert "DONE 0 keys" in line or "blocked" in line, line
            else:
                assert "blocked (PermissionError" in line, line
    with open("/proc/keys") as handle:
        assert "arena-leak" not in handle.read()


@pytest.mark.slow
def test_mcts_and_a_node_bot_play_under_strict(tmp_path: Path) -> None:
    """The sample bots Python over ZeroMQ and C over stdio play in tests/test_sandbox.py (now
    under the filter); here the numpy-heavy mcts and a Node.js bot (libuv threads, io_uring
    refused) do too."""
    node = write_bot(tmp_path / "nodebot", "nodebot", ["node", "bot.js"], protocol="stdio")
    (tmp_path / "nodebot").chmod(0o755)
    (tmp_path / "nodebot" / "bot.js").write_text(NODE_BOT)
    manifests = [Manifest.load(sample_bots_dir() / "mcts"), node]
    with BotPool(manifests, tmp_path / "logs", launcher=Launcher.for_level("strict")) as pool:
        result = pool.play(0, 1, seed=3, time_control=TimeControl(per_move_ms=200, bank_ms=2000,
                                                                    first_move_ms=20_000))
    logs = [h.stderr_log.read_text(errors="replace") for h in pool.handles]
    assert result.termination is Termination.NORMAL, (result.detail, logs)


NODE_BOT = r"""
const fs = require("fs");
const readline = require("readline");
fs.readFileSync("/proc/self/status", "utf8");  // the thread pool (and io_uring, refused) at work
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
send({type: "hello", name: "nodebot", version: "1", protocol: 1, capabilities: {legal_moves: true}});
readline.createInterface({input: process.stdin}).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.type === "shutdown") process.exit(0);
  if (m.type !== "move_request") return;
  const moves = m.legal_moves || [{action: "advance"}];
  send({type: "move", seq: m.seq, move: moves[moves.length - 1]});
});
"""


def test_start_up_line_says_the_filter_is_in_force() -> None:
    said = check_strict_available()
    (line,) = [s for s in said if s.startswith("seccomp filter in force")]
    assert "keyring" in line and "sockets unix only" in line and "aio" in line in line


def test_filter_is_built_once_and_handed_out_fresh() -> None:
    program = seccomp.filter_bpf()
    assert program is seccomp.filter_bpf() and len(program) % 8 == 0
    first, second = seccomp.filter_fd(), seccomp.filter_fd()
    try:
        assert first != second and os.read(first, len(program) + 1) == program
        assert not os.get_inheritable(first)
    finally:
        os.close(first)
        os.close(second)



def test_strict_is_refused_in_one_line_when_libseccomp_cannot_be_loaded(tmp_path: Path) -> None:
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "pyseccomp.py").write_text('raise RuntimeError("Unable to find libseccomp")\n')
    env = {**os.environ, "PYTHONPATH": str(fake)}
    bots = sample_bots_dir()
    run = subprocess.run([*ARENA_ARGV, "play", str(bots / "random"), str(bots / "cbot"), "--sandbox",
                          "strict", "--games", "1"], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines() == [
        "Error: sandbox strict: cannot load libseccomp (Unable to find libseccomp); install the Debian "
        "package libseccomp2 and the Python package pyseccomp (make install)"]
