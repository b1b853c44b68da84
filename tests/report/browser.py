"""Headless Chromium for the tests that open our HTML pages (Debian's chromium and
chromium-driver, driven by selenium).

A missing browser, driver or selenium FAILS the test with what to install: CI installs
them, so a skip would hide a broken setup. Nothing is downloaded: the driver is the
Debian one and Selenium Manager is kept offline.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ARTIFACTS = Path(__file__).parents[1] / "artifacts"
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1440,1000")


def _require() -> None:
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not os.access(path, os.X_OK)]
    if missing:
        pytest.fail(f"headless browser tests need {' and '.join(missing)}: "
                    "apt-get install chromium chromium-driver", pytrace=False)
    try:
        import selenium  # noqa: F401
    except ImportError:
        pytest.fail("headless browser tests need selenium: pip install selenium (in the dev extras)",
                    pytrace=False)


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium WebDriver with the browser console log enabled; quit on exit."""
    _require()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium Manager fetch anything
    profile = tempfile.mkdtemp(prefix="arena-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.set_page_load_timeout(30)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def console_errors(driver: Any) -> list[str]:
    """The browser console's errors (and uncaught exceptions) since the last call."""
    return [f"{entry.get('level')}: {entry.get('message')}" for entry in driver.get_log("browser")
            if entry.get("level") in ("SEVERE", "ERROR")]


def press(driver: Any, *keys: str) -> None:
    """Real key presses, sent to whatever has the focus (the page)."""
    from selenium.webdriver.common.action_chains import ActionChains

    chain = ActionChains(driver)
    for key in keys:
        chain.send_keys(key)
    chain.perform()


def screenshot(driver: Any, name: str, *, full_page: bool = False) -> Path:
    """Save a screenshot under tests/artifacts/ (kept for people to look at)."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    if full_page:
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(1440, min(int(height) + 40, 12000))
    driver.save_screenshot(str(path))
    return path
