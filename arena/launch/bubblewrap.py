"""Confining untrusted bots: bubblewrap, a distinct uid per bot, cgroup limits.

The bwrap side of the ``strict`` level (:class:`arena.launch.launcher.BubblewrapLauncher`,
which starts the processes; level ``none`` is the resource limits and process-tree control
of :mod:`arena.launch.process` alone). A :class:`Sandbox` makes the command line that runs
the bot's command under bubblewrap (``bwrap``) with

* its own mount, pid, network, ipc, uts and cgroup namespaces: no network at all (a
  loopback of its own), no view of other processes;
* a filesystem of read-only binds: ``/usr`` (and the ``/bin``, ``/lib``... links), a few
  files of ``/etc``, the Python installation, the venv and the ``arena`` package (Python
  bots run the harness's interpreter and import the SDK) and the bot's own folder, and
  nothing else: not the repository, other bots, the results folder, the database or any
  home folder;
* ``/tmp`` (its HOME and TMPDIR) and ``/dev/shm``: private tmpfs of a capped size, the
  only places it can write; no pseudo-terminals (an empty ``/dev/pts``);
* the ZeroMQ ipc socket bound at its own path (so ``ARENA_ENDPOINT`` is unchanged) and
  owned by the bot's uid; stdio bots just inherit their pipes;
* an unprivileged uid of its own, ``60000 + n``, held for as long as the bot is in use
  (:class:`UidClaim`): no two bots running on the machine share one, so they cannot
  signal, trace or share anything tied to a uid (RLIMIT_NPROC included); no capabilities
  and ``no_new_privs``;
* its own cgroup (see :mod:`arena.launch.cgroup`) with memory, process-count and CPU
  limits when the host offers them; otherwise per-process rlimits, and
  :func:`check_strict_available` says which limits are in force;
* with a cgroup freezer, frozen whenever it is not its turn (unless pondering: see
  :meth:`arena.bots.session.BotHandle.freeze`).

bwrap runs as root (so it can bind paths under folders the bot's uid may not enter, such
as a Python installed in ``~root``) and drops to the bot's uid with ``setpriv`` right
before the bot's command starts. So ``strict`` needs root, ``bwrap`` (Debian package
``bubblewrap``) and ``setpriv`` (``util-linux``); when it cannot be provided it is an
error, never a silent downgrade.
"""

from __future__ import annotations

import dataclasses
import fcntl
import functools
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from arena.errors import BotStartError, ConfigError, SandboxError
from arena.launch import seccomp
from arena.launch.cgroup import BotCgroup, detect
from arena.launch.process import ResourceLimits
from arena.resources import sample_bots_dir

UID_BASE = 60000
MAX_UIDS = 1000  # bots sandboxed at once on one machine
SANDBOX_TMP = "/tmp"  # HOME and TMPDIR inside the sandbox
_SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
# The /etc a bot sees (read-only), what common runtimes read there and nothing secret: the
# dynamic linker's cache and config; alternatives (java, awk...); the time zone; OpenSSL's
# config and the public CA certificates (Node.js reads openssl.cnf at start, Python's ssl);
# public name-service data; each JVM's own configuration (/etc/java-17-openjdk: jvm.cfg,
# java.security). Never shadow, sudoers, ssh keys, ssl/private or the host's passwd/group:
# those of the sandbox are generated (:func:`_etc_generated`).
_ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "alternatives",
              "ssl/openssl.cnf", "ssl/certs", "os-release", "protocols", "services")
_ETC_GLOBS = ("java-*",)
_ETC_GENERATED = ("passwd", "group", "nsswitch.conf", "hosts")
BOT_ACCOUNT = "arena-bot"  # the name getpwuid() gives the bot's uid inside the sandbox
_PROBE_TIMEOUT_S = 30
_NO_ADDRESS_SPACE_LIMIT = 1 << 62  # RLIMIT_AS in effect unlimited (ResourceLimits wants a positive number)
_PROC_HIDDEN = ("/proc/keys", "/proc/key-users",  # /dev/null bound over them in the sandbox
                "/proc/1/cmdline", "/proc/cmdline", "/proc/config.gz")


@dataclass(frozen=True)
class SandboxLimits:
    """Per-bot limits of a strict sandbox (cgroups when available; see the module docs)."""

    memory_bytes: int = 1 << 30
    processes: int = 256  # tasks, threads included
    cpus: float = 1.0  # cores' worth of CPU time per wall-clock second
    tmp_bytes: int = 256 << 20  # each of /tmp and /dev/shm

    def __post_init__(self) -> None:
        for name in ("memory_bytes", "processes", "tmp_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"sandbox limit {name} must be a positive integer, got {value!r}")
        if not self.cpus > 0:
            raise ConfigError(f"sandbox limit cpus must be positive, got {self.cpus!r}")


def runtime_paths() -> tuple[Path, ...]:
    """What a Python bot run by our interpreter needs besides /usr: the Python
    installation, the venv and the ``arena`` package (outermost paths only)."""
    import arena

    candidates = {Path(p).resolve() for p in (sys.base_prefix, sys.prefix, sys.base_exec_prefix,
                                              sys.exec_prefix)}
    candidates.add(Path(arena.__file__).resolve().parent)
    system = [Path("/usr")] + [Path("/") / name for name in _SYSTEM_DIRS]
    kept = [p for p in candidates if p != Path("/") and not any(_within(p, s) for s in system)]
    return tuple(sorted(p for p in kept if not any(q != p and _within(p, q) for q in kept)))


@dataclass(frozen=True)
class Sandbox:
    """The strict confinement of a bot: the bwrap command line and its limits."""

    uid: int = UID_BASE  # and gid: the unprivileged identity the bot runs under
    limits: SandboxLimits = SandboxLimits()
    exposed: tuple[Path, ...] = field(default_factory=runtime_paths)  # read-only, besides /usr
    use_cgroups: bool = True  # False: rlimits only, as on a host without cgroups
    # True for a build: the folder is bound read-write (a private copy owned by ``uid``,
    # see arena.bots.manifest.build); everything else stays as for a bot.
    writable_folder: bool = False

    def __post_init__(self) -> None:
        if not (isinstance(self.uid, int) and self.uid > 0):
            raise ConfigError(f"sandbox uid must be a positive integer (not root), got {self.uid!r}")

    def shows(self, path: str, *, folder: Path) -> bool:
        """Whether the absolute ``path`` lies under a folder bound into the sandbox of a bot
        running in ``folder`` (a hint's question: /tmp and /dev/shm inside are private ones).
        Decided on the path's text: the host's file system is not asked."""
        where = Path(os.path.normpath(path))
        bound = [Path("/usr"), Path("/etc"), Path("/proc"), Path("/dev"), Path(folder).resolve(),
                 *(Path("/") / name for name in _SYSTEM_DIRS), *self.exposed]
        return any(_within(where, place) for place in bound)

    def command(self, argv: Sequence[str], *, folder: Path, seccomp_fd: int | None = None) -> list[str]:
        """The bwrap command line that runs ``argv`` confined, in ``folder`` (read-only unless
        ``writable_folder``), under
        the seccomp filter read from ``seccomp_fd`` (:func:`arena.launch.seccomp.filter_fd`;
        the caller passes it to bwrap and closes it after the start)."""
        tmp = str(self.limits.tmp_bytes)
        args = [_tool("bwrap"), "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
                "--unshare-cgroup-try", "--die-with-parent", "--new-session",
                "--ro-bind", "/usr", "/usr"]
        for name in _SYSTEM_DIRS:
            path = Path("/") / name
            if path.is_symlink():
                args += ["--symlink", os.readlink(path), str(path)]
            elif path.is_dir():
                args += ["--ro-bind", str(path), str(path)]
        args += ["--perms", "0755", "--dir", "/etc"]  # else bwrap makes it 0700: unreadable to the bot
        args += _etc_args(self.uid)
        args += ["--proc", "/proc", "--dev", "/dev"]
        # No pseudo-terminals: every devpts instance draws on one budget of the machine
        # (kernel.pty.max less the host's reserve, 3072), which one bot took whole (issue 31).
        # An empty /dev/pts leaves /dev/ptmx dangling: ENOENT, as on a system without ptys.
        args += ["--perms", "0755", "--tmpfs", "/dev/pts"]
        # Defence in depth beside the seccomp filter: no view of the machine's keyring.
        args += [a for name in _PROC_HIDDEN if Path(name).exists() for a in ("--ro-bind", "/dev/null", name)]
        args += [
                 "--perms", "1777", "--size", tmp, "--tmpfs", SANDBOX_TMP,
                 "--perms", "1777", "--size", tmp, "--tmpfs", "/dev/shm"]
        # bwrap makes missing parent folders 0700 (owned by root): make them 0755 first.
        made = {Path("/"), Path("/usr"), Path("/etc"), Path("/proc"), Path("/dev"), Path(SANDBOX_TMP)}
        binds = [("--ro-bind", Path(p)) for p in self.exposed]
        # The sample bots ship inside the package: other bots see an empty folder there
        # (a sample bot's own folder is bound over it, deeper, so after it).
        shipped = sample_bots_dir().resolve()
        binds += [("--tmpfs", shipped) for p in self.exposed if _within(shipped, Path(p))]
        binds += [("--bind" if self.writable_folder else "--ro-bind", Path(folder))]
        for option, path in sorted(binds, key=lambda b: len(b[1].parts)):
            for parent in reversed(path.parents):
                if parent not in made and not any(_within(parent, p) for _, p in binds if p != path):
                    args += ["--perms", "0755", "--dir", str(parent)]
                    made.add(parent)
            if option == "--tmpfs":
                args += ["--perms", "0755", option, str(path)]
            else:
                args += [option, str(path), str(path)]
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        args += ["--remount-ro", "/", "--chdir", str(folder),
                 "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--",
                 _tool("setpriv"), f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups",
                 "--inh-caps=-all", "--no-new-privs", "--"]
        return args + list(argv)

    def wrap(self, argv: Sequence[str], *, folder: Path, seccomp_fd: int | None = None) -> list[str]:
        """Check the bot can use its folder, and return :meth:`command`.

        Raises BotStartError naming what is wrong."""
        try:
            mode = folder.stat().st_mode
        except OSError as exc:
            raise BotStartError(f"bot folder {folder}: {exc.strerror}") from None
        if mode & 0o005 != 0o005:
            raise BotStartError(f"bot folder {folder} is mode {mode & 0o777:o}: the sandbox runs the "
                                f"bot as uid {self.uid}, which must be able to read it (chmod -R o+rX)")
        return self.command(argv, folder=folder, seccomp_fd=seccomp_fd)

    def make_cgroup(self) -> BotCgroup | None:
        """A new cgroup with this sandbox's limits, or None when the host offers none."""
        if not self.use_cgroups:
            return None
        try:
            return BotCgroup.create(detect(), memory_bytes=self.limits.memory_bytes,
                                    processes=self.limits.processes, cpus=self.limits.cpus)
        except OSError as exc:
            raise BotStartError(f"cannot make the bot's cgroup: {exc}") from None

    def process_limits(self, limits: ResourceLimits, cgroup: BotCgroup | None) -> ResourceLimits:
        """The per-process limits of a bot in ``cgroup``: with a memory cgroup, which bounds
        what the bot really uses, no address-space limit. That limit would only break
        runtimes that reserve far more address space than they use (V8 reserves about 10 GiB
        for each WebAssembly memory, a JVM half the limit for its heap, sanitizers terabytes);
        without a memory cgroup it is the only memory bound, and stays."""
        if cgroup is not None and "memory" in cgroup.folders:
            return dataclasses.replace(limits, address_space_bytes=_NO_ADDRESS_SPACE_LIMIT)
        return limits

    def process_rlimit(self) -> int | None:
        """RLIMIT_NPROC for the bot's uid when no pids cgroup counts its processes."""
        if self.use_cgroups and detect().has("pids"):
            return None
        return self.limits.processes


def check_strict_available(limits: SandboxLimits = SandboxLimits(), *,
                           use_cgroups: bool = True, pondering: bool = False) -> list[str]:
    """Check a strict sandbox can be provided here (by starting one); return the limits in
    force, one line each. Raises SandboxError saying why not."""
    return list(_check(limits, use_cgroups, pondering))


@functools.cache
def _check(limits: SandboxLimits, use_cgroups: bool, pondering: bool = False) -> tuple[str, ...]:
    if os.geteuid() != 0:
        raise SandboxError("sandbox strict needs root: each bot runs under an unprivileged uid "
                           f"of its own ({UID_BASE} + n) and only root can switch to it; run as "
                           "root, or pass --sandbox none to run bots unconfined on a machine you "
                           "trust")
    bwrap = _tool("bwrap")
    _tool("setpriv")
    import arena

    folder = Path(arena.__file__).resolve().parent
    probe = Sandbox(limits=limits)
    # The probe runs under the seccomp filter and reports its uid and seccomp mode (2: filter).
    filter_fd = seccomp.filter_fd()
    argv = probe.command([sys.executable, "-c", "import os, arena; print(os.getuid(), *[line.split()[1] "
                          "for line in open('/proc/self/status') if line.startswith('Seccomp:')])"],
                         folder=folder, seccomp_fd=filter_fd)
    try:
        run = subprocess.run(argv, capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S,
                             stdin=subprocess.DEVNULL, pass_fds=(filter_fd,))
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxError(f"sandbox strict: bubblewrap could not start a sandbox: {exc}") from None
    finally:
        os.close(filter_fd)
    if run.returncode == 0 and run.stdout.split()[:1] == [str(probe.uid)] and run.stdout.split() != [
            str(probe.uid), "2"]:
        raise SandboxError("sandbox strict: bubblewrap started the sandbox without its seccomp filter "
                           f"(Seccomp: {' '.join(run.stdout.split()[1:]) or 'unknown'}); or pass "
                           "--sandbox none")
    if run.returncode != 0 or run.stdout.split()[:1] != [str(probe.uid)]:
        said = " | ".join((run.stderr or run.stdout).strip().splitlines()[-3:])
        hint = ""
        if "ermission" in said or "not permitted" in said or "namespace" in said:
            hint = (" (in a container this takes CAP_SYS_ADMIN, e.g. docker run --privileged or "
                    "--cap-add SYS_ADMIN --security-opt seccomp=unconfined)")
        raise SandboxError(f"sandbox strict: bubblewrap cannot start a sandbox here (exit code "
                           f"{run.returncode}): {said}{hint}; or pass --sandbox none")
    version = subprocess.run([bwrap, "--version"], capture_output=True, text=True).stdout.strip()
    support = detect()
    rlimits = ResourceLimits()
    mib = 2**20
    lines = [f"{version or 'bubblewrap'}: no network; read-only system, Python runtime and bot "
             f"folder; no other files; private /tmp and /dev/shm of {limits.tmp_bytes // mib} MiB "
             f"each; no pseudo-terminals; a uid of its own ({UID_BASE} + n), no capabilities"]
    lines.append(seccomp.describe())

    def usable(controller: str) -> bool:
        return use_cgroups and support.has(controller)

    def why(controller: str) -> str:
        return support.describe(controller) if use_cgroups else "cgroups turned off"

    if usable("memory"):
        lines.append(f"memory {limits.memory_bytes // mib} MiB per bot ({why('memory')})")
    else:
        lines.append(f"memory: NO cgroup limit ({why('memory')}); only "
                     f"{rlimits.address_space_bytes // mib} MiB of address space per process")
    if usable("pids"):
        lines.append(f"processes {limits.processes} per bot ({why('pids')})")
    else:
        lines.append(f"processes: NO cgroup limit ({why('pids')}); {limits.processes} per bot "
                     "(RLIMIT_NPROC on its uid)")
    if usable("cpu"):
        lines.append(f"CPU {limits.cpus:g} core(s) per bot ({why('cpu')})")
    else:
        lines.append(f"CPU: NO cgroup limit ({why('cpu')}); a bot may use every core; "
                     f"{rlimits.cpu_seconds} s of CPU time per process")
    if not usable("freezer"):
        lines.append(f"freezer: not available ({why('freezer')}): bots may compute between moves")
    elif pondering:
        lines.append(f"freezer: not used (pondering): bots may compute between moves ({why('freezer')})")
    else:
        lines.append(f"freezer: bots frozen off their turn ({why('freezer')})")
    piped = _piped_core_pattern()
    if piped:
        lines.append(f"WARNING: kernel.core_pattern pipes core dumps to {piped!r}, which the kernel "
                     "runs as root outside the sandbox whenever a bot crashes (a core-size limit "
                     "of 0 does not stop it); on a tournament machine set kernel.core_pattern=core")
    return tuple(lines)


def _piped_core_pattern() -> str:
    try:
        return pipe_handler(Path("/proc/sys/kernel/core_pattern").read_text())
    except OSError:
        return ""


def pipe_handler(core_pattern: str) -> str:
    """The program core dumps are piped to by this ``kernel.core_pattern`` (one starting
    with ``|``), or "" when they are written to a file."""
    words = core_pattern.strip()[1:].split() if core_pattern.strip().startswith("|") else []
    return words[0] if words else ""


class UidClaim:
    """A uid held by one bot for as long as it is in use, so that no two bots running on
    the machine (in one pool, in tournament workers, Dask worker threads, other runs) share
    one.

    One lock file per uid; the lowest free uid that is not an account is taken, and the
    kernel releases the lock when the holder exits, however it exits."""

    def __init__(self) -> None:
        folder = Path("/run/arena-uids") if Path("/run").is_dir() and os.geteuid() == 0 \
            else Path(tempfile.gettempdir()) / f"arena-uids-{os.geteuid()}"
        folder.mkdir(mode=0o700, exist_ok=True)
        for uid in range(UID_BASE, UID_BASE + MAX_UIDS):
            if _is_account(uid):
                continue
            handle: IO[str] = open(folder / f"{uid}.lock", "a")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            self.uid = uid
            self._handle: IO[str] | None = handle
            return
        raise SandboxError(f"all {MAX_UIDS} sandbox uids are in use (locks in {folder})")

    def release(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def _etc_args(uid: int) -> list[str]:
    """The bwrap options that fill the sandbox's /etc: the host's :data:`_ETC_FILES` and
    :data:`_ETC_GLOBS` that exist, read-only, and the generated :data:`_ETC_GENERATED`."""
    etc = Path("/etc")
    names = [n for n in _ETC_FILES if (etc / n).exists()]
    names += sorted(p.name for pattern in _ETC_GLOBS for p in etc.glob(pattern) if p.is_dir())
    args: list[str] = []
    made: set[str] = set()
    for name in names:
        parent = str(Path(name).parent)
        if parent != "." and parent not in made:  # bwrap would make it 0700
            args += ["--perms", "0755", "--dir", f"/etc/{parent}"]
            made.add(parent)
        args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    generated = _etc_generated(uid)
    for name in _ETC_GENERATED:
        args += ["--ro-bind", str(generated / name), f"/etc/{name}"]
    return args


def _etc_generated(uid: int) -> Path:
    """A folder of the /etc files generated for the bot running as ``uid``: a passwd and a
    group naming only root, the bot (:data:`BOT_ACCOUNT`, home /tmp, no shell) and nobody, so
    that ``getpwuid()`` works (a JVM sets ``user.name`` from it) without showing the host's
    accounts; an nsswitch.conf reading only those files; a hosts naming only localhost."""
    nologin = "/usr/sbin/nologin"
    files = {
        "passwd": (f"root:x:0:0:root:/root:{nologin}\n"
                   f"{BOT_ACCOUNT}:x:{uid}:{uid}:patchwork-arena bot:{SANDBOX_TMP}:{nologin}\n"
                   f"nobody:x:65534:65534:nobody:/nonexistent:{nologin}\n"),
        "group": f"root:x:0:\n{BOT_ACCOUNT}:x:{uid}:\nnogroup:x:65534:\n",
        "nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files\nservices: files\n"
                         "protocols: files\n",
        "hosts": "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
    }
    base = Path("/run/arena-etc") if Path("/run").is_dir() and os.geteuid() == 0 \
        else Path(tempfile.gettempdir()) / f"arena-etc-{os.geteuid()}"
    folder = base / str(uid)
    folder.mkdir(mode=0o755, parents=True, exist_ok=True)
    for name, text in files.items():
        path = folder / name
        try:
            if path.read_text() == text:
                continue
        except OSError:
            pass
        # Written aside and renamed: bots starting at once in other processes may read it.
        fd, spare = tempfile.mkstemp(dir=folder, prefix=f".{name}.")
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.chmod(spare, 0o644)
        os.replace(spare, path)
    return folder


def _is_account(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        package = "bubblewrap" if name == "bwrap" else "util-linux"
        raise SandboxError(f"sandbox strict: {name} is not installed (Debian package {package}: "
                           f"apt-get install {package}); or pass --sandbox none to run bots "
                           "unconfined on a machine you trust")
    return path


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


__all__ = ["BOT_ACCOUNT", "SANDBOX_TMP", "UID_BASE", "Sandbox", "SandboxLimits", "UidClaim",
           "check_strict_available", "runtime_paths"]
