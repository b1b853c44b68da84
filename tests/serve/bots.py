"""Bot folders for the page tests of arena serve: a slow one (a game lasts long enough to
watch live), one that crashes at start, and a hostile one whose every string is markup."""

from __future__ import annotations

from pathlib import Path

HOSTILE = {
    "description": '<script>document.title="pwned-description"</script><img src=x onerror="window.pwned=1">',
    "hello": '<img src=x onerror="window.pwned=2">javascript:alert(2)',
    "info": '<script>window.pwned=3</script><a href="javascript:window.pwned=3">x</a>',
    "log": '<img src=x onerror="window.pwned=4"><script>window.pwned=4</script>',
}

_PLAYER = """
import json, sys, time, random

def send(message):
    sys.stdout.write(json.dumps(message) + "\\n")
    sys.stdout.flush()

send({"type": "hello", "name": HELLO, "version": "1", "protocol": 1, "capabilities": {"legal_moves": True}})
print(LOG, file=sys.stderr, flush=True)
for line in sys.stdin:
    message = json.loads(line)
    kind = message.get("type")
    if kind == "move_request":
        time.sleep(SLEEP)
        moves = message["legal_moves"]
        buys = [m for m in moves if m["action"] == "buy"]
        send({"type": "move", "seq": message["seq"], "move": random.choice(buys or moves), "info": INFO})
    elif kind == "shutdown":
        break
"""


def _manifest(name: str, description: str) -> str:
    quoted = description.replace("\\", "\\\\").replace('"', '\\"')
    return f'name = "{name}"\ncommand = "python3 bot.py"\nprotocol = "stdio"\ndescription = "{quoted}"\n'


def player(folder: Path, name: str, *, sleep_s: float = 0.0, hostile: bool = False) -> Path:
    """A bot that buys a patch when it can; ``hostile``: markup in every string it controls."""
    folder.mkdir(parents=True)
    strings = (
        HOSTILE
        if hostile
        else {
            "description": f"{name}, a test bot",
            "hello": name,
            "info": "thinking",
            "log": "hello from " + name,
        }
    )
    (folder / "bot.toml").write_text(_manifest(name, strings["description"]))
    code = (
        f"HELLO = {strings['hello']!r}\nLOG = {strings['log']!r}\nINFO = {strings['info']!r}\n"
        f"SLEEP = {sleep_s!r}\n" + _PLAYER
    )
    (folder / "bot.py").write_text(code)
    return folder


def crasher(folder: Path, name: str) -> Path:
    """A bot that dies at start, saying why on stderr."""
    folder.mkdir(parents=True)
    (folder / "bot.toml").write_text(_manifest(name, "crashes at start"))
    (folder / "bot.py").write_text(
        "import sys\n"
        "print('cannot start: <img src=x onerror=\"window.pwned=5\">', file=sys.stderr)\n"
        "sys.exit(3)\n"
    )
    return folder
