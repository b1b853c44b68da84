"""The pages of `arena serve` in a real browser: a real server (a subprocess, --sandbox none,
a short time control, a free loopback port) driven through headless Chromium.

The tests of this module share one server and one browser and run in order: the upload
test makes the bots the later ones watch. Screenshots of each page go to tests/artifacts/,
or with ARENA_SCREENSHOTS=1 to docs/screenshots/ (the pictures docs/pages.md shows).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from arena.serve.archive import pack
from tests.report.browser import chromium, console_errors
from tests.serve.bots import crasher, player

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]
SCREENSHOTS = ROOT / "docs" / "screenshots"


def wait_for(check: Callable[[], Any], timeout_s: float, what: str, every_s: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(every_s)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    def __init__(self, url: str, data: Path, organizer: str, bots: Path) -> None:
        self.url = url
        self.data = data
        self.organizer = organizer
        self.bots = bots
        self.tokens: dict[str, str] = {}

    def api(self, method: str, path: str, token: str | None = None, **kwargs: Any) -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        response = httpx.request(method, self.url + path, headers=headers, timeout=30, **kwargs)
        assert response.status_code < 400, f"{method} {path}: {response.status_code} {response.text}"
        return response.json()

    def author(self, name: str) -> str:
        if name not in self.tokens:
            self.tokens[name] = self.api("POST", "/api/authors", self.organizer, json={"name": name})["token"]
        return self.tokens[name]

    def upload(self, author: str, name: str, folder: Path) -> dict[str, Any]:
        files = {"archive": (f"{name}.tar.gz", pack(folder), "application/gzip")}
        return self.api("POST", f"/api/bots/{name}/versions", self.author(author), files=files)  # type: ignore[no-any-return]

    def version_state(self, version_id: int) -> str:
        return str(self.api("GET", f"/api/versions/{version_id}")["state"])


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    data = Path(tempfile.mkdtemp(prefix="arena-pages-"))
    os.chmod(data, 0o755)  # as root the web process is nobody: it must reach its folders
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    argv = [
        sys.executable,
        "-c",
        "from arena.cli import main; main()",
        "serve",
        "--data",
        str(data / "arena"),
        "--port",
        str(port),
        "--sandbox",
        "none",
        "--time-per-move",
        "300",
        "--concurrency",
        "2",
    ]
    log = open(data / "serve.log", "w")  # noqa: SIM115 - closed below
    process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:

        def up() -> bool:
            if process.poll() is not None:
                pytest.fail(f"arena serve exited: {(data / 'serve.log').read_text()[-2000:]}")
            try:
                return httpx.get(url + "/api/ladder", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(up, 60, "arena serve to answer")
        organizer = (data / "arena" / "organizer.token").read_text().strip()
        bots = data / "bots"
        yield Server(url, data / "arena", organizer, bots)
    finally:
        os.killpg(process.pid, 15)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()
        log.close()
        subprocess.run(["rm", "-rf", str(data)], check=False)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        driver.set_window_size(1440, 1000)
        yield driver


def shot(driver: Any, name: str) -> None:
    """A screenshot for people to look at: tests/artifacts/serve-NAME.png, or with
    ARENA_SCREENSHOTS=1 docs/screenshots/NAME.png (the README's pictures, renewed)."""
    if os.environ.get("ARENA_SCREENSHOTS") == "1":
        path = SCREENSHOTS / f"{name}.png"
    else:
        path = ROOT / "tests" / "artifacts" / f"serve-{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(path))


def page_text(driver: Any) -> str:
    """The page's text, or "" while it is being replaced (a navigation makes elements stale)."""
    from selenium.common.exceptions import WebDriverException

    try:
        return str(driver.execute_script("return document.body ? document.body.innerText : '';"))
    except WebDriverException:
        return ""


def mark_page(driver: Any) -> None:
    """A global that a reload would lose."""
    driver.execute_script("window.__sameDocument = true;")


def same_page(driver: Any) -> bool:
    return driver.execute_script("return window.__sameDocument === true;") is True


def sign_in(driver: Any, url: str, token: str) -> None:
    """With the keyboard: type the token, press Enter."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver.delete_all_cookies()
    driver.get(url + "/signin")
    field = driver.find_element(By.ID, "token")
    field.send_keys(token + Keys.ENTER)
    wait_for(lambda: "/signin" not in driver.current_url, 10, "the sign-in to go through")


def no_script_ran(driver: Any) -> None:
    """None of the hostile strings ran: no global set, the title is ours, no element with an
    event handler attribute or a javascript: link, no CSP refusal and no error in the console."""
    found = driver.execute_script(  # at once: the live scripts redraw parts of the page
        """
        const attr = (sel, name) =>
          Array.from(document.querySelectorAll(sel), (e) => e.getAttribute(name) || "");
        return {
          pwned: window.pwned === undefined ? null : String(window.pwned),
          title: document.title,
          handlers: document.querySelectorAll("[onerror], [onload], [onclick], [onmouseover]").length,
          javascript: attr("a", "href").filter((h) => h.trim().toLowerCase().startsWith("javascript:")),
          scripts: Array.from(document.scripts, (e) => e.src || "<inline>"),
        };
        """
    )
    where = driver.current_url
    assert found["pwned"] is None, where
    assert "pwned" not in found["title"], where
    assert found["handlers"] == 0 and found["javascript"] == [], (where, found)
    assert all(src.startswith("http://127.0.0.1") for src in found["scripts"]), (where, found)
    errors = [e for e in console_errors(driver) if "favicon" not in e]
    assert errors == [], errors


# ---------------------------------------------------------------------- the tests, in order


def test_leaderboard_row_changes_without_reload(server: Server, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    browser.get(server.url + "/")
    script = (
        "const c = document.querySelector('tr[data-bot=\"random\"] td.games'); return c && c.textContent;"
    )

    def games() -> str | None:  # read in one script: the rows are redrawn as games end
        return browser.execute_script(script)  # type: ignore[no-any-return]

    wait_for(games, 20, "random's row")
    mark_page(browser)
    before = games()
    wait_for(lambda: games() not in (before, None), 60, "random's games to change")
    assert same_page(browser), "the page was reloaded"
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#chart svg polyline"), 20, "the rating chart")
    assert console_errors(browser) == []
    shot(browser, "leaderboard")


def test_author_uploads_through_the_form(server: Server, browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    slow = player(tmp_path / "slowbot", "slowbot", sleep_s=0.1)
    archive = tmp_path / "slowbot.tar.gz"
    archive.write_bytes(pack(slow))
    crashy = tmp_path / "crashy.tar.gz"
    crashy.write_bytes(pack(crasher(tmp_path / "crashy", "crashy")))

    sign_in(browser, server.url, server.author("alice"))
    assert browser.current_url.endswith("/me")
    for name, path, final in (("slowbot", archive, "active"), ("crashy", crashy, "rejected")):
        browser.find_element(By.ID, "archive").send_keys(str(path))
        field = browser.find_element(By.ID, "bot-name")
        field.clear()
        field.send_keys(name + Keys.ENTER)  # Enter submits the form
        wait_for(
            lambda n=name: f"{n}.v1 uploaded" in page_text(browser),
            30,
            f"{name} to be uploaded",
        )
        section = browser.find_element(By.XPATH, f"//section[.//h2/a[text()='{name}']]")
        state = section.find_element(By.CSS_SELECTOR, "td.state")
        first = state.text
        assert first in ("queued", "building", "checking", final)
        mark_page(browser)
        wait_for(lambda s=state, f=final: s.text == f, 240, f"{name} to become {final}", every_s=0.5)
        assert same_page(browser), "the page was reloaded"
        if final == "rejected":
            cause = section.find_element(By.CSS_SELECTOR, "td.cause").text
            assert "exit code 3" in cause, cause
            shot(browser, "my-arena")
    # a folder, packed as a zip by the page's script (stored, with the CRC of each file)
    folder = player(tmp_path / "slowbot-2" / "slowbot", "slowbot", sleep_s=0.12)
    browser.find_element(By.ID, "folder").send_keys(str(folder))
    field = browser.find_element(By.ID, "bot-name")
    field.clear()
    field.send_keys("slowbot" + Keys.ENTER)
    wait_for(
        lambda: "slowbot.v2 uploaded" in page_text(browser),
        30,
        "the folder to be uploaded as slowbot v2",
    )
    versions = server.api("GET", "/api/bots/slowbot")["versions"]
    assert [v["number"] for v in versions] == [1, 2]
    assert console_errors(browser) == []


def test_live_game_advances_move_by_move(server: Server, browser: Any) -> None:
    def running() -> str | None:
        for game in server.api("GET", "/api/games?bot=slowbot&limit=20"):
            if game["state"] == "running" and game["moves"] < 12:
                return str(game["id"])
        return None

    game_id = wait_for(running, 120, "a game of slowbot to start")
    browser.get(f"{server.url}/games/{game_id}")
    mark_page(browser)
    seen: list[int] = []

    def advanced() -> bool:
        ply = browser.execute_script("return document.body.dataset.ply;")
        if ply is not None and (not seen or int(ply) != seen[-1]):
            seen.append(int(ply))
        return len(seen) >= 4

    wait_for(advanced, 60, "the viewer to show new moves", every_s=0.05)
    assert seen == sorted(seen), seen
    assert same_page(browser)
    shot(browser, "game-live")
    assert console_errors(browser) == []


def test_hostile_strings_run_no_script(server: Server, browser: Any, tmp_path: Path) -> None:
    made = server.upload("alice", "evil", player(tmp_path / "evil", "evil", hostile=True))
    wait_for(lambda: server.version_state(made["id"]) == "active", 240, "evil to become active", every_s=1)

    def finished() -> str | None:
        games = [g for g in server.api("GET", "/api/games?bot=evil&limit=20") if g["state"] == "finished"]
        return str(games[0]["id"]) if games else None

    game_id = wait_for(finished, 120, "a finished game of evil", every_s=1)
    pages = ["/", "/games", "/games?bot=evil", f"/games/{game_id}", "/bots/evil", "/me", "/bots/crashy"]
    for signed_in in (True, False):
        if signed_in:
            sign_in(browser, server.url, server.author("alice"))
        else:
            browser.delete_all_cookies()
        for path in pages:
            browser.get(server.url + path)
            time.sleep(1.5)  # the page's scripts fetch and draw
            no_script_ran(browser)
    sign_in(browser, server.url, server.author("alice"))
    browser.get(server.url + "/bots/evil")
    body = browser.find_element("tag name", "body").text
    assert "onerror" in body and "<script>" in body  # shown as text: the description and the log
    shot(browser, "bot")
    browser.get(f"{server.url}/games/{game_id}")
    time.sleep(1.5)
    assert "window.pwned=3" in browser.find_element("id", "moves").text  # the info strings, as text


def test_reports_and_logs_are_for_their_author(server: Server, browser: Any) -> None:
    secret = "cannot start"  # the crashing bot's log line
    browser.delete_all_cookies()
    browser.get(server.url + "/bots/crashy")
    assert "Check reports" not in browser.page_source and secret not in browser.page_source
    sign_in(browser, server.url, server.author("bob"))
    browser.get(server.url + "/bots/crashy")
    assert "Check reports" not in browser.page_source and secret not in browser.page_source
    sign_in(browser, server.url, server.author("alice"))
    browser.get(server.url + "/bots/crashy")
    assert "Check reports" in browser.page_source and secret in browser.page_source


def test_organizer_pauses_and_resumes_the_ladder(server: Server, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    sign_in(browser, server.url, server.organizer)
    assert browser.current_url.endswith("/admin")
    shot(browser, "admin")
    browser.find_element(By.ID, "pause").send_keys(Keys.ENTER)
    wait_for(lambda: browser.find_elements(By.ID, "resume"), 10, "the ladder to pause")
    assert server.api("GET", "/api/ladder")["paused"] is True
    wait_for(lambda: server.api("GET", "/api/ladder")["running"] == 0, 60, "the games in progress to end")
    stored = server.api("GET", "/api/ladder")["games"]
    time.sleep(4)
    ladder = server.api("GET", "/api/ladder")
    assert ladder["running"] == 0 and ladder["games"] == stored, "a game started while paused"
    browser.find_element(By.ID, "resume").send_keys(Keys.ENTER)
    wait_for(lambda: browser.find_elements(By.ID, "pause"), 10, "the ladder to resume")
    wait_for(lambda: server.api("GET", "/api/ladder")["games"] > stored, 60, "a game after resuming")


def test_keyboard_alone(server: Server, browser: Any) -> None:
    from selenium.webdriver.common.keys import Keys

    from tests.report.browser import press

    browser.delete_all_cookies()
    browser.get(server.url + "/")
    reached = []
    for _ in range(8):  # the skip link, the site's links...
        press(browser, Keys.TAB)
        active = browser.switch_to.active_element
        reached.append(active.text)
        if active.text == "Games":
            break
    assert reached[0] == "Skip to the content", reached
    assert reached[-1] == "Games", reached
    press(browser, Keys.ENTER)
    wait_for(lambda: browser.current_url.rstrip("/").endswith("/games"), 10, "the games page")
    shot(browser, "games")
    # the bot filter: tab to it, choose with the arrow keys, submit with Enter
    for _ in range(12):
        press(browser, Keys.TAB)
        if browser.switch_to.active_element.get_attribute("id") == "bot-filter":
            break
    assert browser.switch_to.active_element.get_attribute("id") == "bot-filter"
    press(browser, Keys.ARROW_DOWN, Keys.TAB)  # a bot, then the Show button
    assert browser.switch_to.active_element.text == "Show"
    press(browser, Keys.ENTER)
    wait_for(lambda: "bot=" in browser.current_url, 10, "the filtered games")
    browser.get(server.url + "/signin")
    shot(browser, "signin")
