"""A bot is a folder with a manifest, ``bot.toml``; this module reads and builds it.

```toml
name = "greedy"                 # required: 1-64 of A-Z a-z 0-9 - _ . (first a letter or digit)
command = "python bot.py"       # required: run in the bot's folder (a list of words works too)
protocol = "zmq"                # "zmq" (default) or "stdio"
build = "cc -O2 -o bot bot.c"   # optional, run by `sh -c` in the folder before the first start
                                # (under a strict sandbox: confined, in a private copy)
description = "..."             # optional
```

A command whose first word is ``python`` or ``python3`` runs with the harness's own
interpreter, so Python bots can import the SDK (``arena.sdk``) and the engine.

:meth:`Manifest.load` is the one parser of a bot.toml (tournament configs, check-bot,
submit, play, the pools): the keys are checked by ``arena/schemas/manifest.json``, the
name, the command's words and the build command by :mod:`arena.untrusted`.
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import itertools
import json
import os
import re
import select
import shlex
import shutil
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from arena.errors import ArenaError, BotStartError, ConfigError
from arena.launch.process import BOT_PATH
from arena.resources import package_path, sample_bots_dir
from arena.schemas import got, load_schema, parse_toml, problem, toml_text
from arena.schemas import problems as schema_problems
from arena.untrusted import (
    ARGUMENT_RULE,
    cap,
    copy_folder,
    for_terminal,
    is_argument,
    remove_tree,
    shown,
)

if TYPE_CHECKING:
    from arena.launch.launcher import Launcher

MANIFEST = "bot.toml"
SUBMISSION = ".arena-submission"  # written by `arena submit` into what it installs: when, from where
KEYS: tuple[str, ...] = tuple(load_schema("manifest")["properties"])
"""The keys of a bot.toml (arena/schemas/manifest.json gives their types)."""
_PLAIN_TABLE = re.compile(r"[A-Za-z0-9_-]{1,40}", re.ASCII)
PROTOCOLS: tuple[str, ...] = tuple(load_schema("manifest")["properties"]["protocol"]["enum"])
BUILD_TIMEOUT_S = 300
BUILD_NOTICE_AFTER_S = 10.0  # a build still running this long gets a line on stderr ...
BUILD_NOTICE_EVERY_S = 30.0  # ... and another one this often, until it ends
BUILD_LOG_CAP_BYTES = 64 << 10  # of a build's output, kept in memory and in its log
BUILD_DISK_MAX_BYTES = 2 << 30  # what a confined build may take of its disk's free space ...
BUILD_DISK_MAX_FILES = 200_000  # ... and of its free inodes (files, folders, links)
BUILD_DISK_CHECK_S = 0.01  # how often that is looked at (a statvfs: about 2 us)
_AFTER_EXIT_S = 1.0  # output still read after the build command exits
_GIST_LINES = 3
_GIST_LINE_CHARS = 300


class ManifestError(ConfigError):
    """A bot.toml with problems: ``problems`` lists every one, in plain words; the message
    names the file and gives them all on one line."""

    def __init__(self, path: Path, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        what = problems[0] if len(problems) == 1 else f"{len(problems)} problems: " + "; ".join(problems)
        super().__init__(f"{path}: {what}")


def _manifest_hint(folder: Path) -> str:
    """What to do about a folder without a bot.toml: rename a near miss (Bot.toml,
    bot.toml.txt, bot.tml) if there is one, else write one or start from a starter."""
    try:
        with os.scandir(folder) as entries:
            names = [entry.name for entry in itertools.islice(entries, 1000)]  # of maybe millions
    except OSError:
        names = []
    near = sorted(name for name in names if name != MANIFEST and _near_manifest(name))
    if near:
        return f": it holds {shown(near[0], 60)}; the file must be named exactly {MANIFEST}"
    inner = sorted(name for name in names[:100]  # never through a link: nothing of the host's shows
                   if not os.path.islink(folder / name) and os.path.isfile(folder / name / MANIFEST))
    if inner:  # an archive unpacked into a folder of its own name: mybot/mybot/bot.toml
        return f": it holds {shown(inner[0] + '/' + MANIFEST, 80)}; give that folder ({shown(inner[0], 60)})"
    return (f"; a bot folder holds a {MANIFEST} naming the bot and its command (docs/bots.md), "
            "or start from one: `arena new-bot DIR --lang python` (or js, c, cpp, java, python-zmq)")


def _near_manifest(name: str) -> bool:
    folded = name.strip().lower()
    return folded.split(".", 1)[0].strip() == "bot" and ("toml" in folded or "tml" in folded)


@dataclass(frozen=True)
class Manifest:
    folder: Path
    name: str
    command: tuple[str, ...]
    protocol: str = "zmq"
    build: str | None = None
    description: str = ""

    def version(self) -> str:
        """What tells this version of the bot from another, for a tournament that resumes: its
        command, protocol and build, and the stamp `arena submit` leaves in what it installs
        (SUBMISSION). Not its files: under ``none`` a build writes into the folder."""
        stamp = b""
        try:
            fd = os.open(self.folder / SUBMISSION, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW
                         | os.O_CLOEXEC)
        except OSError:
            pass
        else:
            try:
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    stamp = os.read(fd, 4096)
            finally:
                os.close(fd)
        what = json.dumps([list(self.command), self.protocol, self.build]).encode() + b"\0" + stamp
        return hashlib.sha256(what).hexdigest()[:16]

    @classmethod
    def load(cls, folder: Path | str) -> Manifest:
        """Read ``folder/bot.toml``: the one manifest parser (tournament configs, check-bot,
        submit, play and the pools all use it). The keys are checked against
        arena/schemas/manifest.json, the name by :mod:`arena.untrusted`. Raises ConfigError
        naming the file (ManifestError, with every problem of its keys at once, each
        ``key 'K': expected E, got G``, when it is valid TOML)."""
        folder = Path(folder).resolve()
        path = folder / MANIFEST
        if not folder.is_dir():
            samples = sorted(p.name for p in sample_bots_dir().iterdir() if (p / MANIFEST).is_file())
            raise ConfigError(f"{folder}: not a bot folder (no such directory; the sample bots that ship "
                              f"with arena go by their names: {', '.join(samples)})")
        try:
            text = toml_text(_read_manifest(path), str(path))
        except FileNotFoundError:
            raise ConfigError(f"{folder}: not a bot folder (no {MANIFEST}){_manifest_hint(folder)}") from None
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read: {exc}") from None
        data = parse_toml(text, str(path))
        table = next((key for key, value in data.items()
                      if key not in KEYS and isinstance(value, dict) and set(value) & set(KEYS)), None)
        if table is not None:  # [bot] name = ...: every key missing, and one unknown, said nothing useful
            shown_table = table if _PLAIN_TABLE.fullmatch(table) else shown(table, 40)
            raise ManifestError(path, [f"keys go at the top level of {MANIFEST}, not under [{shown_table}] "
                                       "(remove that table line)"])
        problems = schema_problems(data, load_schema("manifest"))
        raw_command = data.get("command")
        command: tuple[str, ...] = ()
        if isinstance(raw_command, str):
            try:
                command = tuple(shlex.split(raw_command))
            except ValueError as exc:
                problems.append(problem("command", "a command line that splits into words",
                                        f"{shown(raw_command)} ({exc})"))
        elif isinstance(raw_command, list):
            command = tuple(raw_command)
        if command and isinstance(command[0], str) and not command[0].strip():
            # ["", "a"] or "'' a": Popen would try to execute a file named '' (Permission denied)
            problems.append(problem("command", "a program to run as the first word (not empty, not only "
                                    "spaces), e.g. command = \"python bot.py\"", got(raw_command)))
        problems += _argument_problems(data) or _windows_path_problems(data)
        if problems:
            raise ManifestError(path, problems)
        return cls(folder, data["name"], command, data.get("protocol", "zmq"), data.get("build"),
                   data.get("description", ""))

    def builds_in_copy(self, launcher: Launcher) -> bool:
        """Its build runs in a private copy of its folder (see :func:`build`): under a launcher
        that copies builds (strict); for a bot shipped inside the installed harness, whose
        folder is not ours to write (a wheel's site-packages); and for an entrant installed by
        `arena submit`, which stays what was checked (a none tournament's build wrote a
        Cargo.lock there that the next strict one's cargo could not read)."""
        return bool(self.build) and (launcher.copies_builds or self.shipped or self.submitted)

    @property
    def submitted(self) -> bool:
        """The folder is an entrant installed by `arena submit` (it holds SUBMISSION)."""
        try:
            return stat.S_ISREG(os.lstat(self.folder / SUBMISSION).st_mode)
        except OSError:
            return False

    @property
    def shipped(self) -> bool:
        """The bot ships with the harness (a sample bot, inside the ``arena`` package)."""
        return self.folder.resolve().is_relative_to(package_path("arena").resolve())

    def argv(self) -> list[str]:
        """The command to execute, with ``python``/``python3`` mapped to our interpreter."""
        words = list(self.command)
        if words[0] in ("python", "python3"):
            words[0] = sys.executable
        elif "/" in words[0] and not Path(words[0]).is_absolute():
            words[0] = str(self.folder / words[0])
        return words


# In a command: a backslash before a letter, digit, '.' or '_' (C:\bot.exe, .\bot.py: shlex drops
# it), or what a TOML escape made of one (.\bot.py in a "string" is '.', backspace, 'ot.py').
_WINDOWS_PATH = re.compile(r"\\[\w.]|[\x00-\x08\x0a-\x1f]")


def _windows_path_problems(data: dict[str, object]) -> list[str]:
    """A ``command`` written with Windows paths: its backslashes are escapes to TOML and shell
    quoting alike, so the words run are not the ones written."""
    value = data.get("command")
    texts = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    if any(isinstance(text, str) and _WINDOWS_PATH.search(text) for text in texts):
        return [problem("command", "paths written with / and relative to the bot's folder (backslashes "
                        "are escapes here: a Windows path?), e.g. command = \"python bot.py\"", got(value))]
    return []


def _argument_problems(data: dict[str, object]) -> list[str]:
    """The keys whose text becomes a command line (``command``, ``build``) holding what no
    command line can (:func:`arena.untrusted.is_argument`): refused here, at load, rather
    than by ``Popen`` when the bot starts."""
    found = []
    for key, what in (("command", "words"), ("build", "a shell command")):
        value = data.get(key)
        texts = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        if not all(is_argument(text) for text in texts if isinstance(text, str)):
            found.append(problem(key, f"{what} with {ARGUMENT_RULE}", got(value)))
    return found


MANIFEST_MAX_BYTES = 64 << 10  # a bot.toml is a few lines; a long description fits


def _read_manifest(path: Path) -> bytes:
    """The bytes of a bot.toml: a regular file of at most MANIFEST_MAX_BYTES. Opened without
    blocking, so a FIFO (or a link to one, or to /dev/zero) is an error, not a hang or a
    harness filling its memory. Never through a link (O_NOFOLLOW): `arena submit` refuses
    links before it reads, and a link swapped in after that check must not be read (as root)
    either. Raises OSError."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(f"a symbolic link ({MANIFEST} must be a plain text file, not a link)") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"not a regular file ({MANIFEST} must be a plain text file)")
        data = os.read(fd, MANIFEST_MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MANIFEST_MAX_BYTES:
        raise OSError(f"larger than {MANIFEST_MAX_BYTES >> 10} KiB")
    return data


def build(manifest: Manifest, log: Path | None = None, *, launcher: Launcher | None = None,
          into: Path | None = None, timeout_s: float = BUILD_TIMEOUT_S,
          log_cap_bytes: int = BUILD_LOG_CAP_BYTES) -> Manifest:
    """Run the manifest's build command; return the manifest to run (itself without a build).

    Unconfined (no ``launcher``, or level none: an author's own machine) the build runs in
    the bot's own folder with the harness's environment, as ``make`` would; a bot shipped
    with the harness, or installed by `arena submit`, is built in a private copy made at
    ``into`` instead (the installed package is not ours to write; a submitted entrant stays
    what was checked). A launcher that copies builds (strict) runs it in a
    private copy of the folder made at ``into`` (see :func:`private_copy`): under a uid of
    its own, with the bot's cgroup limits, no network, a scrubbed environment and only the
    copy writable; then the copy is handed back to root and the returned manifest points
    at it. The folder given is then never written.

    Either way the output is read as it comes and at most ``log_cap_bytes`` of it is kept
    (its beginning and its end) and written to ``log``; a build still running after
    ``timeout_s`` is killed with everything it started. Raises BotStartError on failure: a
    first line with the exit status and the log, then the last lines of output (and the
    first ``error`` line) as indented lines of their own (see :func:`_gist`).
    """
    if not manifest.build:
        return manifest
    if launcher is None:
        from arena.launch.launcher import UnconfinedLauncher

        launcher = UnconfinedLauncher()
    if not manifest.builds_in_copy(launcher):
        _run_build(manifest, manifest.folder, launcher, log, timeout_s, log_cap_bytes)
        return manifest
    if into is None:
        raise ValueError("a sandboxed build or a shipped bot's build needs a folder to build its copy in")
    into = into.resolve()
    private_copy(manifest.folder, into)
    try:
        with launcher.building(into) as builder:
            _run_build(manifest, into, builder, log, timeout_s, log_cap_bytes)
    except BaseException:  # a failed or interrupted build: what it wrote is of no use
        remove_tree(into)
        raise
    return dataclasses.replace(manifest, folder=into)


def private_copy(source: Path, target: Path) -> None:
    """Copy the bot folder ``source`` to ``target`` (replaced if present): folders, regular
    files and symlinks that stay inside the folder. Raises BotStartError for anything else
    (a symlink pointing outside, a device, a FIFO) rather than copy what it points at."""
    if target.is_symlink():
        target.unlink()
    elif target.exists():
        remove_tree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:  # never through a link swapped in while it copies (see copy_folder)
        copy_folder(source, target, links_inside=True)
    except ArenaError as exc:
        raise BotStartError(str(exc)) from None


class _Capture:
    """A build's output, kept bounded: the first and the last ``cap / 2`` bytes."""

    def __init__(self, cap: int) -> None:
        self.half = max(cap // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        excess = len(self.tail) - self.half
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess

    def text(self) -> str:
        middle = f"\n[arena: {self.dropped} bytes of build output left out here]\n" if self.dropped else ""
        return (self.head.decode("utf-8", "replace") + middle
                + self.tail.decode("utf-8", "replace")).strip()


def _run_build(manifest: Manifest, folder: Path, launcher: Launcher, log: Path | None,
               timeout_s: float, cap_bytes: int) -> None:
    what = f"bot {manifest.name}: build command {shown(manifest.build, 120)}"
    # One stream, in order: the shell sends its stderr where its stdout goes.
    argv = ["sh", "-c", f"exec 2>&1; {manifest.build}"]
    disk = _DiskUse(folder) if launcher.copies_builds else None
    proc = launcher.start(argv, cwd=folder, env=launcher.build_environment(), pipes=True)
    capture = _Capture(cap_bytes)
    timed_out = False
    too_much: str | None = None
    notice = _BuildNotice(manifest.name, timeout_s, log)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        fd = proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        exited_at = None
        while True:
            now = time.monotonic()
            notice.tick(now)
            if now >= deadline:
                timed_out = True
                break
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > _AFTER_EXIT_S:
                break  # something it left behind still holds the pipe: it dies below
            if disk is not None and (too_much := disk.too_much()):
                break
            ready, _, _ = select.select([fd], [], [], min(deadline - now, 0.2 if disk is None
                                                          else BUILD_DISK_CHECK_S))
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                capture.add(chunk)
        while not timed_out and too_much is None and proc.poll() is None:  # output closed: let it exit
            timed_out = time.monotonic() >= deadline
            notice.tick(time.monotonic())
            too_much = disk.too_much() if disk is not None else None
            time.sleep(0.01)
        status = proc.describe_exit()
        code = proc.poll()
    finally:
        proc.kill_tree()
    output = capture.text()
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(output + "\n", encoding="utf-8")
    where = f" (log: {log})" if log is not None else ""
    if too_much is not None:
        raise BotStartError(f"{what} was stopped: {too_much}{where}{_gist(output)}")
    if timed_out:
        raise BotStartError(f"{what} took more than {timeout_s:g} s and was stopped{where}{_gist(output)}")
    if code != 0:
        toolchain = toolchain_used(manifest.build, launcher.build_environment().get("PATH", BOT_PATH))
        ran = f" - the build ran {toolchain[0]} {toolchain[1]}".rstrip() if toolchain else ""
        hint = version_hint(output, toolchain) or (
            _confined_build_hint(output, manifest.build) if launcher.copies_builds else "")
        raise BotStartError(f"{what} failed with {status}{where}{ran}{hint}{_gist(output)}")


class _DiskUse:
    """What a confined build has taken of the free space and inodes of the disk holding its
    folder, the only place it can write (a build making empty files could use up a disk's
    inodes within its time limit). The disk is shared, so this counts anyone's writes
    meanwhile: the limits are far above a real build's needs."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.start = os.statvfs(folder)
        self.due = 0.0

    def too_much(self) -> str | None:
        """Why the build must stop, or None (looked at every BUILD_DISK_CHECK_S at most)."""
        now = time.monotonic()
        if now < self.due:
            return None
        self.due = now + BUILD_DISK_CHECK_S
        try:
            here = os.statvfs(self.folder)
        except OSError:
            return None
        taken = (self.start.f_bavail - here.f_bavail) * here.f_frsize
        inodes = self.start.f_favail - here.f_favail
        if taken > BUILD_DISK_MAX_BYTES:
            return (f"it took {-(-taken >> 20):,} MiB of the disk holding its folder "
                    f"(limit {BUILD_DISK_MAX_BYTES >> 20:,} MiB)")
        if inodes > BUILD_DISK_MAX_FILES:
            return (f"it made {inodes:,} files and folders on the disk holding its folder "
                    f"(limit {BUILD_DISK_MAX_FILES:,})")
        return None


class _BuildNotice:
    """Says on stderr that a build is still running: first after BUILD_NOTICE_AFTER_S, then
    every BUILD_NOTICE_EVERY_S (a hung build is otherwise silent until its time limit)."""

    def __init__(self, name: str, timeout_s: float, log: Path | None) -> None:
        self.started = time.monotonic()
        self.due = self.started + BUILD_NOTICE_AFTER_S
        self.name = name
        self.timeout_s = timeout_s
        self.log = log

    def tick(self, now: float) -> None:
        if now < self.due:
            return
        while self.due <= now:
            self.due += max(BUILD_NOTICE_EVERY_S, 0.1)
        where = f"; its output will be in {self.log}" if self.log is not None else ""
        sys.stderr.write(f"building {self.name}: still running after {now - self.started:.0f} s "
                         f"(limit {self.timeout_s:g} s{where})\n")
        sys.stderr.flush()


# The programs that tell a bot's language (a hint's) and whose version a failed build names.
_LANGUAGE_BUILDS = {"go": "go", "cargo": "rust", "rustc": "rust", "cc": "c", "gcc": "c", "clang": "c",
                    "c99": "c", "c++": "cpp", "g++": "cpp", "clang++": "cpp", "javac": "java", "java": "java"}
_LANGUAGE_COMMANDS = {"java": "java", "node": "js", "nodejs": "js", "python": "python", "python3": "python"}
_LANGUAGE_FILES = (("go.mod", "go"), ("Cargo.toml", "rust"))
_BUILD_WORDS = re.compile(r"[^\s;&|()]+")
_VERSION = re.compile(r"\d+\.\d+(?:\.\d+)?")
TOOLCHAIN_VERSION_TIMEOUT_S = 5.0


def bot_language(manifest: Manifest) -> str | None:
    """The language a bot is most likely written in, for a hint: "go", "rust", "c", "cpp",
    "java", "js", "python", or None; from its build's and command's programs (make: from the
    files beside it)."""
    for word in _BUILD_WORDS.findall(manifest.build or ""):
        found = _LANGUAGE_BUILDS.get(Path(word).name)
        if found is not None:
            return found
    if manifest.command:
        found = _LANGUAGE_COMMANDS.get(Path(manifest.command[0]).name)
        if found is not None:
            return found
    for name, language in _LANGUAGE_FILES:
        if os.path.lexists(manifest.folder / name):
            return language
    return None


def toolchain_used(build: str | None, path: str) -> tuple[str, str] | None:
    """The toolchain program a build command runs (its first word that names one: go,
    cargo, cc...) as ``path`` finds it, and its version ("/usr/bin/cargo", "1.65.0"; the
    version "" if it would not say), or None. Only system toolchains by name are run, never
    a program of the bot's folder."""
    for word in _BUILD_WORDS.findall(build or ""):
        if "/" in word or word not in _LANGUAGE_BUILDS:
            continue
        program = shutil.which(word, path=path)
        if program is None:
            return None
        argv = [program, "version"] if word == "go" else [program, "--version"]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=TOOLCHAIN_VERSION_TIMEOUT_S,
                                  env={"PATH": path, "HOME": os.environ.get("HOME", "/"), "LANG": "C"},
                                  stdin=subprocess.DEVNULL, check=False)
            first = (done.stdout or done.stderr).splitlines()[0] if (done.stdout or done.stderr) else ""
        except (OSError, subprocess.SubprocessError):
            first = ""
        found = _VERSION.search(first)
        return program, found[0] if found else ""
    return None


_GO_TOO_NEW = re.compile(r"note: module requires Go (\d+\.\d+(?:\.\d+)?)")
_GO_VERSION_FORMAT = re.compile(r"go\.mod:(\d+): invalid go version '([^']{1,20})': must match format")
_GO_TOOLCHAIN = re.compile(r"go\.mod:(\d+): unknown directive: toolchain")


def version_hint(output: str, toolchain: tuple[str, str] | None) -> str:
    """When a failed build's output shows the bot was written for a newer toolchain than the
    one that ran (``toolchain``: :func:`toolchain_used`), the line to change, as
    `` - hint: ...``; else "". Each is what a newer `cargo new`, cargo or `go mod init`
    writes: edition 2024, a version-4 Cargo.lock, go.mod's `go 1.N.P` and `toolchain` lines,
    or code for a newer Go than the host's."""
    name, version = (Path(toolchain[0]).name, toolchain[1]) if toolchain else ("", "")
    this = f"{name} {version}".strip() if name else "the toolchain that ran"
    tail = output[-20_000:]
    if "older than the `2024` edition" in tail or "feature `edition2024` is required" in tail:
        return (f" - hint: Cargo.toml says edition = \"2024\", which {this} does not know (a newer "
                "`cargo new` wrote it; edition 2024 needs cargo 1.85): change it to edition = \"2021\"")
    if "lock file version `4` was found" in tail:
        return (f" - hint: Cargo.lock is version 4, which {this} cannot read (a newer cargo wrote it): "
                "change its line version = 4 to version = 3, or delete Cargo.lock and make it again with "
                "this cargo (cargo generate-lockfile)")
    if found := _GO_TOOLCHAIN.search(tail):
        return (f" - hint: go.mod's toolchain line (line {found[1]}) is unknown to {this} (a Go from 1.21 on "
                "writes it): delete that line" + _go_version_line(tail, version))
    if found := _GO_VERSION_FORMAT.search(tail):
        return (f" - hint: go.mod's line {found[1]}, go {found[2]}: {this} reads only go 1.N there: "
                f"change it to go {_go_minor(version) or '1.N'}")
    if found := _GO_TOO_NEW.search(tail):
        return (f" - hint: go.mod says go {found[1]}, newer than {this}, and the code uses something "
                f"{this} does not have: write go.mod's line as go {_go_minor(version) or '1.N'} and keep "
                "to that Go's language and library, or ask the organizer for a newer Go")
    return ""


def _go_minor(version: str) -> str:
    """"1.19" of Go's version "1.19.8" (go.mod's go line before Go 1.21 takes 1.N only)."""
    return ".".join(version.split(".")[:2]) if version else ""


def _go_version_line(output: str, version: str) -> str:
    """The rest of a toolchain-line hint when go.mod's go line is refused as well."""
    found = _GO_VERSION_FORMAT.search(output)
    if found is None:
        return ""
    return f", and change line {found[1]}, go {found[2]}, to go {_go_minor(version) or '1.N'}"


_ERROR_LINE = re.compile(r"\berror\b", re.IGNORECASE)
# A shell, env or make saying a program it was to run does not exist: "sh: 1: cargo: not found",
# "bash: line 1: go: command not found", "/usr/bin/env: 'node': No such file or directory".
_NOT_FOUND = re.compile(r"^(?P<who>[^\s:]+)(?:: (?:\d+|line \d+))?: '?(?P<program>[^\s:']+)'?: "
                        r"(?P<said>(?:[Cc]ommand )?not found|No such file or directory)$")
_RUNNERS = frozenset({"sh", "bash", "dash", "zsh", "env", "make", "gmake", "xargs", "exec"})


# A build reaching for the network, which a confined one does not have (cargo, go, pip, npm, curl).
_NO_NETWORK = re.compile(r"Could not resolve host|Temporary failure in name resolution|Name or service "
                         r"not known|failed to resolve address|[Nn]etwork is unreachable|getaddrinfo|"
                         r"Failed to establish a new connection|dial tcp")
_WRITE_REFUSED = re.compile(r"Permission denied|Read-only file system|could not create parent directories")


def _confined_build_hint(output: str, command: str | None) -> str:
    """For a failed build under the sandbox, as `` - hint: ...`` (else ""): a program it did
    not find, the network it tried to reach, or a place outside its copy it could not write,
    each of which the sandbox explains."""
    missing = _missing_program_hint(output)
    if missing:
        return missing
    tail = output.splitlines()[-200:]
    if any(_NO_NETWORK.search(line) for line in tail):
        return (" - hint: a build under --sandbox strict has no network: put what it downloads in the "
                "bot folder (cargo vendor, go mod vendor, pip download, npm's node_modules), or build "
                "before handing the bot in and ship the binary")
    words = [word.strip("'\"") for word in (command or "").replace("=", " ").split()]
    outside = [word for word in words if word == ".." or word.startswith("../") or "/../" in word
               or word.startswith("/") and not word.startswith(("/tmp", "/dev/"))]
    if outside and any(_WRITE_REFUSED.search(line) for line in tail):
        return (f" - hint: a build under --sandbox strict can write only in its copy of the bot folder "
                f"and in $TMPDIR, not {shown(outside[0], 60)}: build into the folder (e.g. -o bot, -d .)")
    return _other_toolchain_hint(words[0] if words else "")


def _other_toolchain_hint(program: str) -> str:
    """When the user's PATH finds the build's program somewhere else than the system folders
    a confined build searches (~/.cargo/bin/cargo against /usr/bin/cargo: another version,
    whose Cargo.lock the system's cannot read), that the build ran the system's; else ""."""
    if not program or "/" in program:
        return ""
    confined = shutil.which(program, path=BOT_PATH)
    yours = shutil.which(program)
    if confined is None or yours is None or os.path.realpath(confined) == os.path.realpath(yours):
        return ""
    # Where the user's PATH finds it is not said: a submission's output may go to its author,
    # who is not to learn the organizer's folders.
    return (f" - hint: under --sandbox strict the build ran {shown(confined, 80)}, the system's; your "
            f"PATH finds another {shown(program, 40)} first, maybe another version: make the bot build "
            "with the system's toolchain, or build before handing it in and ship the binary")


def _missing_program_hint(output: str) -> str:
    """When a failed confined build's output says a program was not found, what to do about
    it (a toolchain installed in a home folder is not in the sandbox's view), as
    `` - hint: ...``; else ""."""
    for line in output.splitlines()[-200:]:
        found = _NOT_FOUND.match(line.strip())
        if found is None or (found["said"].startswith("No such")
                             and Path(found["who"]).name not in _RUNNERS):
            continue
        return (f" - hint: {shown(found['program'], 60)} was not found: a build under --sandbox strict "
                "sees only the system folders (/usr, /bin, /lib), the Python installation and its copy "
                "of the bot folder, so a toolchain in a home folder (~/.cargo, ~/.rustup, ~/go, nvm) "
                "is invisible to it: install the toolchain system-wide, or build before handing the "
                "bot in and ship the binary")
    return ""


def _gist(output: str) -> str:
    """What a build failure shows of its output, after its first line: ``; it printed
    nothing``, or ``; from its output:`` and then, as indented lines each escaped for a
    terminal, the first line that reports an error (a compiler's first ``error:`` is the
    cause; pip's ``ERROR:`` comes after pages of warnings) unless it is among the last
    lines, then the last _GIST_LINES lines."""
    # Leading spaces kept: a compiler's caret lines up under the source line it quotes.
    lines = [line.expandtabs().rstrip() for line in output.splitlines() if line.strip()]
    if not lines:
        return "; it printed nothing"
    last = lines[-_GIST_LINES:]
    first_error = next((line for line in lines[:-_GIST_LINES]
                        if _ERROR_LINE.search(line) and not line.lower().startswith("warning")), None)
    gist = ([first_error, "..."] if first_error is not None else []) + last
    return "; from its output:" + "".join(f"\n  {for_terminal(cap(line, _GIST_LINE_CHARS), newlines=False)}"
                                          for line in gist)
