"""The docs kept true by tests (in the style of sqlite-utils): every command and option of
`arena` is documented, and every endpoint of `arena serve` is in docs/serve.md."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click

from arena.cli import main

REPO = Path(__file__).resolve().parents[1]


def docs_text() -> str:
    return "\n".join(path.read_text() for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))])


def commands(group: click.Group, prefix: str = "arena") -> Iterator[tuple[str, click.Command]]:
    for name, command in sorted(group.commands.items()):
        path = f"{prefix} {name}"
        yield path, command
        if isinstance(command, click.Group):
            yield from commands(command, path)


def test_every_command_and_option_is_documented() -> None:
    text = docs_text()
    missing = []
    for path, command in commands(main):
        if f"`{path}" not in text:
            missing.append(path)
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                flags = [f for f in param.opts if f.startswith("--") and f != "--help"]
                if flags and not any(flag in text for flag in flags):
                    missing.append(f"{path} {flags[0]}")
    assert missing == [], f"undocumented in README.md or docs/*.md: {missing}"


def test_every_endpoint_of_serve_is_in_its_docs(tmp_path: Path) -> None:
    from arena.serve.app import Events, create_app
    from arena.serve.service import Arena, Options

    arena = Arena(Options(data=tmp_path, sandbox="none", house_bots=()))
    try:
        app = create_app(arena, Events())

        def plain(path: str) -> str:
            return re.sub(r"\{[^}]*\}", "{}", path)

        text = plain((REPO / "docs" / "serve.md").read_text())
        paths = {
            route.path
            for route in app.routes
            if route.path.startswith("/api/")  # type: ignore[attr-defined]
            and route.path not in ("/api/docs", "/api/openapi.json", "/api/docs/oauth2-redirect")
        }  # type: ignore[attr-defined]
        documented = set(re.findall(r"`(?:GET|POST|PUT|DELETE) (/api/[^`?]*)", text))
        for row in re.findall(r"`(?:GET|POST|PUT|DELETE) (/api/[^`?]*)`((?:, `/[a-z]+`)*)", text):
            base = row[0].rsplit("/", 1)[0]
            documented |= {f"{base}{suffix}" for suffix in re.findall(r"`(/[a-z]+)`", row[1])}
        missing = sorted(p for p in paths if plain(p) not in documented)
        assert missing == []
    finally:
        arena.close()


def test_the_cli_reference_is_generated_from_help() -> None:
    from arena.cli_reference import MARKER, render

    text = (REPO / "docs" / "cli.md").read_text()
    assert MARKER in text
    assert text.split(MARKER)[1].strip() == render().split(MARKER)[1].strip(), (
        "docs/cli.md is out of date: run python -m arena.cli_reference --write"
    )


def test_the_readme_stays_short_and_its_links_lead_somewhere() -> None:
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    for link in re.findall(r"\]\(([^)#]+)\)", readme):
        if not link.startswith("http"):
            assert (REPO / link).exists(), link


def test_where_to_change_one_thing_names_places_that_exist() -> None:
    text = (REPO / "docs" / "architecture.md").read_text().split("Where to change one thing")[1]
    named = re.findall(r"`((?:arena|tests|docs|protocol)/[^`]*)`", text)
    assert len(named) >= 8
    missing = [path for path in named if "<" not in path and not (REPO / path.rstrip("/")).exists()]
    assert missing == [], missing
    code = {path: (REPO / path).read_text() for path in named if path.endswith(".py")}
    for symbol in re.findall(r"`(\w+)` type", text) + re.findall(r"`(\w+)` \(`", text):
        assert any(symbol in source for source in code.values()), symbol


def test_the_bench_options_and_make_variables_are_documented() -> None:
    """`python -m arena.bench`'s sections and options, and the variables `make bench` passes on,
    are in docs/performance.md; and the Makefile passes each variable to its option."""
    from arena.bench import SECTIONS, parser

    text = (REPO / "docs" / "performance.md").read_text()
    flags = [f for action in parser()._actions for f in action.option_strings
             if f.startswith("--") and f != "--help"]
    assert set(flags) >= {"--quick", "--fastchess", "--stockfish"}
    missing = [f for f in flags if f"`{f}" not in text]
    missing += [f"section {name}" for name in SECTIONS
                if not re.search(rf"arena\.bench[^`\n]* {name}\b", text)]
    makefile = (REPO / "Makefile").read_text()
    bench = makefile.split("\nbench:", 1)[1].split("\n\n", 1)[0]
    for variable, flag in re.findall(r"\$\(if \$\((\w+)\),(--[\w-]+) \$\(\1\)\)", bench):
        assert flag in flags, (variable, flag)
        if f"make bench {variable}=" not in text.replace("\n", " "):
            missing.append(f"make bench {variable}=")
    assert re.findall(r"\$\(if \$\((\w+)\)", bench) == ["FASTCHESS", "STOCKFISH"]
    assert missing == [], f"undocumented in docs/performance.md: {missing}"


def test_contributing_says_what_make_test_runs() -> None:
    """docs/contributing.md quotes the pytest command of the Makefile's test target."""
    makefile = (REPO / "Makefile").read_text()
    command = re.search(r"^test:.*\n\t\$\(BIN\)/(pytest [^\n]+)$", makefile, re.M)
    assert command is not None, "the Makefile's test target runs no pytest command"
    contributing = " ".join((REPO / "docs" / "contributing.md").read_text().split())
    assert f"`{command.group(1)}`" in contributing, command.group(1)
