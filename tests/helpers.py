"""Shared helpers for tests that start real bot processes."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from arena.bots.manifest import Manifest
from arena.errors import ArenaError
from arena.launch.bubblewrap import check_strict_available
from arena.launch.process import MARKER_VAR

PROGRAMS = Path(__file__).parent / "programs"  # bots written for the tests
MISBEHAVE = PROGRAMS / "misbehave.py"  # the scripted misbehaving bot
# The arena command run by this interpreter (the venv's), as a user runs it from a shell.
ARENA_ARGV = [sys.executable, "-c", "import sys; from arena.cli import main; sys.exit(main())"]


def _strict_available() -> bool:
    try:
        check_strict_available()
    except ArenaError:
        return False
    return True


# For tests that need the strict sandbox where they skip elsewhere (the sandbox's own tests
# fail instead, with the reason, when the host cannot provide it).
needs_strict = pytest.mark.skipif(not _strict_available(), reason="the strict sandbox is not available here")


def arena(*args: str, timeout: float = 300, cwd: Path | None = None,
          env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``arena ARGS...`` in a real subprocess (in ``cwd``, with ``env`` added to the
    environment); its output is captured as text."""
    return subprocess.run([*ARENA_ARGV, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, **env} if env else None)


def arena_here(*args: str, cwd: Path | None = None,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``arena ARGS...`` in this process (click's runner), for a test that checks only what
    the command prints, writes and exits with: no interpreter to start, and its lines count in
    the coverage. Same result as :func:`arena` (an exception the command lets out is printed
    to stderr as a traceback, as the real command would, with exit status 1). A test of what
    a real process does (signals, exit, what it leaves running) uses :func:`arena`."""
    import signal
    import traceback

    from click.testing import CliRunner

    from arena.cli import main
    from arena.signals import TERMINATION_SIGNALS

    before = Path.cwd()
    handlers = {number: signal.getsignal(number) for number in TERMINATION_SIGNALS}
    hook = sys.unraisablehook
    try:
        if cwd is not None:
            os.chdir(cwd)
        result = CliRunner().invoke(main, list(args), env=env, prog_name="arena")
    finally:  # what the command set for its own process: the directory, its signal handlers
        os.chdir(before)
        for number, handler in handlers.items():
            signal.signal(number, handler)
        sys.unraisablehook = hook
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
    return subprocess.CompletedProcess(["arena", *args], result.exit_code, result.stdout, stderr)


def write_bot(folder: Path, name: str, command: list[str], *, protocol: str = "zmq",
              build: str | None = None) -> Manifest:
    """Write a bot folder with a bot.toml and return its manifest."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f'name = "{name}"', f"command = {command!r}".replace("'", '"'),
             f'protocol = "{protocol}"']
    if build:
        lines.append(f"build = {build!r}".replace("'", '"') if "'" not in build
                     else f"build = '''{build}'''")
    (folder / "bot.toml").write_text("\n".join(lines) + "\n")
    return Manifest.load(folder)


def synthetic_results(out: Path, names: list[str], *, games: int = 2, detail: str | None = None) -> Path:
    """A finished round robin in ``out`` between bots of these ``names`` (folders beside ``out``
    that are never started), stored as a tournament stores it but without playing: each game's
    record is a random game, and with ``detail`` set the first game is a crash of seat 0 whose
    detail is that text. For the tests of the commands that read a results folder."""
    from arena.tournament.config import load_config
    from arena.tournament.schedule import iter_schedule
    from arena.tournament.storage import ResultStore
    from tests.tournament.test_storage import make_bot, record_for

    bots = out.parent / f"{out.name}-bots"
    for name in names:
        make_bot(bots / name)
    config = load_config(None, {"entrants": [bots], "out": out, "games": games, "concurrency": 1,
                                "sandbox": "none"})
    with ResultStore(config.out, create=True) as store:
        store.save_config(config)
        for spec in iter_schedule(config.plan):
            record = record_for(spec, forfeit=0 if detail is not None and spec.index == 0 else None)
            if detail is not None and spec.index == 0:
                record["result"].update(reason="crash", detail=detail)
            store.store_game(spec, record, 0.5)
    return out


def misbehaving_bot(folder: Path, kind: str, *args: str, name: str | None = None,
                    stdio: bool = False) -> Manifest:
    """A bot folder running ``misbehave.py KIND [stdio] ARGS...`` (tests/programs/misbehave.py),
    named ``bad-KIND`` unless ``name`` is given. The script is copied in, so the bot also
    runs under the strict sandbox, where a bot sees only its own folder."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    shutil.copy(MISBEHAVE, folder / "misbehave.py")
    command = ["python", "misbehave.py", kind, *(["stdio"] if stdio else []), *args]
    return write_bot(folder, name or f"bad-{kind}", command, protocol="stdio" if stdio else "zmq")


def live_bot_processes(markers: list[str] | None = None, *, uids: range | None = None) -> list[int]:
    """Pids of live processes that carry one of these bot markers (belong to those bots),
    or any bot's marker when ``markers`` is None; with ``uids``, only those running as one."""
    needles = [f"{MARKER_VAR}={marker}".encode() for marker in ([""] if markers is None else markers)]
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            uid = os.stat(f"/proc/{entry}").st_uid
            with open(f"/proc/{entry}/environ", "rb") as handle:
                environ = handle.read()
            with open(f"/proc/{entry}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if any(n in environ for n in needles) and state != b"Z" and (uids is None or uid in uids):
            found.append(int(entry))
    return found


def worker_processes(pid: int) -> list[int]:
    """The tournament worker processes of the ``arena run-tournament`` process ``pid``
    (its live children running multiprocessing's spawn)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != b"Z" and b"spawn_main" in cmdline:
            found.append(int(entry))
    return found


def py(code: str) -> list[str]:
    """The argv that runs ``code`` (dedented) with this interpreter."""
    return [sys.executable, "-c", textwrap.dedent(code)]


def wait_for(predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
    """Poll ``predicate`` until it returns something truthy (returned) or ``timeout`` s pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.005)
    raise AssertionError(f"timed out after {timeout} s waiting for {predicate}")


def stored_games(out: Path) -> int:
    """How many games the run in ``out`` has stored so far (0 before its database exists)."""
    try:
        with sqlite3.connect(f"file:{out / 'tournament.db'}?mode=ro", uri=True) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM games").fetchone()[0])
    except sqlite3.Error:
        return 0


def arena_patched(setup: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Like :func:`arena`, after running the Python ``setup`` in the same process: how a test
    shrinks a limit that no user should set (e.g. a module constant or function of the harness)."""
    code = f"import sys\n{textwrap.dedent(setup)}\nfrom arena.cli import main\nsys.exit(main())"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=timeout)
