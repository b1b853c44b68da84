"""What to change, for a bot's failure: a pure function from :class:`Facts` to a hint.

:func:`diagnose` names the common newcomer mistake behind a failure (issue 15's list), or
says nothing. It does no I/O: what it knows of the bot (its command, its folder's files,
its log, its process in /proc, its channel) is in the :class:`Facts` that the probe
(:mod:`arena.bots.probe`) fills in, with what the launcher says of the sandbox. The hints
are tested as tables of facts (``tests/bots/test_diagnose.py``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

from arena.channel.session import BAD_TEXT_CHARS
from arena.protocol.constants import MAX_MESSAGE_BYTES

ErrorKind = Literal["start", "terminated", "timeout", "malformed", "other"]
"""BotStartError, BotTerminatedError, BotTimeoutError, MalformedMessageError, anything else."""

LONG_LINE_BYTES = 4096
GO_SCANNER_BYTES = 64 << 10  # bufio.MaxScanTokenSize: a longer line stops a default bufio.Scanner
# A bot killed by one of these right after a message longer than LONG_LINE_BYTES is told
# that lines can be long (a C bot reading into char line[4096]), whatever its language.
MEMORY_SIGNALS = ("SIGSEGV", "SIGBUS", "SIGABRT")
# Languages whose usual way of reading a line reads it whole: a death after a long message is
# not blamed on a fixed-size buffer there unless it is a memory fault.
_WHOLE_LINE_LANGUAGES = frozenset({"python", "js"})
LOG_TAIL_LINES = 20  # of a bot's stderr log, shown with a start failure or a crash
LOG_LOOK_LINES = 200  # of its log, looked at for a hello it wrote there
# A command is executed directly (no shell): these first words and words show a shell line.
_SHELL_BUILTINS = frozenset({"cd", "export", "source", ".", "set", "ulimit", "exec", "eval"})
_SHELL_OPERATORS = frozenset({"&&", "||", ";", "|", ">", ">>", "<", "2>&1", "&", "2>", "1>"})
_HELLO_LINE = re.compile(r'"type"\s*:\s*"hello"')
_ZMQ_VARIABLE = re.compile(r"\bARENA_(TOKEN|ENDPOINT)\b")
# Node's process.stdout.write is synchronous on a pipe on Linux: nothing to flush there.
_FLUSH_IDIOMS = ("print(..., flush=True), fflush(stdout), System.out.flush() (a BufferedWriter's own "
                 "flush()), Go's bufio Writer.Flush(), Rust's io::stdout().flush(), Perl's $| = 1; "
                 "Node's process.stdout.write needs none")
# A JVM's unified logging line ("[0.346s][warning][os,thread] ..."), which goes to stdout.
JVM_LOG_LINE = re.compile(r"\[\d+\.\d+s\]\[(?:warning|error|info)\]")
_WINDOWS_PYTHONS = frozenset({"py", "py.exe", "python.exe", "python3.exe", "pythonw", "pythonw.exe"})
# A line a Python bot printed with print(message) rather than json.dumps: a dict's repr
PYTHON_REPR = re.compile(r"""\{'[^']*': """)
# A variable a bot read that its environment does not hold: Python's os.environ[...] (its
# traceback's line, then the KeyError), Rust's env::var(...).unwrap()
_MISSING_VARIABLE = re.compile(r"(?s:environ\[.*KeyError: ')|`Err` value: NotPresent")
# A file a bot (Python, C's perror) did not find by a relative path
MISSING_FILE = re.compile(r"No such file or directory: '([^'/][^']{0,299})'")
# A file a bot was refused: Python's "Permission denied: 'mybot.log'", "can't open file '...': [Errno 13]",
# Node's "EACCES: permission denied, open 'mybot.log'"
DENIED_PATH = re.compile(r"Permission denied: '([^']{1,300})'|can't open file '([^']{1,300})': \[Errno 13\]"
                         r"|EACCES: permission denied, \w+ '([^']{1,300})'")
# A write refused by a read-only file system: "Read-only file system" (Python, C, Rust), Go's
# lower-case "read-only file system", Node's "EROFS: read-only file system, open '...'"
_READ_ONLY = re.compile(r"read-only file system|\bEROFS\b", re.IGNORECASE)
# Interpreters that read a script's carriage returns as part of its lines (Python and Node do not).
CRLF_INTERPRETERS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "perl", "ruby", "awk"})
# Interpreters by file extension, for a script without a #! line.
_INTERPRETERS = {".py": "python3", ".sh": "bash", ".js": "node", ".rb": "ruby", ".pl": "perl"}


@dataclass(frozen=True)
class FileFacts:
    """What the probe found of one path a command or a log names, relative to the bot's folder.

    ``inside`` is False for a path that leads out of the folder (or through a link out of
    it): nothing else of it is looked at, so nothing of the host's shows in a hint."""

    inside: bool = False
    relative: str = ""  # its path from the bot's folder, normalized (when inside)
    exists: bool = False  # as os.path.lexists: a dangling link exists
    regular: bool = False  # a regular file of the folder, through links that stay in it
    mode: int | None = None  # its lstat mode
    head: bytes | None = None  # its first 256 bytes: a regular file, never through a link
    head_mode: int = 0  # the mode of the file ``head`` was read from
    alike: str | None = None  # when it does not exist: the entry whose name differs only in case
    programs: tuple[str, ...] = ()  # when it does not exist: the executable files of its folder


NOWHERE = FileFacts()


@dataclass(frozen=True)
class Facts:
    """Everything :func:`diagnose` knows of a failed bot. The defaults are those of a stdio
    bot under ``--sandbox none`` about which nothing was found."""

    kind: ErrorKind
    error: str = ""  # the error's text
    silent: bool = False  # a timeout before which the bot sent nothing
    stdio: bool = True  # its transport: JSON lines on stdio (else ZeroMQ through the bridge)
    strict: bool = False  # it runs under --sandbox strict
    language: str | None = None  # arena.bots.manifest.bot_language
    command: tuple[str, ...] = ()  # the words of its bot.toml's command
    program: str = ""  # the program actually run (the command's first word, resolved)
    folder: str = "/bot"  # the bot's folder, resolved
    folder_names: frozenset[str] = frozenset()  # its folder's names (as given, and resolved)
    has_build: bool = False  # its bot.toml has a build step
    broken: bool = False  # its build failed: it never ran
    files: Mapping[str, FileFacts] = field(default_factory=dict)  # paths the command or the log name
    hidden: tuple[str, ...] = ()  # absolute paths of the command that the sandbox does not show
    hello: bool = False  # its running process said hello
    no_hello: bool = False  # its last start ended without a hello
    running: bool = False  # its process is alive
    start_timeout_s: float = 20.0
    log_tail: tuple[str, ...] = ()  # the last lines of its latest run's log (up to LOG_LOOK_LINES)
    log_full: bool = False  # its log reached its size cap
    line_channel: bool = False  # it speaks over a stdio line channel the probe could look into
    partial_line: bool = False  # it wrote part of a line (no newline yet)
    wrote_since_send: bool = False  # it wrote anything on stdout since the last message sent
    reply_waiting: bool = False  # a message of its arrived, unread, after its time ran out
    waits: frozenset[str] = frozenset()  # its threads' waits: "input", "sleep", "other"
    states: frozenset[str] = frozenset()  # its processes' /proc states (R, S, T...)
    busy: bool = False  # it used the CPU while the probe looked
    bad_text: str = ""  # the start of its last line that was not JSON
    next_lines: tuple[str, ...] = ()  # its next lines on stdout, once it died after bad_text
    last_sent: int = 0  # the size of the last message sent to it
    moved_this_game: bool = True  # it answered a move_request since its last new_game
    games_this_run: int = 0  # new_game messages its running process got
    memory_limit: str = "4096 MiB of address space under --sandbox none"  # the launcher's words
    max_processes: int = 256  # processes and threads a bot may have under --sandbox strict

    def file(self, word: str) -> FileFacts:
        return self.files.get(word, NOWHERE)

    @property
    def starting(self) -> bool:
        return not self.hello and self.kind in ("start", "terminated")

    def tail(self, lines: int = LOG_TAIL_LINES) -> tuple[str, ...]:
        return self.log_tail[-lines:] if lines > 0 else ()


def fixed_buffer_hint(size: int, language: str | None, ended: str = "died") -> str:
    """The hint for a bot that ``ended`` ("died", "exited", "gave up") right after a message
    of ``size`` bytes: it may read lines into a fixed-size buffer; with the usual cause in
    ``language`` (:func:`~arena.bots.manifest.bot_language`) when it has one that fits the size."""
    text = (f"it {ended} right after a message of {size:,} bytes: if it reads each line into a "
            f"fixed-size buffer, that is why: messages can be up to {MAX_MESSAGE_BYTES >> 20} MiB on one "
            "line (a move_request with its legal moves can reach 87 KB): read each line whole")
    if language == "go" and size + 1 > GO_SCANNER_BYTES:
        return text + (f"; a Go bufio.Scanner stops at a line over {GO_SCANNER_BYTES >> 10} KiB (Scan "
                       "returns false, Err says \"token too long\"): give it room first, "
                       "scanner.Buffer(make([]byte, 1<<20), 1<<20), or read with a bufio.Reader's "
                       "ReadString('\\n')")
    if language == "rust":
        return text + ("; in Rust, read with io::stdin().lock().lines() or read_line into a String, "
                       "not into a fixed array such as [0u8; 8192]")
    if language == "c":
        return text + ("; in C, fgets into a char array cuts a longer line in pieces: read with "
                       "getline(&line, &cap, stdin), which grows its buffer")
    if language == "cpp":
        return text + ("; in C++, std::getline(std::cin, line) into a std::string reads it whole; a char "
                       "array (fgets, cin.getline) does not")
    if language == "java":
        return text + ("; Java's BufferedReader.readLine reads a line whole, so look for a fixed-size "
                       "char[] or a single read(...) in its own code")
    return text


def needs_dying_words(facts: Facts) -> bool:
    """Whether the hint will ask for the bot's next lines on stdout (the probe then gives a
    bot that wrote a line that is not JSON a moment to die, and reads them)."""
    bad = facts.bad_text.strip()
    return (facts.kind == "malformed" and facts.stdio and bool(bad) and bad[0] not in "{["
            and not JVM_LOG_LINE.match(bad) and not PYTHON_REPR.match(bad)
            and (facts.hello or "at $.type: expected one of" not in facts.error))


def crlf_fix(script: str) -> str:
    """How to convert a script's Windows line endings: sed is everywhere, dos2unix often not.
    The name is the bot's: quoted for a shell (a name holding '; curl ... | sh' is a word)."""
    word = shlex.quote(script)
    return f"sed -i 's/\\r$//' {word}, or dos2unix {word}"


def _interpreter(first_line: bytes, script: str) -> str:
    """The interpreter a script names in its #! line (``#!/usr/bin/env python3``: python3),
    else the usual one for its extension, else a placeholder."""
    words = first_line[2:].decode("ascii", "replace").split() if first_line.startswith(b"#!") else []
    if words and PurePosixPath(words[0]).name == "env" and len(words) == 2:
        return words[1]
    if len(words) == 1:
        return PurePosixPath(words[0]).name
    return _INTERPRETERS.get(PurePosixPath(script).suffix, "<interpreter>")


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def spaced_candidates(words: tuple[str, ...]) -> list[tuple[int, str]]:
    """The paths that consecutive words of a command make once joined by spaces, each with
    the index of its first word (the probe looks them up; :func:`_spaced_path` uses them)."""
    return [(i, " ".join(words[i:j])) for i in range(min(len(words), 20))
            for j in range(i + 2, min(len(words), i + 8) + 1)]


def parent_relative_rest(word: str) -> tuple[str, str]:
    """A command word split at its first '/' (after a leading ./): (the first part, the rest)."""
    head, _, rest = word.removeprefix("./").partition("/")
    return head, rest


def diagnose(facts: Facts) -> str:
    """What to change for the common newcomer mistake behind a failure described by ``facts``,
    or "" when it is not one of them (issue 15's list)."""
    f = facts
    if f.broken:  # its build failed: the build's output says why (no program yet)
        return ""
    words = f.command
    if f.kind in ("start", "terminated") and words and (
            words[0] in _SHELL_BUILTINS or any(w in _SHELL_OPERATORS for w in words)):
        return ("no shell is run: 'command' is executed as it is, so put the commands in a "
                "script (e.g. run.sh with its #! line) and run that")
    starting = f.starting
    # Unconfined, Popen finds no such program (BotStartError); under the sandbox its
    # launcher (setpriv) does, and exits with status 127.
    not_found = f.kind == "start" or "exit code 127" in f.error
    if starting and not_found and words and words[0] in _WINDOWS_PYTHONS:
        return (f"{words[0]!r} is Windows' name for Python: on Linux run it with python (or "
                "python3), e.g. command = \"python bot.py\"")
    windows = _windows_program(f, words[0]) if starting and words else ""
    if windows:
        return windows
    if starting and not_found and words and "/" not in words[0] and f.file(words[0]).regular:
        return (f"a command without a '/' is looked up on the PATH, not in the bot's folder: "
                f"write {json.dumps('./' + words[0])} in bot.toml" + _setpriv_note(f))
    stdio = f.stdio
    program = _program_hint(f) if starting else ""
    if program:
        return program + _setpriv_note(f)
    if f.kind == "malformed" and not stdio and "frames, the first empty" in f.error:
        return ("use a DEALER socket, not REQ (a REQ socket puts an empty frame before each "
                "message)")
    exited_0 = f.kind == "terminated" and "exit code 0" in f.error
    hello_in_log = starting and any(_HELLO_LINE.search(line) for line in f.tail(LOG_LOOK_LINES))
    if hello_in_log and not stdio:
        # under the bridge a bot's stdout goes to its log (and its stdin is empty)
        return ("this bot's log holds a hello, so it speaks JSON lines on stdout: set "
                "protocol = \"stdio\" in its bot.toml")
    if hello_in_log:
        return "its hello went to its log (stderr): write messages to stdout"
    if (starting and stdio and f.kind == "terminated"
            and any(_ZMQ_VARIABLE.search(line) for line in f.tail())):
        return ("its log names ARENA_TOKEN or ARENA_ENDPOINT, which only a ZeroMQ bot is given: "
                "a ZeroMQ bot needs protocol = \"zmq\" in its bot.toml (a stdio bot speaks JSON "
                "lines on stdin/stdout)")
    if starting and stdio and f.no_hello and f.line_channel:
        if f.partial_line:
            return ("it wrote part of a line and no newline: end each message with a "
                    "newline and flush your stdout after each message")
        if f.running and f.busy:  # loading, not unflushed: flushing would not help
            return (f"it was still computing when the start timeout ({f.start_timeout_s:g} s) ran "
                    "out: send hello first, then load or precompute (the first move has a larger "
                    "limit; the Python SDK's run(setup=...) does this)")
        return ("it wrote nothing on stdout: flush your stdout after each message "
                f"({_FLUSH_IDIOMS})" + _slow_start(f))
    silent = f.kind == "timeout" and f.silent and stdio and f.running and f.line_channel
    states = f.states if silent else frozenset()
    if states & {"T", "t"}:
        return ("it was stopped (state T in /proc: a SIGSTOP or SIGTSTP sent to itself or its "
                "process group), so it could not answer: a bot must never stop itself")
    if silent:  # a stdio bot that sent nothing before its time ran out; what it did meanwhile
        silent_hint = _silent_hint(f)
        if silent_hint:
            return silent_hint
    if starting and not stdio and (f.no_hello or exited_0):
        return ("a ZeroMQ bot connects a DEALER socket, identity ARENA_TOKEN, to ARENA_ENDPOINT "
                "and sends hello first; a bot speaking JSON lines on stdin/stdout needs "
                "protocol = \"stdio\" in its bot.toml" + (_slow_start(f) if f.no_hello else ""))
    if exited_0 and f.hello:
        return _long_message_hint(f, "exited") or (
            "it exited by itself: a bot must play many games, one after another, until "
            "the referee sends shutdown")
    if f.kind == "terminated" and " gave up: " in f.error:
        gave_up = _long_message_hint(f, "gave up")
        if gave_up:
            return gave_up
    crash = _crash_hint(f) if f.kind == "terminated" else ""
    if crash:
        return crash
    if not f.hello and "at $.type: expected one of" in f.error:
        return ('a bot\'s first message is its hello: {"type": "hello", "name": ..., "version": ..., '
                '"protocol": 1} (protocol/PROTOCOL.md, section 5, "hello")')
    bad_text = f.bad_text.strip()
    if f.kind == "malformed" and stdio and bad_text:
        if JVM_LOG_LINE.match(bad_text):
            threads = ("Failed to start thread" in bad_text or "native thread" in bad_text)
            return ("a JVM writes its own warnings on stdout: give java -Xlog:disable "
                    "-Xlog:all=warning:stderr (they then go to the bot's log)"
                    + ("; it could not start a thread: under --sandbox strict a bot has at most "
                       f"{f.max_processes} processes and threads" if threads else ""))
        if PYTHON_REPR.match(bad_text):
            return ("this is how Python prints a dict (single quotes, True, None), not JSON: "
                    "send print(json.dumps(message), flush=True)")
        if bad_text[0] not in "{[":
            dying = _dying_words(f)
            if dying:
                return dying
            return ("stdout carries only protocol messages: print debug output to stderr "
                    "(it goes to the bot's log)")
        if len(bad_text) < BAD_TEXT_CHARS and bad_text[-1] in "{[,:":  # a message's first line
            return ("one message per line: write each message as one line of JSON (no "
                    "pretty-printing, no newlines inside a message)")
    return _setpriv_note(f).strip(" ()") if starting else ""


def _silent_hint(f: Facts) -> str:
    """For a stdio bot that sent nothing before its time ran out: what it did meanwhile."""
    # Blocked reading its stdin, it thinks it has answered, whatever a thread of it computes
    # meanwhile (pondering); else a thread of its own may compute (a JVM's main thread waits).
    reading = "input" in f.waits
    computing = not reading and ("R" in f.states or f.busy)
    if f.wrote_since_send and f.reply_waiting:
        # its move came in after all, once the time had run out
        return ("its reply came after its time ran out: it is too slow for this time control; "
                "keep each move within the per-move limit (the request's clocks say it, and "
                "what is left in the bank)")
    if f.partial_line:
        if not computing:
            return ("it wrote part of a line and no newline after the move_request: end each "
                    "message with a newline and flush stdout after it")
        return ""
    if f.wrote_since_send:
        return ("it wrote only blank lines on stdout after the move_request, and no move: "
                "write the move as one line of JSON, and nothing else, then flush stdout")
    if computing:
        return ("it was still computing when its time ran out: it is too slow for this time "
                "control; keep each move within the per-move limit (the request's clocks say "
                "it, and what is left in the bank)")
    if "sleep" in f.waits and not reading:
        return ("it was sleeping when its time ran out (not reading its input, not "
                "computing): a move must come within the per-move limit, and the bank")
    doing = "was waiting for its input" if reading else "was not computing"
    return (f"it wrote nothing on stdout after the move_request and {doing}: "
            f"flush stdout after every message ({_FLUSH_IDIOMS}), and read stdin line by "
            "line (not to end of file)")


def _dying_words(f: Facts) -> str:
    """For a bot that wrote a line that is not JSON and then died (a JVM writes why it
    cannot start, or its fatal error, on stdout): its next lines, and what a JVM's mean."""
    lines = f.next_lines
    if not lines:
        return ""
    said = "its next lines on stdout, as it died: " + " | ".join(
        json.dumps(line.strip()[:200]) for line in lines)
    text = " ".join(lines)
    if "object heap" in text or "insufficient memory for the Java Runtime" in text:
        return (said + "; the JVM could not get the heap it was given: give it -Xmx well under the "
                f"bot's memory ({f.memory_limit}), e.g. -Xmx512m")
    return said + "; a program that fails may write why on stdout (a JVM does)"


def _setpriv_note(f: Facts) -> str:
    """After a start hint under the sandbox whose log quotes setpriv: what setpriv is (the
    author never named it), else ""."""
    if not f.strict or not any(line.startswith("setpriv: ") for line in f.tail(5)):
        return ""
    return " (setpriv, named in its log, is the sandbox's launcher: it executes the command)"


def _slow_start(f: Facts) -> str:
    """After no hello: the rest of the hint when the bot may be loading still (it runs,
    and it wrote to its log), else ""."""
    if not (f.running and f.tail(1)):
        return ""
    return (f"; or it is still starting: say hello first, then load (the start limit is "
            f"{f.start_timeout_s:g} s; the Python SDK's run(setup=...) does this)")


def _crash_hint(f: Facts) -> str:
    """For a bot that died: writing into its folder under the sandbox (read-only there), a
    fixed-size line buffer overrun by a long message (it died by a signal right after one),
    or, under the sandbox with nothing in its log, what the sandbox changes; else ""."""
    if f.running:  # it gave up (sent error) rather than died
        return ""
    tail = f.tail()
    if f.strict and any(_READ_ONLY.search(line) for line in tail):
        return ("under --sandbox strict the bot's folder is read-only: write files in $TMPDIR (a "
                "private temporary folder), never next to the bot")
    denied = (_denied_hint(f, tail) if f.strict else "") or _environment_hint(f, tail)
    if denied:
        return denied
    text = f.error
    if "out of memory" in text:  # before "died before its first move": that is why it died
        java = bool(f.command) and PurePosixPath(f.command[0]).name == "java"
        return ("it used more memory than a bot may have: use less"
                + (" (a JVM sizes its heap from the machine's memory unless given -Xmx: give it "
                   "well under the limit, e.g. -Xmx512m)" if java else ""))
    long = _long_message_hint(f)
    if long:
        return long
    if f.hello and not f.moved_this_game and f.games_this_run <= 1:
        # its first game since it started: no game_over came before, but the welcome did
        return ("it died before its first move, in its first game since it started: on `welcome`, "
                "this game's new_game or its first move_request (its log says which); a bot must "
                "ignore (and may log) the message types it does not handle")
    if f.hello and not f.moved_this_game:
        return ("it died before its first move of this game: on this game's new_game or first "
                "move_request, or still on the game_over of the game before (its log says which)")
    if not any(f"({name})" in text for name in MEMORY_SIGNALS):
        return ""
    if not tail and f.strict:
        said = "its log is full" if f.log_full else "its log is empty"
        return (f"{said}; if it runs under --sandbox none, look at what strict changes: "
                "the bot's folder is read-only (write files in $TMPDIR: a file opened for writing "
                "next to the bot is NULL in C), and it sees only its own folder and the system's")
    return ""


def _long_message_hint(f: Facts, ended: str = "died") -> str:
    """For a stdio bot that ``ended`` right after a message longer than LONG_LINE_BYTES
    (a signal, an exit of any status, a Go or Rust panic, an error message): the
    :func:`fixed_buffer_hint`; else "". A guess, worded as one (a bot asking for the legal
    moves always ends after a long message), and not made for the languages that read a
    line whole unless it was a memory fault."""
    if not f.stdio or not f.hello or f.last_sent <= LONG_LINE_BYTES:
        return ""
    memory = any(f"({name})" in f.error for name in MEMORY_SIGNALS)
    if not memory and f.language in _WHOLE_LINE_LANGUAGES:
        return ""
    return fixed_buffer_hint(f.last_sent, f.language, ended)


def denied_words(tail: tuple[str, ...] | list[str]) -> list[str]:
    """The paths a log says the bot was denied, in order (the probe looks them up)."""
    return [next(group for group in found.groups() if group)
            for line in tail if (found := DENIED_PATH.search(line)) is not None]


def _denied_hint(f: Facts, tail: tuple[str, ...]) -> str:
    """Under strict, for a log naming a file of the bot's folder it was denied (Python's
    "Permission denied: 'mybot.log'", Node's EACCES): one other users cannot read, or one it tried to
    write (its folder's files belong to another user there); else ""."""
    for word in denied_words(tail):
        found = f.file(word)
        if not (found.inside and found.exists):
            continue
        unreadable = _unreadable_hint(f, found.relative, found)
        return unreadable or (
            f"under --sandbox strict the bot's folder is read-only and {found.relative} "
            "belongs to another user: write files in $TMPDIR (a private temporary folder), never "
            "next to the bot")
    return ""


def missing_files(tail: tuple[str, ...] | list[str]) -> list[str]:
    """The relative paths a log says the bot did not find (the probe looks them and their
    names up)."""
    return [found[1] for found in MISSING_FILE.finditer("\n".join(tail))]


def _environment_hint(f: Facts, tail: tuple[str, ...]) -> str:
    """For a log showing the bot looked for what its environment does not give it: a
    variable (Python's KeyError from os.environ, Rust's NotPresent) or a file by a path
    relative to another folder than its own ('wdir/weights.txt' for the weights.txt beside
    it); else ""."""
    text = "\n".join(tail)
    if _MISSING_VARIABLE.search(text):
        return ("the bot's environment holds only PATH, HOME, LANG and TMPDIR (and ARENA_* for a "
                "ZeroMQ bot): read no other variable, or give a default")
    for word in missing_files(tail):
        found = f.file(word)
        if not found.inside or found.exists:
            continue
        name = os.path.basename(word)
        beside = f.file(name) if name else NOWHERE
        if beside.inside and beside.exists:
            return (f"the bot runs in its own folder, where {word} is not but {name} is: paths are "
                    "relative to the bot's folder")
    return ""


def _program_hint(f: Facts) -> str:
    """The hint for a start that failed because of the program the command names: outside
    the sandbox's view, not executable, without its #! line, or with Windows line endings."""
    words = f.command
    folder = f.folder
    if not words:  # (a manifest's command is never empty)
        return ""
    if f.strict:
        for word in words:
            if word.startswith("/") and word in f.hidden:
                return (f"under the sandbox only the bot's own folder is visible, not {word}: "
                        "use a path inside it")
            if ".." in word and not _within(os.path.normpath(os.path.join(folder, word)), folder):
                return (f"under the sandbox only the bot's own folder is visible, and {word} is "
                        "outside it: copy what the bot needs into its folder and use a path inside it")
    above = _parent_relative_hint(f)
    if above:
        return above
    spaced = _spaced_path(f)
    if spaced is not None:
        return (f"{json.dumps(spaced)} holds a space, so the command line split it into words: quote "
                f"it (command = \"... '{spaced}'\") or give the words as a list")
    if "/" not in words[0]:
        script = next((word for word in words[1:] if not word.startswith("-")), None)
        return (_file_hint(f, script) if script is not None else "") or _script_hint(f)
    found = f.file(words[0])
    head = found.head
    if head is None:
        return _file_hint(f, words[0]) or _missing_hint(f, words[0])
    first_line = head.split(b"\n", 1)[0]
    crlf = head.startswith(b"#!") and first_line.endswith(b"\r")
    executable = found.head_mode & 0o111
    if crlf and not executable:  # Permission denied comes first: both need fixing
        return (f"{words[0]} is not executable and has Windows (CRLF) line endings: chmod +x it, "
                f"and convert it ({crlf_fix(words[0])})")
    if crlf:
        return (f"{words[0]} has Windows (CRLF) line endings, so its #! line ends in a carriage "
                f"return: convert it ({crlf_fix(words[0])})")
    if not executable:
        interpreter = _interpreter(first_line, words[0])
        return (f"{words[0]} is not executable: chmod +x it, or run it with its interpreter: "
                f"command = [{json.dumps(interpreter)}, {json.dumps(words[0].removeprefix('./'))}]")
    # Without a #! line the kernel cannot run it (Exec format error), and under the sandbox
    # setpriv hands it to /bin/sh instead, whose errors begin with the script's path.
    sh_said = f"{f.program}: "
    if (not head.startswith((b"#!", b"\x7fELF")) and any(
            "Exec format error" in line or line.startswith(sh_said)
            for line in [f.error, *f.tail(5)])):
        return f"{words[0]} has no #! line: add one, e.g. #!/usr/bin/env python3"
    return ""


def _parent_relative_hint(f: Facts) -> str:
    """For a word of the command naming a path from the folder above the bot's ("v_rel/bot.js"
    in the folder v_rel, written from its parent): it begins with the folder's own name, and
    names nothing in the bot's folder but would without that first part; else ""."""
    for i, word in enumerate(f.command[:20]):
        head, rest = parent_relative_rest(word)
        path = f.file(word)
        if head not in f.folder_names or not rest or not path.inside or path.exists:
            continue
        beside = f.file(rest)
        if beside.inside and beside.exists:
            fixed = "./" + rest if i == 0 else rest  # a program's path must hold a '/' (else: the PATH)
            return (f"paths in 'command' are relative to the bot's folder ({PurePosixPath(f.folder).name}): "
                    f"write {json.dumps(fixed)}, not {json.dumps(word)}")
    return ""


def _spaced_path(f: Facts) -> str | None:
    """The path in the bot's folder that consecutive words of its command make once joined by
    spaces, the first of them naming nothing ("python my files/bot.py"), or None."""
    for i, joined in spaced_candidates(f.command):
        alone = f.file(f.command[i])
        if not alone.inside or alone.exists:
            continue
        path = f.file(joined)
        if path.inside and path.exists:
            return joined
    return None


def _file_hint(f: Facts, word: str) -> str:
    """For a file the command names in the bot's folder (its program, or the script its
    interpreter runs): one whose name differs only in case, or one the sandbox's uid cannot
    read (a file of mode 600 copied from Windows); else ""."""
    alike = f.file(word).alike
    if alike is not None:
        return (f"{word} is not in the bot's folder, but {alike} is: file names are "
                "case-sensitive on Linux (rename the file or change the command)")
    return _unreadable_hint(f, word, f.file(word))


def _unreadable_hint(f: Facts, word: str, found: FileFacts) -> str:
    """Under strict, for a file in the bot's folder (``word``, as ``found``) that other users
    cannot read: the sandbox's uid cannot; else ""."""
    if not f.strict:
        return ""
    mode = found.mode
    if mode is None or not stat.S_ISREG(mode) or mode & 0o004:
        return ""
    return (f"{word} is mode {mode & 0o777:o}: under --sandbox strict the bot runs as a user of "
            f"its own, which must be able to read it (chmod -R o+rX {shlex.quote(f.folder)})")


def _windows_program(f: Facts, word: str) -> str:
    """When the command's program, in the bot's folder, is a Windows program (MZ header):
    it cannot run here; else ""."""
    head = f.file(word).head
    if head is None or not head.startswith(b"MZ"):
        return ""
    return (f"{word} is a Windows program (.exe), which Linux cannot run: build the bot here "
            "(a build = \"...\" line in bot.toml) or run its source with its interpreter")


def _missing_hint(f: Facts, word: str) -> str:
    """The hint when the program ``word`` names (with a '/') is not in the bot's folder:
    after a build, the build must make it; the folder's programs are named (at most
    three: the probe looks at a folder's first entries only)."""
    found = f.file(word)
    if not found.inside or found.exists:  # whether a host file exists must not show (lib -> /usr/sbin)
        return ""
    parent = os.path.dirname(os.path.normpath(os.path.join(f.folder, word)))
    where = ("in the bot's folder" if parent == f.folder
             else f"in {os.path.relpath(parent, f.folder)}")
    text = f"{word} is not {where}"
    if f.has_build:
        text += " after its build: 'command' must name the program the build makes"
    if found.programs:
        shown = ", ".join(json.dumps(name) for name in sorted(found.programs)[:3])
        text += f" (programs there: {shown}{', ...' if len(found.programs) > 3 else ''})"
    return text


def _script_hint(f: Facts) -> str:
    """For a command running a script through its interpreter (``["bash", "bot.sh"]``):
    the hint when the script, in the bot's folder, has Windows (CRLF) line endings, which
    a shell reads as part of each word; else ""."""
    words = f.command
    if PurePosixPath(words[0]).name not in CRLF_INTERPRETERS:
        return ""
    script = next((word for word in words[1:] if not word.startswith("-")), None)
    head = f.file(script).head if script is not None else None
    if script is None or head is None or b"\r\n" not in head:
        return ""
    return (f"{script} has Windows (CRLF) line endings, and {words[0]} reads the carriage "
            f"return as part of each line: convert it ({crlf_fix(script)})")
