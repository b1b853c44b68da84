"""The GAMES registry is the one list of games: the CLI, the tournament schema, the protocol's
ruleset type and schemas, and every edition check agree with it."""

from __future__ import annotations

import json
from importlib import resources
from typing import get_args, get_type_hints

import click
import pytest

from arena.cli import main
from arena.engine.components import GAME_EDITIONS, GAMES, GameName
from arena.errors import ConfigError
from arena.protocol import messages
from arena.schemas import load_schema
from arena.tournament.config import check_edition


def test_the_protocol_type_and_the_registry_list_the_same_games() -> None:
    assert get_args(GameName) == GAMES == tuple(GAME_EDITIONS)
    hints = get_type_hints(messages.NewGameMessage)
    assert get_args(hints["ruleset"]) == GAMES


def test_the_tournament_schema_takes_its_games_from_the_registry() -> None:
    assert load_schema("tournament")["properties"]["game"]["enum"] == list(GAMES)
    shipped = json.loads(resources.files("arena.schemas").joinpath("tournament.json").read_text())
    assert shipped["properties"]["game"]["enum"] == list(GAMES)  # the file's readers see the same list


@pytest.mark.parametrize("name", ["new_game.json", "common.json"])
def test_the_protocol_schemas_list_the_registry_s_games(name: str) -> None:
    text = resources.files("arena.protocol").joinpath("schemas", name).read_text()
    node = json.loads(text)
    found = [n for n in _nodes(node) if isinstance(n, dict) and set(n) == {"enum"}
             and "patchwork" in n["enum"]]
    assert found and all(n["enum"] == list(GAMES) for n in found)


def _nodes(node: object):  # type: ignore[no-untyped-def]
    yield node
    if isinstance(node, dict):
        for value in node.values():
            yield from _nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from _nodes(value)


@pytest.mark.parametrize("command", ["run-tournament", "play"])
def test_the_cli_offers_the_registry_s_games(command: str) -> None:
    options = {o.name: o for o in main.commands[command].params}  # type: ignore[attr-defined]
    game = options["game"]
    assert isinstance(game.type, click.Choice) and tuple(game.type.choices) == GAMES


def test_each_game_s_first_edition_is_its_default_and_others_are_refused() -> None:
    for game, editions in GAME_EDITIONS.items():
        assert check_edition(game, None) == editions[0]
        for edition in editions:
            assert check_edition(game, edition) == edition
    with pytest.raises(ConfigError, match="expected one of 'revised', 'original'"):
        check_edition("patchwork", "standard")
    with pytest.raises(ConfigError, match="key 'game': expected one of 'patchwork', 'stack-n-stuff'"):
        check_edition("chess", None)
