"""Bot-controlled text, names and paths (arena/untrusted.py), end to end through the CLI:
hostile error messages and info strings, hostile manifest names, symlinked bot folders,
and a report of a tournament whose names would break a spreadsheet and a plot."""

from __future__ import annotations

import csv
import json
import os
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest

from arena.bots.pool import sample_bots_dir
from arena.untrusted import csv_cell, for_terminal, inside, is_valid_name, remove_tree, shown
from tests.helpers import arena, arena_here, misbehaving_bot, synthetic_results, write_bot

RANDOM = str(sample_bots_dir() / "random")
ESC = "\x1b"


def unsafe_for_terminal(text: str) -> list[str]:
    """The characters of ``text`` a terminal could act on (all but newline and tab)."""
    return sorted({ch for ch in text if not ch.isprintable() and ch not in "\n\t"})


def test_play_survives_a_lone_surrogate_and_escape_sequences(tmp_path: Path) -> None:
    bot = misbehaving_bot(tmp_path / "bot", "hostile_error", stdio=True)
    out = tmp_path / "games.jsonl"
    proc = arena("play", str(bot.folder), RANDOM, "--games", "2", "--out", str(out),
                 "--logs", str(tmp_path / "logs"))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert unsafe_for_terminal(proc.stdout + proc.stderr) == []
    assert "bad-hostile_error gave up: lone \ufffd surrogate \\x1b]0;pwned title\\x07" in proc.stdout
    assert proc.stdout.count("random wins (crash)") == 2
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["result"]["reason"] for r in records] == ["crash", "crash"]
    assert "\ufffd" in records[0]["result"]["detail"] and ESC in records[0]["result"]["detail"]


@pytest.mark.slow
def test_tournament_stores_hostile_text_and_every_command_shows_it_safely(tmp_path: Path) -> None:
    bots = tmp_path / "bots"
    misbehaving_bot(bots / "quitter", "hostile_error", stdio=True, name="quitter")
    misbehaving_bot(bots / "chatty", "hostile_info", name="chatty")
    out = tmp_path / "results"
    proc = arena("run-tournament", "--bots", str(bots), "--bots", RANDOM, "--games", "2",
                 "--concurrency", "1", "--sandbox", "none", "--out", str(out), "--name", "hostile")
    assert proc.returncode == 0, proc.stderr
    assert "done: 6 games played now" in proc.stdout
    assert unsafe_for_terminal(proc.stdout + proc.stderr) == []
    with sqlite3.connect(out / "tournament.db") as db:
        details = [row[0] for row in db.execute("SELECT detail FROM games WHERE reason = 'crash'")]
    assert len(details) == 4 and all("\ufffd" in d and ESC in d for d in details)

    ratings = arena("ratings", str(out), "--csv", str(tmp_path / "table.csv"))
    assert ratings.returncode == 0, ratings.stderr
    assert unsafe_for_terminal(ratings.stdout + ratings.stderr) == []
    assert "quitter" in ratings.stdout

    report = arena("report", str(out), "--bootstrap", "20")
    assert report.returncode == 0, report.stderr
    assert unsafe_for_terminal(report.stdout + report.stderr) == []
    assert (out / "report" / "plots" / "elo.png").stat().st_size > 1000
    with (out / "report" / "csv" / "abnormal_games.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 4 and all("\ufffd" in row["detail"] for row in rows)
    # The HTML shows them written out too (a right-to-left override turned text around in the page)
    pages = [out / "report" / "index.html", *(out / "report" / "replays").glob("*.html")]
    assert len(pages) > 1
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert not [ch for ch in text if not ch.isprintable() and ch not in "\n\t"], page.name
        if page.parent.name == "replays":  # nor in the data the viewer decodes and shows
            data = json.loads(text.split('id="game-data">', 1)[1].split("</script>", 1)[0])
            decoded = json.dumps(data, ensure_ascii=False)
            assert all(ch.isprintable() or ch in "\n\t" for ch in decoded), page.name
    index = pages[0].read_text(encoding="utf-8")
    assert "\\x1b]0;pwned title\\x07" in index and "\\u202eevil" in index


@pytest.mark.slow
def test_report_neutralises_csv_formulas_and_draws_mathtext_names(tmp_path: Path) -> None:
    """Names that the rule now refuses, in a database written before it (or by hand)."""
    out = tmp_path / "results"
    proc = arena("run-tournament", "--bots", RANDOM, "--bots", str(sample_bots_dir() / "greedy"),
                 "--games", "2", "--concurrency", "1", "--sandbox", "none", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    renames = {"random": "=HYPERLINK(\"x\")", "greedy": "$\\frac{$ @me"}
    with sqlite3.connect(out / "tournament.db") as db:
        for old, new in renames.items():
            db.execute("UPDATE entrants SET name = ? WHERE name = ?", (new, old))
            for column in ("seat0", "seat1", "winner_name"):
                db.execute(f"UPDATE games SET {column} = ? WHERE {column} = ?", (new, old))
        (value,) = db.execute("SELECT value FROM tournament WHERE key = 'config'").fetchone()
        config = json.loads(value)
        for entrant in config["entrants"]:
            entrant["name"] = renames[entrant["name"]]
        db.execute("UPDATE tournament SET value = ? WHERE key = 'config'", (json.dumps(config),))
    report = arena("report", str(out), "--bootstrap", "20")
    assert report.returncode == 0, report.stderr
    assert (out / "report" / "plots" / "elo.png").is_file()
    assert (out / "report" / "plots" / "head_to_head.png").is_file()
    standings = (out / "report" / "csv" / "standings.csv").read_text(encoding="utf-8")
    assert "'=HYPERLINK" in standings and "'$\\frac" not in standings
    for path in (out / "report" / "csv").glob("*.csv"):
        with path.open(encoding="utf-8", newline="") as handle:
            for row in csv.reader(handle):
                for cell in row:
                    assert not (cell[:1] in ("=", "+", "@") or cell.startswith("-") and not
                                _is_number(cell)), (path.name, cell)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


HOSTILE_NAMES = ["my bot", "/../../tmp/x", "../x", ".", "..", ".hidden", "-rf", "$x$", "=cmd",
                 "\\u001b]0;title\\u0007", "a\\u202eb", "é", "x" * 65, ""]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_manifest_names_are_refused_at_load(tmp_path: Path, name: str) -> None:
    folder = tmp_path / "bot"
    folder.mkdir()
    (folder / "bot.toml").write_text(f'name = "{name}"\ncommand = "python bot.py"\n', encoding="utf-8")
    for args in (("check-bot", str(folder)), ("play", str(folder), RANDOM)):
        proc = arena(*args, "--logs", str(tmp_path / "logs"))
        assert proc.returncode != 0
        assert "Traceback" not in proc.stderr
        lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
        problem = [line for line in lines if "bot.toml" in line]
        assert len(problem) == 1, lines
        assert "key 'name': expected 1 to 64 characters" in problem[0], problem
        assert unsafe_for_terminal(proc.stdout + proc.stderr) == []


@pytest.mark.parametrize(("line", "key"), [('command = ["python", "bot.py\\u0000x"]', "command"),
                                           ('command = "python bot.py\\u0000x"', "command"),
                                           ('command = "python bot.py"\nbuild = "true\\u0000x"', "build")])
def test_a_nul_in_a_command_or_a_build_is_refused_at_load(tmp_path: Path, line: str, key: str) -> None:
    """A NUL passed the manifest, then Popen raised ValueError at every start: tracebacks in
    check-bot and play, an `arena sprt` exit status of 1 (H0 accepted), and a tournament that
    lost its worker 3 times and stopped. Now every command refuses the bot.toml at once."""
    for name in ("ant", "nul"):
        folder = tmp_path / "bots" / name
        folder.mkdir(parents=True)
        (folder / "bot.toml").write_text(f'name = "{name}"\n' + (line if name == "nul" else
                                         'command = "python bot.py"'), encoding="utf-8")
    nul = str(tmp_path / "bots" / "nul")
    logs = ("--logs", str(tmp_path / "logs"))
    for args, status in ((("check-bot", nul, *logs), 1),
                         (("play", nul, RANDOM, "--sandbox", "none", *logs), 1),
                         (("sprt", nul, RANDOM, "--sandbox", "none"), 3),
                         (("run-tournament", "--bots", str(tmp_path / "bots"), "--sandbox", "none",
                           "--out", str(tmp_path / "out")), 1)):
        proc = arena_here(*args)  # refused before any process starts
        assert proc.returncode == status and "Traceback" not in proc.stderr, (args, proc.stderr)
        problem = [line for line in (proc.stdout + proc.stderr).splitlines() if "bot.toml" in line]
        assert len(problem) == 1, (args, proc.stdout + proc.stderr)
        assert f"nul/bot.toml: key '{key}': expected " in problem[0], problem
        assert "with no NUL character" in problem[0] and "\\x00x" in problem[0], problem
        assert unsafe_for_terminal(proc.stdout + proc.stderr) == []
    assert not (tmp_path / "out").exists()


def test_submit_refuses_an_escaping_name_and_writes_nothing_outside(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious\n")
    folder = tmp_path / "bot"
    bot = misbehaving_bot(folder, "hostile_info")
    (folder / "bot.toml").write_text((folder / "bot.toml").read_text().replace(
        f'name = "{bot.name}"', f'name = "/../../../..{victim}"'))
    entrants = tmp_path / "entrants"
    proc = arena("submit", str(folder), "--entrants", str(entrants), "--games", "2")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "REFUSED" in proc.stderr and "key 'name'" in proc.stderr
    assert (victim / "keep.txt").read_text() == "precious\n" and os.listdir(victim) == ["keep.txt"]
    assert not entrants.exists() or os.listdir(entrants) == []


def test_submit_refuses_a_folder_with_a_symlink(tmp_path: Path) -> None:
    folder = tmp_path / "bot"
    misbehaving_bot(folder, "hostile_info", name="linky")
    (folder / "data").mkdir()
    (folder / "data" / "secrets").symlink_to("/etc/shadow")
    entrants = tmp_path / "entrants"
    proc = arena("submit", str(folder), "--entrants", str(entrants), "--games", "2")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "'data/secrets' is a symbolic link (to '/etc/shadow'): copy the file in instead" in proc.stderr, \
        proc.stderr
    assert not (entrants / "linky").exists()
    (folder / "data" / "secrets").unlink()  # the same folder without the link goes in
    proc = arena("submit", str(folder), "--entrants", str(entrants), "--games", "2")
    assert proc.returncode == 0, proc.stderr
    assert (entrants / "linky" / "bot.toml").is_file()


def test_submit_refuses_a_linked_bot_toml_before_reading_it(tmp_path: Path) -> None:
    # Submit read and parsed the link's target (say a root-only secrets file), and its
    # refusal quoted the target's keys and values ("api_token ... got 42").
    secret = tmp_path / "secrets.toml"
    secret.write_text('api_token = "hunter2-token"\nname = 42\n')
    secret.chmod(0o600)
    folder = tmp_path / "bot"
    misbehaving_bot(folder, "hostile_info", name="linky")
    (folder / "bot.toml").unlink()
    (folder / "bot.toml").symlink_to(secret)
    entrants = tmp_path / "entrants"
    proc = arena("submit", str(folder), "--entrants", str(entrants), "--sandbox", "none")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    problems = [line for line in proc.stderr.splitlines() if line.startswith("  - ")]
    refusal = f"  - {folder}: bot.toml is a symbolic link: submit takes plain files only"
    assert problems == [refusal], proc.stderr
    assert "api_token" not in proc.stdout + proc.stderr and "hunter2" not in proc.stdout + proc.stderr
    assert not entrants.exists()
    link = tmp_path / "link"  # the folder itself a link: refused too, before it is read
    link.symlink_to(folder)
    proc = arena("submit", str(link), "--entrants", str(entrants), "--sandbox", "none")
    assert proc.returncode == 1 and f"{link} is a symbolic link" in proc.stderr, proc.stderr
    assert "api_token" not in proc.stdout + proc.stderr and not entrants.exists()


def test_dask_packing_refuses_a_symlinked_bot_folder(tmp_path: Path) -> None:
    from arena.errors import ArenaError
    from arena.tournament.distributed import pack_bot

    folder = tmp_path / "bot"
    write_bot(folder, "packed", ["python", "bot.py"])
    (folder / "bot.py").write_text("")
    assert pack_bot(folder)
    (folder / "link").symlink_to("/etc")
    with pytest.raises(ArenaError, match="'link' is a symbolic link \\(to '/etc'\\): copy the file in"):
        pack_bot(folder)


@pytest.mark.slow  # about 25 s: 300 packs while a thread swaps
def test_dask_packing_never_reads_a_file_swapped_for_a_link_while_it_packs(tmp_path: Path) -> None:
    """The red team swapped a bot's file for a link to /etc/shadow while the coordinator (root)
    packed the folder for Dask: it checked for links, then opened each file by name, and
    packed 300 bytes of /etc/shadow into the bundle on attempt 317. Packing now copies the
    folder first, never through a link. The old code, here: 6 bundles of 300 held the secret."""
    import io
    import tarfile
    import threading

    from arena.errors import ArenaError
    from arena.tournament.distributed import pack_bot

    secret = tmp_path / "secret.txt"
    secret.write_text("ROOT-ONLY " * 40)
    folder = tmp_path / "bot"
    write_bot(folder, "packed", ["python", "bot.py"])
    stop = threading.Event()

    for number in range(200):  # many files: a wider window between the check and the open
        (folder / f"f{number:03d}").write_text("x")

    def swap() -> None:  # zz_data is a file or a link, each half of the time
        while not stop.is_set():
            os.symlink(secret, tmp_path / "link")
            (tmp_path / "file").write_text("d" * 400)
            os.replace(tmp_path / "file", folder / "zz_data")
            os.replace(tmp_path / "link", folder / "zz_data")

    swapper = threading.Thread(target=swap)
    swapper.start()
    leaked = refused = 0
    try:
        for _ in range(300):
            try:
                bundle = pack_bot(folder)
            except (ArenaError, OSError):  # refused, or the race seen by the old code
                refused += 1
                continue
            with tarfile.open(fileobj=io.BytesIO(bundle)) as archive:
                for member in archive.getmembers():
                    handle = archive.extractfile(member) if member.isfile() else None
                    leaked += handle is not None and b"ROOT-ONLY" in handle.read()
    finally:
        stop.set()
        swapper.join()
    assert leaked == 0, f"{leaked} bundles of 300 hold the secret ({refused} refused)"


def test_a_copy_refuses_links_that_leave_the_folder_through_another_link(tmp_path: Path) -> None:
    # Each link alone stays inside by its text (s -> ., t -> s/..), but t leads to the
    # folder's parent: strict's build copy kept both, and chained links reach any host path.
    from arena.errors import ArenaError
    from arena.untrusted import copy_folder

    bot = tmp_path / "bot"
    (bot / "sub").mkdir(parents=True)
    (bot / "s").symlink_to(".")
    (bot / "sub" / "up").symlink_to("..")  # inside: sub/.. is the folder itself
    (bot / "data").symlink_to("sub/up/sub")
    copy_folder(bot, tmp_path / "fine", links_inside=True)
    assert (tmp_path / "fine" / "data").resolve() == (tmp_path / "fine" / "sub").resolve()
    (bot / "t").symlink_to("s/..")
    with pytest.raises(ArenaError, match="the symlink 't' \\('s/..'\\) leads outside the folder through "
                                         "another link"):
        copy_folder(bot, tmp_path / "chained", links_inside=True)



# ------------------------------------------------------------------ the functions themselves
def test_names_follow_the_rule() -> None:
    assert all(is_valid_name(n) for n in ("greedy", "mcts-2", "a.b_c", "X", "9lives", "x" * 64))
    assert not any(is_valid_name(n.encode().decode("unicode_escape")) for n in HOSTILE_NAMES)
    assert not is_valid_name("x\n") and not is_valid_name(None) and not is_valid_name(7)


def test_for_terminal_escapes_everything_a_terminal_acts_on() -> None:
    text = "a\x1b]0;t\x07b\x9b31m\u202ec\ud800\r\x7f\u2028d\n\te"
    assert for_terminal(text) == "a\\x1b]0;t\\x07b\\x9b31m\\u202ec\\ud800\\x0d\\x7f\\u2028d\n\te"
    assert for_terminal("x\ny\tz", newlines=False) == "x\\x0ay\\x09z"
    assert for_terminal("plain ü 名前 ✓") == "plain ü 名前 ✓"


def test_csv_cells_that_start_a_formula_are_neutralised() -> None:
    assert [csv_cell(v) for v in ("=1+1", "+cmd", "-cmd", "@x", "\tx", "\nx", "ok", "-3", "+1.5e3", -2)] == \
        ["'=1+1", "'+cmd", "'-cmd", "'@x", "'\tx", "'\nx", "ok", "-3", "+1.5e3", -2]
    # escaped, and then not a formula:
    assert csv_cell("\rx\x00\x1b]0;t\x07\u202e") == "\\x0dx\\x00\\x1b]0;t\\x07\\u202e"


def _csv_files_are_clean(out: Path) -> None:
    """The report's CSV files of ``out`` hold no control or format character (but tab and newline)."""
    import unicodedata

    files = sorted((out / "report" / "csv").glob("*.csv"))
    assert files
    for path in files:
        data = path.read_bytes()
        assert [b for b in data if b < 0x20 and b not in b"\t\n\r"] == [], path.name
        text = data.decode("utf-8")
        assert [ch for ch in text if unicodedata.category(ch) in ("Cc", "Cf") and ch not in "\t\n\r"] == [], \
            path.name


@pytest.mark.slow  # a real tournament and its report (about 14 s): the hostile text from the bot itself
def test_report_csv_files_hold_no_control_characters(tmp_path: Path) -> None:
    """A bot's error message and stderr tail (ESC, BEL, NUL, bidi overrides) reached the
    report's CSV files raw: `cat` ran the sequences, the NUL broke CSV tools."""
    misbehaving_bot(tmp_path / "bots" / "quitter", "hostile_error", stdio=True, name="quitter")
    out = tmp_path / "results"
    proc = arena("run-tournament", "--bots", str(tmp_path / "bots"), "--bots", RANDOM, "--games", "2",
                 "--concurrency", "1", "--sandbox", "none", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    report = arena("report", str(out), "--bootstrap", "20")
    assert report.returncode == 0, report.stderr
    _csv_files_are_clean(out)
    with (out / "report" / "csv" / "abnormal_games.csv").open(encoding="utf-8", newline="") as handle:
        details = [row["detail"] for row in csv.DictReader(handle)]
    assert len(details) == 2
    for detail in details:  # shown escaped, the log tail still on lines of its own
        assert "gave up: lone \ufffd surrogate \\x1b]0;pwned title\\x07" in detail and "NUL \\x00" in detail
        assert "\n  stderr tail: NUL \\x00" in detail


def test_report_csv_files_hold_no_control_characters_of_a_stored_detail(tmp_path: Path) -> None:
    """The same, in process, over a stored game whose detail holds what that bot sends (the
    referee keeps it as text; the slow test above has it come from a real bot)."""
    hostile = ("gave up: lone \ufffd surrogate \x1b]0;pwned title\x07 \u202eright-to-left NUL \x00\n"
               "  stderr tail: NUL \x00 \x1b[2J")
    out = synthetic_results(tmp_path / "results", ["quitter", "random"], detail=hostile)
    report = arena_here("report", str(out), "--bootstrap", "20")
    assert report.returncode == 0, report.stderr
    _csv_files_are_clean(out)
    with (out / "report" / "csv" / "abnormal_games.csv").open(encoding="utf-8", newline="") as handle:
        [detail] = [row["detail"] for row in csv.DictReader(handle)]
    assert "gave up: lone \ufffd surrogate \\x1b]0;pwned title\\x07" in detail and "NUL \\x00" in detail
    assert "\n  stderr tail: NUL \\x00" in detail


def test_inside_refuses_paths_that_leave_the_folder(tmp_path: Path) -> None:
    from arena.errors import ConfigError

    assert inside(tmp_path, "a.log") == tmp_path / "a.log"
    for bad in ("..", ".", "", "a/b", "/etc", "x\0"):
        with pytest.raises(ConfigError):
            inside(tmp_path, bad)
    (tmp_path / "out").symlink_to("/tmp")
    with pytest.raises(ConfigError, match="leads outside"):
        inside(tmp_path, "out")


def test_submit_and_sprt_escape_the_folder_names_they_print(tmp_path: Path) -> None:
    """A folder named with an OSC sequence and a newline reached the terminal raw in submit's
    REFUSED line and sprt's header (red team)."""
    folder = tmp_path / "b\x1b]0;PWN\x07x\nNEWLINE"
    shutil.copytree(sample_bots_dir() / "random", folder)
    entrants = tmp_path / "entrants"
    shutil.copytree(sample_bots_dir() / "random", entrants / "random")  # the name is taken: refused
    submitted = arena("submit", str(folder), "--entrants", str(entrants), "--sandbox", "none", "--games", "2")
    sprt = arena("sprt", str(folder), str(sample_bots_dir() / "random"), "--max-games", "2",
                 "--time-per-move", "200", "--logs", str(tmp_path / "logs"))
    assert submitted.returncode == 1 and "REFUSED" in submitted.stderr, submitted.stdout + submitted.stderr
    assert sprt.returncode in (0, 1, 2) and "SPRT" in sprt.stdout, sprt.stdout + sprt.stderr
    for proc in (submitted, sprt):
        assert "\x1b" not in proc.stdout + proc.stderr and "\x07" not in proc.stdout + proc.stderr
        assert not any(line.startswith("NEWLINE") for line in (proc.stdout + proc.stderr).splitlines())


@pytest.mark.parametrize("command", ["check-bot", "play", "run-tournament"])
def test_a_linked_bot_toml_is_never_read(tmp_path: Path, command: str) -> None:
    """The manifest is opened without following links, everywhere: submit's check before the
    read could be raced (a link swapped in meanwhile: the red team read a root-only value in
    6 submits of 15), and other commands quoted the target's values too."""
    secret = tmp_path / "secrets.toml"
    secret.write_text('name = "ROOT-ONLY-hunter2!"\n')
    secret.chmod(0o600)
    folder = tmp_path / "bots" / "bot"
    misbehaving_bot(folder, "hostile_info", name="linky")
    (folder / "bot.toml").unlink()
    (folder / "bot.toml").symlink_to(secret)
    args = {"check-bot": [str(folder)], "play": [str(folder), str(sample_bots_dir() / "random")],
            "run-tournament": ["--bots", str(tmp_path / "bots"), "--sandbox", "none",
                               "--out", str(tmp_path / "out")]}[command]
    proc = arena(command, *args)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in output, output
    assert "hunter2" not in output and "bot.toml must be a plain text file, not a link" in output, output


@pytest.mark.parametrize("copies", [12, pytest.param(60, marks=pytest.mark.slow)])  # 60: the red team's count
@pytest.mark.parametrize("links_inside", [False, True])
def test_a_folder_copy_never_follows_a_link_swapped_in_while_it_copies(tmp_path: Path, links_inside: bool,
                                                                       copies: int) -> None:
    """The red team swapped a subfolder for a link to a root-only folder while submit copied:
    shutil.copytree had listed it as a folder and then opened it by name, so the secret was
    installed with the bot. Here a thread keeps swapping while the folder is copied again and
    again: no copy may ever hold the secret (each either refuses the link or copies the
    subfolder). shutil.copytree, in the same loop, copied the secret 17 times in 60."""
    import threading

    from arena.errors import ArenaError
    from arena.untrusted import copy_folder

    secret = tmp_path / "secret"
    secret.mkdir(mode=0o700)
    (secret / "secret.txt").write_text("ROOT-ONLY")
    bot = tmp_path / "bot"
    (bot / "many").mkdir(parents=True)
    for number in range(300):
        (bot / "many" / f"f{number}").write_text("x")
    (bot / "sub").mkdir()
    (bot / "sub" / "mine.txt").write_text("mine")
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            os.rename(bot / "sub", tmp_path / "held")
            os.symlink(secret, bot / "sub")
            os.unlink(bot / "sub")
            os.rename(tmp_path / "held", bot / "sub")

    swapper = threading.Thread(target=swap)
    swapper.start()
    leaked = refused = 0
    try:
        for number in range(copies):
            target = tmp_path / f"copy{number}"
            try:
                copy_folder(bot, target, links_inside=links_inside)
            except ArenaError:
                refused += 1
            leaked += (target / "sub" / "secret.txt").exists()
    finally:
        stop.set()
        swapper.join()
    assert leaked == 0, f"{leaked} copies of {copies} hold the secret ({refused} refused)"


def test_shown_cuts_a_long_value_in_its_middle_and_keeps_its_end() -> None:
    # A long path cut at its end lost the very name the message was about.
    path = "/home/organizer/" + "a-rather-long-folder/" * 10 + "bots/bad\udcff"
    text = shown(path)
    assert len(text) == 80 and text.startswith("'/home/organizer/") and "..." in text
    assert text.endswith("/bots/bad\\udcff'") and text.isascii()
    assert shown("short") == "'short'"


def test_remove_tree_removes_a_tree_deeper_than_path_max_and_follows_no_link(tmp_path: Path) -> None:
    # shutil.rmtree raised RecursionError about 1000 folders deep; by path, a tree deeper
    # than PATH_MAX (4096 bytes) cannot even be reached.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    top = tmp_path / "top"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY)
    for _ in range(1100):  # 1100 * len("deep/") > 4096, deeper than the recursion limit, more than 1024 fds
        os.mkdir("deep", dir_fd=fd)
        os.symlink(str(outside), "out", dir_fd=fd)
        os.close(os.open("file", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
        child = os.open("deep", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))  # fewer descriptors than levels
    try:
        remove_tree(top)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert not top.exists() and (outside / "keep").read_text() == "x"
    remove_tree(tmp_path / "no-such-folder")  # nothing to do, no error


def test_remove_tree_run_by_a_plain_user_removes_its_read_only_folders() -> None:
    # A bot's scratch folder holding Go's module cache (folders 0555) was never removed when
    # the harness ran as a plain user: nothing inside a 0555 folder can be unlinked.
    import subprocess
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="arena-test-ro-"))
    os.chown(top, 65534, 65534)
    # The checkout may be unreadable to nobody (a fresh clone in a 0700 folder): the two
    # modules the script needs go to a folder nobody can read.
    package = Path(tempfile.mkdtemp(prefix="arena-test-pkg-"))
    package.chmod(0o755)
    (package / "arena").mkdir(mode=0o755)
    (package / "arena" / "__init__.py").write_text("")
    for module in ("errors.py", "untrusted.py"):
        shutil.copy(Path(__file__).resolve().parents[1] / "arena" / module, package / "arena" / module)
        (package / "arena" / module).chmod(0o644)
    script = ("import os, sys\nfrom pathlib import Path\nfrom arena.untrusted import remove_tree\n"
              "top = Path(sys.argv[1])\n(top / 'mod' / 'm@v1').mkdir(parents=True)\n"
              "(top / 'mod' / 'm@v1' / 'go.mod').write_text('module m')\n"
              "(top / 'mod' / 'm@v1').chmod(0o555)\n(top / 'mod').chmod(0o555)\n"
              "(top / 'locked').mkdir(mode=0o000)\nremove_tree(top)\nprint(top.exists())")
    try:
        run = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable,
                              "-c", script, str(top)], capture_output=True, text=True, timeout=60,
                             cwd=package, env={**os.environ, "PYTHONPATH": str(package)})
        assert run.stdout.strip() == "False", run.stdout + run.stderr
    finally:
        subprocess.run(["rm", "-rf", str(top), str(package)], check=False)


def test_a_copy_counts_a_folders_entries_as_it_lists_them(tmp_path: Path) -> None:
    # A folder of 1.5 million names (hard links cost no inode) was listed whole, then counted:
    # 27 s and 250 MB before submit refused it.
    from arena.errors import ArenaError
    from arena.untrusted import copy_folder

    bot = tmp_path / "bot"
    (bot / "wide").mkdir(parents=True)
    (bot / "wide" / "0").write_text("x")
    for number in range(1, 50):
        os.link(bot / "wide" / "0", bot / "wide" / str(number))
    with pytest.raises(ArenaError, match="'wide' brings the folder past its limit of 20 files and folders"):
        copy_folder(bot, tmp_path / "copy", links_inside=False, max_files=20)
    copy_folder(bot, tmp_path / "fits", links_inside=False, max_files=51)
    assert len(os.listdir(tmp_path / "fits" / "wide")) == 50


def test_lone_surrogate_escapes_are_replaced_in_the_json_text() -> None:
    # Replaced on the text, before parsing: the walk over the parsed value cost 480 to 640 ms
    # per MiB of nested arrays on the referee's CPU, and could not go deeper than the stack.
    from arena.untrusted import clean_json_escapes

    cases = {
        r'{"a": "\ud800"}': {"a": "\ufffd"},  # a lone high surrogate
        r'{"a": "\udc00\ud800x"}': {"a": "\ufffd\ufffdx"},  # a low, then a high without its pair
        r'{"a": "\ud83d\ude00"}': {"a": "\U0001f600"},  # a pair is kept
        r'{"a": "\\ud800"}': {"a": "\\ud800"},  # an escaped backslash, then plain text
        r'{"a": "\\\ud800"}': {"a": "\\\ufffd"},  # an escaped backslash, then an escape
        r'{"\ud800": [[["\ud801"]]]}': {"\ufffd": [[["\ufffd"]]]},  # keys and any depth
        r'{"a": "\u0041"}': {"a": "A"},
    }
    for text, value in cases.items():
        cleaned = json.loads(clean_json_escapes(text))
        assert cleaned == value, text
        json.dumps(cleaned, ensure_ascii=False).encode()  # encodable as UTF-8
