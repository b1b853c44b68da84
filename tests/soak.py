"""The soak: a long round robin of the sample bots and the misbehaving ones, sandboxed.

    python -m tests.soak --games 2000        # `make soak`; the test suite runs a short one

Every misbehaving kind of tests/bots/misbehave.py that attacks the host or the referee
is an entrant of its own (a copy of the script in its own folder, as a sandboxed bot
sees only its folder). The tournament runs under ``--sandbox strict``; afterwards the
soak checks that every scheduled game is in the database (and in games.jsonl), that no
sample bot ever lost a game by a failure, that nothing of any bot is left running and
no bot cgroup is left behind, and prints the totals and the failures by kind.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from arena.channel.cgroup import detect
from arena.channel.process import MARKER_VAR
from arena.channel.sandbox import MAX_UIDS, UID_BASE
from arena.paths import sample_bots_dir
from arena.tournament.config import load_config
from arena.tournament.runner import run_tournament
from arena.tournament.schedule import schedule

MISBEHAVE = Path(__file__).parent / "bots" / "misbehave.py"
# kind -> arguments; "{...}" is filled in with the soak's own paths
KINDS: dict[str, tuple[str, ...]] = {
    "net": ("{port}",), "snoop": ("{db}", "{other_bot}", "{home}"), "write": ("{results}/x", "{repo}/x"),
    "balloon": (), "fork_bomb": (), "disk_fill": (), "stderr_spam": (), "ignore_term": (),
    "setsid_daemon": (), "close_output": ("stdio",), "crash": (), "hang": (), "garbage": (),
    "illegal": (), "flood": (), "huge": (), "exit_at_start": (),
}
SHORT = ("fork_bomb", "balloon", "net", "ignore_term", "crash")
SHORT_SAMPLES = ("random", "greedy", "cbot")


@dataclass
class SoakReport:
    scheduled: int
    stored: int
    in_jsonl: int
    seconds: float
    reasons: dict[str, int]  # failure kind -> games
    by_bot: dict[str, dict[str, int]]  # misbehaving bot -> failure kind -> games lost
    sample_games: int  # games between two sample bots
    sample_failures: list[str] = field(default_factory=list)  # games a sample bot lost by a failure
    leftovers: list[int] = field(default_factory=list)  # live processes of the soak's bots
    stale_cgroups: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (self.stored == self.scheduled == self.in_jsonl and not self.sample_failures
                and not self.leftovers and not self.stale_cgroups)

    def lines(self) -> list[str]:
        failures = sum(self.reasons.values())
        out = [f"games: {self.stored} stored of {self.scheduled} scheduled ({self.in_jsonl} in games.jsonl) "
               f"in {self.seconds:.0f} s ({self.stored / max(self.seconds, 1e-9):.2f} games/s)",
               f"normal: {self.stored - failures}; ended by a failure: {failures}",
               f"sample-vs-sample games: {self.sample_games}, failures blamed on a sample bot: "
               f"{len(self.sample_failures)}",
               "failures by kind: " + (", ".join(f"{k} {n}" for k, n in sorted(self.reasons.items()))
                                       or "none")]
        for bot, reasons in sorted(self.by_bot.items()):
            out.append(f"  {bot}: " + ", ".join(f"{k} {n}" for k, n in sorted(reasons.items())))
        out.append(f"left running afterwards: {len(self.leftovers)} process(es); stale bot cgroups: "
                   f"{len(self.stale_cgroups)}")
        out += [f"  sample bot failure: {line}" for line in self.sample_failures[:10]]
        out.append("SOAK OK" if self.ok else "SOAK FAILED")
        return out


def make_entrants(folder: Path, kinds: Sequence[str], samples: Sequence[str] | None,
                  values: dict[str, str]) -> list[Path]:
    """Copies of the sample bots (all by default) and one bot folder per misbehaving kind."""
    entrants = []
    for bot in sorted(sample_bots_dir().iterdir()):
        if (bot / "bot.toml").is_file() and (samples is None or bot.name in samples):
            entrants.append(bot)
    for kind in kinds:
        bot = folder / f"bad-{kind}"
        bot.mkdir(parents=True)
        bot.chmod(0o755)
        shutil.copy(MISBEHAVE, bot / "misbehave.py")
        args = [arg.format(**values) for arg in KINDS[kind]]
        protocol = "stdio" if "stdio" in args else "zmq"
        command = ", ".join(f'"{word}"' for word in ["python", "misbehave.py", kind, *args])
        (bot / "bot.toml").write_text(f'name = "bad-{kind}"\ncommand = [{command}]\n'
                                      f'protocol = "{protocol}"\n')
        entrants.append(bot)
    return entrants


def soak(games: int = 2000, *, kinds: Sequence[str] = tuple(KINDS), samples: Sequence[str] | None = None,
         concurrency: int | None = None, out: Path | None = None, quiet: bool = False) -> SoakReport:
    """Run the soak tournament (at least ``games`` games) and check what it left."""
    work = Path(tempfile.mkdtemp(prefix="arena-soak-"))
    out = out or work / "results"
    listener = socket.create_server(("127.0.0.1", 0))  # something for "net" to try to reach
    values = {"port": str(listener.getsockname()[1]), "db": str(out / "tournament.db"),
              "other_bot": str(sample_bots_dir() / "greedy" / "bot.py"), "home": str(Path.home()),
              "results": str(out), "repo": str(Path(__file__).resolve().parents[1])}
    try:
        entrants = make_entrants(work / "bots", kinds, samples, values)
        pairings = len(entrants) * (len(entrants) - 1) // 2
        per_pairing = max(2, 2 * -(-games // (2 * pairings)))
        config = load_config(None, {
            "entrants": [str(p) for p in entrants], "name": "soak", "games": per_pairing, "seed": 7,
            "per_move_ms": 100, "bank_ms": 300, "first_move_ms": 3000, "sandbox": "strict",
            "concurrency": concurrency, "out": str(out)})
        if not quiet:
            print(f"soak: {len(entrants)} entrants, {pairings} pairings x {per_pairing} games = "
                  f"{pairings * per_pairing} games, concurrency {config.concurrency}, results in {out}",
                  flush=True)
        last = [0.0]

        def progress(p, spec) -> None:  # type: ignore[no-untyped-def]
            if not quiet and (time.monotonic() - last[0] > 30 or p.done == p.total):
                last[0] = time.monotonic()
                print(f"  {p.done}/{p.total} games, {p.failures} failures, {p.rate:.2f} games/s",
                      flush=True)

        summary = run_tournament(config, on_progress=progress)
        return _check(config, out, summary.seconds, {e.name for e in config.entrants
                                                      if not e.name.startswith("bad-")})
    finally:
        listener.close()
        shutil.rmtree(work / "bots", ignore_errors=True)


def _check(config, out: Path, seconds: float, samples: set[str]) -> SoakReport:  # type: ignore[no-untyped-def]
    scheduled = {spec.game_id for spec in schedule(config)}
    with sqlite3.connect(out / "tournament.db") as conn:
        rows = conn.execute("SELECT game_id, seat0, seat1, loser, reason, detail FROM games").fetchall()
    stored = {row[0] for row in rows}
    in_jsonl = (out / "games.jsonl").read_text().count("\n")
    reasons: dict[str, int] = {}
    by_bot: dict[str, dict[str, int]] = {}
    sample_games = 0
    sample_failures = []
    for game_id, seat0, seat1, loser, reason, detail in rows:
        sample_games += seat0 in samples and seat1 in samples
        if reason == "normal":
            continue
        reasons[reason] = reasons.get(reason, 0) + 1
        offender = (seat0, seat1)[loser]
        bot = by_bot.setdefault(offender, {})
        bot[reason] = bot.get(reason, 0) + 1
        if offender in samples:
            sample_failures.append(f"{game_id}: {offender} {reason}: {detail}")
    return SoakReport(len(scheduled), len(stored & scheduled), in_jsonl, seconds, reasons, by_bot,
                      sample_games, sample_failures, _leftovers(), _stale_cgroups())


def _leftovers() -> list[int]:
    """Live sandboxed bot processes: a sandbox uid and a bot marker (a strict run going on
    beside the soak would show here too)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            uid = os.stat(f"/proc/{entry}").st_uid
            environ = Path(f"/proc/{entry}/environ").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if UID_BASE <= uid < UID_BASE + MAX_UIDS and f"{MARKER_VAR}=".encode() in environ and state != b"Z":
            found.append(int(entry))
    return found


def _stale_cgroups() -> list[str]:
    """Bot cgroups whose harness process is gone (the soak's workers have all exited)."""
    stale = []
    for hierarchy in detect().hierarchies:
        for folder in hierarchy.parent.glob("arena-*-*"):
            owner = folder.name.split("-")[1]
            if owner.isdigit() and not Path(f"/proc/{owner}").exists():
                stale.append(str(folder))
    return stale


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=2000, help="at least this many games (default 2000)")
    parser.add_argument("--concurrency", type=int, default=None)
    parser.add_argument("--short", action="store_true", help="the short soak CI runs")
    parser.add_argument("--out", type=Path, default=None, help="results folder (default: a temporary one)")
    args = parser.parse_args(argv)
    kinds, samples = (SHORT, SHORT_SAMPLES) if args.short else (tuple(KINDS), None)
    report = soak(args.games, kinds=kinds, samples=samples, concurrency=args.concurrency, out=args.out)
    print("\n".join(report.lines()))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
