"""Builds under the strict sandbox, and `submit` never replacing an entrant silently: real
processes through the CLI, as an organizer meets them."""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arena.bots.manifest import Manifest, build
from arena.bots.pool import sample_bots_dir
from arena.errors import BotStartError
from arena.launch.bubblewrap import runtime_paths
from arena.launch.launcher import Launcher
from tests.helpers import ARENA_ARGV, arena, needs_strict, write_bot

RANDOM = str(sample_bots_dir() / "random")


def _games(out: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(next(out.glob("*.db"))) as db:
        return db.execute("SELECT seat0, seat1, reason FROM games").fetchall()


def _copy_bot(name: str, dest: Path, *, new_name: str | None = None, build_cmd: str | None = None) -> Path:
    shutil.copytree(sample_bots_dir() / name, dest, ignore=shutil.ignore_patterns("bot", "__pycache__"))
    dest.chmod(0o755)
    if new_name or build_cmd:
        manifest = Manifest.load(dest)
        write_bot(dest, new_name or manifest.name, list(manifest.command), protocol=manifest.protocol,
                  build=build_cmd or manifest.build)
    return dest


def _processes_with(token: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
                state = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
            except OSError:
                continue
            if token.encode() in cmdline and state != b"Z":
                found.append(int(entry))
    return found


@pytest.mark.slow  # a real strict-sandbox build
@needs_strict
def test_strict_build_sees_no_secrets_no_other_results_no_network_and_writes_only_its_copy(
        tmp_path: Path) -> None:
    other = tmp_path / "other-tournament"
    other.mkdir()
    (other / "secret-results.db").write_text("x")
    out = tmp_path / "out"
    source = tmp_path / "prober"
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0)
    port = listener.getsockname()[1]
    connect = f'import socket; socket.create_connection(("127.0.0.1", {port}), timeout=2)'
    probe = f"""exec > probe.txt 2>&1
cat /etc/shadow && echo READ-SHADOW
echo ROOT: $(ls -A /root)
ls {other} && echo LISTED-OTHER
echo OUT: $(ls -a {out})
touch {source}/written && echo WROTE-SOURCE
touch /usr/written && echo WROTE-USR
touch {tmp_path}/written && echo WROTE-OUTSIDE
{sys.executable} -c '{connect}' && echo CONNECTED
echo UID: $(id -u)
echo ENV: $(env | sort | tr '\\n' ' ')
echo built > built.txt"""
    _copy_bot("random", source, new_name="prober", build_cmd=probe)
    env = {**os.environ, "ARENA_TEST_SECRET": "hunter2"}
    proc = subprocess.run([*ARENA_ARGV, "run-tournament", "--bots", str(source), "--bots", RANDOM,
                           "--games", "2", "--out", str(out), "--sandbox", "strict"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    built = out / "builds" / "prober"
    report = (built / "probe.txt").read_text()
    # /root holds only the way to the Python runtime, when that is installed there
    runtime = {p.relative_to("/root").parts[0] for p in runtime_paths() if Path("/root") in p.parents}
    listed = set(report.split("ROOT: ")[1].splitlines()[0].split())
    assert listed <= runtime, listed
    for leak in ("READ-SHADOW", "LISTED-OTHER", "WROTE-SOURCE", "WROTE-USR",
                 "WROTE-OUTSIDE", "CONNECTED", "hunter2", "secret-results"):
        assert leak not in report, report
    # the results folder it sees holds nothing but the way to its own copy
    assert "OUT: . .. builds" in report, report
    uid = int(report.split("UID: ")[1].split()[0])
    assert 60000 <= uid < 61000
    with pytest.raises(BlockingIOError):
        listener.accept()
    listener.close()
    assert not (source / "probe.txt").exists() and not (source / "written").exists()
    assert not (tmp_path / "written").exists()
    # handed back to root, readable by every bot, writable by none; the bot ran from the copy
    for path in [built, *built.rglob("*")]:
        info = path.lstat()
        assert info.st_uid == 0 and info.st_mode & 0o7022 == 0, (path, oct(info.st_mode))
    assert (built / "built.txt").read_text() == "built\n"
    assert sorted(g[2] for g in _games(out)) == ["normal", "normal"]


@needs_strict
def test_c_bot_is_built_confined_and_plays_from_its_built_copy(tmp_path: Path) -> None:
    source = _copy_bot("cbot", tmp_path / "cbot")
    out = tmp_path / "out"
    proc = arena("run-tournament", "--bots", str(source), "--bots", RANDOM, "--games", "2",
                 "--out", str(out), "--sandbox", "strict")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (source / "bot").exists()  # the given folder is never written
    assert (out / "builds" / "cbot" / "bot").stat().st_uid == 0
    assert sorted(g[2] for g in _games(out)) == ["normal", "normal"]


def test_shipped_c_bot_under_none_is_built_in_a_copy_and_the_package_is_never_written(
        tmp_path: Path) -> None:
    # An installed wheel's site-packages is not ours to write, whatever the sandbox level.
    shipped = sample_bots_dir() / "cbot"
    before = sorted((p.name, p.stat().st_mtime_ns) for p in shipped.iterdir())
    out = tmp_path / "out"
    proc = arena("run-tournament", "--bots", str(shipped), "--bots", RANDOM, "--games", "2",
                 "--out", str(out), "--sandbox", "none")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted((p.name, p.stat().st_mtime_ns) for p in shipped.iterdir()) == before
    assert os.access(out / "builds" / "cbot" / "bot", os.X_OK)
    assert sorted(g[2] for g in _games(out)) == ["normal", "normal"]


@pytest.mark.parametrize("sandbox", ["none", pytest.param("strict", marks=[needs_strict, pytest.mark.slow])])
def test_a_build_that_rewrites_its_bot_toml_cannot_stop_the_tournament(tmp_path: Path, sandbox: str) -> None:
    # The manifest is read once, before the build: workers never read the rewritten file
    # (they used to, each failing on it, until the run stopped after three lost workers).
    source = _copy_bot("random", tmp_path / "rewriter", new_name="rewriter",
                       build_cmd="echo name = 5 > bot.toml")
    out = tmp_path / "out"
    proc = arena("run-tournament", "--bots", str(source), "--bots", RANDOM, "--games", "2",
                 "--concurrency", "2", "--out", str(out), "--sandbox", sandbox)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(g[2] for g in _games(out)) == ["normal", "normal"]


def test_an_authors_own_bot_under_none_is_built_in_its_folder(tmp_path: Path) -> None:
    # Level none is an author's machine: the build runs where `make` would.
    source = _copy_bot("cbot", tmp_path / "cbot")
    built = build(Manifest.load(source), tmp_path / "build.log", launcher=Launcher.for_level("none"))
    assert built.folder == source.resolve() and os.access(source / "bot", os.X_OK)


@needs_strict
def test_flooding_build_is_capped_and_its_error_line_is_shown(tmp_path: Path) -> None:
    flood = ("head -c 100000000 /dev/zero | tr '\\0' 'x'; echo; "
             "echo 'bot.c:7:3: error: expected a flood'; printf 'ctx1\\nctx2\\nctx3\\nctx4\\n'; exit 1")
    source = _copy_bot("random", tmp_path / "flood", new_name="flood", build_cmd=flood)
    logs = tmp_path / "logs"
    # peak memory of the arena process itself, measured by a parent that does nothing else
    measure = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, "
               "text=True); print(p.returncode); print(p.stderr); "
               "print('MAXRSS', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    proc = subprocess.run([sys.executable, "-c", measure, *ARENA_ARGV, "check-bot", str(source),
                           "--sandbox", "strict", "--logs", str(logs)],
                          capture_output=True, text=True, timeout=300)
    assert proc.stdout.startswith("1\n"), proc.stdout
    assert "FAIL" in proc.stdout and "Traceback" not in proc.stdout
    assert "error: expected a flood" in proc.stdout and "ctx4" in proc.stdout
    maxrss_mib = int(proc.stdout.split("MAXRSS ")[1]) / 1024
    assert maxrss_mib < 150, f"the harness grew to {maxrss_mib:.0f} MiB"
    log = logs / "flood.build.log"
    assert log.stat().st_size < 70_000
    text = log.read_text()
    assert "bytes of build output left out" in text and text.rstrip().endswith("ctx4")


def test_a_failed_build_is_one_line_then_the_useful_lines_of_its_output(tmp_path: Path) -> None:
    """It was one line of up to ~1,000 characters joined with " | ". Now: the exit status and
    the log on the first line, then the first error line (not a warning that merely holds
    the word, as pip's retries do) and the last lines, each a line of its own, escaped."""
    build_cmd = ("for i in 1 2 3 4 5 6; do echo \"WARNING: Retrying after NewConnectionError($i)\"; done; "
                 "echo 'bot.c:9:3: error: expected ; before }'; echo '    9 |   x = 1'; "
                 "echo '      |        ^'; printf 'ERROR: late \\033[31mred\\033[0m\\n'; "
                 "echo ctx2; echo ctx3; exit 2")
    source = write_bot(tmp_path / "broken", "broken", ["./bot"], build=build_cmd).folder
    logs = tmp_path / "logs"
    proc = arena("check-bot", str(source), "--sandbox", "none", "--logs", str(logs))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    first = next(i for i, line in enumerate(lines) if "build command" in line)
    log = logs / "broken.build.log"
    assert lines[first].endswith(f"failed with exit code 2 (log: {log}); from its output:"), lines
    assert lines[first + 1:first + 6] == ["        bot.c:9:3: error: expected ; before }", "        ...",
                                          "        ERROR: late \\x1b[31mred\\x1b[0m", "        ctx2",
                                          "        ctx3"], lines
    assert not any("Retrying" in line for line in lines[first + 1:])


@pytest.mark.slow  # a real strict-sandbox build
@needs_strict
def test_a_strict_build_whose_toolchain_is_in_a_home_folder_is_told_why(tmp_path: Path) -> None:
    """`cargo` installed in ~/.cargo: the strict build says "sh: 1: cargo: not found" (exit 127)
    and nothing more. Now a hint says what the sandbox shows and what to do; a program named
    by an absolute path and bash's "command not found" get it too, a missing source file not."""
    hint = ("was not found: a build under --sandbox strict sees only the system folders (/usr, /bin, "
            "/lib), the Python installation and its copy of the bot folder, so a toolchain in a home "
            "folder (~/.cargo, ~/.rustup, ~/go, nvm) is invisible to it: install the toolchain "
            "system-wide, or build before handing the bot in and ship the binary")
    # toolchains this machine may well have installed system-wide go by other names here
    cases = {"cargo": ("cargo-1.95 build --release", "'cargo-1.95' " + hint),
             "abs": ("/root/.cargo/bin/cargo build", "'/root/.cargo/bin/cargo' " + hint),
             "bash": ("bash -c 'go1.23 build'", "'go1.23' " + hint),
             "source": ("cat main.c", None)}
    for name, (build_cmd, expected) in cases.items():
        source = write_bot(tmp_path / name, name, ["./bot"], build=build_cmd).folder
        proc = arena("check-bot", str(source), "--sandbox", "strict", "--logs", str(tmp_path / "logs"))
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        first = next(line for line in proc.stderr.splitlines() if "build command" in line)
        if expected is None:
            assert "hint" not in first, first
        else:
            assert first.endswith(f".build.log) - hint: {expected}; from its output:"), first
    # newcomer trial: cargo fetching a crate, javac writing to ../classes, both without a hint
    network = ("a build under --sandbox strict has no network: put what it downloads in the bot folder "
               "(cargo vendor, go mod vendor, pip download, npm's node_modules), or build before handing "
               "the bot in and ship the binary")
    outside = ("a build under --sandbox strict can write only in its copy of the bot folder and in $TMPDIR, "
               "not '../classes': build into the folder (e.g. -o bot, -d .)")
    for name, build_cmd, expected in (
            ("fetch", f"{sys.executable} -c \"import socket; socket.getaddrinfo('github.com', 443)\"",
             network),
            ("javac", "mkdir -p ../classes && touch ../classes/Bot.class", outside)):
        source = write_bot(tmp_path / name, name, ["./bot"], build=build_cmd).folder
        proc = arena("check-bot", str(source), "--sandbox", "strict", "--logs", str(tmp_path / "logs"))
        first = next(line for line in proc.stderr.splitlines() if "build command" in line)
        assert proc.returncode == 1 and first.endswith(f".build.log) - hint: {expected}; from its output:"), \
            proc.stderr
    # newcomer trial: ~/.cargo/bin/cargo in the shell, /usr/bin/cargo in the sandbox (its lock file
    # version unreadable there): the failure says which the build ran
    yours = tmp_path / "home-bin"
    yours.mkdir()
    (yours / "tar").write_text("#!/bin/sh\nexit 0\n")
    (yours / "tar").chmod(0o755)
    source = write_bot(tmp_path / "tar", "tar", ["./bot"], build="tar --lock-version 4").folder
    proc = arena("check-bot", str(source), "--sandbox", "strict", "--logs", str(tmp_path / "logs"),
                 env={"PATH": f"{yours}:{os.environ['PATH']}"})
    first = next(line for line in proc.stderr.splitlines() if "build command" in line)
    system_tar = shutil.which("tar", path="/usr/local/bin:/usr/bin:/bin")
    assert f"- hint: under --sandbox strict the build ran '{system_tar}', the system's; your PATH finds " \
           "another 'tar' first, maybe another version" in first, proc.stderr
    assert str(yours) not in proc.stderr  # red team: a stranger was shown the organizer's folders
    source = write_bot(tmp_path / "none", "none", ["./bot"], build="cargo-not-here build").folder
    proc = arena("check-bot", str(source), "--sandbox", "none", "--logs", str(tmp_path / "logs"))
    assert proc.returncode == 1 and "not found" in proc.stderr and "hint" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("level", ["none", pytest.param("strict", marks=needs_strict)])
def test_build_past_its_time_limit_is_stopped_with_everything_it_started(tmp_path: Path,
                                                                        level: str) -> None:
    token = f"31.{os.getpid()}"
    manifest = write_bot(tmp_path / "slow", "slow", ["./bot"], build=f"sleep {token} & sleep {token}")
    tmp_path.chmod(0o755)
    started = time.monotonic()
    with pytest.raises(BotStartError, match="took more than 1 s"):
        build(manifest, tmp_path / "slow.build.log", timeout_s=1,
              launcher=Launcher.for_level(level), into=tmp_path / "copy")
    assert time.monotonic() - started < 10
    assert _processes_with(token) == []


def test_build_that_leaves_a_process_behind_is_not_waited_for(tmp_path: Path) -> None:
    token = f"32.{os.getpid()}"
    manifest = write_bot(tmp_path / "daemon", "daemon", ["./bot"], build=f"(sleep {token} &) ; echo done")
    started = time.monotonic()
    assert build(manifest, tmp_path / "log", timeout_s=20) == manifest  # level none: in place
    assert time.monotonic() - started < 5
    assert _processes_with(token) == []
    assert (tmp_path / "log").read_text() == "done\n"


@needs_strict
def test_a_sparse_file_is_refused_before_the_build_copy_is_made(tmp_path: Path) -> None:
    # A 12 KB folder holding a 3 GB sparse file was copied as 3 GB of zeros (18 s) before
    # its build ran, as root, into the builds folder.
    source = _copy_bot("random", tmp_path / "sparse", new_name="sparse", build_cmd="true")
    with open(source / "zeros.bin", "wb") as handle:
        handle.truncate(3 << 30)
    logs = tmp_path / "logs"
    proc = arena("check-bot", str(source), "--sandbox", "strict", "--logs", str(logs), timeout=60)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "'zeros.bin' brings the folder past its limit of 1,024 MiB" in proc.stderr, proc.stderr


@needs_strict
@pytest.mark.slow
def test_a_build_making_files_without_end_is_stopped_at_its_disk_limit(tmp_path: Path) -> None:
    # It made empty files for its whole time limit (300 s): a disk's inodes, used up.
    make_files = ("python3 -c 'import os\ni = 0\nwhile True:\n"
                  "    os.close(os.open(f\"f{i}\", os.O_CREAT | os.O_WRONLY)); i += 1'")
    source = _copy_bot("random", tmp_path / "filler", new_name="filler", build_cmd=make_files)
    out = tmp_path / "out"
    started = time.monotonic()
    proc = arena("run-tournament", "--bots", str(source), "--bots", str(sample_bots_dir() / "random"),
                 "--games", "2", "--sandbox", "strict", "--out", str(out), timeout=240)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    assert time.monotonic() - started < 120
    assert "was stopped: it made 2" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert "files and folders on the disk holding its folder (limit 200,000)" in proc.stdout + proc.stderr
    assert not (out / "builds" / "filler").exists()  # what it wrote is removed
    with sqlite3.connect(out / "tournament.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM games").fetchone()[0] == 2


@needs_strict
def test_symlink_out_of_the_bot_folder_is_refused(tmp_path: Path) -> None:
    source = _copy_bot("cbot", tmp_path / "linky", new_name="linky")
    (source / "secrets").symlink_to("/etc/shadow")
    proc = arena("check-bot", str(source), "--sandbox", "strict", "--games", "2")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "symlink 'secrets' points outside the folder" in proc.stderr


@needs_strict
@pytest.mark.slow
def test_submit_refuses_an_existing_name_and_replace_keeps_the_previous_version(tmp_path: Path) -> None:
    entrants = tmp_path / "entrants"
    source = _copy_bot("cbot", tmp_path / "cbot")
    first = arena("submit", str(source), "--entrants", str(entrants), "--games", "2")
    assert first.returncode == 0, first.stdout + first.stderr
    # strict by default: said so, and the build ran in a private copy, not in the folder given
    assert "sandbox strict:" in first.stdout and not (source / "bot").exists()
    (entrants / "cbot" / "marker-v1").write_text("v1")
    second = arena("submit", str(source), "--entrants", str(entrants), "--games", "2")
    assert second.returncode == 1 and "Traceback" not in second.stderr
    assert "already exists" in second.stderr and "--replace" in second.stderr
    assert "handshake" not in second.stdout  # refused before anything ran
    assert (entrants / "cbot" / "marker-v1").exists()
    third = arena("submit", str(source), "--entrants", str(entrants), "--games", "2", "--replace")
    assert third.returncode == 0, third.stdout + third.stderr
    [kept] = (entrants / ".previous").iterdir()
    assert kept.name.startswith("cbot-") and kept.name.endswith("Z")
    assert f"previous version is kept in {kept}" in third.stdout
    assert (kept / "marker-v1").exists() and not (entrants / "cbot" / "marker-v1").exists()
    run = arena("run-tournament", "--bots", str(entrants), "--bots", RANDOM, "--games", "2",
                "--out", str(tmp_path / "out"), "--sandbox", "strict")
    assert run.returncode == 0, run.stdout + run.stderr
    assert sorted({name for game in _games(tmp_path / "out") for name in game[:2]}) == ["cbot", "random"]


def test_play_and_a_tournament_print_a_failed_build_on_lines_of_their_own(tmp_path: Path) -> None:
    """check-bot printed the lines of a failed build; play's warning and run-tournament's
    'build failed' showed them as one line with \\x0a for each newline."""
    build_cmd = "echo 'bot.c:9:3: error: expected ; before }'; echo ctx2; exit 2"
    source = write_bot(tmp_path / "bots" / "broken", "broken", ["./bot"], build=build_cmd).folder
    shutil.copytree(sample_bots_dir() / "random", tmp_path / "bots" / "random")
    played = arena("play", str(source), str(tmp_path / "bots" / "random"), "--games", "2",
                   "--logs", str(tmp_path / "play-logs"))
    ran = arena("run-tournament", "--bots", str(tmp_path / "bots"), "--games", "2", "--sandbox", "none",
                "--out", str(tmp_path / "out"))
    for proc, first in ((played, "warning: "), (ran, "build failed: ")):
        assert proc.returncode == 0 and "\\x0a" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
        lines = proc.stderr.splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith(first))
        assert lines[at].endswith("from its output:"), lines
        assert lines[at + 1:at + 3] == ["  bot.c:9:3: error: expected ; before }", "  ctx2"], lines
    assert "(its games are recorded as losses)" in ran.stderr
    # the build's output says why: no hint about the program it never made (it was inserted
    # into the stored reason, between the build's first line and its output)
    assert "hint:" not in ran.stdout + ran.stderr and "hint:" not in played.stdout + played.stderr


@pytest.mark.slow  # real builds, a submit and a tournament
def test_a_submitted_entrant_is_never_rebuilt_in_place(tmp_path: Path) -> None:
    """Newcomer trial: `run-tournament --sandbox none` built a submitted Rust entrant in the
    entrants folder (a Cargo.lock of another cargo, target/), and the next strict tournament's
    cargo could not read that lock file: every game a start failure. What submit installed
    stays what it checked: its builds run in <out>/builds/<name>/ at every level."""
    entrants = tmp_path / "entrants"
    source = _copy_bot("cbot", tmp_path / "cbot", build_cmd="cc -O2 -o bot bot.c && date +%N > built-here")
    submitted = arena("submit", str(source), "--entrants", str(entrants), "--games", "2", "--sandbox", "none")
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    installed = {p.name: p.read_bytes() for p in (entrants / "cbot").iterdir()}
    assert "built-here" not in installed and "bot" not in installed  # submit's own check built a copy
    for command in (["run-tournament", "--bots", str(entrants), "--bots", RANDOM, "--games", "2",
                     "--out", str(tmp_path / "out")], ["play", str(entrants / "cbot"), RANDOM, "--games", "2",
                                                       "--logs", str(tmp_path / "logs")]):
        ran = arena(*command, "--sandbox", "none")
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert {p.name: p.read_bytes() for p in (entrants / "cbot").iterdir()} == installed
    assert (tmp_path / "out" / "builds" / "cbot" / "built-here").is_file()
    assert sorted(reason for *_, reason in _games(tmp_path / "out")) == ["normal", "normal"]


def test_a_bot_shipping_its_own_submission_stamp_gets_ours(tmp_path: Path) -> None:
    """Red team: a folder named .arena-submission in the bot made submit fail with 'Is a
    directory', naming a staging folder already gone. The name is ours: what is there goes."""
    source = _copy_bot("random", tmp_path / "stamped")
    (source / ".arena-submission").mkdir()
    (source / ".arena-submission" / "x").write_text("mine")
    proc = arena("submit", str(source), "--entrants", str(tmp_path / "entrants"), "--games", "2",
                 "--sandbox", "none")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    stamp = tmp_path / "entrants" / "random" / ".arena-submission"
    assert stamp.is_file() and '"submitted_at"' in stamp.read_text()
