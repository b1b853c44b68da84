"""The ``arena`` command line: thin click commands over the library.

Every ArenaError becomes a one-line message and exit status 1, never a traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from arena import __version__
from arena.engine import EDITIONS
from arena.errors import ArenaError


class ArenaGroup(click.Group):
    """A group that turns our errors into one-line click errors."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except ArenaError as exc:
            raise click.ClickException(str(exc)) from None


@click.group(cls=ArenaGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="arena")
def main() -> None:
    """patchwork-arena: play, referee and rate Patchwork bots."""


@main.command("random-games")
@click.argument("n", type=click.IntRange(min=1))
@click.option("--seed", type=int, default=0, show_default=True,
              help="Base seed: game i uses seed S+i (circle and moves).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Write the game records here (.jsonl, overwritten).")
@click.option("--edition", type=click.Choice(EDITIONS), default="revised", show_default=True)
def random_games(n: int, seed: int, out: Path, edition: str) -> None:
    """Play N games of uniformly random legal moves and write their records.

    Seats alternate the first move from game to game.
    """
    from arena.engine.playout import random_game
    from arena.records import append_record, make_record, normal_result, utc_now

    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("")
    decisions = seat0_wins = 0
    totals = [0, 0]
    for i in range(n):
        started = utc_now()
        initial, moves, final = random_game(seed + i, edition, first_player=i % 2)
        result = normal_result(final)
        record = make_record(
            initial, ("random", "random"),
            [{"player": p, **m.to_json()} for p, m in moves], result,
            started_at=started, finished_at=utc_now())
        append_record(out, record)
        decisions += len(moves)
        seat0_wins += result["winner"] == 0
        totals[0] += result["scores"][0]
        totals[1] += result["scores"][1]
    click.echo(f"games: {n}")
    click.echo(f"mean decisions per game: {decisions / n:.1f}")
    click.echo(f"seat-0 win rate: {seat0_wins / n:.3f}")
    click.echo(f"mean scores: seat 0 {totals[0] / n:.1f}, seat 1 {totals[1] / n:.1f}")
    click.echo(f"records written to {out}")


@main.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--game", "game", type=click.IntRange(min=1), default=1, show_default=True,
              help="Which record of the file to render (1-based).")
@click.option("--step", is_flag=True, help="Render every position, move by move "
              "(waits for Enter between moves on a terminal).")
def replay(file: Path, game: int, step: bool) -> None:
    """Validate the game records of FILE and render one game."""
    from arena.engine.render import render
    from arena.errors import RecordError
    from arena.records import read_records
    from arena.records import replay as replay_record

    chosen = None
    count = 0
    for number, record in read_records(file):
        try:
            states = replay_record(record)
        except RecordError as exc:
            raise RecordError(f"{file}: record {number}: {exc}") from None
        count = number
        if number == game:
            chosen = (record, states)
    if chosen is None:
        raise click.ClickException(f"{file} holds {count} record(s); there is no game {game}")
    record, states = chosen
    players = tuple(record.get("players", ["seat 0", "seat 1"]))[:2]
    click.echo(f"{file}: {count} record(s) valid; game {game}: seed {record.get('seed')}, "
               f"edition {record.get('edition')}, {players[0]} vs {players[1]}")
    if step:
        interactive = sys.stdin.isatty() and sys.stdout.isatty()
        for i, state in enumerate(states):
            if i:
                click.echo(f"\nmove {i}: {_describe_move(record['moves'][i - 1], players)}")
            click.echo(render(state, players))  # type: ignore[arg-type]
            if interactive and i < len(states) - 1:
                click.prompt("", default="", show_default=False, prompt_suffix="[Enter] ")
    else:
        click.echo(render(states[-1], players))  # type: ignore[arg-type]
    result = record["result"]
    click.echo(f"result: {result['reason']}; scores {result['scores'][0]} : "
               f"{result['scores'][1]}; winner {players[result['winner']]}"
               + (f" ({result['detail']})" if result.get("detail") else ""))


def _describe_move(entry: dict, players: tuple) -> str:
    who = players[entry["player"]]
    if entry["action"] == "advance":
        return f"{who} advances"
    if entry["action"] == "buy":
        return f"{who} buys patch {entry['patch']} at {entry['cells']}"
    return f"{who} places a special patch at {entry['cells'][0]}"
