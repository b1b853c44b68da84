"""The CLI reference of docs/cli.md, generated from the commands' own ``--help``.

``python -m arena.cli_reference`` prints it; tests/test_docs.py fails when docs/cli.md's
generated part differs from what this prints (run ``python -m arena.cli_reference --write``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import click

MARKER = "<!-- generated from --help by `python -m arena.cli_reference --write`: do not edit below -->"


def _commands(group: click.Group, prefix: str) -> Iterator[tuple[str, click.Command, click.Context]]:
    for name in sorted(group.commands):
        command = group.commands[name]
        path = f"{prefix} {name}"
        # -h as the arena group gives it (click caches a command's help option: a context of
        # its own would make the text depend on which command ran first in the process)
        context = click.Context(command, info_name=path, terminal_width=100, max_content_width=100,
                                help_option_names=["-h", "--help"])
        yield path, command, context
        if isinstance(command, click.Group):
            yield from _commands(command, path)


def render() -> str:
    """Every command's help, in name order, as Markdown."""
    from arena.cli import main

    parts = [MARKER, "", "## Every command's --help", ""]
    for path, _command, context in _commands(main, "arena"):
        text = context.get_help().replace(f"Usage: {path.split()[-1]}", f"Usage: {path}")
        parts += [f"### `{path}`", "", "```", text.rstrip(), "```", ""]
    return "\n".join(parts)


def write(doc: Path) -> None:
    text = doc.read_text()
    head = text.split(MARKER)[0].rstrip("\n")
    doc.write_text(head + "\n\n" + render())


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write(Path(__file__).resolve().parents[1] / "docs" / "cli.md")
    else:
        print(render())
