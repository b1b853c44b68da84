"""Go, Rust and C authors' first tries (issue 33): the longest messages a bot meets, deaths
placed in time, and the hints naming the usual cause in the bot's language. The slow tests
build a real bot in the language a hint names, where that toolchain is installed."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from arena.bots.diagnose import GO_SCANNER_BYTES, fixed_buffer_hint
from arena.bots.manifest import BOT_PATH, Manifest, bot_language, toolchain_used, version_hint
from arena.checks import LONG_SEEDS
from arena.clock import TimeControl
from arena.engine.components import ruleset_for
from arena.engine.state import GameState
from arena.protocol import messages
from arena.protocol.codec import encode_trusted
from tests.bots.test_hints import NEWCOMER, check_bot, newcomer
from tests.helpers import needs_strict, write_bot


@pytest.mark.parametrize(("size", "language", "said", "not_said"), [
    (86_354, "go", "a Go bufio.Scanner stops at a line over 64 KiB", "Rust"),
    (GO_SCANNER_BYTES - 1, "go", "read each line whole", "bufio.Scanner"),  # under its limit: not the cause
    (GO_SCANNER_BYTES, "go", "scanner.Buffer(make([]byte, 1<<20), 1<<20)", "Rust"),
    (27_226, "rust", "not into a fixed array such as [0u8; 8192]", "Go"),
    (5_000, "c", "fgets into a char array cuts a longer line in pieces: read with getline", "Go"),
    (5_000, "cpp", "std::getline(std::cin, line) into a std::string reads it whole", "fgets into"),
    (70_000, "java", "Java's BufferedReader.readLine reads a line whole", "Scanner"),
    (70_000, None, "if it reads each line into a fixed-size buffer, that is why", "Go"),
])
def test_the_fixed_buffer_hint_names_the_usual_cause_in_the_bot_s_language(
        size: int, language: str | None, said: str, not_said: str) -> None:
    hint = fixed_buffer_hint(size, language, "exited")
    assert hint.startswith(f"it exited right after a message of {size:,} bytes: "), hint
    assert said in hint and not_said not in hint, hint


@pytest.mark.parametrize(("build", "command", "files", "language"), [
    ("go build -o bot .", "./bot", [], "go"),
    ("cargo build --release --offline && cp target/release/bot .", "./bot", [], "rust"),
    ("rustc -O -o bot main.rs", "./bot", [], "rust"),
    ("cc -O2 -std=c99 -Wall -o bot bot.c", "./bot", [], "c"),
    ("c++ -O2 -std=c++17 -o bot bot.cpp", "./bot", [], "cpp"),
    (None, "java Bot.java", [], "java"),
    (None, "python bot.py", [], "python"),
    (None, "node bot.js", [], "js"),
    ("make", "./bot", ["go.mod"], "go"),
    ("make", "./bot", ["Cargo.toml"], "rust"),
    (None, "./bot", [], None),
])
def test_a_bot_s_language_is_told_by_its_build_its_command_or_its_files(
        tmp_path: Path, build: str | None, command: str, files: list[str], language: str | None) -> None:
    for name in files:
        (tmp_path / name).write_text("")
    manifest = write_bot(tmp_path, "bot", command.split(), protocol="stdio", build=build)
    assert bot_language(manifest) == language


def _first_request_bytes(game: str, seed: int) -> int:
    state = GameState.new(seed, ruleset=ruleset_for(game))
    tc = TimeControl(1000, 10_000, 5000)
    clocks = [messages.clock(tc.bank_ms, tc.first_move_ms)] * 2
    return len(encode_trusted(messages.move_request(1, "check-long", state, clocks, legal_moves=True)))


def test_the_long_seeds_make_the_longest_first_requests() -> None:
    """Patchwork's is over Go's 64 KiB Scanner limit; both are at least as long as any of
    the first 2,000 seeds' (LONG_SEEDS were found over 20,000)."""
    sizes = {game: _first_request_bytes(game, seed) for game, seed in LONG_SEEDS.items()}
    assert sizes["patchwork"] > 86_000 > GO_SCANNER_BYTES, sizes
    assert sizes["stack-n-stuff"] > 44_000, sizes
    for game in LONG_SEEDS:
        assert max(_first_request_bytes(game, seed) for seed in range(0, 2000, 7)) <= sizes[game]


def test_a_bot_asking_for_legal_moves_plays_a_game_on_the_longest_requests(tmp_path: Path) -> None:
    """The check's lines come in the order things happened: the log removed last."""
    code, out = check_bot(newcomer(tmp_path, "stdio_bot.py"), "--games", "1", logs=False)
    assert code == 0, out
    lines = out.splitlines()
    assert re.fullmatch(r"game 2 \(seat 0 on long messages\): .*; \d+ moves, normal", lines[3]), lines
    sent = re.fullmatch(r"longest message sent to it: (\d+),(\d{3}) bytes", lines[4])
    first = _first_request_bytes("patchwork", LONG_SEEDS["patchwork"])
    assert sent and abs(int(sent[1] + sent[2]) - first) < 10, (lines, first)  # its seq's digits differ
    assert lines[-2].startswith("bot log: removed, as the check passed"), lines


def test_a_death_on_welcome_is_said_as_one(tmp_path: Path) -> None:
    """It was "handshake: ok", then game 1 "crashed between games, after the last game_over"."""
    code, out = check_bot(newcomer(tmp_path, "dies_on_welcome.py"))
    assert code == 1, out
    assert "then it died on the welcome" in out and "handshake: ok" not in out, out
    assert ("exit code 1 after its hello, before the first game (on `welcome`): a bot must ignore (and may "
            "log) the message types it does not handle") in out, out
    assert "ValueError: unexpected message type welcome" in out and "between games" not in out, out
    assert "game 1" not in out, out


def test_check_bot_seed_chooses_the_games(tmp_path: Path) -> None:
    """--seed N: the games are on seeds N, N, N + 1... (the bot logs each request's seed)."""
    seeds = {}
    for seed in (0, 7):
        folder = newcomer(tmp_path / str(seed), "stdio_bot.py")
        script = folder / "stdio_bot.py"
        script.write_text(script.read_text().replace(
            'elif message["type"] == "move_request":',
            'elif message["type"] == "move_request":\n'
            '        print("seed", message["state"]["seed"], file=sys.stderr, flush=True)', 1))
        code, out = check_bot(folder, "--games", "3", "--seed", str(seed))
        assert code == 0, out
        log = (folder.parent / f"{folder.name}-logs" / f"{folder.name}.stderr.log").read_text()
        seeds[seed] = [int(line.split()[1]) for line in log.splitlines() if line.startswith("seed ")]
    for seed, seen in seeds.items():  # games 1 and 2 on SEED, 3 on SEED + 1, then the long game's
        assert set(seen) == {seed, seed + 1, LONG_SEEDS["patchwork"]}, seen
        assert seen[0] == seed and seen[-1] == LONG_SEEDS["patchwork"], seen


def _compiled_newcomer(tmp_path: Path, source: str, build: str) -> Path:
    folder = tmp_path / Path(source).stem.replace("_", "-")
    folder.mkdir()
    shutil.copy(NEWCOMER / source, folder / source)
    write_bot(folder, folder.name, ["./bot"], protocol="stdio", build=build)
    assert Manifest.load(folder).build == build
    return folder


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("go") is None, reason="no Go toolchain (apt-get install golang-go)")
def test_a_go_bot_with_a_default_scanner_fails_the_check_on_the_long_game(tmp_path: Path) -> None:
    """Its bufio.Scanner stops at 64 KiB: the ordinary games pass, the long game's first
    request ends its loop, and it exits with status 0 ("it exited by itself", before)."""
    folder = _compiled_newcomer(tmp_path, "go_scanner.go", "go build -o bot go_scanner.go")
    code, out = check_bot(folder, "--games", "2")
    assert code == 1, out
    assert "game 1 (seat 0): " in out and "game 2 (seat 1): " in out and "game 1: " not in out, out
    said = re.search(r"game 3: crash: bot go-scanner: exit code 0 - hint: it exited right after a message "
                     r"of (\d{2},\d{3}) bytes: .*a Go bufio.Scanner stops at a line over 64 KiB.*"
                     r"scanner.Buffer\(make\(\[\]byte, 1<<20\), 1<<20\)", out)
    assert said and int(said[1].replace(",", "")) > GO_SCANNER_BYTES, out
    assert "a bot must play many games" not in out, out


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("rustc") is None, reason="no Rust toolchain (apt-get install rustc)")
def test_a_rust_bot_reading_into_an_8_kib_array_is_told_so(tmp_path: Path) -> None:
    """It panics (exit status 101) on its first move_request: "died before its first move", before."""
    folder = _compiled_newcomer(tmp_path, "fixed_array.rs", "rustc -O -o bot fixed_array.rs")
    code, out = check_bot(folder, "--games", "1")
    assert code == 1, out
    assert re.search(r"game 1: crash: bot fixed-array: exit code 101 - hint: it died right after a message "
                     r"of \d{2},\d{3} bytes: .*in Rust, read with io::stdin\(\).lock\(\).lines\(\) or "
                     r"read_line into a String, not into a fixed array", out), out
    assert "died before its first move" not in out and "EOF while parsing (8192 bytes)" in out, out


# What the toolchains of Debian 12 (cargo 1.65.0, go 1.19.8) print for a bot a newer one made.
_EDITION_2024 = """error: failed to parse manifest at `/tmp/b/r24/Cargo.toml`

Caused by:
  failed to parse the `edition` key

Caused by:
  this version of Cargo is older than the `2024` edition, and only supports `2015`, `2018`, and \
`2021` editions."""
_LOCK_4 = """error: failed to parse lock file at: /tmp/b/rl4/Cargo.lock

Caused by:
  lock file version `4` was found, but this version of Cargo does not understand this lock file, perhaps \
Cargo needs to be updated?"""
_GO_LINES = """go: errors parsing go.mod:
/tmp/b/gtc/go.mod:3: invalid go version '1.22.1': must match format 1.23
/tmp/b/gtc/go.mod:5: unknown directive: toolchain"""
_GO_FORMAT = """go: errors parsing go.mod:
/tmp/b/gtc/go.mod:3: invalid go version '1.22.1': must match format 1.23"""
_GO_FEATURE = """# example.com/bot
./main.go:3:29: cannot range over 3 (untyped int constant)
note: module requires Go 1.22"""


@pytest.mark.parametrize(("output", "toolchain", "said"), [
    (_EDITION_2024, ("/usr/bin/cargo", "1.65.0"),
     'Cargo.toml says edition = "2024", which cargo 1.65.0 does not know (a newer `cargo new` wrote it; '
     'edition 2024 needs cargo 1.85): change it to edition = "2021"'),
    (_LOCK_4, ("/usr/bin/cargo", "1.65.0"),
     "Cargo.lock is version 4, which cargo 1.65.0 cannot read (a newer cargo wrote it): change its line "
     "version = 4 to version = 3"),
    (_GO_LINES, ("/usr/bin/go", "1.19.8"),
     "go.mod's toolchain line (line 5) is unknown to go 1.19.8 (a Go from 1.21 on writes it): delete that "
     "line, and change line 3, go 1.22.1, to go 1.19"),
    (_GO_FORMAT, ("/usr/bin/go", "1.19.8"),
     "go.mod's line 3, go 1.22.1: go 1.19.8 reads only go 1.N there: change it to go 1.19"),
    (_GO_FEATURE, ("/usr/bin/go", "1.19.8"),
     "go.mod says go 1.22, newer than go 1.19.8, and the code uses something go 1.19.8 does not have: "
     "write go.mod's line as go 1.19"),
    (_GO_FEATURE, None, "newer than the toolchain that ran"),
    ("main.c:1:1: error: expected ';'", ("/usr/bin/gcc", "12.2.0"), ""),
])
def test_a_build_made_for_a_newer_toolchain_is_told_the_line_to_change(
        output: str, toolchain: tuple[str, str] | None, said: str) -> None:
    hint = version_hint(output, toolchain)
    assert (said in hint and hint.startswith(" - hint: ")) if said else hint == "", hint


def test_the_toolchain_a_build_ran_is_named_with_its_version() -> None:
    cc = shutil.which("cc", path=BOT_PATH)
    assert cc is not None
    found = toolchain_used("cc -O2 -o bot bot.c && strip bot", BOT_PATH)
    assert found is not None and found[0] == cc and re.fullmatch(r"\d+\.\d+(\.\d+)?", found[1]), found
    assert toolchain_used("./build.sh", BOT_PATH) is None  # never a program of the bot's
    assert toolchain_used("make", BOT_PATH) is None
    assert toolchain_used("nosuchtoolchain-cc", BOT_PATH) is None


def _system_version(program: str) -> tuple[int, ...] | None:
    found = toolchain_used(program, BOT_PATH)
    return tuple(int(part) for part in found[1].split(".")) if found and found[1] else None


_OLD_CARGO = (_system_version("cargo") or (99,)) < (1, 78)  # before edition 2024 and lock file 4
_OLD_GO = (_system_version("go") or (99,)) < (1, 21)  # before go.mod's toolchain line and go 1.N.P


def _write(folder: Path, files: dict[str, str], build: str) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    write_bot(folder, folder.name, ["./bot"], protocol="stdio", build=build)
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


_CARGO_TOML = '[package]\nname = "bot"\nversion = "0.1.0"\nedition = "{edition}"\n\n[dependencies]\n'
_MAIN_RS = 'fn main() {\n    println!("hi");\n}\n'


@pytest.mark.slow
@needs_strict
@pytest.mark.skipif(not _OLD_CARGO, reason="the system's cargo reads edition 2024 and lock file 4")
def test_a_rust_bot_from_a_newer_cargo_is_told_the_line_to_change(tmp_path: Path) -> None:
    build = "cargo build --release --offline && cp target/release/bot bot"
    edition = _write(tmp_path / "edition", {"Cargo.toml": _CARGO_TOML.format(edition="2024"),
                                            "src/main.rs": _MAIN_RS}, build)
    lock_4 = 'version = 4\n\n[[package]]\nname = "bot"\nversion = "0.1.0"\n'
    lock = _write(tmp_path / "lock", {"Cargo.toml": _CARGO_TOML.format(edition="2021"),
                                      "src/main.rs": _MAIN_RS, "Cargo.lock": lock_4}, build)
    cargo = shutil.which("cargo", path=BOT_PATH)
    for folder, said in ((edition, 'change it to edition = "2021"'), (lock, "change its line version = 4")):
        code, out = check_bot(folder, "--sandbox", "strict")
        ran = rf"the build ran {re.escape(str(cargo))} 1\.\d+\.\d+ - hint: "
        assert code == 1 and re.search(ran, out) and said in out, out


@pytest.mark.slow
@needs_strict
@pytest.mark.skipif(not _OLD_GO, reason="the system's Go reads go.mod's toolchain line")
def test_a_go_bot_from_a_newer_go_is_told_the_line_to_change(tmp_path: Path) -> None:
    build = "go build -o bot ."
    main = 'package main\n\nimport "fmt"\n\nfunc main() {\n\tfmt.Println("hi")\n}\n'
    module = "module example.com/bot\n\ngo 1.22"
    lines = _write(tmp_path / "lines", {"go.mod": f"{module}.1\n\ntoolchain go1.22.3\n", "main.go": main},
                   build)
    ranges = main.replace('fmt.Println("hi")', "for i := range 3 {\n\t\tfmt.Println(i)\n\t}")
    feature = _write(tmp_path / "feature", {"go.mod": f"{module}\n", "main.go": ranges}, build)
    go = shutil.which("go", path=BOT_PATH)
    for folder, said in ((lines, "go.mod's toolchain line (line 5) is unknown to go 1."),
                         (feature, "go.mod says go 1.22, newer than go 1.")):
        code, out = check_bot(folder, "--sandbox", "strict")
        ran = rf"the build ran {re.escape(str(go))} 1\.\d+\.\d+ - hint: "
        assert code == 1 and re.search(ran, out) and said in out, out


@pytest.mark.parametrize(("lang", "compiler", "parser"), [("c", "cc", "json.c"), ("cpp", "c++", "json.hpp")])
def test_the_c_and_cpp_kits_read_the_whole_message_and_the_patch_costs(
        tmp_path: Path, lang: str, compiler: str, parser: str) -> None:
    """Given Patchwork's longest first request (86 KB) after a new_game whose player names
    need \\u escapes (a surrogate pair too), the kit buys the patch its heuristic values
    most: its parser read the components (costs, income) and the whole request."""
    import json
    import subprocess

    from arena import starter

    if shutil.which(compiler) is None:
        pytest.skip(f"no {compiler}")
    folder = tmp_path / "kit"
    starter.create(folder, lang)
    build = Manifest.load(folder).build
    assert build is not None and (folder / parser).is_file()
    subprocess.run(build, shell=True, cwd=folder, check=True, capture_output=True)
    state = GameState.new(LONG_SEEDS["patchwork"])
    tc = messages.time_control(1000, 10_000, 5000)
    lines = [messages.welcome(), messages.new_game("g1", 0, state.ruleset, tc, ("ckit", "é\U0001F600")),
             messages.move_request(1, "g1", state, [messages.clock(10_000, 5000)] * 2, legal_moves=True),
             messages.shutdown()]
    text = "".join(encode_trusted(line) + "\n" for line in lines)
    assert len(text.splitlines()[2]) > GO_SCANNER_BYTES
    done = subprocess.run(["./bot"], cwd=folder, input=text, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    hello, reply = (json.loads(line) for line in done.stdout.splitlines())
    assert hello["type"] == "hello" and reply["type"] == "move" and reply["seq"] == 1, done.stdout
    costs = {p["id"]: p for p in messages.components(state.ruleset)["patches"]}

    def value(move: dict) -> float:  # bot.c's choose_move, in Python
        if move["action"] != "buy":
            return 0.0
        patch = costs[move["patch"]]
        gain = 2 * len(move["cells"]) + patch["income"] * 53 / 6.0 - patch["buttons_cost"]
        return gain / max(patch["time_cost"], 1) - (1 if 5 - patch["buttons_cost"] < 2 else 0)

    legal = [m.to_json() for m in state.legal_moves()]
    assert reply["move"] in legal, reply
    assert reply["move"]["action"] == "buy" and value(reply["move"]) == max(map(value, legal)), reply


def test_a_death_on_welcome_in_a_game_names_the_welcome(tmp_path: Path) -> None:
    """In `arena play` the new_game follows the welcome at once, so the death is found in
    game 1: its hint names the welcome, not "the game_over of the game before" (there was none)."""
    from tests.helpers import arena

    folder = newcomer(tmp_path, "dies_on_welcome.py")
    proc = arena("play", str(folder), "random", "--games", "2", "--logs", str(tmp_path / "logs"))
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out.replace("  Traceback", ""), out
    for game in (1, 2):
        line = next(line for line in out.splitlines() if line.startswith(f"game {game}: "))
        assert "dies-on-welcome lost by crash" in line, line
        assert ("hint: it died before its first move, in its first game since it started: on `welcome`, "
                "this game's new_game or its first move_request (its log says which); a bot must "
                "ignore") in line, line
        assert "the game_over of the game before" not in line, line
