"""The probe (:mod:`arena.bots.probe`): what it finds in a bot's folder, its log and /proc, on
small folders and short-lived processes; and the whole path from a failure to its hint
through the real :class:`~arena.bots.session.BotHandle` over scripted bots
(:mod:`arena.testing`)."""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

import pytest

from arena.bots.diagnose import FileFacts
from arena.bots.manifest import Manifest
from arena.bots.probe import busy, file_facts, probe, programs_in, read_log_tail, states, waits
from arena.bots.session import BotHandle
from arena.errors import BotStartError, BotTerminatedError, BotTimeoutError
from arena.launch.launcher import UnconfinedLauncher
from arena.launch.process import BotProcess
from arena.protocol import messages
from arena.testing import Exit, FakeClock, Output, ScriptedBot, ScriptedLauncher, scripted_handle
from tests.helpers import wait_for


def folder_with(tmp_path: Path, files: dict[str, bytes], mode: int = 0o755) -> Path:
    folder = tmp_path / "bot"
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        path.chmod(mode)
    return folder.resolve()


def test_a_file_of_the_folder_is_read_to_its_head(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"bot.py": b"#!/usr/bin/env python3\r\n" + b"x" * 1000}, mode=0o644)
    found = file_facts(folder, "bot.py")
    assert found.inside and found.exists and found.regular and found.relative == "bot.py"
    assert found.head is not None and len(found.head) == 256
    assert found.head.startswith(b"#!/usr/bin/env python3\r")
    assert found.mode is not None and stat.S_IMODE(found.mode) == 0o644 and found.head_mode == found.mode
    assert file_facts(folder, "./bot.py").head == found.head


def test_a_missing_file_gets_its_look_alike_and_the_programs_beside_it(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"Bot.py": b"", "cbot": b"", "bin/Bot": b""})
    (folder / "bot.c").write_text("int main;")
    (folder / "bot.c").chmod(0o644)
    found = file_facts(folder, "bot.py")
    assert found.inside and not found.exists and found.alike == "Bot.py"
    assert sorted(found.programs) == ["Bot.py", "cbot"]  # not bot.c, not the folder bin
    assert file_facts(folder, "./bin/bot").alike == "./bin/Bot"
    assert file_facts(folder, "bot.py", look_around=False) == FileFacts(inside=True, relative="bot.py")
    assert sorted(programs_in(folder)) == ["Bot.py", "cbot"]
    assert programs_in(folder / "nothing") == ()


def test_nothing_is_looked_at_through_a_link_out_of_the_folder(tmp_path: Path) -> None:
    """Red team: a link in the bot's folder made the missing-program hint list a host folder,
    and a log naming 'host/etc/shadow' told whether it existed and its mode."""
    folder = folder_with(tmp_path, {"bot.py": b""})
    (folder / "lib").symlink_to("/usr/bin")
    (folder / "host").symlink_to("/")
    for word in ("lib/nothere", "lib/python3", "host/etc/shadow", "../bot", "/etc/passwd"):
        found = file_facts(folder, word)
        assert not found.inside and not found.exists and found.mode is None and found.programs == (), word
    assert file_facts(folder, "lib").inside  # the link itself is the folder's


def test_a_link_loop_a_fifo_and_names_that_cannot_be_are_looked_at_safely(tmp_path: Path) -> None:
    """The red team's './loop' (ln -s loop loop) raised RuntimeError in the hint; a FIFO must
    not be opened (it would block); a 300-character name raised 'File name too long'."""
    folder = folder_with(tmp_path, {"bot.py": b""})
    (folder / "loop").symlink_to("loop")
    os.mkfifo(folder / "fifo")
    assert file_facts(folder, "./loop").head is None and file_facts(folder, "./loop").exists
    fifo = file_facts(folder, "./fifo")
    assert fifo.exists and fifo.head is None and not fifo.regular
    assert not file_facts(folder, "b" * 300).exists
    assert file_facts(folder, "a\x00b") == FileFacts()


def test_the_log_tail_is_this_run_s_last_lines_cut_short(tmp_path: Path) -> None:
    log = tmp_path / "b.stderr.log"
    log.write_text("an earlier run\n")
    start = log.stat().st_size
    with open(log, "a") as handle:
        handle.write("one\n\n   \nt\two\n" + "z" * 400 + "\n")
    assert read_log_tail(log, start, 20) == ["one", "t       wo", "z" * 297 + "..."]
    assert read_log_tail(log, start, 1) == ["z" * 297 + "..."]
    assert read_log_tail(log, 0, 0) == []
    assert read_log_tail(tmp_path / "none.log", 0, 20) == []


def _process(code: str, tmp_path: Path) -> BotProcess:
    return UnconfinedLauncher().start([sys.executable, "-c", code], cwd=tmp_path, pipes=True,
                                      stderr_log=tmp_path / "p.log")


def test_proc_says_whether_a_bot_reads_sleeps_computes_or_is_stopped(tmp_path: Path) -> None:
    with _process("import sys; sys.stdin.readline()", tmp_path) as reader:
        assert wait_for(lambda: "input" in waits(reader)), waits(reader)
        assert not busy(reader)
    with _process("import time; time.sleep(30)", tmp_path) as sleeper:
        assert wait_for(lambda: "sleep" in waits(sleeper)), waits(sleeper)
    with _process("while True: pass", tmp_path) as spinner:
        assert wait_for(lambda: "R" in states(spinner)), states(spinner)
        assert wait_for(lambda: busy(spinner), timeout=10)
    with _process("import os, signal; os.kill(os.getpid(), signal.SIGSTOP)", tmp_path) as stopped:
        assert wait_for(lambda: "T" in states(stopped)), states(stopped)
        os.kill(stopped.pid, 18)  # SIGCONT, so that it can be killed and reaped at once


# ------------------------------------------------------------------ through the real handle, scripted


class _Dies(ScriptedBot):
    """Says hello (or not), writes its log, and exits at once."""

    lines: tuple[str, ...] = ()
    says_hello = False

    def hello(self) -> list[Output]:
        self.stderr.extend(self.lines)
        return [*(super().hello() if self.says_hello else []), Exit(1)]


def _failed_start(tmp_path: Path, bot: type[ScriptedBot], **launcher: object) -> tuple[str, str]:
    """A scripted bot's start, its error and the hint the real handle gives for it."""
    handle = scripted_handle(bot, FakeClock(), log_dir=tmp_path, name="b", **launcher)  # type: ignore[arg-type]
    with pytest.raises((BotStartError, BotTerminatedError)) as failed:
        handle.ensure_started()
    return str(failed.value), handle.hint(failed.value)


def test_a_scripted_bot_s_failure_gets_its_hint_through_the_real_handle(tmp_path: Path) -> None:
    zmq = type("Zmq", (_Dies,), {"lines": ("Traceback (most recent call last):", "KeyError: 'ARENA_TOKEN'")})
    error, hint = _failed_start(tmp_path, zmq)
    assert error == "bot b: exit code 1"
    assert hint.startswith("its log names ARENA_TOKEN or ARENA_ENDPOINT, which only a ZeroMQ bot is given")
    read_only = type("ReadOnly", (_Dies,), {"lines": ("OSError: [Errno 30] Read-only file system: 'x'",)})
    assert _failed_start(tmp_path / "none", read_only)[1] == ""  # only under strict
    assert _failed_start(tmp_path / "strict", read_only, strict=True)[1].startswith(
        "under --sandbox strict the bot's folder is read-only")


def test_the_probe_fills_in_what_the_handle_and_launcher_know(tmp_path: Path) -> None:
    silent = type("Silent", (ScriptedBot,), {"hello": lambda self: self.stderr.append("loading") or []})
    clock = FakeClock()
    handle = scripted_handle(silent, clock, log_dir=tmp_path, name="b", start_timeout_s=2.0, strict=True)
    with pytest.raises(BotStartError) as failed:
        handle.ensure_started()
    facts = probe(handle, failed.value)
    assert clock() == 2.0  # the start timeout passed on the fake clock, in no time
    assert (facts.kind, facts.error) == ("start", "bot b: no hello within 2 s of start")
    assert facts.no_hello and facts.running and not facts.hello and facts.strict
    assert facts.log_tail == ("loading",) and facts.start_timeout_s == 2.0
    assert facts.command == ("scripted-bot",)
    assert not facts.line_channel  # a scripted channel is not a stdio pipe to look into
    assert facts.memory_limit == "1024 MiB under --sandbox strict" and facts.max_processes == 256
    assert isinstance(handle.launcher, ScriptedLauncher) and handle.launcher.starts == 1


def test_the_probe_looks_up_what_the_command_and_the_log_name(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"weights.txt": b"1", "my files/bot.py": b""})
    launcher = ScriptedLauncher(type("W", (_Dies,), {"says_hello": True, "lines": (
        "FileNotFoundError: [Errno 2] No such file or directory: 'wdir/weights.txt'",
        "PermissionError: [Errno 13] Permission denied: 'weights.txt'")}), FakeClock())
    handle = BotHandle(Manifest(folder=folder, name="w", command=("python", "my", "files/bot.py"),
                                protocol="stdio"), log_dir=tmp_path / "logs", launcher=launcher)
    with pytest.raises(BotTerminatedError):
        handle.ensure_started()  # its hello, and it exits before the welcome
    facts = probe(handle, BotTerminatedError("bot w: exit code 1"))
    assert not facts.running and facts.log_tail[-1].startswith("PermissionError")
    assert facts.file("my files/bot.py").exists and not facts.file("my").exists
    assert facts.file("weights.txt").exists and not facts.file("wdir/weights.txt").exists
    assert facts.folder == str(folder) and facts.folder_names == {"bot"}


def test_a_real_bot_s_stdout_is_looked_into_after_its_time_ran_out(tmp_path: Path) -> None:
    """A stdio bot that wrote part of a line and waits: the probe reads its pipe and /proc."""
    folder = folder_with(tmp_path, {"bot.py": (
        b"import json, sys\nprint(json.dumps({'type': 'hello', 'name': 'p', 'version': '1', 'protocol': 1}),"
        b" flush=True)\nfor line in sys.stdin:\n    sys.stdout.write('{\"type\"'); sys.stdout.flush()\n")})
    with BotHandle(Manifest(folder=folder, name="p", command=("python", "bot.py"), protocol="stdio"),
                   log_dir=tmp_path / "logs") as handle:
        handle.ensure_started()
        handle.send(messages.shutdown())  # any line: it answers with part of one
        time.sleep(0.3)
        facts = probe(handle, BotTimeoutError("bot p did not answer", silent=True))
        assert facts.line_channel and facts.partial_line and facts.wrote_since_send and facts.running
        assert "input" in facts.waits and not facts.reply_waiting
        hint = handle.hint(BotTimeoutError("x", silent=True))
        assert hint.startswith("it wrote part of a line and no newline"), hint
