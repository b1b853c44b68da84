"""The report's section registry: the sections and their order, one template each, pure
compute functions, and a new section added with one function and one template."""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources

import pandas as pd
import pytest
from jinja2 import ChoiceLoader, DictLoader

from arena.clock import TimeControl
from arena.report import sections
from arena.report.render import environment, render
from arena.report.sections import SECTIONS, Part, ReportData, Table, section

PAGE_ORDER = [
    ("overview", "Overview"), ("standings", "Standings"), ("ratings", "Bradley-Terry ratings"),
    ("head-to-head", "Head to head"), ("seat-advantage", "Seat advantage"), ("endings", "How games ended"),
    ("think-time", "Think time"), ("scores", "Scores and game length"), ("progression", "Rating progression"),
    ("replays", "Replays"), ("files", "Files"),
]


def games_and_moves() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Four games of a and b (three by the rules, one crash) as the store's frames hold them,
    with two timed moves each."""
    rows = [("a", "b", 0, "normal", 30, 12), ("b", "a", 1, "normal", 5, 20), ("a", "b", 1, "normal", -3, 4),
            ("b", "a", 0, "crash", -40, -80)]
    games = pd.DataFrame([{
        "idx": i, "game_id": f"g{i}", "pair": i // 2, "seed": 7, "seat0": s0, "seat1": s1, "score0": a,
        "score1": b, "winner": w, "winner_name": (s0, s1)[w], "loser": pd.NA if r == "normal" else 1 - w,
        "reason": r, "detail": "" if r == "normal" else "bot a: exit code 1", "moves": 2, "duration_s": 0.5,
        "started_at": None, "finished_at": None, "first_player": 0}
        for i, (s0, s1, w, r, a, b) in enumerate(rows)])
    games["loser"] = games["loser"].astype("Int64")
    moves = pd.DataFrame([{"idx": i, "game_id": f"g{i}", "ply": ply, "player": ply, "name": (s0, s1)[ply],
                           "action": "advance", "patch": pd.NA, "cells": None, "time_ms": 10.0 + i + ply}
                          for i, (s0, s1, *_) in enumerate(rows) for ply in (0, 1)])
    moves["patch"] = moves["patch"].astype("Int64")
    return games, moves


def data(stored: bool = True) -> ReportData:
    games, moves = games_and_moves()
    if not stored:
        games, moves = games.iloc[:0], moves.iloc[:0]
    config = {"name": "t", "entrants": [{"name": "a"}, {"name": "b"}], "games": 2}
    return ReportData(games, moves, config, ["a", "b"], TimeControl().to_json(), scheduled=4, sample=2,
                      replicates=20)


def test_the_sections_in_page_order_each_with_its_template() -> None:
    assert [(s.id, s.title) for s in SECTIONS] == PAGE_ORDER
    names = set(environment().list_templates())
    for s in SECTIONS:
        assert s.template == f"sections/{s.id}.html" and s.template in names


def test_every_section_computes_from_frames_alone() -> None:
    report = data()
    parts = {s.id: s.compute(report) for s in SECTIONS}
    tables = [key for part in parts.values() for key in part.tables]
    assert tables == ["standings", "bradley_terry", "likelihood_of_superiority", "head_to_head",
                      "head_to_head_wins", "pairing_margins", "seat_advantage", "endings", "abnormal_games",
                      "think_times", "slowest_moves", "bank_use", "bank_summary", "scores", "game_lengths",
                      "rating_progression", "replays"]
    drawn = [key for part in parts.values() for key, plot in part.plots.items() if plot.figure is not None]
    assert drawn == ["elo", "head_to_head", "margins", "seat", "endings", "think_time", "scores", "lengths",
                     "progression"]  # no bank plot: nobody drew on the bank
    assert [row["name"] for row in parts["standings"].context["rows"]] == report.order
    assert len(parts["endings"].context["abnormal"]) == 1
    assert parts["overview"].context["facts"][-1] == ("ended abnormally", "1 (25%)")


def test_with_no_games_only_the_standings_and_entrants_are_written() -> None:
    parts = {s.id: s.compute(data(stored=False)) for s in SECTIONS}
    assert {key for part in parts.values() for key in part.tables} == {"standings", "entrants"}
    assert not any(part.plots for part in parts.values())
    assert all(not parts[sid].context for sid in ("ratings", "head-to-head", "endings", "replays"))


def test_registering_an_id_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        section("standings", "Again")(lambda data: Part())


@pytest.fixture
def extra_section() -> Iterator[None]:
    """A section registered for one test (its template given by a loader beside the package's)."""
    env = environment()
    loader = env.loader
    assert loader is not None and env.cache is not None
    template = ('<p class="intro">The longest game.</p>'
                '<p id="longest">{{ part.game }}: {{ part.moves }} moves</p>')
    env.loader = ChoiceLoader([DictLoader({"sections/longest.html": template}), loader])
    try:
        @section("longest", "Longest game")
        def _longest(data: ReportData) -> Part:
            top = data.games.sort_values("moves", kind="stable").iloc[-1]
            return Part({"game": top["game_id"], "moves": int(top["moves"])},
                        tables={"longest": Table(data.games.tail(1), "the longest game")})
        yield
    finally:
        sections.SECTIONS[:] = [s for s in sections.SECTIONS if s.id != "longest"]
        env.loader = loader
        env.cache.clear()


@pytest.mark.usefixtures("extra_section")
def test_a_new_section_is_one_function_and_one_template() -> None:
    report = data()
    assert SECTIONS[-1].id == "longest"
    parts = {s.id: s.compute(report).context for s in SECTIONS}
    page = render("page.html", sections=SECTIONS, parts=parts, title="t", folder="f", generated_at="now",
                  status="complete", stored=4, scheduled=4, config=report.config, colors=report.colors,
                  notes=[], figures={}, replay_links={}, csv_files=[], failed={})
    assert '<a href="#longest">Longest game</a>' in page
    assert '<section id="longest"><h2>Longest game</h2>' in page
    assert '<p id="longest">g3: 2 moves</p>' in page  # the last of the longest, in schedule order


def test_templates_ship_in_the_package() -> None:
    root = resources.files("arena.report").joinpath("templates", "sections")
    assert sorted(p.name for p in root.iterdir()) == sorted(f"{sid}.html" for sid, _ in PAGE_ORDER)


@pytest.mark.parametrize(("bots", "sample", "shown"), [(8, 6, 8), (8, 4, 8), (8, 3, 6), (3, 6, 3)])
def test_sampled_replays_show_every_bot_when_the_sample_allows(bots: int, sample: int, shown: int) -> None:
    """A round robin in name order: the first pairings' games were all bot a's."""
    import itertools

    from arena.report.stats import replay_selection

    names = [chr(ord("a") + n) for n in range(bots)]
    rows = [{"idx": i, "game_id": f"g{i}", "seat0": x, "seat1": y, "reason": "normal", "winner_name": x,
             "score0": 1, "score1": 0, "moves": 20, "detail": ""}
            for i, (x, y) in enumerate(p for p in itertools.combinations(names, 2) for _ in range(2))]
    picked = replay_selection(pd.DataFrame(rows), sample)
    assert len(picked) == min(sample, len(rows)) and set(picked["why"]) == {"sample"}
    assert len(set(picked["seat0"]) | set(picked["seat1"])) == shown, picked
    assert picked["idx"].is_monotonic_increasing
