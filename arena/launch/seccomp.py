"""The seccomp filter of a strict sandbox: system calls a bot never needs, denied.

bubblewrap loads it (``bwrap --seccomp FD``) into the sandboxed process just before it
runs ``setpriv`` and the bot's command, so it binds the bot and everything it starts. It is
a deny list over an allowed default: ordinary programs (Python, C, Node.js, Java) run
unchanged, while the calls below fail with an errno a program can handle (EPERM; ENOSYS
for ``clone3``, so that glibc falls back to ``clone``, whose flags the filter can see).
Sockets are limited to ``AF_UNIX``, all the transports need; any other family fails with
EAFNOSUPPORT. A system call of another ABI (i386 or x32 on x86_64) kills
the process: the filter only speaks the native one.

Built with libseccomp (through ``pyseccomp``, ctypes over the system's ``libseccomp.so.2``)
once per process, and handed to each bwrap as a fresh memfd (:func:`filter_fd`).
"""

from __future__ import annotations

import errno
import functools
import os
import socket

from arena.errors import SandboxError

# What is denied, one group per reason: (group, errno, system calls).
DENIED: tuple[tuple[str, int, tuple[str, ...]], ...] = (
    # The kernel keyring is shared across the machine: keys show in /proc/keys, can be made
    # readable by any uid and outlive the process, so two bots could talk through it.
    ("keyring", errno.EPERM, ("add_key", "keyctl", "request_key")),
    # New namespaces (a nested user namespace gives "root" in it and much kernel surface);
    # clone with a CLONE_NEW* flag is denied below, clone3 (flags out of sight) is ENOSYS.
    ("namespaces", errno.EPERM, ("unshare", "setns")),
    # Mounts, old and new API: the sandbox's file view is fixed.
    ("mount", errno.EPERM, ("mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen",
                            "fsmount", "fsconfig", "fspick", "mount_setattr")),
    # Reading or writing other processes.
    ("ptrace", errno.EPERM, ("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd")),
    # Kernel programs and performance counters (side channels, kernel attack surface).
    ("bpf", errno.EPERM, ("bpf",)),
    ("perf_event_open", errno.EPERM, ("perf_event_open",)),
    # Loading code into the kernel.
    ("kernel modules", errno.EPERM, ("kexec_load", "kexec_file_load", "init_module", "finit_module",
                                     "delete_module")),
    # Page-fault handling in user space: a classic way to widen kernel race windows.
    ("userfaultfd", errno.EPERM, ("userfaultfd",)),
    # io_uring: a second system-call interface that seccomp cannot see into.
    ("io_uring", errno.EPERM, ("io_uring_setup", "io_uring_enter", "io_uring_register")),
    # File watches: bots share read-only files (/usr, the runtime), and a watch sees another
    # bot open them, a channel between bots (and a view of what the other one runs).
    ("file watches", errno.EPERM, ("inotify_add_watch", "fanotify_init")),
    # Disk blocks allocated without being written: a build took 8 GiB of its disk in 22 ms,
    # between two looks at its disk use. EOPNOTSUPP, as on a filesystem without it: glibc's
    # posix_fallocate then writes the blocks, at the pace of the page cache's write-back.
    ("fallocate", errno.EOPNOTSUPP, ("fallocate",)),
    # x86 segment descriptors of the process: old kernel attack surface that no 64-bit
    # program needs (Docker's default profile denies it too; a red team found it allowed).
    ("modify_ldt", errno.EPERM, ("modify_ldt",)),
    # Kernel asynchronous I/O: its events come from one budget of the machine (fs.aio-max-nr,
    # 65536), which one bot took whole (issue 31); ENOSYS, as on a kernel built without it
    # (glibc's POSIX aio uses threads; libuv uses io_uring, denied above, then threads).
    ("aio", errno.ENOSYS, ("io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents",
                           "io_pgetevents")),
    # clone3 passes its flags in memory the filter cannot read: ENOSYS makes glibc use clone.
    ("clone3", errno.ENOSYS, ("clone3",)),
    # Memory taken out of the kernel's direct map (fragments it for the whole machine);
    # ENOSYS, as on the many kernels built without it.
    ("memfd_secret", errno.ENOSYS, ("memfd_secret",)),
)

# clone flags that make a namespace (CLONE_NEWTIME, 0x80, exists only for clone3 and unshare;
# in clone's first argument 0x80 is part of the exit signal).
CLONE_NEW_FLAGS: tuple[int, ...] = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000,
                                    0x20000000, 0x40000000)

F_NOTIFY = 1026  # fcntl command of dnotify (linux/fcntl.h)
# Flags that take huge pages, by system call: (call, argument, flag).
HUGETLB_FLAGS: tuple[tuple[str, int, int], ...] = (("mmap", 3, 0x40000),  # MAP_HUGETLB
                                                   ("memfd_create", 1, 0x4),  # MFD_HUGETLB
                                                   ("shmget", 2, 0o4000))  # SHM_HUGETLB

# Socket families a bot may use: AF_UNIX only (stdio bots need none; the ZeroMQ bridge and
# its bot speak ipc://). The buffers of the others are kernel memory outside the bot's
# cgroup (issue 31): on cgroup v1 TCP and UDP draw on the machine's tcp_mem and udp_mem (a
# bot held 1.2 GiB of loopback TCP against a 1 GiB limit; a v1 memory.kmem.tcp cap still
# lets each socket force about 64 KiB past it), and netlink's on nothing at all (200 route
# sockets held 640 MiB of the host's slab; NETLINK_KOBJECT_UEVENT would also hear the
# machine's device events). Runtimes that probe them (a JVM checks for IPv6;
# glibc's getaddrinfo asks netlink which address families are configured) take EAFNOSUPPORT
# as "not available" and go on. AF_UNIX buffers are charged to the bot's memory cgroup.
ALLOWED_FAMILIES: tuple[int, ...] = (socket.AF_UNIX,)


@functools.cache
def filter_bpf() -> bytes:
    """The filter compiled to classic BPF, as ``bwrap --seccomp`` reads it (built once).

    Raises SandboxError when libseccomp cannot be loaded or the filter cannot be built."""
    try:
        import pyseccomp as seccomp
    except (ImportError, OSError, RuntimeError) as exc:
        raise SandboxError(f"sandbox strict: cannot load libseccomp ({exc}); install the Debian "
                           "package libseccomp2 and the Python package pyseccomp (make install)") from None
    try:
        filt = seccomp.SyscallFilter(seccomp.ALLOW)
        filt.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.KILL_PROCESS)
        for _group, code, calls in DENIED:
            for name in calls:
                filt.add_rule(seccomp.ERRNO(code), _number(seccomp, name))
        clone = _number(seccomp, "clone")
        for flag in CLONE_NEW_FLAGS:
            filt.add_rule(seccomp.ERRNO(errno.EPERM), clone, seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
        # dnotify (fcntl F_NOTIFY) is a file watch too (see DENIED). Locks stay allowed: an
        # exclusive flock on a shared read-only file is a bit another bot could read, but a
        # JVM with default settings flocks its perf-data file and, refused, prints a warning
        # on stdout, which breaks a stdio bot (README, Threat model: a side channel).
        filt.add_rule(seccomp.ERRNO(errno.EPERM), _number(seccomp, "fcntl"),
                      seccomp.Arg(1, seccomp.EQ, F_NOTIFY))
        # Huge pages come from one pool of the machine (vm.nr_hugepages), charged to no memory
        # cgroup on v1: a bot could take it whole. Refused, whatever the pool holds (none by
        # default, and then the kernel's answer would be ENOMEM).
        for name, arg, flag in HUGETLB_FLAGS:
            filt.add_rule(seccomp.ERRNO(errno.EPERM), _number(seccomp, name),
                          seccomp.Arg(arg, seccomp.MASKED_EQ, flag, flag))
        # Everything but the allowed families, compared on all 64 bits of the argument.
        sock = _number(seccomp, "socket")
        denied = seccomp.ERRNO(errno.EAFNOSUPPORT)
        top = max(ALLOWED_FAMILIES)
        filt.add_rule(denied, sock, seccomp.Arg(0, seccomp.GT, top))
        for family in range(top):
            if family not in ALLOWED_FAMILIES:
                filt.add_rule(denied, sock, seccomp.Arg(0, seccomp.EQ, family))
        read_fd, write_fd = os.pipe()
        try:
            with os.fdopen(write_fd, "wb") as out:
                filt.export_bpf(out)
            with os.fdopen(read_fd, "rb") as source:
                read_fd = -1
                program = source.read()
        finally:
            if read_fd >= 0:
                os.close(read_fd)
    except OSError as exc:
        raise SandboxError(f"sandbox strict: cannot build the seccomp filter: {exc}") from None
    if not program or len(program) % 8:
        raise SandboxError(f"sandbox strict: libseccomp exported a malformed filter ({len(program)} bytes)")
    return program


def filter_fd() -> int:
    """A new file descriptor (a memfd, close-on-exec, at offset 0) holding :func:`filter_bpf`,
    for one ``bwrap --seccomp FD``: pass it to the child (``pass_fds``) and close it after."""
    program = filter_bpf()
    fd = os.memfd_create("arena-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, program)
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd


def describe() -> str:
    """One line saying what the filter denies (for the start-up lines of strict)."""
    program = filter_bpf()
    names: dict[int, str] = {socket.AF_UNIX: "unix", socket.AF_INET: "inet", socket.AF_INET6: "inet6",
                             socket.AF_NETLINK: "netlink"}
    families = ", ".join(names.get(f, str(f)) for f in ALLOWED_FAMILIES)
    groups = ", ".join(group for group, _, _ in DENIED if group not in ("clone3", "memfd_secret"))
    return (f"seccomp filter in force ({len(program) // 8} BPF instructions, libseccomp "
            f"{_libseccomp_version()}): denied {groups}, huge pages; sockets {families} only; "
            "other ABIs killed")


def _number(seccomp: object, name: str) -> int:
    number: int = seccomp.resolve_syscall(seccomp.Arch.NATIVE, name)  # type: ignore[attr-defined]
    if number < 0:
        raise OSError(errno.EINVAL, f"libseccomp does not know the system call {name}")
    return number


def _libseccomp_version() -> str:
    import ctypes

    import pyseccomp

    class _Version(ctypes.Structure):
        _fields_ = [("major", ctypes.c_uint), ("minor", ctypes.c_uint), ("micro", ctypes.c_uint)]

    try:
        get = pyseccomp._libseccomp.seccomp_version
    except AttributeError:
        return "?"
    get.restype = ctypes.POINTER(_Version)
    get.argtypes = ()
    version = get().contents
    return f"{version.major}.{version.minor}.{version.micro}"


__all__ = ["ALLOWED_FAMILIES", "CLONE_NEW_FLAGS", "DENIED", "HUGETLB_FLAGS", "describe", "filter_bpf",
           "filter_fd"]
