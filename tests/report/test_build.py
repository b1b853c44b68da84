"""`arena report`: the report of a small real tournament (sample bots and misbehaving bots),
its numbers checked against counts taken straight from the database; empty, unfinished
and wrong folders; the page in headless Chromium."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from arena.bots.pool import sample_bots_dir
from arena.cli import main
from arena.report import stats
from arena.report.sections import SECTIONS
from arena.tournament.config import load_config
from arena.tournament.storage import ResultStore
from tests.helpers import ARENA_ARGV, arena, arena_here, misbehaving_bot, synthetic_results
from tests.report import browser

SAMPLES = sample_bots_dir()
# One xdist worker runs this file's tests (make test: --dist loadgroup): its tournament is played once.
pytestmark = pytest.mark.xdist_group("report-build")
MISBEHAVING = {"crashy": "crash", "illegaly": "illegal", "hangy": "hang", "garbagey": "garbage"}
BOTS = ("random", "greedy", *MISBEHAVING)
CATEGORY = {"crash": "crash", "illegal_move": "illegal move", "timeout": "timeout",
            "malformed": "protocol error", "schema": "protocol error", "protocol": "protocol error",
            "oversize": "protocol error"}


def misbehaving_bots(folder: Path) -> list[Path]:
    return [misbehaving_bot(folder / name, kind, name=name).folder for name, kind in MISBEHAVING.items()]


@pytest.fixture(scope="module")
def tournament(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished round robin: random and greedy, and four bots that crash, play an illegal
    move, hang and send garbage; two games per pairing."""
    root = tmp_path_factory.mktemp("report")
    bots = [SAMPLES / "random", SAMPLES / "greedy", *misbehaving_bots(root / "bots")]
    out = root / "results"
    proc = arena("run-tournament", *[arg for bot in bots for arg in ("--bots", str(bot))], "--games", "2",
                  "--seed", "5", "--concurrency", "2", "--time-per-move", "300", "--bank-ms", "300",
                  "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.fixture(scope="module")
def report(tournament: Path) -> Path:
    proc = arena("report", str(tournament), "--sample", "3", "--bootstrap", "300")
    assert proc.returncode == 0, proc.stderr
    assert "30 games, complete" in proc.stdout and "report written to" in proc.stdout
    return tournament / "report"


def db_games(folder: Path) -> list[dict]:
    with sqlite3.connect(folder / "tournament.db") as conn:
        conn.row_factory = sqlite3.Row
        rows = conn.execute("SELECT seat0, seat1, winner, loser, reason, game_id, "
                            "json_extract(record, '$.first_player') AS first FROM games").fetchall()
    return [dict(row) for row in rows]


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


class Page(HTMLParser):
    """The bits of the report page the tests look at."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.images: list[str] = []
        self.bots: list[str] = []  # the text of every bot label
        self._in_bot = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.add(found["id"] or "")
        if tag == "a" and found.get("href"):
            self.links.append(found["href"] or "")
        if tag == "img":
            self.images.append(found.get("src") or "")
        if tag == "span" and found.get("class") == "bot":
            self._in_bot = True
            self.bots.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "span":
            self._in_bot = False

    def handle_data(self, data: str) -> None:
        if self._in_bot:
            self.bots[-1] += data


# ------------------------------------------------------------------ the finished tournament
@pytest.mark.slow
def test_report_has_every_section_bot_plot_and_table(report: Path) -> None:
    text = (report / "index.html").read_text()
    page = Page(text)
    assert {s.id for s in SECTIONS if s.shown is None} <= page.ids  # a format's own sections: its pages
    assert 'data-status="complete"' in text
    standings = read_csv(report / "csv" / "standings.csv")
    assert sorted(row["name"] for row in standings) == sorted(BOTS)
    body = text.split('id="standings"', 1)[1].split("</section>", 1)[0]
    assert all(f"</i>{name}</span>" in body for name in BOTS)
    assert all(row["games"] == "10" for row in standings)  # 5 opponents, 2 games each
    plots = {p.stem for p in (report / "plots").glob("*.png")}
    assert {"elo", "head_to_head", "margins", "seat", "endings", "think_time", "scores", "lengths",
            "progression"} <= plots
    embedded = [src for src in page.images if src.startswith("data:image/png;base64,")]
    assert len(embedded) == len(page.images) == len(plots)  # every plot embedded, nothing fetched
    assert not re.search(r"""(src|href)=["']https?:""", text)
    for name in ("standings", "bradley_terry", "likelihood_of_superiority", "head_to_head", "seat_advantage",
                 "endings", "abnormal_games", "think_times", "slowest_moves", "bank_summary", "scores",
                 "game_lengths", "rating_progression", "replays"):
        assert (report / "csv" / f"{name}.csv").is_file(), name
        assert f'href="csv/{name}.csv"' in text
    # TrueSkill table as `arena ratings` computes it
    ratings = arena("ratings", str(report.parent), "--csv", str(report.parent / "ratings.csv"))
    assert ratings.returncode == 0
    mine = {row["name"]: row for row in standings}
    for row in read_csv(report.parent / "ratings.csv"):
        assert float(mine[row["name"]]["mu"]) == pytest.approx(float(row["mu"]))
        assert mine[row["name"]]["rank"] == row["rank"]


@pytest.mark.slow
def test_head_to_head_matches_the_database(tournament: Path, report: Path) -> None:
    wins: Counter[tuple[str, str]] = Counter()
    played: Counter[tuple[str, str]] = Counter()
    for g in db_games(tournament):
        seats = (g["seat0"], g["seat1"])
        winner, loser = seats[g["winner"]], seats[1 - g["winner"]]
        wins[(winner, loser)] += 1
        played[(winner, loser)] += 1
        played[(loser, winner)] += 1
    rows = read_csv(report / "csv" / "head_to_head.csv")
    assert len(rows) == len(BOTS) * (len(BOTS) - 1)
    for row in rows:
        pair = (row["name"], row["opponent"])
        assert int(row["games"]) == played[pair] == 2
        assert int(row["wins"]) == wins[pair], pair
        assert int(row["losses"]) == wins[pair[::-1]], pair
    matrix = {row["row bot"]: row for row in read_csv(report / "csv" / "head_to_head_wins.csv")}
    for (a, b), count in played.items():
        assert matrix[a][b] == str(wins[(a, b)])  # a count, written as one (not 1.0)
        assert count == 2
    assert all(matrix[n][n] == "" for n in BOTS)  # the diagonal is empty


@pytest.mark.slow
def test_seat_advantage_matches_the_database(tournament: Path, report: Path) -> None:
    games = [g for g in db_games(tournament) if g["reason"] == "normal"]
    assert games, "the tournament needs games that ended by the rules"
    first_wins = sum(g["winner"] == g["first"] for g in games)
    rows = {row["name"]: row for row in read_csv(report / "csv" / "seat_advantage.csv")}
    overall = rows["all games"]
    assert int(overall["games"]) == len(games)
    assert int(overall["first_wins"]) == first_wins
    assert float(overall["first_win_rate"]) == pytest.approx(first_wins / len(games))
    for name in BOTS:
        as_first = [g for g in games if (g["seat0"], g["seat1"])[g["first"]] == name]
        as_second = [g for g in games if (g["seat0"], g["seat1"])[1 - g["first"]] == name]
        assert int(rows[name]["first_games"]) == len(as_first)
        assert int(rows[name]["first_wins"]) == sum(g["winner"] == g["first"] for g in as_first)
        assert int(rows[name]["second_games"]) == len(as_second)
        assert int(rows[name]["second_wins"]) == sum(g["winner"] != g["first"] for g in as_second)
    text = (report / "index.html").read_text()
    assert f"The first player won <b>{first_wins}</b> of <b>{len(games)}</b> games" in text


@pytest.mark.slow
def test_endings_match_the_database(tournament: Path, report: Path) -> None:
    games = db_games(tournament)
    own: Counter[tuple[str, str]] = Counter()
    normal: Counter[str] = Counter()
    opponent_failed: Counter[str] = Counter()
    for g in games:
        seats = (g["seat0"], g["seat1"])
        if g["reason"] == "normal":
            normal.update(seats)
        else:
            own[(seats[g["loser"]], CATEGORY[g["reason"]])] += 1
            opponent_failed[seats[1 - g["loser"]]] += 1
    rows = {row["name"]: row for row in read_csv(report / "csv" / "endings.csv")}
    for name in BOTS:
        row = rows[name]
        assert int(row["normal"]) == normal[name]
        assert int(row["opponent_failed"]) == opponent_failed[name]
        for category in ("timeout", "crash", "illegal move", "protocol error"):
            assert int(row[category]) == own[(name, category)], (name, category)
        assert int(row["failures"]) == sum(v for (n, _), v in own.items() if n == name)
    # each misbehaving bot failed its own way in every game it lost that way
    assert own[("crashy", "crash")] and own[("illegaly", "illegal move")]
    assert own[("hangy", "timeout")] and own[("garbagey", "protocol error")]
    assert rows["random"]["failures"] == rows["greedy"]["failures"] == "0"
    standings = {row["name"]: row for row in read_csv(report / "csv" / "standings.csv")}
    assert all(standings[n]["failures"] == rows[n]["failures"] for n in BOTS)
    abnormal = read_csv(report / "csv" / "abnormal_games.csv")
    assert len(abnormal) == sum(g["reason"] != "normal" for g in games)


@pytest.mark.slow
def test_every_abnormal_game_and_a_sample_have_a_replay(tournament: Path, report: Path) -> None:
    games = db_games(tournament)
    page = Page((report / "index.html").read_text())
    linked = {Path(link).stem for link in page.links if link.startswith("replays/")}
    abnormal = {g["game_id"] for g in games if g["reason"] != "normal"}
    normal = {g["game_id"] for g in games if g["reason"] == "normal"}
    assert abnormal <= linked
    assert len(linked & normal) == min(3, len(normal))
    for game_id in linked:
        page_text = (report / "replays" / f"{game_id}.html").read_text()
        assert 'href="../index.html"' in page_text and game_id in page_text
    # a forfeited game is listed without its meaningless scores (a TA read them as results)
    section = (report / "index.html").read_text().split('id="replays"', 1)[1].split("</section>", 1)[0]
    rows = [row for row in section.split("<tr>") if any(f">{g}<" in row for g in abnormal)]
    assert rows and all("<td class=num>aborted</td>" in row for row in rows), rows[:1]


@pytest.mark.slow
def test_ratings_section_tells_a_real_gap_from_noise(report: Path) -> None:
    bt = {row["name"]: row for row in read_csv(report / "csv" / "bradley_terry.csv")}
    assert set(bt) == set(BOTS)
    for row in bt.values():
        assert float(row["elo_low"]) < float(row["elo"]) < float(row["elo_high"])
    assert sum(float(row["elo"]) for row in bt.values()) == pytest.approx(0, abs=1e-6)
    los = pd.read_csv(report / "csv" / "likelihood_of_superiority.csv").set_index("row bot")
    assert los.loc["greedy", "crashy"] > 0.95
    values = los.to_numpy(float)
    off = ~np.eye(len(values), dtype=bool)
    assert np.allclose(values[off] + values.T[off], 1)


@pytest.mark.slow
def test_think_time_and_bank_match_the_moves(tournament: Path, report: Path) -> None:
    with sqlite3.connect(tournament / "tournament.db") as conn:
        rows = conn.execute("SELECT CASE m.player WHEN 0 THEN g.seat0 ELSE g.seat1 END, m.time_ms "
                            "FROM moves m JOIN games g USING (game_id)").fetchall()
    times: dict[str, list[float]] = {}
    for name, ms in rows:
        times.setdefault(name, []).append(ms)
    think = {row["name"]: row for row in read_csv(report / "csv" / "think_times.csv")}
    for name, values in times.items():
        assert int(think[name]["moves"]) == len(values)
        assert float(think[name]["max_ms"]) == pytest.approx(max(values))
        assert float(think[name]["median_ms"]) == pytest.approx(float(np.median(values)))
    slowest = read_csv(report / "csv" / "slowest_moves.csv")
    assert float(slowest[0]["time_ms"]) == pytest.approx(max(ms for _, ms in rows))


# ------------------------------------------------------------------ pure statistics
def _games(rows: list[tuple[str, str, int, str, int]]) -> pd.DataFrame:
    """A games frame from (seat0, seat1, winner, reason, first_player) rows."""
    frame = pd.DataFrame(rows, columns=["seat0", "seat1", "winner", "reason", "first_player"])
    return frame.assign(idx=range(len(frame)), game_id=[f"g{i}" for i in range(len(frame))],
                        pair=[i // 2 for i in range(len(frame))], score0=10, score1=5,
                        loser=pd.array([None if r == "normal" else 1 - w for w, r in
                                        zip(frame["winner"], frame["reason"], strict=True)], dtype="Int64"))


def test_seat_advantage_follows_first_player_not_seat_zero() -> None:
    games = _games([("a", "b", 1, "normal", 1), ("b", "a", 0, "normal", 0), ("a", "b", 0, "normal", 1),
                    ("a", "b", 0, "crash", 0)])
    seat = stats.seat_advantage(games, ["a", "b"]).set_index("name")
    assert seat.loc["all games", "games"] == 3 and seat.loc["all games", "first_wins"] == 2
    assert seat.loc["b", "first_games"] == 3 and seat.loc["b", "first_wins"] == 2
    assert seat.loc["a", "second_games"] == 3 and seat.loc["a", "second_wins"] == 1


def test_bradley_terry_keeps_a_perfect_record_finite_and_certain() -> None:
    games = _games([("a", "b", 0, "normal", 0), ("b", "a", 1, "normal", 0)] * 10
                   + [("b", "c", 0, "normal", 0), ("c", "b", 1, "normal", 0)] * 3
                   + [("b", "c", 1, "normal", 0)])
    bt = stats.bradley_terry(games, replicates=400, seed=1)
    table = bt.table.set_index("name")
    assert list(bt.table["name"]) == ["a", "b", "c"]
    assert np.isfinite(table["elo"]).all() and table.loc["a", "elo"] > 300
    assert bt.los.loc["a", "b"] > 0.99
    assert 0.5 < bt.los.loc["b", "c"] < 0.99  # 6-1 after seven games: likely, not certain
    assert stats._fit_many(np.array([[[0.0, 3], [1, 0]]]), np.zeros(2))[0] == pytest.approx(
        stats._fit(np.array([[0.0, 3], [1, 0]])))


def test_bots_the_fit_cannot_tell_apart_share_a_rank() -> None:
    """Organizer trial: two copies of one bot, with the same record against everyone, ranked 6th
    and 7th as if one were better: they share a rank now (1, 2, 2)."""
    games = _games([("a", "b", 0, "normal", 0), ("b", "a", 1, "normal", 0), ("a", "c", 0, "normal", 0),
                    ("c", "a", 1, "normal", 0), ("b", "c", 0, "normal", 0), ("c", "b", 0, "normal", 0)] * 3)
    bt = stats.bradley_terry(games, replicates=50, seed=1)
    assert bt.table["rank"].tolist() == [1, 2, 2], bt.table


# ------------------------------------------------------------------ empty, unfinished, wrong
def test_empty_folder_gives_a_plain_report(tmp_path: Path) -> None:
    folder = tmp_path / "results" / "new"
    folder.mkdir(parents=True)
    proc = arena("report", str(folder))
    assert proc.returncode == 0, proc.stderr
    assert "no tournament has been started" in proc.stdout and "Traceback" not in proc.stderr
    text = (folder / "report" / "index.html").read_text()
    assert "Nothing to report yet" in text and 'data-status="no-tournament"' in text
    assert {s.id for s in SECTIONS if s.shown is None} <= Page(text).ids  # not a format's own sections
    again = CliRunner().invoke(main, ["report", str(folder)])  # its own report/ folder is not content
    assert again.exit_code == 0 and "no tournament has been started" in again.stdout


def test_tournament_without_games_lists_its_entrants(tmp_path: Path) -> None:
    bots = misbehaving_bots(tmp_path / "bots")
    config = load_config(None, {"entrants": bots, "out": tmp_path / "results", "games": 4})
    with ResultStore(config.out, create=True) as store:
        store.save_config(config)
    proc = arena("report", str(config.out))
    assert proc.returncode == 0, proc.stderr
    assert "no games stored yet (0 of 24 scheduled)" in proc.stdout
    text = (config.out / "report" / "index.html").read_text()
    assert "No games stored yet</b> (0 of 24 scheduled)" in text
    assert all(name in text for name in MISBEHAVING)
    assert read_csv(config.out / "report" / "csv" / "entrants.csv")[0]["name"] in MISBEHAVING


def test_bots_named_like_report_columns_get_their_report(tmp_path: Path) -> None:
    """Red team: an entrant named "name" made `arena report` fail with a traceback (the matrices'
    first column was "name" too), after it had deleted the last report's files."""
    out = synthetic_results(tmp_path / "results", ["name", "rank", "elo"])
    proc = arena_here("report", str(out), "--bootstrap", "20")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    for table in ("likelihood_of_superiority", "head_to_head_wins"):
        header = (out / "report" / "csv" / f"{table}.csv").read_text().splitlines()[0].split(",")
        assert header[0] == "row bot" and sorted(header[1:]) == ["elo", "name", "rank"], header
    rows = {row["row bot"]: row for row in read_csv(out / "report" / "csv" / "head_to_head_wins.csv")}
    assert set(rows) == {"name", "rank", "elo"} and rows["name"]["name"] == ""  # no games against itself


def test_a_failing_section_leaves_the_rest_of_the_report(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A section whose computation fails (a bug, data no one foresaw) is left out with a note;
    the report is written, and without a traceback."""
    from arena.report import build, sections

    def broken(data: object) -> sections.Part:
        raise ValueError("cannot insert name, already exists")

    failing = sections.Section("broken", "Broken", broken, SECTIONS[1].template)
    monkeypatch.setattr(build, "SECTIONS", [*SECTIONS[:1], failing])
    folder = tmp_path / "results"
    folder.mkdir()
    summary = build.write_report(folder)
    assert any("the section 'Broken' could not be computed (ValueError: cannot insert name" in note
               for note in summary.notes), summary.notes
    page = summary.index.read_text()
    assert '<section id="broken"><h2>Broken</h2>' in page and "could not be computed" in page
    assert f'<section id="{SECTIONS[0].id}"><h2>' in page


def test_report_never_clears_a_folder_that_holds_no_report(tmp_path: Path) -> None:
    """`arena report RESULTS --out ~/data` cleared data/csv/*.csv and its other own file kinds."""
    results = tmp_path / "results"
    results.mkdir()
    mine = tmp_path / "data"
    (mine / "csv").mkdir(parents=True)
    (mine / "csv" / "budget.csv").write_text("a,b\n")
    result = CliRunner().invoke(main, ["report", str(results), "--out", str(mine)])
    assert result.exit_code == 1 and "holds files but no report" in result.stderr, result.output
    assert (mine / "csv" / "budget.csv").read_text() == "a,b\n"
    fifo = tmp_path / "fifo"  # a FIFO where index.html would be: read, it hung the command
    fifo.mkdir()
    os.mkfifo(fifo / "index.html")
    result = CliRunner().invoke(main, ["report", str(results), "--out", str(fifo)])
    assert result.exit_code == 1 and "holds files but no report" in result.stderr, result.output
    fresh = tmp_path / "fresh"
    for _ in range(2):  # a new folder, then over its own report
        result = CliRunner().invoke(main, ["report", str(results), "--out", str(fresh)])
        assert result.exit_code == 0, result.output


@pytest.mark.slow
def test_killed_run_gives_an_unfinished_report(tmp_path: Path) -> None:
    out = tmp_path / "killed"
    proc = subprocess.Popen([*ARENA_ARGV, "run-tournament", "--bots", str(SAMPLES / "random"),
                             "--bots", str(SAMPLES / "greedy"), "--games", "40", "--concurrency", "1",
                             "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            time.sleep(0.2)
            try:
                with sqlite3.connect(f"file:{out / 'tournament.db'}?mode=ro", uri=True) as conn:
                    if conn.execute("SELECT count(*) FROM games").fetchone()[0] >= 3:
                        break
            except sqlite3.Error:
                continue
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    stored = len(db_games(out))
    assert 3 <= stored < 40
    result = arena("report", str(out), "--bootstrap", "50")
    assert result.returncode == 0, result.stderr
    assert f"UNFINISHED: {stored} of 40 scheduled games stored" in result.stdout
    text = (out / "report" / "index.html").read_text()
    assert 'data-status="unfinished"' in text and f"{stored} of 40 scheduled games are stored" in text
    standings = read_csv(out / "report" / "csv" / "standings.csv")
    assert sum(int(row["games"]) for row in standings) == 2 * stored


@pytest.mark.parametrize(("make", "message"), [
    (lambda p: p / "missing", "no such folder"),
    (lambda p: (p / "file.txt").write_text("x") and p / "file.txt", "not a results folder (it is a file)"),
    (lambda p: (p / "stuff").mkdir() or (p / "stuff" / "notes.txt").write_text("x") and p / "stuff",
     "not a results folder (no tournament.db)"),
    (lambda p: (p / "bad").mkdir() or (p / "bad" / "tournament.db").write_text("not sqlite") and p / "bad",
     "not a patchwork-arena results database"),
])
def test_wrong_folders_give_one_line_errors(tmp_path: Path, make, message: str) -> None:  # type: ignore[no-untyped-def]
    result = CliRunner().invoke(main, ["report", str(make(tmp_path))])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert message in result.stderr and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1


# ------------------------------------------------------------------ in a browser
@pytest.mark.slow
def test_report_loads_in_headless_chromium(report: Path) -> None:
    with browser.chromium() as driver:
        driver.get((report / "index.html").as_uri())
        assert driver.title.startswith("Tournament report")
        loaded = driver.execute_script(
            "return Array.from(document.images).map(i => i.complete && i.naturalWidth > 0)")
        assert loaded and all(loaded)
        ids = driver.execute_script("return Array.from(document.querySelectorAll('section')).map(s => s.id)")
        assert ids == [s.id for s in SECTIONS if s.shown is None]  # a round robin's page
        shot = browser.screenshot(driver, "report.png", full_page=True)
        errors = browser.console_errors(driver)
        link = driver.execute_script("return document.querySelector('a.replay').getAttribute('href')")
        driver.get((report / link).as_uri())
        assert driver.execute_script("return document.body.dataset.ply") == "0"
        errors += browser.console_errors(driver)
    assert not errors, errors
    assert shot.stat().st_size > 10_000


@pytest.mark.slow
def test_records_in_the_report_replay(report: Path) -> None:
    """The embedded data of a linked replay is the engine's: as many states as moves + 1."""
    viewer = next((report / "replays").glob("*.html")).read_text()
    data = json.loads(viewer.split('id="game-data">', 1)[1].split("</script>", 1)[0].replace("<\\/", "</"))
    assert len(data["states"]) == len(data["moves"]) + 1


# ------------------------------------------------------------------ hostile text
HOSTILE = {"random": "<script>alert(1)</script>", "greedy": "\"'&<b>x"}
"""Bot names a tampered or foreign database may hold (manifests refuse them; the report must not
trust that)."""
HOSTILE_DETAIL = "</td><script>alert(2)</script><!--"
HOSTILE_INFO = "<img src=x onerror=alert(3)>"


@pytest.fixture(scope="module")
def hostile_report(tournament: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tournament's results with two bots renamed to markup, a failure detail and a
    move's info string that try to break out, written straight into the database."""
    import shutil

    folder = tmp_path_factory.mktemp("hostile") / "results"
    shutil.copytree(tournament, folder, ignore=shutil.ignore_patterns("report"))
    rename = lambda name: HOSTILE.get(name, name)  # noqa: E731
    with sqlite3.connect(folder / "tournament.db") as conn:
        for game_id, text in conn.execute("SELECT game_id, record FROM games").fetchall():
            record = json.loads(text)
            record["players"] = [rename(p) for p in record["players"]]
            if record["result"]["reason"] != "normal":
                record["result"]["detail"] = HOSTILE_DETAIL
            for move in record["moves"]:
                move["info"] = HOSTILE_INFO
            seats = record["players"]
            conn.execute("UPDATE games SET record = ?, seat0 = ?, seat1 = ?, winner_name = ?, "
                         "detail = CASE reason WHEN 'normal' THEN detail ELSE ? END WHERE game_id = ?",
                         (json.dumps(record), seats[0], seats[1], seats[record["result"]["winner"]],
                          HOSTILE_DETAIL, game_id))
        (text,) = conn.execute("SELECT value FROM tournament WHERE key = 'config'").fetchone()
        config = json.loads(text)
        for entrant in config["entrants"]:
            entrant["name"] = rename(entrant["name"])
        conn.execute("UPDATE tournament SET value = ? WHERE key = 'config'", (json.dumps(config),))
        for old, new in HOSTILE.items():
            conn.execute("UPDATE entrants SET name = ? WHERE name = ?", (new, old))
    proc = arena("report", str(folder), "--sample", "3", "--bootstrap", "50")
    assert proc.returncode == 0, proc.stderr
    return folder / "report"


@pytest.mark.slow
def test_hostile_text_is_escaped_everywhere(hostile_report: Path) -> None:
    text = (hostile_report / "index.html").read_text()
    pages = [text, *(p.read_text() for p in (hostile_report / "replays").glob("*.html"))]
    assert len(pages) > 1
    for page in pages:
        for raw in (*HOSTILE.values(), HOSTILE_DETAIL, HOSTILE_INFO, "alert(1)</script>", "<b>x",
                    "<img src=x"):
            assert raw not in page
    assert "<script" not in text  # the report page runs nothing
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "&#34;&#39;&amp;&lt;b&gt;x" in text
    standings = text.split('id="standings"', 1)[1].split("</section>", 1)[0]
    shown = Page(standings)
    assert set(HOSTILE.values()) <= set(shown.bots)  # as text, exactly as stored
    players: set[str] = set()
    for page in pages[1:]:
        assert page.count("<script") == 2 and page.count("</script>") == 2  # the data and the viewer
        data = json.loads(page.split('id="game-data">', 1)[1].split("</script>", 1)[0])
        players.update(data["players"])
        assert {m["info"] for m in data["moves"]} <= {HOSTILE_INFO}
    assert set(HOSTILE.values()) <= players  # and the data reads back exactly


@pytest.mark.slow
def test_hostile_pages_work_in_headless_chromium(hostile_report: Path) -> None:
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.keys import Keys

    def no_alert(driver) -> bool:  # type: ignore[no-untyped-def]
        try:
            driver.switch_to.alert.dismiss()
        except NoAlertPresentException:
            return True
        return False

    with browser.chromium() as driver:
        driver.get((hostile_report / "index.html").as_uri())
        assert no_alert(driver)
        bots = driver.execute_script(
            "return Array.from(document.querySelectorAll('#standings .bot')).map(b => b.textContent)")
        assert set(HOSTILE.values()) <= set(bots)
        assert driver.execute_script("return document.scripts.length") == 0
        errors = browser.console_errors(driver)
        link = driver.execute_script("return document.querySelector('a.replay').getAttribute('href')")
        viewer = hostile_report / link
        data = json.loads(viewer.read_text().split('id="game-data">', 1)[1].split("</script>", 1)[0])
        driver.get(viewer.as_uri())
        assert no_alert(driver)
        title = driver.execute_script("return document.getElementById('title').textContent")
        assert title == f"{data['players'][0]} vs {data['players'][1]}"
        browser.press(driver, Keys.END)
        assert driver.execute_script("return document.body.dataset.ply") == str(len(data["moves"]))
        assert no_alert(driver)
        shown = driver.execute_script("return document.getElementById('result').textContent")
        if data["result"]["reason"] != "normal":
            assert HOSTILE_DETAIL in shown
        infos = driver.execute_script(
            "return Array.from(document.querySelectorAll('#moves .info')).map(i => i.textContent)")
        assert infos and set(infos) == {HOSTILE_INFO}
        assert driver.execute_script("return document.images.length") == 0  # no <img> made from the info
        errors += browser.console_errors(driver)
    assert not errors, errors
