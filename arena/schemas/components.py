"""Users' component tables (Stack'n Stuff's ``--components``, a record's or a stored config's):
read and checked here, before the engine builds a ruleset from them (the engine reads no
user file and checks nothing against a schema)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from arena.errors import ConfigError
from arena.schemas import check, got, problem


def check_components(data: Any, source: str) -> None:
    """Raise ConfigError ``SOURCE: key '...': expected ..., got ...`` unless ``data`` is a valid
    component table: the schema (arena/schemas/components.json), then the rules it cannot
    express (rows of equal length with a '#', spaces on the board, tile ids 0..n-1, the
    smallest tile a stack tile)."""
    check(data, "components", source, table="object")

    def fail(key: str, expected: str, value: Any) -> ConfigError:
        return ConfigError(f"{source}: {problem(key, expected, got(value, 'object'))}")

    final = data["time_board"]["final_space"]
    for key in ("income_spaces", "box_spaces"):
        for index, space in enumerate(data["time_board"][key]):
            if space > final:
                raise fail(f"time_board.{key}[{index}]", f"a space from 1 to final_space ({final})", space)
    ids: list[int] = []
    for group in ("stack_tiles", "stuff_tiles"):
        for index, tile in enumerate(data[group]):
            shape = tile["shape"]
            if len({len(row) for row in shape}) != 1 or "#" not in "".join(shape):
                raise fail(f"{group}[{index}].shape", "rows of equal length made of '#' and '.', with at "
                           "least one '#'", shape)
            ids.append(tile["id"])
    if sorted(ids) != list(range(len(ids))):
        raise fail("stack_tiles/stuff_tiles", f"tile ids 0..{len(ids) - 1}, each used once", sorted(ids))
    stack_ids = {tile["id"] for tile in data["stack_tiles"]}
    if data["smallest_stack_tile_id"] not in stack_ids:
        raise fail("smallest_stack_tile_id", "the id of a stack tile", data["smallest_stack_tile_id"])


def load_components(path: Path) -> dict:
    """Read a user's component file (JSON) for --components; errors name the file and the key."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON: {exc.msg} at line {exc.lineno}") from None
    except RecursionError:
        raise ConfigError(f"{path}: not valid JSON: arrays or objects nested too deeply") from None
    check_components(data, str(path))
    assert isinstance(data, dict)
    return data


__all__ = ["check_components", "load_components"]
