"""A bot is a folder with a manifest, ``bot.toml``; this module reads and builds it.

```toml
name = "greedy"                 # required: 1-64 of A-Z a-z 0-9 - _ . (first a letter or digit)
command = "python bot.py"       # required: run in the bot's folder (a list of words works too)
protocol = "zmq"                # "zmq" (default) or "stdio"
build = "cc -O2 -o bot bot.c"   # optional, run by `sh -c` in the folder before the first start
description = "..."             # optional
```

A command whose first word is ``python`` or ``python3`` runs with the harness's own
interpreter, so Python bots can import the SDK (``arena.sdk``) and the engine.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from arena.errors import BotStartError, ConfigError
from arena.untrusted import check_name, shown

MANIFEST = "bot.toml"
PROTOCOLS = ("zmq", "stdio")
BUILD_TIMEOUT_S = 300


@dataclass(frozen=True)
class Manifest:
    folder: Path
    name: str
    command: tuple[str, ...]
    protocol: str = "zmq"
    build: str | None = None
    description: str = ""

    @classmethod
    def load(cls, folder: Path | str) -> Manifest:
        """Read ``folder/bot.toml``; raises ConfigError naming the file and the key."""
        folder = Path(folder).resolve()
        path = folder / MANIFEST
        if not folder.is_dir():
            raise ConfigError(f"{folder}: not a bot folder (no such directory)")
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"{folder}: not a bot folder (no {MANIFEST})") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: cannot read: {exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from None
        unknown = set(data) - {"name", "command", "protocol", "build", "description"}
        if unknown:
            raise ConfigError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}: expected name, "
                              "command, protocol, build, description")
        name = check_name(data.get("name"), str(path))
        raw_command = data.get("command")
        if isinstance(raw_command, str) and raw_command.strip():
            command = tuple(shlex.split(raw_command))
        elif (isinstance(raw_command, list) and raw_command
              and all(isinstance(w, str) for w in raw_command)):
            command = tuple(raw_command)
        else:
            raise ConfigError(f"{path}: key 'command': expected a command line (a string or a "
                              f"list of strings), got {shown(raw_command)}")
        protocol = data.get("protocol", "zmq")
        if protocol not in PROTOCOLS:
            raise ConfigError(f"{path}: key 'protocol': expected \"zmq\" or \"stdio\", got {shown(protocol)}")
        build = data.get("build")
        if build is not None and not (isinstance(build, str) and build.strip()):
            raise ConfigError(f"{path}: key 'build': expected a shell command string, got {shown(build)}")
        description = data.get("description", "")
        if not isinstance(description, str):
            raise ConfigError(f"{path}: key 'description': expected a string")
        return cls(folder, name, command, protocol, build, description)

    def argv(self) -> list[str]:
        """The command to execute, with ``python``/``python3`` mapped to our interpreter."""
        words = list(self.command)
        if words[0] in ("python", "python3"):
            words[0] = sys.executable
        elif "/" in words[0] and not Path(words[0]).is_absolute():
            words[0] = str(self.folder / words[0])
        return words


def build(manifest: Manifest, log: Path | None = None) -> None:
    """Run the manifest's build command in the bot's folder (no-op without one).

    Raises BotStartError with the exit status and the last lines of output on failure.
    """
    if not manifest.build:
        return
    try:
        proc = subprocess.run(["sh", "-c", manifest.build], cwd=manifest.folder, capture_output=True,
                              text=True, timeout=BUILD_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise BotStartError(f"bot {manifest.name}: build command {manifest.build!r} took more "
                            f"than {BUILD_TIMEOUT_S} s") from None
    output = (proc.stdout + proc.stderr).strip()
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(output[-65536:] + "\n", encoding="utf-8")
    if proc.returncode != 0:
        tail = " | ".join(output.splitlines()[-3:])
        raise BotStartError(f"bot {manifest.name}: build command {manifest.build!r} failed with "
                            f"exit code {proc.returncode}: {tail}")
