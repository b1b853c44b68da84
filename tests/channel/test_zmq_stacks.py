"""The bridge speaks ZMTP itself (arena.channel.zmtp): a game against each ZeroMQ stack bots
use, in a real bot under ``--sandbox strict`` (libzmq from C, pyzmq, zeromq.js; JeroMQ 0.3,
which has no ipc:// of its own, through a TCP relay without the sandbox, since strict allows
Unix sockets only), a pyzmq bot with heartbeats on, and the clear start-up errors for what the
bridge does not speak. No pure-Go ZeroMQ installs from the registries CI reaches (Debian has
none; the Go module proxy is not reachable), so none is tested.

Tools a stack needs and does not find (a C compiler with libzmq's headers, node and npm, java
with Debian's libjeromq-java) skip its test with the reason: ``make system-packages`` installs
them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from arena.bots.manifest import Manifest
from arena.bots.pool import BotPool, sample_bots_dir
from arena.engine import Termination
from arena.launch.launcher import Launcher
from arena.referee import GameResult, TimeControl
from tests.helpers import live_bot_processes, write_bot

pytestmark = pytest.mark.slow

PROGRAMS = Path(__file__).resolve().parents[1] / "programs" / "zmq_stacks"
TC = TimeControl(per_move_ms=3000, bank_ms=5000, first_move_ms=10000)
JEROMQ = Path("/usr/share/java/jeromq.jar")


def bot_folder(tmp_path: Path, *files: str) -> Path:
    folder = tmp_path / "bot"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    for name in files:
        shutil.copy(PROGRAMS / name, folder / name)
        (folder / name).chmod(0o644)
    return folder


def play(tmp_path: Path, bot: Manifest, sandbox: str = "strict") -> GameResult:
    opponent = Manifest.load(sample_bots_dir() / "random")
    with BotPool([bot, opponent], tmp_path / "logs", launcher=Launcher.for_level(sandbox)) as pool:
        result = pool.play(0, 1, seed=3, time_control=TC, game_id="g")
    markers = [m for handle in pool.handles for m in handle.markers]
    assert live_bot_processes(markers) == [], "a bot process survived the match"
    return result


def played_through(result: GameResult, log_folder: Path) -> None:
    logs = "\n".join(p.read_text(errors="replace")[-2000:] for p in log_folder.rglob("*") if p.is_file())
    assert result.termination is Termination.NORMAL, f"{result.detail}\n{logs}"


def test_libzmq_from_c(tmp_path: Path) -> None:
    if not shutil.which("cc") or not Path("/usr/include/zmq.h").exists():
        pytest.skip("needs a C compiler and libzmq's headers (Debian: gcc libzmq3-dev)")
    folder = bot_folder(tmp_path, "bot.c")
    bot = write_bot(folder, "c-libzmq", ["./bot"], build="cc -O2 -o bot bot.c -lzmq")
    played_through(play(tmp_path, bot), tmp_path / "logs")


def test_pyzmq_with_heartbeats_gets_its_pongs(tmp_path: Path) -> None:
    folder = bot_folder(tmp_path, "heartbeat.py")
    bot = write_bot(folder, "heartbeat", ["python", "heartbeat.py"])
    played_through(play(tmp_path, bot), tmp_path / "logs")


@pytest.fixture(scope="session")
def zeromq_js(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """zeromq.js 6, installed by npm into a folder of the test run's own."""
    if not shutil.which("node") or not shutil.which("npm"):
        pytest.skip("needs node and npm (Debian: nodejs npm) for zeromq.js")
    folder = tmp_path_factory.mktemp("zeromq-js")
    done = subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", "zeromq@6"], cwd=folder,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        pytest.skip(f"npm could not install zeromq@6: {done.stderr[-500:]}")
    return folder / "node_modules"


def test_zeromq_js(tmp_path: Path, zeromq_js: Path) -> None:
    folder = bot_folder(tmp_path, "bot.js")
    shutil.copytree(zeromq_js, folder / "node_modules", symlinks=True)
    subprocess.run(["chmod", "-R", "o+rX", str(folder)], check=True)
    bot = write_bot(folder, "js-zeromq", ["node", "bot.js"])
    played_through(play(tmp_path, bot), tmp_path / "logs")


def test_jeromq_speaks_zmtp_2_through_a_relay(tmp_path: Path) -> None:
    """JeroMQ 0.3.6 (Debian's) speaks ZMTP 2.0: the bridge answers with 2.0's rules, as libzmq
    does. Its ipc:// is TCP on 127.0.0.1, which strict forbids: so no sandbox here, and a relay
    in the bot's folder copies the bytes to the bridge's Unix socket."""
    if not shutil.which("java") or not JEROMQ.exists():
        pytest.skip("needs java and JeroMQ (Debian: default-jre-headless libjeromq-java)")
    folder = bot_folder(tmp_path, "Bot.java", "relay.py")
    java = ["java", "-Xmx256m", "-XX:ActiveProcessorCount=1", "-XX:+UseSerialGC", "-cp", f"{JEROMQ}:.", "Bot"]
    bot = write_bot(folder, "java-jeromq", [sys.executable, "relay.py", *java],  # as the Java kit does:
                    build=f"java -m jdk.compiler/com.sun.tools.javac.Main -cp {JEROMQ} -d . Bot.java")
    played_through(play(tmp_path, bot, sandbox="none"), tmp_path / "logs")


REFUSED = {
    "plain": ("sock.setsockopt(zmq.PLAIN_USERNAME, b'me'); sock.setsockopt(zmq.PLAIN_PASSWORD, b'pw')",
              "zmq.DEALER", "asks for the PLAIN security mechanism"),
    "push": ("", "zmq.PUSH", "is a PUSH socket, which cannot talk to the arena's ROUTER: connect a DEALER"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_the_bridge_does_not_speak_is_a_clear_start_failure(tmp_path: Path, case: str) -> None:
    setup, kind, reason = REFUSED[case]
    folder = tmp_path / "bot"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    script = folder / "bot.py"
    script.write_text(
        "import os, time, zmq\n"
        f"sock = zmq.Context().socket({kind})\n"
        "sock.setsockopt(zmq.IDENTITY, os.environ['ARENA_TOKEN'].encode())\n"
        f"{setup}\n"
        "sock.connect(os.environ['ARENA_ENDPOINT'])\n"
        "sock.send(b'{\"type\":\"hello\",\"name\":\"x\",\"version\":\"1\",\"protocol\":1}')\n"
        "time.sleep(30)\n")
    script.chmod(0o644)
    result = play(tmp_path, write_bot(folder, f"refused-{case}", ["python", "bot.py"]))
    assert result.termination is Termination.START_FAILURE, result.detail
    assert result.loser == 0 and reason in result.detail, result.detail
    assert "cannot talk to its ZeroMQ socket" in result.detail


def test_the_bridge_imports_no_libzmq() -> None:
    code = ("import sys; import arena.channel.zmq_bridge; "
            "print(sorted(m for m in sys.modules if m == 'zmq' or m.startswith('zmq.')))")
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ}).stdout
    assert out.strip() == "[]"
