"""The report's template environment: autoescape on, strict about undefined names, data
for JavaScript embedded as JSON that cannot end its script block, and package files
(templates, assets) that load and parse."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from importlib import resources

import pandas as pd
import pytest
from jinja2 import UndefinedError

from arena.report.render import MISSING, asset, environment, json_script, num, pct, render, signed, text

HOSTILE = ["</script><script>alert(1)</script>", "<!--<script>", "\"'&<b>", "\u2028\u2029", "]]>"]


def test_values_are_escaped_by_default() -> None:
    env = environment()
    assert env.from_string("{{ x }}").render(x="<b>\"'&") == "&lt;b&gt;&#34;&#39;&amp;"
    assert env.from_string('<a title="{{ x }}">').render(x='" onmouseover="x') == \
        '<a title="&#34; onmouseover=&#34;x">'


def test_an_undefined_name_is_an_error() -> None:
    with pytest.raises(UndefinedError):
        environment().from_string("{{ missing }}").render()


def test_json_script_cannot_end_its_block_and_reads_back() -> None:
    payload = str(json_script({"players": HOSTILE, "n": 1}))
    assert not re.search(r"[<>&]", payload)
    assert json.loads(payload) == {"players": HOSTILE, "n": 1}
    with pytest.raises(ValueError):
        json_script({"x": math.nan})  # not JSON: never written as NaN


def test_formats_show_a_dash_for_missing_values() -> None:
    for missing in (None, math.nan, pd.NA):
        assert num(missing, "d") == signed(missing, ".1f") == pct(missing) == text(missing) == MISSING
    assert (num(3, "d"), signed(2.25, ".1f"), pct(0.5), pct(0.1234, ".1%"), text("x")) == \
        ("3", "+2.2", "50%", "12.3%", "x")


def test_every_template_compiles_and_marks_nothing_safe() -> None:
    env = environment()
    names = env.list_templates()
    assert {"page.html", "replay.html", "macros.html"} <= set(names)
    root = resources.files("arena.report").joinpath("templates")
    for name in names:
        env.get_template(name)
        source = root.joinpath(*name.split("/")).read_text(encoding="utf-8")
        assert "|safe" not in source.replace(" ", "") and "Markup" not in source, name


def test_assets_are_package_files_inlined_as_they_are() -> None:
    folder = resources.files("arena.report").joinpath("assets")
    names = sorted(p.name for p in folder.iterdir() if p.is_file())
    assert names == ["replay.css", "replay.js", "report.css"]
    for name in names:
        assert str(asset(name)) == folder.joinpath(name).read_text(encoding="utf-8")
    page = render("replay.html", title="<t>", back_link=None, data={"players": HOSTILE})
    assert str(asset("replay.js")) in page and "Replay: &lt;t&gt;" in page


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (the syntax check only)")
def test_replay_javascript_parses() -> None:
    path = resources.files("arena.report").joinpath("assets", "replay.js")
    proc = subprocess.run(["node", "--check", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
