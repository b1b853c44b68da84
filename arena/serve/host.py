"""The game host of `arena serve`: the one part that keeps root, to start strict sandboxes.

`arena serve` starts it (``python -m arena.serve.host``) before the web process drops its
privileges, and talks to it in JSON lines over its stdin and stdout. It trusts nothing it
is sent: every message is checked, every bot folder must lie in the data folder's
``versions/`` (or be a house bot shipped with the package) and is copied, links refused,
into a root-owned folder before anything runs it.

web -> host::

    {"op": "run", "epoch": E, "entrants": [{"label": L, "folder": F}, ...]}
    {"op": "play", "epoch": E, "game": {index, game_id, seat0, seat1, seed, pair}}
    {"op": "stop", "epoch": E}
    {"op": "check", "version": V, "folder": F}

host -> web::

    {"op": "want", "epoch": E}            a worker is free: answer play or stop
    {"op": "move", "game_id": G, "entry": {...}}
    {"op": "done", "epoch": E, "game": {...}, "record": {...}, "duration_s": S}
    {"op": "ended", "epoch": E, "error": "..." or null, "broken": {label: why}}
    {"op": "stage", "version": V, "state": "building" | "checking"}
    {"op": "checked", "version": V, "ok": bool, "lines": [...], "problems": [...], "warnings": [...]}

A run plays on the project's workers (local processes, or Dask): a worker that dies costs
its game, which is replayed. The host dies with the web process (SIGTERM on its death),
and closing closes every worker and bot.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from arena.clock import DEFAULT_TIME_CONTROL, TimeControl
from arena.errors import ArenaError
from arena.launch.levels import Sandbox
from arena.signals import die_with_parent
from arena.untrusted import copy_folder, inside, is_valid_name, remove_tree

CHECK_GAMES = 4
CHECK_TIMEOUT_S = 600.0


class _NothingToPlay(Exception):
    """Fewer than two versions of the run are built and sound: the run ends at once."""




class Host:
    def __init__(self, args: argparse.Namespace, out: IO[str]) -> None:
        from arena.bots.pool import sample_bots_dir
        from arena.launch.launcher import Launcher

        self.args = args
        self.data = Path(args.data).resolve()
        self.versions = self.data / "versions"
        self.house = sample_bots_dir().resolve()
        self.private = self.data / "host"
        self.private.mkdir(mode=0o700, exist_ok=True)
        os.chmod(self.private, 0o700)
        self.launcher = Launcher.for_level(args.sandbox)
        self._out = out
        self._send_lock = threading.Lock()
        self.runs: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.replies: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.checks: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.closing = False
        self.stopped: set[Any] = set()  # runs told to stop: their games sent ahead are dropped
        # label -> (built folder, manifest, build error or ""): each version is built once
        self.built: dict[str, tuple[Path, Any, str]] = {}
        self.building: set[str] = set()
        self.builder: threading.Thread | None = None
        self.current_check: tuple[int, subprocess.Popen[str]] | None = None  # (version, its process)

    # ------------------------------------------------------------------ messages
    def send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, separators=(",", ":")) + "\n"
        with self._send_lock:
            try:
                self._out.write(line)
                self._out.flush()
            except (BrokenPipeError, OSError, ValueError):
                self.closing = True

    def read_commands(self, stream: IO[str]) -> None:
        """The reader thread: each command to its queue; EOF (the web process is gone) closes."""
        for line in stream:
            try:
                message = json.loads(line)
                op = message["op"]
            except (ValueError, KeyError, TypeError):
                print(f"host: ignored a malformed command: {line[:200]!r}", file=sys.stderr)
                continue
            if op == "run":
                self.runs.put(message)
            elif op == "stop":
                self.stopped.add(message.get("epoch"))
                self.replies.put(message)
            elif op == "play":
                self.replies.put(message)
            elif op == "check":
                self.checks.put(message)
            elif op == "cancel":
                current = self.current_check
                if current is not None and current[0] == message.get("version"):
                    current[1].kill()
        self.closing = True
        self.runs.put(None)
        self.replies.put(None)
        self.checks.put(None)
        # The web process is gone or closing: games in flight are abandoned, not waited for
        # (the main thread unwinds on SIGTERM and closes every worker and bot).
        os.kill(os.getpid(), signal.SIGTERM)

    # ------------------------------------------------------------------ folders
    def bot_folder(self, label: str, folder: str) -> Path:
        """A root-owned copy of a version's folder (made once: versions never change)."""
        if not is_valid_name(label):
            raise ArenaError(f"host: refusing the label {label!r}")
        source = Path(folder).resolve()
        if not (source.is_relative_to(self.versions.resolve()) or source.is_relative_to(self.house)):
            raise ArenaError(f"host: refusing {folder!r}: not a version folder of this arena")
        copy = inside(self.private, "src", label)
        if not copy.exists():
            staging = inside(self.private, "src", f".{label}.{os.getpid()}")
            if staging.exists():
                remove_tree(staging)
            staging.parent.mkdir(parents=True, exist_ok=True)
            copy_folder(source, staging, links_inside=False, mode_mask=0o755)
            staging.rename(copy)
        return copy

    # ------------------------------------------------------------------ the ladder
    def serve_runs(self) -> None:
        while (run := self.runs.get()) is not None:
            if self.closing:
                break
            self.play_run(run)

    def play_run(self, run: dict[str, Any]) -> None:
        from arena.engine.components import ruleset_for
        from arena.tournament.schedule import GameSpec
        from arena.tournament.series import Lineup
        from arena.tournament.workers import WorkerProcesses

        epoch = run.get("epoch")
        error = None
        broken: dict[str, str] = {}
        executor: Any = None
        try:
            entrants = [(str(e["label"]), str(e["folder"])) for e in run["entrants"]]
            tc = _time_control(self.args)
            ruleset = ruleset_for(self.args.game, self.args.edition, None)
            logs = self.private / "logs" / "ladder"
            # Each version is built once, in the background: the run starts with the versions
            # built already, so a slow build (or a hostile one) never holds up the ladder.
            self.build_missing(entrants, epoch, logs, ruleset)
            ready = [(label, self.built[label]) for label, _ in entrants if label in self.built]
            broken = {label: entry[2] for label, entry in ready if entry[2]}
            ready = [(label, entry) for label, entry in ready if not entry[2]]
            labels = [label for label, _ in ready]
            self.send({"op": "lineup", "epoch": epoch, "labels": labels})
            if len(ready) < 2:
                raise _NothingToPlay()
            lineup = Lineup(
                tuple(entry[0] for _, entry in ready),
                tuple(labels),
                time_control=tc,
                ruleset=ruleset,
                edition=ruleset.edition,
                launcher=self.launcher,
                read=tuple(entry[1] for _, entry in ready),
            )

            def on_move(spec: GameSpec, entry: dict[str, Any]) -> None:
                self.send({"op": "move", "game_id": spec.game_id, "entry": entry})

            if self.args.dask:
                from arena.tournament.distributed import DaskExecutor

                executor = DaskExecutor(lineup, self.args.dask)
            else:
                executor = WorkerProcesses(
                    lineup,
                    logs,
                    self.args.concurrency,
                    on_move=on_move,
                    advice="the ladder goes on with other games",
                )

            def wanted() -> Any:
                known = set(labels)
                while not self.closing and epoch not in self.stopped:
                    self.send({"op": "want", "epoch": epoch})  # a replacement for the game taken now
                    reply = self.replies.get()
                    while reply is not None and reply.get("epoch") != epoch:  # a late one of an earlier run
                        reply = self.replies.get()
                    if reply is None or reply.get("op") != "play" or epoch in self.stopped:
                        return
                    game = reply.get("game") or {}
                    try:
                        spec = GameSpec(
                            int(game["index"]),
                            str(game["game_id"]),
                            str(game["seat0"]),
                            str(game["seat1"]),
                            int(game["seed"]),
                            int(game["pair"]),
                        )
                    except (KeyError, TypeError, ValueError):
                        continue
                    if spec.seat0 in known and spec.seat1 in known and spec.seat0 != spec.seat1:
                        yield spec

            for spec, result in executor.run(wanted()):
                self.send(
                    {
                        "op": "done",
                        "epoch": epoch,
                        "game": vars(spec),
                        "record": result.record,
                        "duration_s": result.duration_s,
                    }
                )
        except _NothingToPlay:
            pass
        except ArenaError as exc:
            error = str(exc)
        except Exception as exc:  # a bug: said in one line, and the ladder starts over
            error = f"{type(exc).__name__}: {exc}"
        finally:
            if executor is not None:
                executor.close()
            while not self.replies.empty():  # answers to wants of the run just ended
                if self.replies.get_nowait() is None:
                    self.replies.put(None)
                    break
        self.send({"op": "ended", "epoch": epoch, "error": error, "broken": broken})

    def build_missing(self, entrants: list[tuple[str, str]], epoch: Any, logs: Path, ruleset: Any) -> None:
        """Build, in a thread, the entrants not built yet (one at a time, each once for the
        host's life); when they are done the web process hears ``built`` and starts a run
        with them. Returns at once, unless fewer than two entrants are built: then there is
        nothing to play before the builds are done, so it waits for them."""
        from arena.bots.manifest import Manifest
        from arena.tournament.series import Lineup, build_lineup

        missing = [
            (label, folder)
            for label, folder in entrants
            if label not in self.built and label not in self.building
        ]
        if missing:
            self.building.update(label for label, _ in missing)

            def build() -> None:
                done = []
                for label, folder in missing:
                    try:
                        copy = self.bot_folder(label, folder)
                        manifest = Manifest.load(copy)
                        single = Lineup(
                            (copy,),
                            (label,),
                            ruleset=ruleset,
                            edition=ruleset.edition,
                            launcher=self.launcher,
                            read=(manifest,),
                        )
                        built = build_lineup(single, logs, self.private / "builds")
                        self.built[label] = (built.folders[0], manifest, built.broken.get(0, ""))
                    except (ArenaError, OSError) as exc:
                        self.built[label] = (Path(folder), None, f"it could not be prepared: {exc}")
                    except Exception as exc:  # a bug: this version does not play, the others do
                        self.built[label] = (Path(folder), None, f"{type(exc).__name__}: {exc}")
                    finally:
                        self.building.discard(label)
                    done.append(label)
                self.send(
                    {
                        "op": "built",
                        "epoch": epoch,
                        "labels": done,
                        "broken": {label: self.built[label][2] for label in done if self.built[label][2]},
                    }
                )

            self.builder = threading.Thread(target=build, daemon=True, name="builds")
            self.builder.start()
        if sum(1 for label, _ in entrants if label in self.built and not self.built[label][2]) < 2:
            builder = self.builder
            if builder is not None:
                builder.join()

    # ------------------------------------------------------------------ checks
    def serve_checks(self) -> None:
        while (check := self.checks.get()) is not None:
            if self.closing:
                break
            version: Any = check.get("version")
            try:
                folder = self.bot_folder(f"check-{int(version)}", str(check["folder"]))
            except (ArenaError, KeyError, TypeError, ValueError, OSError) as exc:
                self.send(
                    {
                        "op": "checked",
                        "version": version,
                        "ok": False,
                        "lines": [],
                        "problems": [f"the upload could not be prepared for its check: {exc}"],
                        "warnings": [],
                    }
                )
                continue
            self.send({"op": "stage", "version": version, "state": "building"})
            self.send(self.check_one(int(version), folder))
            remove_tree(folder)  # the ladder plays its own copy: one a check is up to 200 MB for nothing

    def check_one(self, version: int, folder: Path) -> dict[str, Any]:
        """Run the check in a process of its own (it starts bots: signals are per process)."""
        argv = [
            sys.executable,
            "-m",
            "arena.serve.host",
            "check",
            "--data",
            str(self.data),
            "--folder",
            str(folder),
            "--version",
            str(version),
            *self._game_args(),
        ]
        problems = []
        try:
            process = subprocess.Popen(
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
                text=True,
                preexec_fn=die_with_parent,
            )
        except OSError as exc:
            return {
                "op": "checked",
                "version": version,
                "ok": False,
                "lines": [],
                "problems": [f"the check could not start: {exc}"],
                "warnings": [],
            }
        started = time.monotonic()
        self.current_check = (version, process)
        timer = threading.Timer(CHECK_TIMEOUT_S, process.kill)
        timer.start()
        final: dict[str, Any] | None = None
        try:
            assert process.stdout is not None
            for line in process.stdout:
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if message.get("stage"):
                    self.send({"op": "stage", "version": version, "state": message["stage"]})
                elif "report" in message:
                    final = message["report"]
            process.wait()
        finally:
            timer.cancel()
            self.current_check = None
        if final is None:
            problems.append(
                f"the check ended without a report after {time.monotonic() - started:.0f} s "
                f"(exit status {process.returncode})"
            )
            final = {"lines": [], "problems": problems, "warnings": []}
        return {"op": "checked", "version": version, "ok": not final["problems"], **final}

    def _game_args(self) -> list[str]:
        a = self.args
        return [
            "--game",
            a.game,
            "--edition",
            a.edition,
            "--per-move-ms",
            str(a.per_move_ms),
            "--bank-ms",
            str(a.bank_ms),
            "--first-move-ms",
            str(a.first_move_ms),
            "--sandbox",
            a.sandbox.value,
        ]


def _check_main(args: argparse.Namespace) -> int:
    """``python -m arena.serve.host check``: the check `arena submit` runs, on one folder."""
    from arena.checks import run_conformance
    from arena.engine.components import ruleset_for
    from arena.launch.launcher import Launcher
    from arena.signals import unwind_on_termination

    unwind_on_termination()
    die_with_parent()
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever else prints goes to stderr, not into the report

    def stage(state: str) -> None:
        out.write(json.dumps({"stage": state}) + "\n")
        out.flush()

    logs = Path(args.data) / "host" / "logs" / "checks" / str(args.version)
    if logs.exists():
        remove_tree(logs)
    logs.mkdir(parents=True)
    try:
        report = run_conformance(
            Path(args.folder),
            games=CHECK_GAMES,
            log_dir=logs,
            per_move_ms=args.per_move_ms,
            bank_ms=args.bank_ms,
            first_move_ms=args.first_move_ms,
            ruleset=ruleset_for(args.game, args.edition, None),
            launcher=Launcher.for_level(args.sandbox),
            submitting=True,
            on_stage=stage,
        )
        result = {
            "lines": report.lines,
            "problems": report.problems,
            "warnings": report.warnings,
            "log": _tail(report.log),
        }
    except ArenaError as exc:
        result = {"lines": [], "problems": [str(exc)], "warnings": []}
    out.write(json.dumps({"report": result}) + "\n")
    out.flush()
    return 0


LOG_SHOWN_BYTES = 64 * 1024


def _tail(path: Path | None) -> str:
    """The end of the bot's log of its check, for its author (the web process cannot read ours)."""
    if path is None:
        return ""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - LOG_SHOWN_BYTES))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True)
    parser.add_argument("--game", default="patchwork")
    parser.add_argument("--edition", default="revised")
    parser.add_argument("--per-move-ms", type=int, default=DEFAULT_TIME_CONTROL.per_move_ms)
    parser.add_argument("--bank-ms", type=int, default=DEFAULT_TIME_CONTROL.bank_ms)
    parser.add_argument("--first-move-ms", type=int, default=DEFAULT_TIME_CONTROL.first_move_ms)
    parser.add_argument("--sandbox", type=Sandbox, choices=list(Sandbox), default=Sandbox.STRICT)


def _time_control(args: argparse.Namespace) -> TimeControl:
    """The time control the service passed as flags (service.start_host)."""
    return TimeControl(args.per_move_ms, args.bank_ms, args.first_move_ms)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m arena.serve.host")
    commands = parser.add_subparsers(dest="command", required=True)
    host = commands.add_parser("host")
    _options(host)
    host.add_argument("--concurrency", type=int, default=1)
    host.add_argument("--dask", default=None)
    check = commands.add_parser("check")
    _options(check)
    check.add_argument("--folder", required=True)
    check.add_argument("--version", type=int, required=True)
    args = parser.parse_args(argv)
    if args.command == "check":
        return _check_main(args)

    from arena.signals import unwind_on_termination

    die_with_parent()
    unwind_on_termination(0)  # SIGTERM (the web process died) unwinds: every worker and bot is closed
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    host_ = Host(args, out)
    host_.launcher.remove_stale()  # what a killed server left: cgroups, scratch folders
    threading.Thread(target=host_.read_commands, args=(sys.stdin,), daemon=True, name="commands").start()
    threading.Thread(target=host_.serve_checks, daemon=True, name="checks").start()
    host_.send({"op": "ready"})
    try:
        host_.serve_runs()
    finally:
        host_.closing = True
    return 0


if __name__ == "__main__":
    sys.exit(main())
