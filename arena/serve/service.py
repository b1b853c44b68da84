"""The arena service: the ladder's coordinator, the versions' life cycle and the live state
the API reads. Lives in the web process, which alone writes the data folder's database.

The game host (:mod:`arena.serve.host`, the part that may keep root) plays the games and
runs the checks; this side decides what to play, stores what was played (each game
re-verified by the rules engine, then stored in one transaction), rates it, and publishes
events. Ratings are kept in memory and rebuilt from the games table at start: the games
table is the only truth, so a game can be neither lost nor counted twice by a restart.
"""

from __future__ import annotations

import json
import logging
import random
import secrets
import subprocess
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.clock import DEFAULT_TIME_CONTROL, TimeControl
from arena.errors import ArenaError
from arena.launch.levels import Sandbox
from arena.serve.ladder import FAILING_STREAK, Entrant, choose, pair_key
from arena.serve.store import HOUSE, ArenaStore, Version
from arena.tournament.ratings import OnlineRatings
from arena.tournament.schedule import SEED_BITS, GameSpec
from arena.tournament.storage import ResultStore

log = logging.getLogger(__name__)

STATE_LIMITS_S = {"queued": 900.0, "building": 300.0, "checking": 600.0}
"""How long a version may stay in each state before it is rejected with the cause."""
HISTORY_POINTS = 256
BT_EVERY_S = 5.0


@dataclass
class Options:
    data: Path
    game: str = "patchwork"
    edition: str = "revised"
    time_control: TimeControl = DEFAULT_TIME_CONTROL
    concurrency: int = 1
    dask: str | None = None
    sandbox: Sandbox = Sandbox.STRICT
    house_bots: tuple[str, ...] = ("random", "greedy")
    uploads_per_hour: int = 20
    max_upload_bytes: int = 20 * 1024 * 1024
    max_author_bytes: int = 1_000_000_000  # what an author's versions may hold unpacked
    state_limits_s: dict[str, float] = field(default_factory=lambda: dict(STATE_LIMITS_S))
    # A playing version that loses this many games in a row by its own fault (a crash, a
    # timeout, an illegal move...) is retired from the ladder (rejected, with the cause); 0: never.
    failing_streak: int = FAILING_STREAK
    view: Path | None = None  # where this process reaches ``data`` (a private bind mount), if elsewhere

    def __post_init__(self) -> None:
        self.sandbox = Sandbox(self.sandbox)  # given as its value ("none"), it is still the enum


@dataclass
class Standing:
    """What the leaderboard shows of one version, kept up to date game by game."""

    games: int = 0
    wins: int = 0
    losses: int = 0
    failures: int = 0
    failing_streak: int = 0  # games lost in a row by its own fault, up to the last one
    last_failure: str = ""  # that last fault's reason
    last_game: str | None = None
    last_at: str | None = None
    history: list[tuple[int, float, float]] = field(default_factory=list)  # (idx, mu, sigma), thinned
    stride: int = 1


@dataclass
class LiveGame:
    spec: GameSpec
    started_at: float
    moves: list[dict[str, Any]] = field(default_factory=list)


class Arena:
    """The service; thread-safe (the API calls it from a thread pool, the host link from its thread)."""

    def __init__(
        self, options: Options, publish: Callable[[str, dict[str, Any]], None] | None = None
    ) -> None:
        self.options = options
        self.data = options.data  # the real path: what the game host and the database are told
        self.files = options.view or options.data  # where this process reads and writes it
        self.results = ResultStore(results_folder(self.files), create=True)
        self.store = ArenaStore(results_folder(self.files))
        self.publish = publish or (lambda kind, data: None)
        self.lock = threading.RLock()
        self.rng = random.Random(secrets.randbits(64))
        self.ratings = OnlineRatings()
        self.standings: dict[str, Standing] = {}
        self.met: Counter[tuple[str, str]] = Counter()
        self.waited: Counter[str] = Counter()
        self.pairings_of: Counter[str] = Counter()
        self.pending: deque[GameSpec] = deque()
        self.live: dict[str, LiveGame] = {}
        self.dispatched: dict[str, GameSpec] = {}  # sent to the host, no move made yet
        self.run_authors: dict[str, str] = {}
        self.next_index = 0
        self.next_pair = 0
        self.epoch = 0
        self.run_epoch: int | None = None
        self.run_labels: set[str] = set()
        self.elo: dict[str, tuple[float, float, float]] = {}
        self._elo_games = -1
        self._host: subprocess.Popen[str] | None = None
        self._host_lock = threading.Lock()
        self._closing = False
        self._paused = bool(self.store.setting("paused", False))
        self._board: bytes | None = None
        self.checking: int | None = None  # the version whose check the host runs now
        self.served: dict[Any, float] = {}  # author id -> when a check of theirs was last sent
        self.games_stored = 0
        self._load()

    # ------------------------------------------------------------------ start
    def _load(self) -> None:
        from arena.untrusted import remove_tree

        remove_tree(self.data / "versions" / ".staging")  # uploads a kill -9 cut short (up to 200 MB each)
        self.store.ensure_house()
        self._add_house_bots()
        # Game by game from a cursor, not a frame: memory stays flat whatever the games stored.
        last = -1
        for idx, seat0, seat1, winner, reason, game_id, finished in self.results.rows(
            "SELECT idx, seat0, seat1, winner, reason, game_id, finished_at FROM games ORDER BY idx"
        ):
            self._rate(int(idx), seat0, seat1, int(winner), reason, game_id, finished)
            self.met[pair_key(seat0, seat1)] += 1
            self.games_stored += 1
            last = int(idx)
        self.next_index = last + 1
        self.next_pair = self.next_index // 2 + 1
        for (a, b), count in self.met.items():
            self.pairings_of[a] += count // 2
            self.pairings_of[b] += count // 2
        # A restart: checks that were under way are run again, from the start.
        for version in self.store.versions(states=("queued", "building", "checking")):
            if not self.local(Path(version.folder)).is_dir():
                self._set_state(
                    version, "rejected", "its upload was lost when the server stopped: upload it again"
                )
            else:
                self.store.set_state(version.id, "queued", cause="checked again: the server restarted")
        self._retire_failing(list(self.standings))  # say, after --failing-streak was lowered

    def _add_house_bots(self) -> None:
        from arena.bots.manifest import Manifest
        from arena.bots.pool import sample_bots_dir

        house = self.store.ensure_house()
        for name in self.options.house_bots:
            folder = sample_bots_dir() / name
            if not folder.is_dir():
                raise ArenaError(
                    f"--house-bots: no sample bot named {name!r} (there are: "
                    f"{', '.join(sorted(p.name for p in sample_bots_dir().iterdir() if p.is_dir()))})"
                )
            manifest = Manifest.load(folder)
            self.store.claim_bot(name, house, manifest.description)
            bot = self.store.bot(name)
            if bot is None or bot["author"] != HOUSE:
                continue  # an author owns that name already
            if not self.store.versions(bot=name):
                version, _ = self.store.add_version(name, f"house:{name}", lambda n, f=folder: f)
                if version is not None:
                    self.store.set_state(version.id, "active", cause="a house bot")

    def start(self, host: subprocess.Popen[str]) -> None:
        """Talk to the game host (started by :func:`start_host` before privileges were
        dropped) and start the background threads."""
        self._host = host
        threading.Thread(target=self._read_host, daemon=True, name="host-link").start()
        threading.Thread(target=self._watch_states, daemon=True, name="version-states").start()
        threading.Thread(target=self._refresh_elo, daemon=True, name="bradley-terry").start()

    def close(self) -> None:
        self._closing = True
        host = self._host
        if host is not None:
            try:
                if host.stdin:
                    host.stdin.close()
            except OSError:
                pass
            try:  # the host leaves on EOF; it is root's, so after the drop no signal of ours reaches it
                host.wait(15)
            except subprocess.TimeoutExpired:
                try:
                    host.kill()
                except PermissionError:
                    log.warning("the game host did not leave within 15 s (it leaves when this process does)")
        self.results.close()
        self.store.close()

    # ------------------------------------------------------------------ host link
    def _send(self, message: dict[str, Any]) -> None:
        host = self._host
        if host is None or host.stdin is None:
            return
        with self._host_lock:
            try:
                host.stdin.write(json.dumps(message, separators=(",", ":")) + "\n")
                host.stdin.flush()
            except (OSError, ValueError):
                log.warning("the game host is gone")

    def _read_host(self) -> None:
        host = self._host
        assert host is not None and host.stdout is not None
        for line in host.stdout:
            try:
                message = json.loads(line)
                self._on_host(message)
            except Exception:
                log.exception("a message from the game host could not be handled: %.200s", line)
        if not self._closing:
            log.error(
                "the game host exited (status %s): see %s", host.wait(), host_folder(self.data) / "host.log"
            )
            self.publish("error", {"message": "the game host stopped; restart the server"})

    def _on_host(self, message: dict[str, Any]) -> None:
        op = message.get("op")
        if op == "ready":
            self._check_next()
            self.maybe_start()
        elif op == "want":
            self._send(self._next_game(message.get("epoch")))
        elif op == "move":
            self._on_move(str(message.get("game_id")), message.get("entry") or {})
        elif op == "done":
            self._on_done(message)
        elif op == "ended":
            with self.lock:
                self.run_epoch = None
                self.run_labels = set()
                self.dispatched.clear()
                for game_id in list(self.live):
                    self.live.pop(game_id)
                    self.publish("game_ended", {"id": game_id, "state": "abandoned"})
            if message.get("error"):
                log.warning("the ladder's run ended: %s", message["error"])
                self.publish("error", {"message": f"the ladder's run ended: {message['error']}"[:500]})
                time.sleep(1)  # a run that fails at once is not restarted in a busy loop
            for label, why in (message.get("broken") or {}).items():
                self._reject_label(label, f"its build failed in the ladder: {why}")
            self.maybe_start()
        elif op == "lineup":  # the versions the run plays: those built already
            with self.lock:
                if message.get("epoch") == self.run_epoch:
                    self.run_labels &= {str(label) for label in message.get("labels") or []}
        elif op == "built":  # versions built in the background: the next run takes them
            for label, why in (message.get("broken") or {}).items():
                self._reject_label(label, f"its build failed in the ladder: {why}")
            self.lineup_changed()
        elif op == "stage":
            staged = self.store.version(int(message["version"]))
            if staged is not None and message.get("state") in ("building", "checking"):
                self._set_state(staged, message["state"], only_from=("queued", "building"))
        elif op == "checked":
            self._on_checked(message)
            with self.lock:
                if self.checking == message.get("version"):
                    self.checking = None
            self._check_next()

    # ------------------------------------------------------------------ the ladder
    def playing(self) -> list[Version]:
        return self.store.playing_versions()

    def maybe_start(self) -> None:
        """Start a run over the playing versions unless one is running, the ladder is paused
        or fewer than two versions play."""
        with self.lock:
            if self.run_epoch is not None or self._closing or self.paused:
                return
            playing = self.playing()
            if len(playing) < 2:
                return
            self.epoch += 1
            self.run_epoch = self.epoch
            self.run_labels = {v.label for v in playing}
            authors = {b["name"]: b["author"] for b in self.store.bots()}
            self.run_authors = {v.label: authors.get(v.bot, "?") for v in playing}
            self._send(
                {
                    "op": "run",
                    "epoch": self.epoch,
                    "entrants": [{"label": v.label, "folder": v.folder} for v in playing],
                }
            )
            # Games go out ahead, one per worker: a worker that finishes takes its next game at
            # once, and asks for a replacement (the answer is not on its path).
            for _ in range(max(1, self.options.concurrency)):
                self._send(self._next_game(self.epoch))

    def lineup_changed(self) -> None:
        """The playing versions changed: the running run ends (its games in flight finish)
        and a new one starts over the new set."""
        with self.lock:
            self._stop_run()
            if self.run_epoch is None:
                self.maybe_start()

    def _stop_run(self) -> None:
        """No more game of the current run starts (those under way finish); the host ends it."""
        self.epoch += 1
        if self.run_epoch is not None:
            self._send({"op": "stop", "epoch": self.run_epoch})

    @property
    def paused(self) -> bool:
        return self._paused

    def set_paused(self, paused: bool) -> None:
        self.store.set_setting("paused", paused)
        self._paused = paused
        self.publish("ladder", {"paused": paused})
        if paused:
            with self.lock:
                self._stop_run()
        else:
            self.maybe_start()

    def _next_game(self, epoch: Any) -> dict[str, Any]:
        with self.lock:
            if epoch != self.epoch or epoch != self.run_epoch or self.paused:
                return {"op": "stop", "epoch": epoch}
            while self.pending:
                spec = self.pending.popleft()
                if spec.seat0 in self.run_labels and spec.seat1 in self.run_labels:
                    return self._dispatch(spec)
            labels = self.run_labels
            entrants = []
            for label in sorted(labels):
                rating = self.ratings.enter(label)
                entrants.append(
                    Entrant(
                        label,
                        self.run_authors.get(label, "?"),
                        rating.mu,
                        rating.sigma,
                        self.pairings_of[label],
                    )
                )
            choice = choose(entrants, self.met, self.waited, self.rng)
            if choice is None:
                return {"op": "stop", "epoch": epoch}
            for label in labels:
                self.waited[label] += 1
            self.waited[choice.seat0] = self.waited[choice.seat1] = 0
            self.pairings_of[choice.seat0] += 1
            self.pairings_of[choice.seat1] += 1
            self.store.log_pairing(choice.seat0, choice.seat1, choice.reason)
            seed = self.rng.randrange(2**SEED_BITS)
            pair = self.next_pair
            self.next_pair += 1
            first = GameSpec(self.next_index, "", choice.seat0, choice.seat1, seed, pair)
            self.next_index += 1
            second = GameSpec(self.next_index, "", choice.seat1, choice.seat0, seed, pair)
            self.next_index += 1
            first = _named(first)
            self.pending.append(_named(second))
            self.publish("pairing", {"seat0": choice.seat0, "seat1": choice.seat1, "reason": choice.reason})
            return self._dispatch(first)

    def _dispatch(self, spec: GameSpec) -> dict[str, Any]:
        self.dispatched[spec.game_id] = spec  # live from its first move
        return {"op": "play", "epoch": self.run_epoch, "game": vars(spec)}

    def _on_move(self, game_id: str, entry: dict[str, Any]) -> None:
        if not isinstance(entry, dict):
            return
        with self.lock:
            game = self.live.get(game_id)
            if game is None:
                spec = self.dispatched.pop(game_id, None)
                if spec is None:
                    return
                game = self.live[game_id] = LiveGame(spec, time.time())
                self.publish("game_started", {"id": game_id, "players": [spec.seat0, spec.seat1]})
            game.moves.append(entry)
            ply = len(game.moves)
        self.publish("move", {"id": game_id, "ply": ply, "move": entry})

    def _on_done(self, message: dict[str, Any]) -> None:
        from arena.records import replay

        raw = message.get("game") or {}
        spec = GameSpec(
            int(raw["index"]),
            str(raw["game_id"]),
            str(raw["seat0"]),
            str(raw["seat1"]),
            int(raw["seed"]),
            int(raw["pair"]),
        )
        record = message.get("record")
        with self.lock:
            self.live.pop(spec.game_id, None)
            self.dispatched.pop(spec.game_id, None)
        try:
            if not isinstance(record, dict):
                raise ArenaError("the record is not an object")
            replay(record)  # every game re-verified by the rules engine before it counts
            self.results.store_game(spec, record, float(message.get("duration_s") or 0.0))
        except Exception as exc:
            log.error("game %s was not stored: %s", spec.game_id, exc)
            self.publish("error", {"message": f"game {spec.game_id} was not stored: {exc}"[:500]})
            return
        result = record["result"]
        with self.lock:
            self.games_stored += 1
            self.met[pair_key(spec.seat0, spec.seat1)] += 1
            self._rate(
                spec.index,
                spec.seat0,
                spec.seat1,
                int(result["winner"]),
                result["reason"],
                spec.game_id,
                record.get("finished_at"),
            )
        self._retire_failing((spec.seat0, spec.seat1))
        self.publish(
            "game_ended",
            {
                "id": spec.game_id,
                "state": "finished",
                "players": [spec.seat0, spec.seat1],
                "winner": int(result["winner"]),
                "reason": result["reason"],
                "scores": result.get("scores"),
            },
        )

    def _rate(
        self, idx: int, seat0: str, seat1: str, winner: int, reason: str, game_id: str, finished: Any
    ) -> None:
        names = (seat0, seat1)
        self.ratings.add(names[winner], names[1 - winner])
        for seat, name in enumerate(names):
            standing = self.standings.setdefault(name, Standing())
            standing.games += 1
            own_fault = seat != winner and reason not in ("normal", "interrupted")
            if seat == winner:
                standing.wins += 1
            else:
                standing.losses += 1
                standing.failures += own_fault
            if own_fault:
                standing.failing_streak += 1
                standing.last_failure = reason
            elif reason != "interrupted":  # an interrupted game says nothing about the bot
                standing.failing_streak = 0
            standing.last_game = game_id
            standing.last_at = finished if isinstance(finished, str) else None
            rating = self.ratings.ratings[name]
            if standing.games % standing.stride == 0:
                standing.history.append((idx, round(rating.mu, 3), round(rating.sigma, 3)))
                if len(standing.history) >= HISTORY_POINTS:  # thinned: memory stays flat
                    standing.history = standing.history[::2]
                    standing.stride *= 2

    def _retire_failing(self, labels: Iterable[str]) -> None:
        """Retire each of these versions that plays and has lost ``failing_streak`` games in a
        row by its own fault: it is rejected with the cause, so its author sees why, and the
        bot's newest other active version (if any) plays instead. Its games are kept."""
        limit = self.options.failing_streak
        if limit <= 0:
            return
        for label in labels:
            standing = self.standings.get(label)
            if standing is not None and standing.failing_streak >= limit:
                self._reject_label(
                    label,
                    f"retired from the ladder: it lost its last {standing.failing_streak} games in a "
                    f"row by its own fault (the last: {standing.last_failure})",
                )

    def _reject_label(self, label: str, cause: str) -> None:
        for version in self.playing():
            if version.label == label:
                self._set_state(version, "rejected", cause)
                self.lineup_changed()

    # ------------------------------------------------------------------ versions
    def _set_state(
        self,
        version: Version,
        state: str,
        cause: str = "",
        *,
        report: dict[str, Any] | None = None,
        only_from: tuple[str, ...] = (),
    ) -> bool:
        moved = self.store.set_state(version.id, state, cause=cause, report=report, only_from=only_from)
        if moved:
            self.changed()
            self.publish(
                "version",
                {
                    "id": version.id,
                    "bot": version.bot,
                    "number": version.number,
                    "state": state,
                    "cause": cause,
                },
            )
        return moved

    def submit(self, version: Version) -> None:
        """Queue the version's check (:meth:`_check_next` sends it when its turn comes)."""
        self._check_next()

    def _check_next(self) -> None:
        """Send the game host the next check, one at a time, taking authors in turn: the
        author served longest ago first, each author's versions oldest first. One author's
        pile of uploads delays their own versions, never another author's."""
        with self.lock:
            if self.checking is not None or self._host is None:
                return
            queued = self.store.versions(states=("queued",))
            if not queued:
                return
            owners = {b["name"]: b["author_id"] for b in self.store.bots()}
            version = min(queued, key=lambda v: (self.served.get(owners.get(v.bot), 0.0), v.created_at, v.id))
            self.served[owners.get(version.bot)] = time.time()
            self.checking = version.id
            self._send({"op": "check", "version": version.id, "folder": version.folder})

    def _on_checked(self, message: dict[str, Any]) -> None:
        version = self.store.version(int(message["version"]))
        if version is None:
            return
        lines = [str(x) for x in message.get("lines") or []]
        problems = [str(x) for x in message.get("problems") or []]
        warnings = [str(x) for x in message.get("warnings") or []]
        report = {
            "lines": lines,
            "problems": problems,
            "warnings": warnings,
            "log": str(message.get("log") or "")[-65536:],
        }
        if message.get("ok") and not problems:
            if self._set_state(
                version, "active", "", report=report, only_from=("queued", "building", "checking")
            ):
                self.lineup_changed()
        else:
            cause = problems[0].splitlines()[0] if problems else "the check failed"
            cause = cause.replace(str(self.data), "DIR")  # a cause is public: no server path in it
            self._set_state(
                version,
                "rejected",
                f"the check failed: {cause}"[:1000],
                report=report,
                only_from=("queued", "building", "checking"),
            )

    def _watch_states(self) -> None:
        """No version stays in a state forever: past its limit it is rejected with the cause."""
        while not self._closing:
            time.sleep(1.0)
            now = time.time()
            try:
                for version in self.store.versions(states=tuple(self.options.state_limits_s)):
                    limit = self.options.state_limits_s[version.state]
                    if now - version.state_at > limit:
                        if version.id == self.checking:  # the host stops working on it
                            self._send({"op": "cancel", "version": version.id})
                        self._set_state(
                            version,
                            "rejected",
                            f"timed out: it stayed {version.state} for more than {limit:.0f} s "
                            "(the server was too busy, or its build or check hung)",
                            only_from=(version.state,),
                        )
            except Exception:
                log.exception("the version watchdog failed once")

    def set_active(self, bot: str, number: int | None) -> Version | None:
        """Pin ``number`` as the bot's playing version (None: the newest active plays)."""
        if number is None:
            self.store.pin_version(bot, None)
            self.changed()
            self.lineup_changed()
            return None
        matches = [v for v in self.store.versions(bot=bot) if v.number == number]
        if not matches:
            raise LookupError(f"{bot} has no version {number}")
        version = matches[0]
        if version.state != "active":
            raise ValueError(f"version {number} of {bot} is {version.state}: only an active version can play")
        self.store.pin_version(bot, version.id)
        self.changed()
        self.lineup_changed()
        self.publish(
            "version", {"id": version.id, "bot": bot, "number": number, "state": "active", "playing": True}
        )
        return version

    def set_quarantined(self, bot: str, quarantined: bool) -> bool:
        done = self.store.set_quarantined(bot, quarantined)
        if done:
            self.changed()
            self.lineup_changed()
            self.publish("bot", {"bot": bot, "quarantined": quarantined})
        return done

    # ------------------------------------------------------------------ reading
    def _refresh_elo(self) -> None:
        """Bradley-Terry Elo from the games table (win counts by pair, in SQL), every few
        seconds while games come in; the leaderboard shows the latest fit."""
        import numpy as np

        from arena.report.stats import bradley_terry_wins

        while not self._closing:
            time.sleep(BT_EVERY_S)
            try:
                if self.games_stored == self._elo_games:
                    continue
                count = self.games_stored
                counts = list(
                    self.results.rows(
                        "SELECT CASE winner WHEN 0 THEN seat0 ELSE seat1 END, "
                        "CASE winner WHEN 0 THEN seat1 ELSE seat0 END, count(*) FROM games GROUP BY 1, 2"
                    )
                )
                bots = sorted({row[0] for row in counts} | {row[1] for row in counts})
                index = {name: i for i, name in enumerate(bots)}
                wins = np.zeros((len(bots), len(bots)))
                for winner, loser, number in counts:
                    wins[index[winner], index[loser]] = number
                if len(bots) >= 2:
                    table = bradley_terry_wins(bots, wins, replicates=200).table
                    self.elo = {
                        row.name: (float(row.elo), float(row.elo_low), float(row.elo_high))
                        for row in table.itertuples()
                    }
                self._elo_games = count
                self.changed()
            except Exception:
                log.exception("the Bradley-Terry fit failed once")

    def changed(self) -> None:
        """Something the leaderboard shows has changed: it is built again on its next request."""
        self._board = None

    def leaderboard_json(self) -> bytes:
        """The leaderboard as JSON bytes, built once per change (not per request)."""
        board = self._board
        if board is None:
            board = self._board = json.dumps(self.leaderboard(), separators=(",", ":")).encode()
        return board

    def leaderboard(self) -> list[dict[str, Any]]:
        frozen = self.store.setting("frozen_board")
        if frozen is not None:
            return list(frozen)
        rows = []
        bots = {b["name"]: b for b in self.store.bots()}
        for version in self.playing():
            label = version.label
            rating = self.ratings.enter(label)
            standing = self.standings.get(label, Standing())
            elo = self.elo.get(label)
            bot = bots.get(version.bot, {})
            rows.append(
                {
                    "bot": version.bot,
                    "author": bot.get("author"),
                    "version": version.number,
                    "label": label,
                    "mu": round(rating.mu, 3),
                    "sigma": round(rating.sigma, 3),
                    "conservative": round(rating.mu - 3 * rating.sigma, 3),
                    "elo": None if elo is None else round(elo[0], 1),
                    "elo_low": None if elo is None else round(elo[1], 1),
                    "elo_high": None if elo is None else round(elo[2], 1),
                    "games": standing.games,
                    "wins": standing.wins,
                    "losses": standing.losses,
                    "failures": standing.failures,
                    "win_rate": round(standing.wins / standing.games, 4) if standing.games else None,
                    "last_game": standing.last_game,
                    "last_at": standing.last_at,
                }
            )
        rows.sort(key=lambda r: (-r["conservative"], r["bot"]))
        for rank, row in enumerate(rows, 1):
            row["rank"] = rank
        return rows

    def freeze(self, frozen: bool) -> None:
        self.changed()
        self.store.set_setting("frozen_board", None)
        if frozen:
            self.store.set_setting("frozen_board", self.leaderboard())
        self.changed()
        self.publish("ladder", {"frozen": frozen})

    def local(self, path: Path) -> Path:
        """A path inside the data folder as this process reaches it."""
        return self.files / path.relative_to(self.data) if path.is_relative_to(self.data) else path

    def export(self) -> Path:
        """A copy of the games as a results folder of its own (`arena ratings` and `arena
        report` read it), without the arena's tables (no token hashes leave the server)."""
        import sqlite3

        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        target = self.files / "exports" / stamp
        number = 1
        while target.exists():
            number += 1
            target = self.files / "exports" / f"{stamp}-{number}"
        target.mkdir(parents=True)
        source = sqlite3.connect(self.results.db_path)
        copy = sqlite3.connect(target / self.results.db_path.name)
        try:
            source.backup(copy)
            for (table,) in copy.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'arena%'"
            ).fetchall():
                copy.execute(f'DROP TABLE "{table}"')
            o = self.options
            labels = sorted({v.label: v for v in self.store.versions()}.items())
            config = {
                "name": "ladder",
                "entrants": [{"name": label, "folder": v.folder, "description": ""} for label, v in labels],
                "format": "round-robin",
                "challengers": [],
                "games": 2,
                "time_control": o.time_control.to_json(),
                "game": o.game,
                "components": None,
                "edition": o.edition,
                "seed": 0,
                "concurrency": o.concurrency,
                "sandbox": o.sandbox.value,
                "pondering": False,
            }
            copy.execute(
                "INSERT OR REPLACE INTO tournament (key, value) VALUES ('config', ?)", (json.dumps(config),)
            )
            copy.execute("DELETE FROM entrants")
            copy.executemany(
                "INSERT INTO entrants (name, folder, description) VALUES (?, ?, '')",
                [(label, v.folder) for label, v in labels],
            )
            copy.commit()
            copy.execute("VACUUM")
        finally:
            source.close()
            copy.close()
        ResultStore(target).close()  # writes games.jsonl from the database
        return self.data / "exports" / target.name

    def history(self, label: str) -> list[dict[str, Any]]:
        standing = self.standings.get(label)
        return [] if standing is None else [{"game": i, "mu": m, "sigma": s} for i, m, s in standing.history]

    def games(self, labels: list[str] | None, limit: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        with self.lock:
            live = sorted(self.live.values(), key=lambda g: -g.spec.index)
        for game in live:
            if labels is not None and game.spec.seat0 not in labels and game.spec.seat1 not in labels:
                continue
            out.append(
                {
                    "id": game.spec.game_id,
                    "state": "running",
                    "players": [game.spec.seat0, game.spec.seat1],
                    "result": None,
                    "moves": len(game.moves),
                    "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(game.started_at)),
                }
            )
        rows = self.results.finished_games(labels, limit)
        for r in rows:
            out.append(
                {
                    "id": r[0],
                    "state": "finished",
                    "players": [r[1], r[2]],
                    "result": {"winner": r[3], "winner_name": r[4], "reason": r[5], "scores": [r[6], r[7]]},
                    "moves": r[8],
                    "started_at": r[9],
                    "finished_at": r[10],
                }
            )
        return out[:limit]

    def game(self, game_id: str) -> dict[str, Any] | None:
        with self.lock:
            live = self.live.get(game_id)
            if live is not None:
                return {
                    "game_id": game_id,
                    "state": "running",
                    "players": [live.spec.seat0, live.spec.seat1],
                    "seed": None,
                    "moves": list(live.moves),
                    "result": None,
                }
        record = self.results.record(game_id)
        if record is None:
            return None
        return public_record(record)


def public_record(record: dict[str, Any]) -> dict[str, Any]:
    """A stored record as anyone may see it: how the game ended (its kind and the referee's
    one-line reason), without the lines of a bot's log that follow it."""
    out = dict(record)
    result = dict(out.get("result") or {})
    detail = str(result.get("detail") or "")
    result["detail"] = detail.splitlines()[0][:300] if detail else ""
    out["result"] = result
    out["state"] = "finished"
    return out


def start_host(options: Options) -> subprocess.Popen[str]:
    """Start the game host (:mod:`arena.serve.host`) with this process's privileges."""
    from arena.signals import die_with_parent

    o = options
    argv = [
        sys.executable,
        "-m",
        "arena.serve.host",
        "host",
        "--data",
        str(o.data),
        "--game",
        o.game,
        "--edition",
        o.edition,
        "--per-move-ms",
        str(o.time_control.per_move_ms),
        "--bank-ms",
        str(o.time_control.bank_ms),
        "--first-move-ms",
        str(o.time_control.first_move_ms),
        "--sandbox",
        o.sandbox.value,
        "--concurrency",
        str(o.concurrency),
    ] + (["--dask", o.dask] if o.dask else [])
    folder = host_folder(o.data)
    with open(folder / "host.log", "a") as stderr:
        return subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            bufsize=1,
            preexec_fn=die_with_parent,
        )


def results_folder(data: Path) -> Path:
    """The live results folder (`arena ratings DIR/results` reads it); the web user's."""
    return data / "results"


def host_folder(data: Path) -> Path:
    """The game host's own folder (root's, 0700): copies, builds and logs of the bots."""
    return data / "host"


def _named(spec: GameSpec) -> GameSpec:
    return GameSpec(spec.index, f"ladder-{spec.index:07d}", spec.seat0, spec.seat1, spec.seed, spec.pair)


def version_folder(data: Path, bot: str, number: int) -> Path:
    """Where a version's source is kept (the web user's; the host copies it before use)."""
    return data / "versions" / bot / str(number)


__all__ = [
    "Arena",
    "Options",
    "STATE_LIMITS_S",
    "public_record",
    "host_folder",
    "results_folder",
    "start_host",
    "version_folder",
]
