"""HTML from the package's Jinja2 templates (``arena/report/templates/``), autoescaped.

Every value a template prints is escaped unless it is :class:`markupsafe.Markup`, and only
two things here make Markup: our own asset files (:func:`asset`, the CSS and JavaScript
inlined so a page opens from disk) and :func:`json_script`, the one way to hand data to
JavaScript. Bot-controlled text (names, game ids, failure details, info strings) is never
marked safe.
"""

from __future__ import annotations

import base64
import json
import math
from functools import cache
from typing import Any

import pandas as pd
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from arena.resources import package_path
from arena.untrusted import for_terminal

MISSING = "–"
"""How a missing number is shown."""


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def num(value: Any, spec: str = "") -> str:
    """``value`` formatted by ``spec`` (format() syntax), or a dash when missing."""
    return MISSING if _missing(value) else format(value, spec)


def signed(value: Any, spec: str = "") -> str:
    """Like :func:`num` with the sign always shown."""
    return MISSING if _missing(value) else format(value, "+" + spec)


def pct(value: Any, spec: str = ".0%") -> str:
    """A share as a percentage, or a dash when missing."""
    return num(value, spec)


def text(value: Any) -> str:
    """``str(value)``, or a dash when missing."""
    return MISSING if _missing(value) else str(value)


def json_script(data: Any) -> Markup:
    """``data`` as JSON for a ``<script type="application/json">`` block: ``<``, ``>`` and
    ``&`` become ``\\u003c`` etc., so no string in it can end the block or open a comment
    (the same rule as Django's ``json_script``); JSON.parse reads them back unchanged."""
    payload = json.dumps(data, separators=(",", ":"), allow_nan=False)
    payload = payload.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(payload)  # noqa: S704 - escaped for a script block above


@cache
def asset(name: str) -> Markup:
    """The text of ``arena/report/assets/<name>`` (our own CSS or JavaScript, inlined)."""
    content = package_path("arena.report", "assets", name).read_text(encoding="utf-8")
    for bad in ("</", "<!--"):  # either could end or confuse the <style> or <script> block
        if bad in content:
            raise ValueError(f"arena/report/assets/{name}: '{bad}' cannot be inlined")
    return Markup(content)  # noqa: S704 - a package file, not data


def png_uri(png: bytes) -> str:
    """A PNG as a data URI (base64 needs no escaping)."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def visible(value: Any) -> Any:
    """Bot text as the page shows it: control characters, bidi overrides and other invisible
    format characters written out (``\\u202e``) as the terminal and the CSV files show them
    (:func:`arena.untrusted.for_terminal`): a right-to-left override in a bot's error message
    turned "not" around in the report. Every ``{{ }}`` goes through it; Markup (our own
    CSS, scripts, images) is left alone."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return for_terminal(value)
    return value


def visible_data(data: Any) -> Any:
    """:func:`visible` for every string in JSON-like ``data`` (what a page's script shows with
    textContent: the replay viewer's data)."""
    if isinstance(data, str):
        return for_terminal(data)
    if isinstance(data, dict):
        return {visible_data(k): visible_data(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [visible_data(v) for v in data]
    return data


@cache
def environment() -> Environment:
    """The one Jinja2 environment of the report: package templates, autoescape on, undefined
    names an error (a typo in a template fails the tests rather than printing nothing)."""
    env = Environment(loader=PackageLoader("arena.report", "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                      keep_trailing_newline=True, finalize=visible)
    env.filters.update(num=num, signed=signed, pct=pct, text=text, json_script=json_script, png_uri=png_uri)
    env.tests["missing"] = _missing
    env.globals.update(asset=asset)
    return env


def render(template: str, **context: Any) -> str:
    """Render ``templates/<template>`` with ``context``."""
    return environment().get_template(template).render(**context)


__all__ = ["MISSING", "asset", "environment", "json_script", "num", "pct", "png_uri", "render", "signed",
           "text", "visible", "visible_data"]
