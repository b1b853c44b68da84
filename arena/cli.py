"""The ``arena`` command line: thin click commands over the library.

Every ArenaError becomes a one-line message and exit status 1, never a traceback.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from arena import __version__
from arena.clock import DEFAULT_TIME_CONTROL, TimeControl
from arena.engine.components import GAME_EDITIONS, GAMES
from arena.errors import ArenaError
from arena.launch.launcher import Launcher
from arena.launch.levels import LEVELS as SANDBOX_LEVELS
from arena.launch.levels import Sandbox
from arena.serve.ladder import FAILING_STREAK
from arena.tournament.config import DEFAULTS as TOURNAMENT_DEFAULTS
from arena.tournament.config import (
    DEMO_DEFAULTS,
    FORMATS,
    MAX_CONCURRENCY,
    MAX_SCHEDULED_GAMES,
    MAX_TIME_MS,
    SEED_RANGE,
)
from arena.untrusted import for_terminal, shown

if TYPE_CHECKING:
    from arena.checks import ConformanceReport

GAMES_RANGE = click.IntRange(1, MAX_SCHEDULED_GAMES)  # the limits of a tournament config, for every command
SEEDS = click.IntRange(*SEED_RANGE)


class ArenaGroup(click.Group):
    """A group that turns our errors into one-line click errors, and escapes every click
    error it passes on: parsing the group's arguments (make_context) and running a command,
    its own argument parsing included (invoke), are where all of them arise."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.ClickException as exc:
            raise terminal_safe(exc) from None

    def invoke(self, ctx: click.Context) -> object:
        from arena.signals import unwind_on_termination

        unwind_on_termination()  # SIGTERM / SIGHUP close the bots on the way out (arena/signals.py)
        try:
            return super().invoke(ctx)
        except BrokenPipeError as exc:
            if not _stdout_closed():
                raise click.ClickException(one_line(exc)) from None
            # `arena replay ... | head`: the reader has gone; stop quietly, as a program killed by
            # SIGPIPE does (status 141), and never flush into the closed pipe again at exit.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise SystemExit(128 + 13) from None
        except (ArenaError, OSError) as exc:  # OSError: a path we could not read or write
            raise click.ClickException(one_line(exc)) from None
        except click.ClickException as exc:
            raise terminal_safe(exc) from None
        except KeyboardInterrupt:  # Ctrl-C: the shell's status for it (click says "Aborted!", 1)
            click.echo("\ninterrupted", err=True)
            raise SystemExit(130) from None


def _stdout_closed() -> bool:
    """Our stdout is a pipe whose reader has gone (poll says POLLERR)."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), 0)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError):
        return False


def terminal_safe(error: click.ClickException) -> click.ClickException:
    """``error`` as click will print it, with control characters and escape sequences shown
    escaped (untrusted.for_terminal): click's usage errors repeat the arguments as given
    (``Got unexpected extra arguments (...)``), and an argument may be a file name holding
    ESC. The same error when there is nothing to escape (the usual case)."""
    text = error.format_message()
    safe = for_terminal(text)
    if safe == text:
        return error
    if isinstance(error, click.UsageError):  # usage, hint and message, exit status 2
        return click.UsageError(safe, ctx=error.ctx)
    return click.ClickException(safe)  # exit status 1, as click's other errors


class VerdictCommand(click.Command):
    """A command whose exit statuses 0, 1 and 2 are verdicts (sprt): anything else that ends
    it is exit status ERROR_STATUS with one line on stderr. A usage error (click's status 2
    would read as "max-games reached"), an ArenaError or OSError (1 would read as "H0
    accepted") and an unexpected exception (a traceback, also 1) included; Ctrl-C is 130."""

    ERROR_STATUS = 3

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.ClickException as exc:
            terminal_safe(exc).show()
            raise SystemExit(self.ERROR_STATUS) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.Abort):
            raise
        except click.ClickException as exc:
            terminal_safe(exc).show()
            raise SystemExit(self.ERROR_STATUS) from None
        except KeyboardInterrupt:
            click.echo("\ninterrupted: no verdict", err=True)
            raise SystemExit(130) from None
        except (ArenaError, OSError) as exc:
            message = one_line(exc)
        except Exception as exc:  # a bug of ours: still one line, and never a verdict's status
            message = for_terminal(f"unexpected error ({type(exc).__name__}): {exc}", newlines=False)
        click.echo(f"Error: {message}", err=True)
        raise SystemExit(self.ERROR_STATUS)


def one_line(error: ArenaError | OSError) -> str:
    """What the user reads of an error, safe for a terminal: "FILE: what went wrong" for an
    OSError, the message of an ArenaError."""
    if isinstance(error, OSError) and error.strerror:
        return for_terminal(f"{error.filename}: {error.strerror}" if error.filename else error.strerror)
    return for_terminal(str(error))


def shell_word(path: Path | str) -> str:
    """``path`` as one word of a command the user may paste into a shell (quoted if it
    needs it: "my bot" is 'my bot'), safe for a terminal."""
    import shlex

    return for_terminal(shlex.quote(str(path)), newlines=False)


class BotFolder(click.Path):
    """A bot's folder. A path to its bot.toml means the folder (``arena check-bot
    mybot/bot.toml`` is ``arena check-bot mybot``); any other file is refused in one line
    that says to give the folder. The name of a sample bot (``mcts``, or
    ``sample_bots/mcts`` as the README writes it) that is no folder here means the sample
    bot shipped with arena: the README's examples work from any folder. Nothing is read
    here: the manifest is read (and, for submit, links refused) by the command."""

    def __init__(self) -> None:
        super().__init__(file_okay=False, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from arena.bots.manifest import MANIFEST

        if isinstance(value, (str, Path)):
            path = Path(value)
            if path.name == MANIFEST and not path.is_dir():
                value = path.parent if str(path.parent) != "." else Path.cwd()
            elif path.exists() and not path.is_dir():
                self.fail(for_terminal(f"{value}: not a folder; give the bot's folder (the one holding "
                                       f"{MANIFEST})", newlines=False), param, ctx)
            else:
                value = _sample_bot(path) or value
        return super().convert(value, param, ctx)


def _sample_bot(path: Path) -> Path | None:
    """The sample bot shipped with arena that ``path`` names (``mcts``, ``sample_bots/mcts``)
    when nothing is there, else None."""
    from arena.bots.manifest import MANIFEST
    from arena.resources import sample_bots_dir

    if os.path.lexists(path) or path.parts[:-1] not in ((), ("sample_bots",)) or not path.name:
        return None
    shipped = sample_bots_dir() / path.name
    return shipped if (shipped / MANIFEST).is_file() else None


class EntrantsPath(click.Path):
    """A ``--bots`` value: a bot folder or a folder of bot folders, or the name of a sample bot
    when nothing of that name is here (as play and check-bot take it)."""

    def __init__(self) -> None:
        super().__init__(path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, (str, Path)):
            value = _sample_bot(Path(value)) or value
        return super().convert(value, param, ctx)


class FileToWrite(click.Path):
    """A file the command writes. ``Path("new/")`` and ``Path("new/.")`` are ``Path("new")``,
    so a value ending in '/', '/.' or '/..' (or that is '.' or '..') would silently become a
    file of another name: it is refused in one line instead (exit status 1), with an example
    of a file name in that folder."""

    def __init__(self, example: str) -> None:
        super().__init__(dir_okay=False, path_type=Path)
        self.example = example

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and (value.endswith("/") or value.rsplit("/", 1)[-1] in (".", "..")):
            option = param.opts[0] if param is not None and param.opts else "this option"
            folder = value if value.endswith("/") else value + "/"
            raise click.ClickException(for_terminal(
                f"{option} {value}: names a folder; {option} names a file "
                f"(such as {folder}{self.example})", newlines=False))
        return super().convert(value, param, ctx)


def _output_paths(out: Path | None = None, logs: Path | None = None) -> None:
    """Check before any game is played that the records file ``out`` can be appended to and
    the folder ``logs`` made: a bad path is a one-line error now, not games lost later."""
    try:
        if logs is not None:
            logs.mkdir(parents=True, exist_ok=True)
        if out is not None:
            if out.is_dir():
                raise ArenaError(f"{out}: is a folder; --out names the file to append the records to")
            out.parent.mkdir(parents=True, exist_ok=True)
            with out.open("a", encoding="utf-8"):
                pass
    except OSError as exc:
        where = exc.filename or out or logs
        raise ArenaError(f"{where}: cannot write there: {exc.strerror or exc}") from None


@click.group(cls=ArenaGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="arena")
def main() -> None:
    """patchwork-arena: play, referee and rate Patchwork bots."""


GAME_HELP = ("Which game: patchwork, or stack-n-stuff (its components are UNVERIFIED proxy data: "
             "Patchwork Express from one public source; the official tile list is not published).")


def _game_options(func):  # type: ignore[no-untyped-def]
    """--game and --components, shared by every command that starts games."""
    func = click.option("--components", "components_file", type=click.Path(dir_okay=False, path_type=Path),
                        help="stack-n-stuff only: your own component file (JSON, the schema of the "
                             "shipped proxy data), validated before use.")(func)
    func = click.option("--game", type=click.Choice(GAMES), default="patchwork", show_default=True,
                        help=GAME_HELP)(func)
    return func


EDITION_HELP = "Patchwork: revised (default) or original; stack-n-stuff: standard."


def _edition_option(func):  # type: ignore[no-untyped-def]
    """--edition, as run-tournament takes it: refused for a game without that edition."""
    every = list(dict.fromkeys(e for editions in GAME_EDITIONS.values() for e in editions))
    return click.option("--edition", type=click.Choice(every), help=EDITION_HELP)(func)


def _ruleset(game: str, edition: str | None, components_file: Path | None):  # type: ignore[no-untyped-def]
    """The ruleset the options ask for; warns on stderr when its components are unverified.
    An edition the game does not have is refused, as run-tournament refuses it."""
    from arena.engine.components import ruleset_for
    from arena.schemas.components import load_components
    from arena.tournament.config import check_edition

    edition = check_edition(game, edition)
    table = load_components(components_file) if components_file is not None else None
    rules = ruleset_for(game, edition, table)
    if rules.unverified:
        click.echo(f"note: {rules.unverified}", err=True)
    return rules


@main.command("random-games")
@click.argument("n", type=GAMES_RANGE)
@click.option("--seed", type=SEEDS, default=0, show_default=True,
              help="Base seed: game i uses seed S+i (circle and moves).")
@click.option("--out", type=FileToWrite("games.jsonl"), required=True,
              help="Write the game records here (.jsonl, overwritten).")
@_edition_option
@_game_options
def random_games(n: int, seed: int, out: Path, edition: str | None, game: str,
                 components_file: Path | None) -> None:
    """Play N games of uniformly random legal moves and write their records.

    Seats alternate the first move from game to game.
    """
    from arena.engine.playout import random_game
    from arena.records import append_record, make_record, normal_result, utc_now

    rules = _ruleset(game, edition, components_file)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("")
    decisions = seat0_wins = 0
    totals = [0, 0]
    for i in range(n):
        started = utc_now()
        initial, moves, final = random_game(seed + i, first_player=i % 2, ruleset=rules)
        result = normal_result(final)
        record = make_record(
            initial, ("random", "random"),
            [{"player": p, **m.to_json(rules.cols)} for p, m in moves], result,
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
@click.option("--game", "game", default="1", show_default=True,
              help="Which game to render: N, the Nth record of the file (1-based; not the number in a "
                   "game id: 0075-eve-vs-ben-p37 need not be the 75th), or a game id as the report "
                   "shows it (e.g. 0075-eve-vs-ben-p37).")
@click.option("--step", is_flag=True, help="Render every position, move by move "
              "(waits for Enter between moves on a terminal).")
@click.option("--html", "html_out", type=FileToWrite("game.html"),
              help="Write a standalone HTML viewer of the game here instead of rendering it.")
def replay(file: Path, game: str, step: bool, html_out: Path | None) -> None:
    """Validate the game records of FILE and render one game."""
    from arena.engine.render import render
    from arena.errors import RecordError
    from arena.records import read_records
    from arena.records import replay as replay_record

    by_number = game.isdigit() and len(game) < 10
    if by_number and int(game) < 1:
        raise click.BadParameter("a record's number counts from 1", param_hint="'--game'")
    chosen = None
    count = chosen_number = 0
    for number, record in read_records(file):
        try:
            states = replay_record(record)
        except RecordError as exc:
            raise RecordError(f"{file}: record {number}: {exc}") from None
        count = number
        if chosen is None and (number == int(game) if by_number else record.get("game_id") == game):
            chosen, chosen_number = (record, states), number
    if chosen is None:
        if by_number:  # a tournament's game 0075-... is seldom the 75th record of the file
            raise click.ClickException(
                f"{file} holds {count} game(s): --game takes 1..{count} (a record's position in the "
                f"file, not the number in a game id such as demo-0075) or a game id; there is no game {game}")
        raise click.ClickException(f"{file} holds {count} record(s); there is no game with the id "
                                   f"{shown(game, 80)}")
    record, states = chosen
    players = tuple(for_terminal(p, newlines=False) for p in record.get("players", ["seat 0", "seat 1"]))[:2]
    click.echo(for_terminal(f"{file}: {count} record(s) valid; game {chosen_number}"
                            + ("" if by_number else f" ({game})") + f": seed {record.get('seed')}, "
                            f"edition {record.get('edition')}, ", newlines=False)
               + f"{players[0]} vs {players[1]}")
    if html_out is not None:
        from arena.cli_report import write_replay_html

        write_replay_html(record, states, html_out)
        return
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
    if result["reason"] == "normal":
        line = (f"result: {result['reason']}; scores {result['scores'][0]} : "
                f"{result['scores'][1]}; winner {players[result['winner']]}")
    else:  # the scores of a game cut short mean nothing (as `arena play` shows it)
        loser = result.get("loser", 1 - result["winner"])
        line = (f"result: aborted, {players[loser]} lost by {result['reason']} after "
                f"{len(record['moves'])} moves; winner {players[result['winner']]}")
    if result.get("detail"):  # a failure: its first line, then the loser's log tail if any
        _echo_detail(str(result["detail"]), line + ": ")
    else:
        click.echo(for_terminal(line, newlines=False))


def _describe_move(entry: dict, players: tuple) -> str:
    who = players[entry["player"]]
    if entry["action"] == "advance":
        return f"{who} advances"
    if entry["action"] == "buy":
        return f"{who} buys patch {entry['patch']} at {entry['cells']}"
    return f"{who} places a special patch at {entry['cells'][0]}"


def _time_control_options(func):  # type: ignore[no-untyped-def]
    """The time-control flags shared by every command that plays games."""
    func = click.option("--first-move-ms", type=click.IntRange(1, MAX_TIME_MS),
                        default=DEFAULT_TIME_CONTROL.first_move_ms,
                        show_default=True,
                        help="Limit for each bot's first move of a game.")(func)
    func = click.option("--bank-ms", type=click.IntRange(0, MAX_TIME_MS),
                        default=DEFAULT_TIME_CONTROL.bank_ms, show_default=True,
                        help="Time bank a bot draws on when a move overruns the limit.")(func)
    func = click.option("--time-per-move", "per_move_ms", type=click.IntRange(1, MAX_TIME_MS),
                        default=DEFAULT_TIME_CONTROL.per_move_ms,
                        show_default=True, help="Per-move limit in milliseconds.")(func)
    return func


def _sandbox_option(default: Sandbox | None):  # type: ignore[no-untyped-def]
    """``--sandbox strict|none``: how bots are confined (docs/sandbox.md); the command gets
    a :class:`Sandbox` (or None when the option has no default and is not given)."""
    if default == Sandbox.NONE:
        text = ("How to confine the bots: none (default: resource limits and process-tree control "
                "only, builds run in the bot's folder: for a bot author's own machine) or strict "
                "(bubblewrap, builds too; needs root).")
    else:
        text = ("How to confine the bots: strict (the default: bubblewrap, no network, only their "
                "own folder; builds too, in a private copy; needs root) or none (resource limits "
                "only, for a machine you trust).")
    return click.option("--sandbox", type=click.Choice(SANDBOX_LEVELS),
                        default=None if default is None else default.value,
                        callback=lambda _ctx, _param, value: None if value is None else Sandbox(value),
                        show_default=default is not None, help=text)


def _launcher(level: Sandbox, pondering: bool = False, *, announce: bool = True) -> Launcher:
    """The launcher for ``--sandbox``, built once here and handed down; with ``announce``
    say which limits are in force (or fail with why the level cannot be had)."""
    launcher = Launcher.for_level(level)
    if announce:
        lines = launcher.check(pondering=pondering)
        if lines:  # one item a line: on one line it was 600 characters
            click.echo(f"sandbox {launcher.level}:\n" + "\n".join(f"  {line}" for line in lines))
    return launcher


TRACE_CHARS = 160  # a traced message longer than this is shortened


class _TraceHandler(logging.Handler):
    """Prints the wire log (arena.wire: ``name >> line`` from a bot, ``name << line`` to it)
    on stderr, one line each, shortened (with the message's size: a C bot reading lines into
    a fixed buffer needs to see how long they get) and made safe for a terminal."""

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if len(text) > TRACE_CHARS:
            size = getattr(record, "size", None)
            text = text[:TRACE_CHARS - 3] + "..." + (f" ({size:,} bytes)" if size is not None else "")
        click.echo(for_terminal(text, newlines=False), err=True)


def _trace_option(func):  # type: ignore[no-untyped-def]
    return click.option("--trace", is_flag=True,
                        help="Print every message both ways on stderr: 'name >> line' from a bot, "
                             "'name << line' to it (long lines shortened).")(func)


def _start_trace(trace: bool) -> None:
    if trace:
        wire = logging.getLogger("arena.wire")
        wire.setLevel(logging.DEBUG)
        wire.addHandler(_TraceHandler())


def _echo_detail(detail: str, first: str, *, indent: str = "    ", err: bool = False) -> None:
    """``first`` (a line ending with the detail's first line), then the rest of the detail
    (a failing bot's log tail) indented, each line made safe for a terminal on its own."""
    lines = detail.split("\n")
    click.echo(for_terminal(first + lines[0], newlines=False), err=err)
    for line in lines[1:]:
        click.echo(indent + for_terminal(line, newlines=False), err=err)


def _echo_problems(problems: list[str]) -> None:
    """The problems of check-bot and submit on stderr: "  - " and the first line of each,
    the rest (a log tail) indented under it."""
    for problem in problems:
        _echo_detail(problem, "  - ", indent="      ", err=True)


_PONDERING_HELP = ("Let strict-sandboxed bots compute between their moves and between games "
                   "(by default they are frozen off their turn).")


@main.command()
@click.argument("bot_a", type=BotFolder())
@click.argument("bot_b", type=BotFolder())
@click.option("--games", type=GAMES_RANGE, default=2, show_default=True)
@click.option("--seed", type=SEEDS, default=0, show_default=True,
              help="Games 2k and 2k+1 use seed S+k (the same patch circle) with seats swapped.")
@_edition_option
@click.option("--show", is_flag=True, help="Render every position as the game is played.")
@click.option("--out", type=FileToWrite("games.jsonl"),
              help="Append the game records to this .jsonl file.")
@click.option("--logs", type=click.Path(file_okay=False, path_type=Path), default=Path("results/logs"),
              show_default=True, help="Folder for the bots' stderr and build logs.")
@_time_control_options
@_game_options
@_sandbox_option(Sandbox.NONE)
@click.option("--pondering", is_flag=True, help=_PONDERING_HELP)
@_trace_option
def play(bot_a: Path, bot_b: Path, games: int, seed: int, edition: str | None, show: bool, out: Path | None,
         logs: Path, per_move_ms: int, bank_ms: int, first_move_ms: int, game: str,
         components_file: Path | None, sandbox: Sandbox, pondering: bool, trace: bool) -> None:
    """Play games between two bot folders (each with a bot.toml); seats alternate.

    \b
    Examples (mcts is the strong sample bot to measure yours against):
      arena play path/to/mybot sample_bots/mcts --games 10
      arena play sample_bots/mcts sample_bots/greedy --games 2 --show
    """
    from arena.checks import outcome_text
    from arena.engine.render import render
    from arena.records import append_record
    from arena.tournament.schedule import match_schedule
    from arena.tournament.series import InProcess, Lineup, run_series

    tc = TimeControl(per_move_ms, bank_ms, first_move_ms)
    rules = _ruleset(game, edition, components_file)
    _output_paths(out, logs)
    _start_trace(trace)
    launcher = _launcher(sandbox, pondering)
    lineup = Lineup.of([bot_a, bot_b], time_control=tc, ruleset=rules, launcher=launcher, pondering=pondering)
    names = lineup.labels
    wins = [0, 0]
    failures = 0

    def show_move(spec, state, entry) -> None:  # type: ignore[no-untyped-def]
        seats = (spec.seat0, spec.seat1)
        click.echo(f"\n{_describe_move(entry, seats)} ({entry['time_ms']:.0f} ms)")
        click.echo(render(state, seats))

    def report(spec, result) -> None:  # type: ignore[no-untyped-def]
        nonlocal failures
        seats = lineup.seats(spec)
        if out is not None:  # its folder was made by _output_paths
            append_record(out, result.record)
        winner = seats[result.winner]
        wins[winner] += 1
        failures += result.termination.value != "normal"
        line = (f"game {spec.index + 1}: seed {spec.seed}, {spec.seat0} (seat 0) vs {spec.seat1} (seat 1): "
                f"{outcome_text(result, (spec.seat0, spec.seat1))} ({result.termination.value}) "
                f"in {result.duration_s:.2f} s")
        if result.detail:
            _echo_detail(result.detail, line + ": ")
        else:
            click.echo(for_terminal(line, newlines=False))

    with InProcess(lineup, logs, on_move=show_move if show else None) as executor:
        for error in executor.pool.build_errors.values():
            _echo_detail(error, "warning: ", indent="", err=True)
        run_series(match_schedule(names[0], names[1], games, seed, "play"), executor, report)
    click.echo(f"summary: {names[0]} {wins[0]} - {wins[1]} {names[1]} over {games} game(s); "
               f"{failures} ended abnormally" + (f"; records appended to {out}" if out else ""))


@main.command("check-bot")
@click.argument("bot", type=BotFolder())
@click.option("--games", type=click.IntRange(1, 1000), default=4, show_default=True,
              help="Games against the random sample bot (both seats).")
@click.option("--logs", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder for logs (default: a temporary folder).")
@click.option("--seed", type=SEEDS, default=0, show_default=True,
              help="Seed of the first pair of games (the next pair uses SEED+1, ...).")
@_time_control_options
@_game_options
@_sandbox_option(Sandbox.NONE)
@_trace_option
def check_bot(bot: Path, games: int, logs: Path | None, seed: int, per_move_ms: int, bank_ms: int,
              first_move_ms: int, game: str, components_file: Path | None, sandbox: Sandbox,
              trace: bool) -> None:
    """Conformance check to run before submitting BOT: exits non-zero if anything is wrong."""
    from arena.checks import run_conformance

    launcher = _launcher(sandbox)
    _start_trace(trace)
    report = run_conformance(bot, games=games, log_dir=logs, ruleset=_ruleset(game, None, components_file),
                             per_move_ms=per_move_ms, bank_ms=bank_ms, first_move_ms=first_move_ms,
                             launcher=launcher, seed=seed)
    _echo_report(report)
    if report.problems:
        click.echo(f"FAIL: {len(report.problems)} problem(s):", err=True)
        _echo_problems(report.problems)
        if report.log is not None:
            click.echo(f"the bot's log is kept: {for_terminal(str(report.log), newlines=False)}", err=True)
        raise SystemExit(1)
    click.echo("PASS: the bot conforms to the protocol")


@main.command("run-tournament")
@click.argument("config_file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--bots", "entrants", multiple=True, type=EntrantsPath(),
              help="A bot folder, a folder of bot folders, or a sample bot's name (repeatable).")
@click.option("--name", help="Tournament name (results go to results/<name>).")
@click.option("--format", "format_", type=click.Choice(FORMATS),
              help="round-robin (default), gauntlet, swiss or knockout (docs/formats.md).")
@click.option("--challenger", "challengers", multiple=True,
              help="Gauntlet: an entrant that plays everyone else (repeatable).")
@click.option("--rounds", type=int, help="Swiss: the rounds (default: log2 of the entrants, rounded up).")
@click.option("--games", type=int,
              help=f"Games per pairing, or per knockout match (even: seat-swapped pairs; default "
                   f"{TOURNAMENT_DEFAULTS['games']}, the demo {DEMO_DEFAULTS['games']}).")
@click.option("--seed", type=int, help=f"Base seed; every game seed derives from it (default "
                                       f"{TOURNAMENT_DEFAULTS['seed']}).")
@click.option("--concurrency", type=int,
              help=f"Games at once (default: the CPUs this command may use, as taskset sets them; at "
                   f"most {MAX_CONCURRENCY}).")
@click.option("--time-per-move", "per_move_ms", type=int,
              help=f"Per-move limit in ms (default {TOURNAMENT_DEFAULTS['per_move_ms']}, the demo "
                   f"{DEMO_DEFAULTS['per_move_ms']}).")
@click.option("--bank-ms", type=int, help=f"Time bank in ms (default {TOURNAMENT_DEFAULTS['bank_ms']}).")
@click.option("--first-move-ms", type=int,
              help=f"First-move limit in ms (default {TOURNAMENT_DEFAULTS['first_move_ms']}).")
@_edition_option
@click.option("--game", type=click.Choice(GAMES), help=GAME_HELP)
@click.option("--components", "components_file", type=click.Path(dir_okay=False, path_type=Path),
              help="stack-n-stuff only: your own component file (JSON), validated before use.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Results folder.")
@click.option("--dask", "dask_address", metavar="SCHEDULER_ADDRESS",
              help="Run the games on this Dask scheduler instead of local processes.")
@_sandbox_option(None)
@click.option("--pondering/--no-pondering", default=None, help=_PONDERING_HELP + " Key: pondering.")
def run_tournament_command(config_file: Path | None, entrants: tuple[Path, ...], name: str | None,
                           format_: str | None, challengers: tuple[str, ...], rounds: int | None,
                           games: int | None, seed: int | None, concurrency: int | None,
                           per_move_ms: int | None,
                           bank_ms: int | None, first_move_ms: int | None, edition: str | None,
                           game: str | None, components_file: Path | None, out: Path | None,
                           dask_address: str | None, sandbox: Sandbox | None, pondering: bool | None) -> None:
    """Run a tournament (CONFIG_FILE is TOML; flags override it). Resumable: run the same
    command again after an interruption and only the missing games are played.

    With no arguments: the sample bots in a round robin into results/demo/.
    """
    from arena.tournament.config import load_config
    from arena.tournament.ratings import rate
    from arena.tournament.runner import run_tournament
    from arena.tournament.storage import ResultStore

    config = load_config(config_file, {
        "entrants": list(entrants), "name": name, "format": format_, "challengers": list(challengers),
        "rounds": rounds, "games": games, "seed": seed, "concurrency": concurrency,
        "per_move_ms": per_move_ms,
        "bank_ms": bank_ms, "first_move_ms": first_move_ms, "edition": edition, "out": out,
        "game": game, "components": components_file, "sandbox": sandbox,
        "pondering": pondering})
    if config.ruleset().unverified:
        click.echo(f"note: {config.ruleset().unverified}", err=True)
    click.echo(for_terminal(  # the name quoted: the default one read "tournament tournament (patchwork)"
        f'tournament "{config.name}" ({config.game}, {config.format}): {len(config.entrants)} entrants '
        f"({', '.join(config.names)}), " + _games_line(config) + f", concurrency {config.concurrency}"
        + (f", Dask at {dask_address}" if dask_address else "") + f"; results in {config.out}",
        newlines=False))
    tc = config.time_control
    click.echo(f"time control: {tc.per_move_ms} ms a move, a bank of {tc.bank_ms} ms, "
               f"{tc.first_move_ms} ms for a first move; seed {config.seed}"
               + (f", edition {config.edition}" if config.game == "patchwork" else ""))
    launcher = _launcher(config.sandbox, config.pondering, announce=not dask_address)
    if dask_address and launcher.copies_builds:
        click.echo(f"sandbox {launcher.level}: set up by each Dask worker (a worker that cannot provide "
                   "it fails the run)")
    executor = None
    if dask_address:
        from arena.tournament.distributed import DaskExecutor
        from arena.tournament.runner import tournament_lineup

        executor = DaskExecutor(tournament_lineup(config, launcher), dask_address)
    display = ProgressDisplay()
    try:
        summary = run_tournament(
            config, executor=executor, launcher=launcher, on_progress=display.update,
            on_build_error=lambda bot, error: _echo_detail(
                error + "\n(its games are recorded as losses)", "build failed: ", indent="", err=True))
    except SystemExit:
        _say_stopped(config, display)
        raise
    display.finish()
    if summary.interrupted:
        click.echo(f"interrupted: {summary.already_stored + summary.played} of {summary.total} games "
                   f"are stored; run the same command again to play the rest")
    else:
        # the abnormal count is of every stored game, the resumed run's too ("22 ended abnormally"
        # after "73 played now" read as 22 of the 73)
        click.echo(f"done: {summary.played} games played now, {summary.already_stored} were already "
                   f"stored, {summary.failures} ended abnormally (of all {summary.total}), "
                   f"{summary.seconds:.1f} s")
    table = summary.table  # rated as the games came in, in schedule order: rate() would give the same
    failed = None
    if table is None or summary.failures:
        with ResultStore(config.out, readonly=True) as store:
            frame = store.games_frame()
        table = rate(frame, config.names) if table is None else table
        failed = frame[frame["reason"] != "normal"]
    click.echo(_format_table(table))
    if failed is not None and len(failed):
        _echo_failures(failed, config.out, on_dask=bool(dask_address))
    if summary.interrupted:
        raise SystemExit(130)


def _games_line(config) -> str:  # type: ignore[no-untyped-def]
    if config.format == "swiss":
        return f"{config.rounds} rounds of 2-game pairings"
    if config.format == "knockout":
        return f"{config.games} games per match"
    return f"{config.games} games per pairing"


def _say_stopped(config, display: ProgressDisplay) -> None:  # type: ignore[no-untyped-def]
    """On SIGTERM or SIGHUP (``timeout``, ``kill``, a closed terminal): the line Ctrl-C gets,
    so an unattended run's log says how far it got (it stopped without a word)."""
    from arena.signals import terminated_by
    from arena.tournament.schedule import schedule_size
    from arena.tournament.storage import ResultStore

    signum = terminated_by()
    if signum is None:
        return
    display.finish()
    try:
        with ResultStore(config.out, readonly=True) as store:
            stored = store.game_count()
    except ArenaError:
        return
    click.echo(f"stopped by {signal.Signals(signum).name}: {stored} of {schedule_size(config.plan)} games "
               "are stored; run the same command again to play the rest", err=True)


FAILURE_GROUPS_SHOWN = 10


def _echo_failures(failed, out: Path, *, on_dask: bool = False) -> None:  # type: ignore[no-untyped-def]
    """The games that ended abnormally, by the bot at fault and the reason, each with the
    first line of one of its details, and where the rest is (a newcomer's tournament said
    "4 ended abnormally" and nothing on where to look)."""
    rows: dict[tuple[str, str], list[str]] = {}
    for row in failed.itertuples(index=False):
        at_fault = row.seat1 if row.loser == 1 else row.seat0 if row.loser == 0 else "-"
        rows.setdefault((at_fault, row.reason), []).append(str(row.detail or ""))
    _echo_failure_groups(rows, f"{len(failed)} of the stored games")
    logs = "on the Dask workers (the details name them)" if on_dask else shell_word(out / "logs")
    click.echo(f"every detail: arena report {shell_word(out)} (report/csv/abnormal_games.csv); the bots' "
               f"logs: {logs}")


def _echo_failure_groups(rows: dict[tuple[str, str], list[str]], which: str) -> None:
    """``rows``: (the bot at fault, reason) -> details; a line for each (most games first)."""
    click.echo(f"abnormal endings ({which}), by the bot at fault:")
    ordered = sorted(rows.items(), key=lambda item: (-len(item[1]), item[0]))
    for (bot, reason), details in ordered[:FAILURE_GROUPS_SHOWN]:
        first = details[0].split("\n", 1)[0]
        first = first if len(first) <= 160 else first[:157] + "..."
        example = f", e.g. {first}" if first.strip() else ""
        click.echo(for_terminal(f"  {bot}: {reason} x{len(details)}{example}", newlines=False))
    if len(ordered) > FAILURE_GROUPS_SHOWN:
        click.echo(f"  ... and {len(ordered) - FAILURE_GROUPS_SHOWN} more kinds")


class ProgressDisplay:
    """The live progress line: rewritten in place on a terminal, a line now and then otherwise."""

    def __init__(self) -> None:
        self.tty = sys.stdout.isatty()
        self._last_print = 0.0
        self._shown = False
        self._progress = None  # the latest, drawn by finish() if it was not shown

    def update(self, progress, spec) -> None:  # type: ignore[no-untyped-def]
        """Called after every stored game; the line is built and shown at most 10 times a
        second on a terminal (every 2 s otherwise), and always at the start and the end."""
        import time

        self._progress = progress
        now = time.monotonic()
        finished = progress.done == progress.total
        if spec is not None and not finished and now - self._last_print < (0.1 if self.tty else 2.0):
            return
        self._last_print = now
        self._show(progress)
        self._progress = None

    def _show(self, progress) -> None:  # type: ignore[no-untyped-def]
        leader = progress.leader()
        eta = progress.eta_s
        text = (f"games {progress.done}/{progress.total}"
                f" | {progress.rate:.1f} games/s"
                f" | ETA {'-' if eta is None else f'{eta:.0f} s'}"
                f" | leader {leader[0] + f' ({leader[1]:.1f})' if leader else '-'}"
                f" | failures {progress.failures}")
        text = for_terminal(text, newlines=False)
        if self.tty:
            click.echo("\r" + text.ljust(100), nl=False)
            self._shown = True
        else:
            click.echo(text)

    def finish(self) -> None:
        """The run ended (done or interrupted): on a terminal the line shows the last game."""
        if self.tty and self._progress is not None:
            self._show(self._progress)
        if self.tty and self._shown:
            click.echo()


def _format_table(table) -> str:  # type: ignore[no-untyped-def]
    if table.empty:
        return "no games stored yet"
    shown = table.copy()
    for column in ("mu", "sigma", "conservative"):
        shown[column] = shown[column].map(lambda v: f"{v:.2f}")
    shown["win_rate"] = shown["win_rate"].map(lambda v: "-" if v != v else f"{v:.3f}")  # NaN: no games
    return for_terminal(shown.to_string(index=False))


@main.command()
@click.argument("results", type=click.Path(file_okay=False, path_type=Path))
@click.option("--csv", "csv_path", type=FileToWrite("ratings.csv"),
              help="Also write the table as CSV here.")
def ratings(results: Path, csv_path: Path | None) -> None:
    """Print the TrueSkill table of a results folder (also while its tournament runs).

    Ranked by the conservative rating mu - 3 sigma; recomputed from the stored games in
    schedule order, so it never depends on the order games happened to finish in.
    """
    from arena.tournament.ratings import rate
    from arena.tournament.storage import ResultStore

    with ResultStore(results, readonly=True) as store:
        games = store.games_frame()
        stored = store.stored_config()
        names = [e["name"] for e in stored.get("entrants", [])] if stored else []
        table = rate(games, names)
    total = len(games)
    click.echo(f"{results}: {total} game(s) stored")
    click.echo(_format_table(table))
    if csv_path is not None:
        from arena.untrusted import csv_frame

        csv_frame(table).to_csv(csv_path, index=False)
        click.echo(f"table written to {csv_path}")


@main.command(cls=VerdictCommand)
@click.argument("new", type=BotFolder())
@click.argument("old", type=BotFolder())
@click.option("--elo0", type=float, default=0.0, show_default=True, help="H0: NEW is elo0 stronger.")
@click.option("--elo1", type=float, default=20.0, show_default=True, help="H1: NEW is elo1 stronger.")
@click.option("--alpha", type=float, default=0.05, show_default=True,
              help="Chance of accepting H1 when H0 holds.")
@click.option("--beta", type=float, default=0.05, show_default=True,
              help="Chance of accepting H0 when H1 holds.")
@click.option("--max-games", type=click.IntRange(2, MAX_SCHEDULED_GAMES), default=2000, show_default=True)
@click.option("--concurrency", type=click.IntRange(1, MAX_CONCURRENCY), default=1, show_default=True,
              help="Games at once, each in a worker process; when the test decides, games still "
                   "being played are dropped.")
@click.option("--seed", type=SEEDS, default=1, show_default=True)
@_edition_option
@click.option("--out", type=FileToWrite("games.jsonl"),
              help="Append the game records to this .jsonl file.")
@click.option("--logs", type=click.Path(file_okay=False, path_type=Path), default=Path("results/logs"),
              show_default=True)
@_time_control_options
@_game_options
@_sandbox_option(Sandbox.NONE)
def sprt(new: Path, old: Path, elo0: float, elo1: float, alpha: float, beta: float, max_games: int,
         concurrency: int, seed: int, edition: str | None, out: Path | None, logs: Path, per_move_ms: int,
         bank_ms: int, first_move_ms: int, game: str, components_file: Path | None, sandbox: Sandbox) -> None:
    """Is NEW stronger than OLD? Plays seat-swapped game pairs until the sequential
    probability ratio test accepts H1 (NEW is stronger by elo1) or H0 (by elo0 only).

    Exit status: 0 when H1 is accepted, 1 when H0 is accepted, 2 when max-games ran out,
    3 on any error (a bot that cannot be built or started, an invalid bot.toml, a bad path or
    option): then no verdict.
    """
    from arena.tournament.sequential import run_sprt
    from arena.tournament.sprt import SPRT

    test = SPRT(elo0, elo1, alpha, beta)
    lower, upper = test.bounds()

    def report(state) -> None:  # type: ignore[no-untyped-def]
        click.echo(f"games {state.games:4d}: W {state.wins} L {state.losses} "
                   f"(pairs 0/1/2 wins: {state.pairs[0]}/{state.pairs[1]}/{state.pairs[2]}) "
                   f"LLR {state.llr:+.3f} [{lower:.2f}, {upper:.2f}]")

    # Errors (exit status 3, no verdict) are VerdictCommand's: exit 1 means "H0 accepted" here.
    rules = _ruleset(game, edition, components_file)  # an edition refused before the header line
    _output_paths(out, logs)
    names = [for_terminal(bot.name, newlines=False) for bot in (new, old)]  # folder names: any text
    click.echo(f"SPRT {names[0]} vs {names[1]}: H0 elo {elo0:g}, H1 elo {elo1:g}, alpha {alpha:g}, "
               f"beta {beta:g}; bounds [{lower:.2f}, {upper:.2f}]")
    state = run_sprt(new, old, test, max_games=max_games, seed=seed, log_dir=logs,
                     launcher=_launcher(sandbox), ruleset=rules,
                     time_control=TimeControl(per_move_ms, bank_ms, first_move_ms), out=out,
                     on_pair=report, concurrency=concurrency)
    verdict = {"accept H1": f"H1 accepted: {names[0]} is stronger (elo >= {elo1:g} more likely "
                            f"than elo <= {elo0:g})",
               "accept H0": f"H0 accepted: {names[0]} is not stronger by {elo1:g} elo",
               "continue": f"no decision after {state.games} games (max-games reached)"}[state.status]
    click.echo(verdict + (f"; {state.failures} game(s) ended abnormally" if state.failures else ""))
    if state.abnormal:  # why, not only how many (a student saw 100 losses and no reason)
        _echo_failure_groups(state.abnormal, f"{state.failures} of {state.games} games")
        click.echo(f"the bots' logs: {shell_word(logs)}")
    raise SystemExit({"accept H1": 0, "accept H0": 1, "continue": 2}[state.status])


def _echo_report(report: ConformanceReport) -> None:
    """A conformance report's lines, then its warnings (on stderr): check-bot's and submit's."""
    for line in report.lines:
        click.echo(for_terminal(line, newlines=False))
    for warning in report.warnings:
        click.echo(f"warning: {for_terminal(warning, newlines=False)}", err=True)


@main.command()
@click.argument("bot", type=BotFolder())
@click.option("--entrants", type=click.Path(file_okay=False, path_type=Path), default=Path("entrants"),
              show_default=True, help="The folder of entrants a tournament reads.")
@click.option("--games", type=click.IntRange(2, 1000), default=4, show_default=True,
              help="Conformance games against the random sample bot.")
@click.option("--replace", is_flag=True,
              help="Replace an entrant of the same name; the old version is kept in "
                   "ENTRANTS/.previous/NAME-<UTC time>/. Without it an existing name is refused.")
@_time_control_options
@_sandbox_option(Sandbox.STRICT)
def submit(bot: Path, entrants: Path, games: int, replace: bool, per_move_ms: int, bank_ms: int,
           first_move_ms: int, sandbox: Sandbox) -> None:
    """Hand in BOT: build it, run the conformance check, and copy it into the entrants
    folder only if it passes. The bot is a stranger's code: it is built and checked under
    the strict sandbox unless --sandbox none is given. An entrant of the same name is
    refused unless --replace. Give the tournament's time control to check the bot against it."""
    from arena.checks import submit as submit_bot

    done = submit_bot(bot, entrants, games=games, launcher=_launcher(sandbox), replace=replace,
                      per_move_ms=per_move_ms, bank_ms=bank_ms, first_move_ms=first_move_ms)
    report = done.report
    _echo_report(report)  # its warnings too: a bot accepted with a hello name that is not its own
    if done.installed is None:
        click.echo(for_terminal(f"REFUSED: {bot} was not copied to {entrants}; {len(report.problems)} "
                                f"problem(s):", newlines=False), err=True)
        _echo_problems(report.problems)
        raise SystemExit(1)
    if done.previous is not None:
        click.echo(for_terminal(f"replaced: the previous version is kept in {done.previous}", newlines=False))
    click.echo(for_terminal(f"ACCEPTED: installed as {done.installed}", newlines=False))


@main.command("new-bot")
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--lang", required=True, type=click.Choice(["python", "python-zmq", "js", "c", "cpp", "java"]),
              help="The kit: python (stdio), python-zmq (pyzmq), js (Node.js), c, cpp or java.")
@click.option("--name", help="The bot's name (default: made from FOLDER's name).")
def new_bot(folder: Path, lang: str, name: str | None) -> None:
    """Write a starter bot into FOLDER (new or empty): a program that speaks the protocol and
    plays a legal move, and its bot.toml. It passes `arena check-bot FOLDER --sandbox strict`
    as written; protocol/PROTOCOL.md says everything else."""
    from arena.starter import DESCRIPTIONS, create

    written = create(folder, lang, name)
    click.echo(for_terminal(f"wrote a {DESCRIPTIONS[lang]} bot in {folder}: "
                            + ", ".join(str(p.relative_to(folder)) for p in written), newlines=False))
    spec = Path(__file__).resolve().parent / "protocol" / "PROTOCOL.md"  # ships in the package
    where = shell_word(spec) if spec.is_file() else "protocol/PROTOCOL.md in patchwork-arena's source"
    click.echo(f"next: arena check-bot {shell_word(folder)} --sandbox strict   (the spec: {where})")


# ------------------------------------------------------------------ the arena service
SERVER_HELP = "The arena's address, e.g. http://127.0.0.1:8000."
TOKEN_FILE_HELP = "A file holding the token (default: the ARENA_TOKEN environment variable)."


@main.command()
@click.option("--data", "data", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The data folder (made on first start; a restart resumes from it).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (loopback by default: put a TLS reverse proxy in front).")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True)
@_game_options
@_edition_option
@_time_control_options
@click.option("--concurrency", type=click.IntRange(1, MAX_CONCURRENCY), default=None,
              help="Ladder games played at once (default: the usable CPUs).")
@click.option("--dask", "dask_address", default=None, help="Play the ladder on a Dask cluster at ADDRESS.")
@click.option("--house-bots", default="random,greedy", show_default=True,
              help="Sample bots that always play (comma-separated; '' for none), so the ladder is "
                   "never empty.")
@click.option("--user", default=None,
              help="The unprivileged user the web process runs as when started as root (default: nobody).")
@_sandbox_option(Sandbox.STRICT)
@click.option("--uploads-per-hour", type=click.IntRange(1, 10_000), default=20, show_default=True,
              help="Uploads each author may make in any hour.")
@click.option("--max-upload-mb", type=click.IntRange(1, 1024), default=20, show_default=True,
              help="Largest archive accepted, in MB.")
@click.option("--max-author-mb", type=click.IntRange(1, 1_000_000), default=1000, show_default=True,
              help="What all of an author's versions may hold on disk, unpacked, in MB.")
@click.option("--failing-streak", type=click.IntRange(0, 1_000_000), default=FAILING_STREAK,
              show_default=True,
              help="Retire a playing version (rejected, with the cause) once it loses this many games "
                   "in a row by its own fault: a crash, a timeout, an illegal move; 0: never.")
def serve(data: Path, host: str, port: int, game: str, components_file: Path | None, edition: str | None,
          per_move_ms: int, bank_ms: int, first_move_ms: int, concurrency: int | None,
          dask_address: str | None, house_bots: str, user: str | None, sandbox: Sandbox,
          uploads_per_hour: int, max_upload_mb: int, max_author_mb: int, failing_streak: int) -> None:
    """Run an arena: authors upload bots over HTTP, each version is checked in the sandbox,
    a rated ladder plays continuously, and the leaderboard and games are served live."""
    from arena.serve.server import serve as run_server
    from arena.serve.service import Options
    from arena.tournament.config import usable_cpus
    from arena.untrusted import is_valid_name

    if components_file is not None:
        raise click.UsageError("--components: arena serve plays the shipped components only")
    rules = _ruleset(game, edition, None)
    names = tuple(name.strip() for name in house_bots.split(",") if name.strip())
    for name in names:
        if not is_valid_name(name):
            raise click.UsageError(f"--house-bots: {shown(name)} is not a bot name")
    options = Options(data=data, game=game, edition=rules.edition,
                      time_control=TimeControl(per_move_ms, bank_ms, first_move_ms),
                      concurrency=concurrency or usable_cpus(),
                      dask=dask_address,
                      sandbox=sandbox, house_bots=names, uploads_per_hour=uploads_per_hour,
                      max_upload_bytes=max_upload_mb * 1_000_000,
                      max_author_bytes=max_author_mb * 1_000_000, failing_streak=failing_streak)
    run_server(options, host=host, port=port, user=user)


def _client(server: str, token_file: Path | None):  # type: ignore[no-untyped-def]
    from arena.serve.client import Client, read_token

    return Client(server, read_token(token_file))


@main.group()
def author() -> None:
    """Organizer: add or revoke the authors of an arena (arena serve)."""


@author.command("add")
@click.argument("name")
@click.option("--server", required=True, help=SERVER_HELP)
@click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path), help=TOKEN_FILE_HELP)
def author_add(name: str, server: str, token_file: Path | None) -> None:
    """Add the author NAME and print their token (shown once: pass it to them)."""
    client = _client(server, token_file)
    answer = client.call("POST", "/api/authors", json={"name": name})
    click.echo(f"author {for_terminal(answer['name'], newlines=False)} added; their token (shown once):")
    click.echo(f"  {answer['token']}")


@author.command("revoke")
@click.argument("name")
@click.option("--server", required=True, help=SERVER_HELP)
@click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path), help=TOKEN_FILE_HELP)
def author_revoke(name: str, server: str, token_file: Path | None) -> None:
    """Revoke NAME's token: it stops working at once (their bots keep their games)."""
    _client(server, token_file).call("POST", f"/api/authors/{name}/revoke")
    click.echo(f"author {for_terminal(name, newlines=False)}: token revoked")


@main.command()
@click.argument("bot_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--server", required=True, help=SERVER_HELP)
@click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path), help=TOKEN_FILE_HELP)
@click.option("--wait", is_flag=True, help="Wait until the version is active or rejected; print the cause.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(1, 7200), default=900, show_default=True,
              help="With --wait: give up waiting after this many seconds (the check goes on).")
def upload(bot_dir: Path, server: str, token_file: Path | None, wait: bool, timeout_s: float) -> None:
    """Pack BOT_DIR and upload it to an arena as a new version of its bot (named by its bot.toml)."""
    from arena.bots.manifest import Manifest
    from arena.serve.archive import pack
    from arena.serve.client import wait_for_version

    client = _client(server, token_file)
    name = Manifest.load(bot_dir).name
    data = pack(bot_dir)
    answer = client.call("POST", f"/api/bots/{name}/versions",
                         files={"archive": (f"{name}.tar.gz", data, "application/gzip")})
    click.echo(f"uploaded {name} version {answer['number']} ({answer['files']} files): {answer['state']}")
    if not wait:
        return
    version = wait_for_version(client, answer["id"], timeout_s)
    state = version["state"]
    if state == "active":
        click.echo(f"{name} version {version['number']}: active (it plays in the ladder)")
        return
    if state == "rejected":
        click.echo(for_terminal(f"{name} version {version['number']}: rejected: {version['cause']}"))
        report = version.get("report") or {}
        for line in report.get("problems") or []:
            click.echo(for_terminal(f"  problem: {line}"))
        raise SystemExit(1)
    click.echo(f"{name} version {version['number']}: still {state} after {timeout_s:.0f} s "
               "(arena status shows it later)")
    raise SystemExit(1)


@main.command()
@click.option("--server", required=True, help=SERVER_HELP)
@click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path), help=TOKEN_FILE_HELP)
def status(server: str, token_file: Path | None) -> None:
    """Your bots on an arena: their versions, states and messages, and the uploads left."""
    me = _client(server, token_file).call("GET", "/api/me")
    if me.get("organizer"):
        click.echo("this is the organizer's token: it owns no bots")
        return
    quota = me["quota"]
    click.echo(f"author {me['name']}: {quota['uploads_left']} of {quota['uploads_per_hour']} uploads left "
               "this hour")
    if not me["bots"]:
        click.echo("no bots yet: arena upload BOT_DIR --server URL")
    for bot in me["bots"]:
        playing = bot["playing_version"]
        flag = " (quarantined)" if bot["quarantined"] else ""
        click.echo(f"{bot['name']}{flag}: " + (f"version {playing} plays" if playing else "no version plays"))
        for version in bot["versions"]:
            cause = f": {version['cause']}" if version["cause"] else ""
            click.echo(for_terminal(f"  v{version['number']}  {version['state']}{cause}", newlines=False))


from arena.cli_report import report  # noqa: E402  (registered last: the command lives in its own module)

main.add_command(report)
