"""The soak: a long round robin of the sample bots and the misbehaving ones, sandboxed.

    python -m tests.soak --games 2000        # `make soak`; the test suite runs a short one

Every misbehaving kind of tests/programs/misbehave.py that attacks the host, the referee or
the other bots is an entrant of its own (a copy of the script in its own folder, as a
sandboxed bot sees only its folder), and so is a bot whose build command snoops. The
tournament runs as an organizer runs it: ``arena run-tournament --sandbox strict`` in a
subprocess, while the soak SIGKILLs tournament workers at random moments. Before it,
``arena submit`` is tried with an escaping name, a symlinked folder and a taken name.
Afterwards the soak checks that the command succeeded, that every scheduled game is in
the database (and in games.jsonl) exactly once, that no sample bot ever lost a game by a
failure, that no escape attempt of a bot or its build succeeded (their logs say DONE),
that nothing of any bot is left running or frozen and no bot cgroup is left behind, and
prints the totals and the failures by kind.

Then a short Stack'n Stuff tournament (also strict, through the CLI) of two attacks on what a
bot may know and compute beside two sample bots: ``predict_order`` tries to predict the
hidden join order of the stuff tiles (from guessable seeds, and from the other game of a
pair), ``spin_after_reply`` keeps a helper spinning and reports its CPU per wait. An exact
prediction, more than half the places right, or a helper that got more than a quarter of a
long wait (50 ms or more) counts as an escape.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from arena.launch.bubblewrap import MAX_UIDS, UID_BASE
from arena.launch.cgroup import stale_groups
from arena.resources import sample_bots_dir
from arena.tournament.config import TournamentConfig
from arena.tournament.schedule import schedule
from arena.tournament.storage import ResultStore
from tests.helpers import ARENA_ARGV, live_bot_processes, misbehaving_bot, worker_processes, write_bot

# kind -> arguments; "{...}" is filled in with the soak's own paths
KINDS: dict[str, tuple[str, ...]] = {
    "net": ("{port}",), "snoop": ("{db}", "{other_bot}", "{results}"), "write": ("{results}/x", "{repo}/x"),
    "balloon": (), "fork_bomb": (), "disk_fill": (), "stderr_spam": (), "ignore_term": (),
    "setsid_daemon": (), "close_output": ("stdio",), "crash": (), "hang": (), "garbage": (),
    "illegal": (), "flood": (), "huge": (), "exit_at_start": (),
    # the referee's resources: connections and foreign identities (ZeroMQ), hostile text
    "connection_flood": (), "identity_flood": (), "multipart": (), "no_identity": (),
    "close_and_exit_slowly": (), "hostile_error": (), "hostile_info": (),
    # other bots: the kernel keyring; the machine: helpers computing off the bot's turn (and
    # measuring it); what a bot may not know: Stack'n Stuff's hidden join order
    "keyring": (), "spin_helpers": ("2",), "spin_after_reply": ("stdio",), "predict_order": (),
    # the machine's shared budgets (issue 31): socket buffers (MiB of TCP, of UDP), AIO events
    # (contexts of 4096), ptys, huge pages; AF_UNIX buffers past the memory limit (MiB)
    "socket_hog": ("1024", "256"), "aio_hog": ("64",), "pty_hog": ("4096",), "hugepage_hog": ("512",),
    "unix_hog": ("2048",),
    # the build: reads secrets and writes outside its folder (see BUILD_SNOOP)
    "build_snoop": (),
}
# A bot that plays normally but whose build tries to read secrets into its own folder and
# to write outside it; under strict it builds in a private copy as its own uid.
BUILD_SNOOP = ("(cat /etc/shadow; ls -la /root; ls {results}/..) > stolen.txt 2>&1; "
               "echo pwned > {repo}/pwned-by-build 2>/dev/null; true")
# their logs must never say DONE (but for TMPDIR)
ESCAPES = ("net", "snoop", "write", "keyring", "socket_hog", "aio_hog", "pty_hog", "hugepage_hog",
           "unix_hog")
SHORT = ("fork_bomb", "balloon", "net", "ignore_term", "crash", "connection_flood", "hostile_error",
         "keyring", "spin_helpers", "build_snoop", "spin_after_reply", "predict_order")
HIDDEN = ("predict_order", "spin_after_reply")  # also in the Stack'n Stuff tournament
HIDDEN_SAMPLES = ("random", "mcts")  # mcts thinks: long waits for the spinner
LONG_WAIT_MS = 50  # a wait this long would give an unfrozen helper tens of ms ...
MAX_WAIT_SHARE = 0.25  # ... of which a frozen one gets at most this share (FREEZE_GRACE_S + the thaw)
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
    exit_code: int = 0  # of `arena run-tournament`
    errors: str = ""  # what it said on stderr when it failed
    escapes: list[str] = field(default_factory=list)  # attempts that got through
    submit_problems: list[str] = field(default_factory=list)  # submits that were not refused
    worker_kills: int = 0
    duplicates: int = 0  # games stored more than once
    hidden: list[str] = field(default_factory=list)  # what the Stack'n Stuff attacks got (lines)

    @property
    def ok(self) -> bool:
        return (self.exit_code == 0 and self.stored == self.scheduled == self.in_jsonl
                and not self.duplicates and not self.sample_failures and not self.leftovers
                and not self.stale_cgroups and not self.escapes and not self.submit_problems)

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
        out.append(f"workers killed during the run: {self.worker_kills}; games stored twice: "
                   f"{self.duplicates}")
        out.append(f"escape attempts that got through: {len(self.escapes)}; submits not refused: "
                   f"{len(self.submit_problems)}")
        out += [f"stack-n-stuff attacks: {line}" for line in self.hidden]
        out += [f"  escape: {line}" for line in self.escapes[:10]]
        out += [f"  submit: {line}" for line in self.submit_problems]
        out += [f"  sample bot failure: {line}" for line in self.sample_failures[:10]]
        if self.exit_code:
            out.append(f"arena run-tournament exited with {self.exit_code}: {self.errors.strip()[-2000:]}")
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
        args = [arg.format(**values) for arg in KINDS[kind] if arg != "stdio"]
        if kind == "build_snoop":  # plays like the random bot; its build is the attack
            bot = misbehaving_bot(folder / f"bad-{kind}", "slow", "0", "0", name=f"bad-{kind}")
            bot = write_bot(bot.folder, bot.name, list(bot.command), build=BUILD_SNOOP.format(**values))
        else:
            bot = misbehaving_bot(folder / f"bad-{kind}", kind, *args, stdio="stdio" in KINDS[kind])
        entrants.append(bot.folder)
    return entrants


def try_submits(folder: Path) -> list[str]:
    """``arena submit`` of bots that must be refused; returns what was not."""
    entrants = folder / "entrants"
    problems = []
    escape = misbehaving_bot(folder / "submit-escape", "crash", name="x")
    toml = escape.folder / "bot.toml"
    toml.write_text(toml.read_text().replace('name = "x"', 'name = "../../escaped-by-name"'))
    linked = misbehaving_bot(folder / "submit-link", "crash", name="linked")
    (linked.folder / "passwd").symlink_to("/etc/passwd")
    for label, bot in (("escaping name", escape.folder), ("symlink", linked.folder)):
        run = subprocess.run([*ARENA_ARGV, "submit", str(bot), "--entrants", str(entrants)],
                             capture_output=True, text=True, timeout=300)
        if run.returncode == 0 or "Traceback" in run.stderr:
            problems.append(f"{label}: exit {run.returncode}: {run.stderr.strip()[-300:]}")
    if (folder / "escaped-by-name").exists() or (entrants / "linked").exists():
        problems.append("a refused bot was installed anyway")
    owner = sample_bots_dir() / "random"
    squatter = misbehaving_bot(folder / "submit-squat", "crash", name="random")
    for attempt, bot in enumerate((owner, squatter)):
        run = subprocess.run([*ARENA_ARGV, "submit", str(bot), "--entrants", str(entrants)],
                             capture_output=True, text=True, timeout=600)
        if (run.returncode == 0) != (attempt == 0):
            problems.append(f"submit #{attempt + 1} of the name 'random': exit {run.returncode}: "
                            f"{(run.stderr or run.stdout).strip()[-300:]}")
    if (entrants / "random" / "misbehave.py").exists():
        problems.append("the squatter replaced the entrant 'random'")
    return problems


def kill_workers(runner: subprocess.Popen[str], kills: int, seed: int) -> int:
    """SIGKILL a random tournament worker of ``runner`` up to ``kills`` times, at random
    moments (every 5 to 40 s) while it runs; returns how many were killed."""
    rng = random.Random(seed)
    killed = 0
    while killed < kills and runner.poll() is None:
        deadline = time.monotonic() + rng.uniform(5, 40)
        while time.monotonic() < deadline and runner.poll() is None:
            time.sleep(0.1)
        workers = worker_processes(runner.pid)
        if workers and runner.poll() is None:
            try:
                os.kill(rng.choice(workers), signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
    return killed


def soak(games: int = 2000, *, kinds: Sequence[str] = tuple(KINDS), samples: Sequence[str] | None = None,
         concurrency: int | None = None, out: Path | None = None, quiet: bool = False,
         worker_kills: int = 3, submits: bool = True, hidden_games: int = 24) -> SoakReport:
    """Run the soak tournament (at least ``games`` games) through the CLI and check what it left.
    ``quiet`` keeps the CLI's output (shown only if it fails) off the terminal; up to
    ``worker_kills`` tournament workers are SIGKILLed at random moments of the run. Then at least
    ``hidden_games`` games of Stack'n Stuff with the HIDDEN attacks (none: 0 or no such kind)."""
    work = Path(tempfile.mkdtemp(prefix="arena-soak-"))
    out = out or work / "results"
    listener = socket.create_server(("127.0.0.1", 0))  # something for "net" to try to reach
    values = {"port": str(listener.getsockname()[1]), "db": str(out / "tournament.db"),
              "other_bot": str(sample_bots_dir() / "greedy" / "bot.py"), "home": str(Path.home()),
              "results": str(out), "repo": str(Path(__file__).resolve().parents[1])}
    try:
        submit_problems = try_submits(work / "submits") if submits else []
        entrants = make_entrants(work / "bots", kinds, samples, values)
        pairings = len(entrants) * (len(entrants) - 1) // 2
        per_pairing = max(2, 2 * -(-games // (2 * pairings)))
        command = [*ARENA_ARGV, "run-tournament", *[arg for bot in entrants for arg in ("--bots", str(bot))],
                   "--name", "soak", "--games", str(per_pairing), "--seed", "7", "--time-per-move", "100",
                   "--bank-ms", "300", "--first-move-ms", "3000", "--sandbox", "strict", "--out", str(out),
                   *(["--concurrency", str(concurrency)] if concurrency else [])]
        if not quiet:
            print(f"soak: {len(entrants)} entrants, {pairings} pairings x {per_pairing} games = "
                  f"{pairings * per_pairing} games, results in {out}", flush=True)
        started = time.monotonic()
        runner = subprocess.Popen(command, stdout=subprocess.PIPE if quiet else None,
                                  stderr=subprocess.PIPE, text=True)
        killer = ThreadPoolExecutor(1).submit(kill_workers, runner, worker_kills, seed=7)
        _, stderr = runner.communicate()
        seconds = time.monotonic() - started
        if not quiet:
            sys.stderr.write(stderr)
        report = _check(out, pairings * per_pairing, seconds, runner.returncode, stderr, [work])
        report.worker_kills = killer.result()
        report.submit_problems = submit_problems
        report.escapes += _escapes(out, values)
        attackers = [e for e in entrants if e.name in {f"bad-{kind}" for kind in HIDDEN}]
        if hidden_games and attackers:
            report.hidden, escapes, problem = _hidden_phase(out.with_name(out.name + "-sns"), attackers,
                                                            hidden_games, concurrency)
            report.escapes += escapes
            if problem and not report.exit_code:
                report.exit_code, report.errors = 1, problem
        return report
    finally:
        listener.close()
        shutil.rmtree(work / "bots", ignore_errors=True)
        shutil.rmtree(work / "submits", ignore_errors=True)


def _hidden_phase(out: Path, attackers: Sequence[Path], games: int,
                  concurrency: int | None) -> tuple[list[str], list[str], str]:
    """The Stack'n Stuff tournament of the HIDDEN attackers and two sample bots; returns the
    summary lines, the escapes, and why the run failed ("" if it did not)."""
    entrants = [*attackers, *(sample_bots_dir() / name for name in HIDDEN_SAMPLES)]
    pairings = len(entrants) * (len(entrants) - 1) // 2
    per_pairing = max(2, 2 * -(-games // (2 * pairings)))
    run = subprocess.run([*ARENA_ARGV, "run-tournament", "--game", "stack-n-stuff",
                          *[arg for bot in entrants for arg in ("--bots", str(bot))], "--name", "soak-sns",
                          "--games", str(per_pairing), "--seed", "1", "--time-per-move", "200",
                          "--sandbox", "strict", "--out", str(out),
                          *(["--concurrency", str(concurrency)] if concurrency else [])],
                         capture_output=True, text=True, timeout=3600)
    if run.returncode:
        return [], [], f"the Stack'n Stuff run exited with {run.returncode}: {run.stderr.strip()[-1000:]}"
    truth = {}
    for line in (out / "games.jsonl").read_text().splitlines():
        record = json.loads(line)
        truth[record["game_id"]] = record["reserve"]
    escapes = []
    guesses = exact = places = right = 0
    for log in sorted(out.glob("logs/**/bad-predict_order.stderr.log")):
        for line in log.read_text(errors="replace").splitlines():
            if not line.startswith("predict_order: "):
                continue
            entry = json.loads(line.removeprefix("predict_order: "))
            order, real = entry.get("order"), truth.get(entry["game"])
            if entry["route"] not in ("seed", "pair") or order is None or real is None:
                continue
            guesses += 1
            places += len(real)
            right += sum(a == b for a, b in zip(order, real, strict=False))
            if order == real:
                exact += 1
                escapes.append(f"bad-predict_order predicted the join order of {entry['game']} "
                               f"({entry['route']} route)")
    if places and right > places // 2:
        escapes.append(f"bad-predict_order had {right} of {places} join places right (chance: 1 in 8)")
    long_waits = []
    for log in sorted(out.glob("logs/**/bad-spin_after_reply.stderr.log")):
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("spin_after_reply: "):
                wait = json.loads(line.removeprefix("spin_after_reply: "))
                if wait["wait"] == "move" and wait["wall_ms"] >= LONG_WAIT_MS:
                    long_waits.append(wait["helper_cpu_ms"] / wait["wall_ms"])
    if long_waits and max(long_waits) > MAX_WAIT_SHARE:
        escapes.append(f"bad-spin_after_reply's helper computed {max(long_waits):.0%} of a wait of "
                       f"{LONG_WAIT_MS} ms or more")
    lines = [f"{len(truth)} games; join-order predictions exact {exact} of {guesses}, places right "
             f"{right} of {places}; spinner's helper over {len(long_waits)} waits of {LONG_WAIT_MS} ms or "
             f"more: at most {max(long_waits, default=0):.1%} of the wait"]
    return lines, escapes, ""


def _escapes(out: Path, values: dict[str, str]) -> list[str]:
    """Attempts of the escaping kinds (and of the snooping build) that got through."""
    found = []
    for log in sorted(out.glob("logs/**/bad-*.stderr.log")):
        if not any(log.name == f"bad-{kind}.stderr.log" for kind in ESCAPES):
            continue
        for line in log.read_text(errors="replace").splitlines():
            if ": DONE" in line and "mine.txt" not in line:  # writing its own TMPDIR must work
                found.append(f"{log.name}: {line[:200]}")
    stolen = out / "builds" / "bad-build_snoop" / "stolen.txt"
    if stolen.is_file():
        text = stolen.read_text(errors="replace")
        if "root:" in text or "tournament.db" in text:
            found.append(f"the build read secrets: {text[:200]!r}")
    pwned = Path(values["repo"]) / "pwned-by-build"
    if pwned.exists():
        pwned.unlink()
        found.append(f"the build wrote {pwned}")
    return found


def _check(out: Path, planned: int, seconds: float, exit_code: int, errors: str,
           bot_folders: Sequence[Path] = ()) -> SoakReport:
    """What the run stored, against what its stored config schedules."""
    if not (out / "tournament.db").is_file():  # it stopped before storing anything
        return SoakReport(planned, 0, 0, seconds, {}, {}, 0, exit_code=exit_code, errors=errors)
    with ResultStore(out, readonly=True) as store:
        config = TournamentConfig.from_json(store.stored_config() or {})
    samples = {e.name for e in config.entrants if not e.name.startswith("bad-")}
    scheduled = {spec.game_id for spec in schedule(config.plan)}
    with sqlite3.connect(out / "tournament.db") as conn:
        rows = conn.execute("SELECT game_id, seat0, seat1, loser, reason, detail FROM games").fetchall()
    stored = {row[0] for row in rows}
    in_jsonl = (out / "games.jsonl").read_text().count("\n")
    duplicates = len(rows) - len({row[0] for row in rows})
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
    # Live sandboxed bot processes of this soak's bots (run from its folders or the sample
    # bots'): a strict run going on beside the soak does not count.
    folders = (*(str(folder) for folder in bot_folders), str(out), str(sample_bots_dir()))
    leftovers = [pid for pid in live_bot_processes(uids=range(UID_BASE, UID_BASE + MAX_UIDS))
                 if _cwd(pid).startswith(folders)]
    return SoakReport(len(scheduled), len(stored & scheduled), in_jsonl, seconds, reasons, by_bot,
                      sample_games, sample_failures, leftovers, [str(g) for g in stale_groups()],
                      exit_code, errors, duplicates=duplicates)


def _cwd(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return ""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=2000, help="at least this many games (default 2000)")
    parser.add_argument("--concurrency", type=int, default=None)
    parser.add_argument("--short", action="store_true", help="the short soak CI runs")
    parser.add_argument("--out", type=Path, default=None, help="results folder (default: a temporary one)")
    parser.add_argument("--kill-workers", type=int, default=3,
                        help="SIGKILL this many tournament workers at random moments (default 3)")
    args = parser.parse_args(argv)
    kinds, samples = (SHORT, SHORT_SAMPLES) if args.short else (tuple(KINDS), None)
    report = soak(args.games, kinds=kinds, samples=samples, concurrency=args.concurrency, out=args.out,
                  worker_kills=args.kill_workers, hidden_games=max(24, args.games // 20))
    print("\n".join(report.lines()))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
