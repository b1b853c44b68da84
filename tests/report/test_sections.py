"""The report's section registry: the sections and their order, one template each, pure
compute functions, and a new section added with one function and one template."""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pandas as pd
import pytest
from jinja2 import ChoiceLoader, DictLoader

from arena.clock import TimeControl
from arena.report import sections
from arena.report.render import environment, render
from arena.report.sections import SECTIONS, Part, ReportData, Table, section, sections_for
from arena.tournament.config import Entrant, TournamentConfig
from arena.tournament.schedule import GameSpec
from arena.tournament.scheduler import make_scheduler

PAGE_ORDER = [
    ("overview", "Overview"), ("standings", "Standings"), ("swiss", "Swiss rounds"),
    ("bracket", "Knockout bracket"), ("ratings", "Bradley-Terry ratings"),
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
    formats_only = ("swiss", "bracket")  # a round robin's page leaves them out
    assert [s.id for s in sections_for(report)] == [sid for sid, _ in PAGE_ORDER if sid not in formats_only]
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


# ------------------------------------------------------------------ the formats' sections
def format_data(fmt: str, names: tuple[str, ...], cut: int | None = None, **plan: int) -> ReportData:
    """The frames of a Swiss or knockout run played by a scheduler (the later name always wins),
    its first ``cut`` games stored."""
    config = TournamentConfig(name="t", entrants=tuple(Entrant(n, Path(n)) for n in names), format=fmt,
                              **plan)  # type: ignore[arg-type]
    scheduler = make_scheduler(config.plan)
    rows = []
    while isinstance(game := scheduler.next(), GameSpec):
        winner = int(game.seat1 > game.seat0)
        scheduler.record(game, winner)
        rows.append({"idx": game.index, "game_id": game.game_id, "pair": game.pair, "seed": game.seed,
                     "seat0": game.seat0, "seat1": game.seat1, "score0": 1 - winner, "score1": winner,
                     "winner": winner, "winner_name": (game.seat0, game.seat1)[winner], "loser": pd.NA,
                     "reason": "normal", "detail": "", "moves": 2, "duration_s": 0.5, "started_at": None,
                     "finished_at": None, "first_player": 0})
    games = pd.DataFrame(rows[:cut])
    games["loser"] = games["loser"].astype("Int64")
    _, moves = games_and_moves()
    return ReportData(games, moves.iloc[:0], config.to_json(), list(names), TimeControl().to_json(),
                      replicates=20)


def page_of(report: ReportData) -> str:
    shown = sections_for(report)
    parts = {s.id: s.compute(report).context for s in shown}
    return render("page.html", sections=shown, parts=parts, title="t", folder="f", generated_at="now",
                  status="complete", stored=report.stored, scheduled=None, config=report.config,
                  colors=report.colors, notes=[], figures={}, replay_links={}, csv_files=[], failed={})


def test_a_swiss_report_shows_each_round_its_bye_and_standings() -> None:
    report = format_data("swiss", ("a", "b", "c"), rounds=2)
    assert [s.id for s in sections_for(report)][:3] == ["overview", "standings", "swiss"]
    part = SECTIONS[[s.id for s in SECTIONS].index("swiss")].compute(report)
    first, second = part.context["rounds"]
    assert first["boards"][0] | {} == {"round": 1, "board": 1, "first": "a", "second": "b", "first_wins": 0,
                                      "second_wins": 2, "games": 2}
    assert (first["bye"], second["bye"]) == ("c", "a")  # the lowest-placed without a bye
    assert [(s["name"], s["wins"]) for s in first["standings"]] == [("b", 2), ("c", 1), ("a", 0)]
    byes = part.tables["swiss_pairings"].frame.query("board == 0")
    assert list(byes["first"]) == ["c", "a"] and list(byes["first_wins"]) == [1, 1]
    page = page_of(report)
    assert '<section id="swiss"><h2>Swiss rounds</h2>' in page and "bracket" not in page
    assert "2 of 2 rounds paired" in page and ": bye</td>" in page


def test_an_unfinished_swiss_round_says_so() -> None:
    report = format_data("swiss", ("a", "b", "c", "d"), cut=5, rounds=2)  # round 2's first game only
    page = page_of(report)
    assert "Round 2 is still being played" in page and "(playing)" in page


def test_a_knockout_report_draws_the_bracket() -> None:
    report = format_data("knockout", ("a", "b", "c", "d", "e"), games=2)
    assert "bracket" in [s.id for s in sections_for(report)]
    part = SECTIONS[[s.id for s in SECTIONS].index("bracket")].compute(report)
    assert [r["title"] for r in part.context["rounds"]] == ["Quarter-finals", "Semi-finals", "Final"]
    assert part.context["champion"] == "e"
    frame = part.tables["bracket"].frame
    assert list(frame["by"]) == ["bye", "games", "bye", "bye", "games", "games", "games"]
    page = page_of(report)
    assert "Winner: <b>" in page and "<i>bye</i>" in page


def test_names_in_the_format_sections_are_escaped() -> None:
    report = format_data("swiss", ("<b>x</b>", "y"), rounds=1)
    page = page_of(report)
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page
