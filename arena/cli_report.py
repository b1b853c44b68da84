"""The ``arena report`` command (registered on the ``arena`` group in :mod:`arena.cli`)."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("results", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Write the report here (default: RESULTS/report).")
@click.option("--sample", type=click.IntRange(0, 100_000), default=6, show_default=True,
              help="Normal games to link a replay viewer for (every abnormal game gets one).")
@click.option("--bootstrap", "replicates", type=click.IntRange(2, 100_000), default=1000, show_default=True,
              help="Simulated tournaments for the Bradley-Terry intervals.")
@click.option("--seed", type=click.IntRange(0, 2**63 - 1), default=0, show_default=True,
              help="Seed of those simulations.")
def report(results: Path, out: Path | None, sample: int, replicates: int, seed: int) -> None:
    """Write the report of a results folder: RESULTS/report/index.html (self-contained:
    tables and plots embedded, opens from disk), the plots as PNG, the tables as CSV and
    replay viewers. Works on a finished, unfinished (also while it runs) or empty folder."""
    from arena.report.build import write_report
    from arena.untrusted import for_terminal

    summary = write_report(results, out, sample=sample, replicates=replicates, seed=seed)
    if summary.status == "no tournament":
        state = "no tournament has been started in this folder yet"
    elif summary.status == "empty":
        of = f" (0 of {summary.scheduled} scheduled)" if summary.scheduled else ""
        state = "no games stored yet" + of
    elif summary.status == "unfinished":
        state = f"UNFINISHED: {summary.stored} of {summary.scheduled} scheduled games stored"
    else:
        state = f"{summary.stored} games, complete"
    click.echo(f"{results}: {state}")
    for note in summary.notes:
        click.echo(f"note: {for_terminal(note, newlines=False)}")
    click.echo(f"report written to {summary.index}" + (f" ({summary.replays} replay viewers)"
                                                       if summary.replays else ""))


def write_replay_html(record: dict, states: list, out: Path) -> None:
    """``arena replay --html OUT``: write the viewer of one validated record."""
    from arena.errors import ConfigError
    from arena.report.replay_html import replay_html

    page = replay_html(record, states)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{out}: cannot write the viewer ({exc.strerror})") from None
    click.echo(f"replay viewer written to {out} ({len(states) - 1} moves; open it in a browser)")
