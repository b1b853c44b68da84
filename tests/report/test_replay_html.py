"""`arena replay --html`: the standalone viewer of one game, its data checked against the
engine, and stepped through with real key presses in headless Chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from arena.engine import GameState
from arena.records import read_records, replay
from arena.report.replay_html import replay_data, replay_html
from tests.helpers import arena_here, synthetic_results
from tests.report import browser


@pytest.fixture(scope="module")
def games(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """games.jsonl of a small round robin, stored without playing (tests.helpers.synthetic_results):
    random, greedy and crashy, whose first game is a crash (the records of real games are
    replayed by the tests of arena play and run-tournament)."""
    root = tmp_path_factory.mktemp("replay")
    out = synthetic_results(root / "results", ["random", "greedy", "crashy"],
                            detail="crashy exited with exit code 1\nlast 3 lines of its log:\n"
                                   "  Traceback (most recent call last):\n"
                                   '    File "bot.py", line 9, in <module>\n'
                                   "  RuntimeError: boom")
    return out / "games.jsonl"


def records(path: Path) -> list[dict]:
    return [record for _, record in read_records(path)]


def number_of(path: Path, normal: bool) -> int:
    """The 1-based number of the first record that ended normally (or abnormally)."""
    return next(i for i, r in enumerate(records(path), start=1)
                if (r["result"]["reason"] == "normal") == normal)


def embedded(page: str) -> dict:
    text = page.split('<script type="application/json" id="game-data">', 1)[1].split("</script>", 1)[0]
    return json.loads(text.replace("<\\/", "</"))


def test_viewer_data_is_the_engine_replay(games: Path) -> None:
    record = records(games)[number_of(games, normal=True) - 1]
    states = replay(record)
    data = replay_data(record)
    assert len(data["states"]) == len(states) == len(record["moves"]) + 1
    assert len(data["moves"]) == len(record["moves"])
    for shown, state in zip(data["states"], states, strict=True):
        full = state.to_json()
        assert shown["positions"] == full["positions"] and shown["buttons"] == full["buttons"]
        assert shown["placed"] == full["placed"] and shown["circle"] == full["circle"]
        assert shown["quilts"] == full["quilts"] and shown["scores"] == list(state.scores())
        assert GameState.from_json({**full}).to_json() == full
    assert data["states"][-1]["scores"] == record["result"]["scores"]
    assert [m["time_ms"] for m in data["moves"]] == [m["time_ms"] for m in record["moves"]]
    buys = [m for m in data["moves"] if m["action"] == "buy"]
    assert buys and all(f"buys patch {m['patch']} " in m["text"] for m in buys)
    assert set(data["patches"]) >= {str(p) for p in record["circle"]}
    assert data["players"] == record["players"] and data["result"]["reason"] == "normal"


def test_viewer_of_an_abnormal_game_says_who_failed(games: Path) -> None:
    record = records(games)[number_of(games, normal=False) - 1]
    data = replay_data(record)
    loser = record["players"][record["result"]["loser"]]
    assert data["result"]["text"].startswith(f"{loser} crashed after {len(record['moves'])} moves")
    assert data["result"]["detail"] == record["result"]["detail"]


def test_cli_writes_a_standalone_viewer(games: Path, tmp_path: Path) -> None:
    k = number_of(games, normal=True)
    out = tmp_path / "viewer" / "game.html"
    proc = arena_here("replay", str(games), "--game", str(k), "--html", str(out))
    assert proc.returncode == 0, proc.stderr
    assert f"replay viewer written to {out}" in proc.stdout
    page = out.read_text()
    record = records(games)[k - 1]
    assert embedded(page)["moves"][0]["player"] == record["moves"][0]["player"]
    assert len(embedded(page)["states"]) == len(record["moves"]) + 1
    assert not re.search(r"""(src|href)=["']?https?:""", page)  # no network: no CDN, no fonts
    assert "<script src" not in page and "<link rel=\"stylesheet\"" not in page


def test_a_game_is_chosen_by_its_id_as_the_report_shows_it(games: Path, tmp_path: Path) -> None:
    """Organizer trial: the report names games by id and schedule number, replay took only the
    record's line number in games.jsonl (the order games finished): --game 4 was another game."""
    every = records(games)
    k = len(every)
    game_id = every[k - 1]["game_id"]
    by_id = arena_here("replay", str(games), "--game", game_id)
    by_number = arena_here("replay", str(games), "--game", str(k))
    assert by_id.returncode == 0, by_id.stderr
    assert f"game {k} ({game_id}): seed" in by_id.stdout
    assert by_id.stdout.split(": seed", 1)[1] == by_number.stdout.split(": seed", 1)[1]
    unknown = arena_here("replay", str(games), "--game", "0099-nobody-vs-nobody")
    assert unknown.returncode == 1, unknown.stderr
    assert "there is no game with the id '0099-nobody-vs-nobody'" in unknown.stderr


def test_cli_errors_are_one_line(games: Path, tmp_path: Path) -> None:
    missing = arena_here("replay", str(games), "--game", "99", "--html", str(tmp_path / "x.html"))
    assert missing.returncode == 1 and "there is no game 99" in missing.stderr
    blocked = tmp_path / "file"
    blocked.write_text("")
    unwritable = arena_here("replay", str(games), "--html", str(blocked / "x.html"))
    assert unwritable.returncode == 1 and "cannot write the viewer" in unwritable.stderr
    for proc in (missing, unwritable):
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_names_cannot_break_out_of_the_page(games: Path) -> None:
    record = dict(records(games)[0])
    record["players"] = ["</script><script>alert(1)</script>", "<b>bold</b>"]
    page = replay_html(record)
    assert "</script><script>alert(1)" not in page
    assert embedded(page)["players"] == record["players"]


@pytest.mark.slow
def test_viewer_steps_with_key_presses_in_headless_chromium(games: Path, tmp_path: Path) -> None:
    k = number_of(games, normal=True)
    record = records(games)[k - 1]
    moves = len(record["moves"])
    normal_page, crash_page = tmp_path / "normal.html", tmp_path / "crash.html"
    assert arena_here("replay", str(games), "--game", str(k), "--html", str(normal_page)).returncode == 0
    bad = number_of(games, normal=False)
    assert arena_here("replay", str(games), "--game", str(bad), "--html", str(crash_page)).returncode == 0
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    def shown(driver) -> tuple[str, str, str]:  # type: ignore[no-untyped-def]
        current = driver.find_elements(By.CSS_SELECTOR, "#moves li.current")
        return (driver.find_element(By.ID, "counter").get_attribute("data-ply") or "",
                driver.find_element(By.ID, "slider").get_attribute("value") or "",
                current[0].text if current else "")

    with browser.chromium() as driver:
        driver.get(normal_page.as_uri())
        assert shown(driver) == ("0", "0", "")
        assert driver.find_element(By.ID, "counter").text == f"start of {moves}"
        assert len(driver.find_elements(By.CSS_SELECTOR, "svg.quilt")) == 2
        assert len(driver.find_elements(By.CSS_SELECTOR, "#ring > g.mini")) == len(record["circle"])
        browser.press(driver, Keys.ARROW_RIGHT)
        ply, slider, text = shown(driver)
        assert (ply, slider) == ("1", "1") and record["players"][record["moves"][0]["player"]] in text
        browser.press(driver, Keys.ARROW_RIGHT, Keys.ARROW_RIGHT, Keys.ARROW_RIGHT)
        assert shown(driver)[:2] == ("4", "4")
        fourth = shown(driver)[2]
        browser.press(driver, Keys.ARROW_LEFT)
        assert shown(driver)[:2] == ("3", "3") and shown(driver)[2] != fourth
        browser.press(driver, Keys.END)
        assert shown(driver)[:2] == (str(moves), str(moves))
        winner = record["players"][record["result"]["winner"]]
        assert f"Game over: {winner} wins" in driver.find_element(By.ID, "lastmove").text
        browser.press(driver, Keys.HOME, *[Keys.ARROW_RIGHT] * 12)
        assert shown(driver)[0] == "12"
        placed = driver.execute_script("return document.querySelectorAll('svg.quilt g.patch').length")
        assert placed == sum(1 for m in record["moves"][:12] if m["action"] in ("buy", "special"))
        driver.find_element(By.ID, "prev").click()
        assert shown(driver)[0] == "11"
        browser.screenshot(driver, "replay.png")
        errors = browser.console_errors(driver)

        driver.get(crash_page.as_uri())
        browser.press(driver, Keys.END)
        assert "crashed" in driver.find_element(By.ID, "lastmove").text
        # a crash's detail keeps its lines (its log tail), as the report shows it
        detail = driver.find_element(By.CSS_SELECTOR, "#result .detail")
        crash_detail = records(games)[bad - 1]["result"]["detail"]
        assert "\n" in crash_detail and detail.text.count("\n") >= crash_detail.strip().count("\n"), \
            detail.text
        browser.screenshot(driver, "replay-crash.png")
        errors += browser.console_errors(driver)
    assert not errors, errors
