"""One root error with narrow subclasses; messages carry the facts a user needs.

The CLI turns any ``ArenaError`` into a one-line message; the referee maps the
bot-related ones to a game termination with a recorded reason.
"""

from __future__ import annotations


class ArenaError(Exception):
    """Root of every error this project raises on purpose."""


class IllegalMoveError(ArenaError):
    """A move that the rules do not allow in this position (the message says why)."""


class MoveFormatError(IllegalMoveError):
    """A move object that is not of the documented JSON shape."""


class RecordError(ArenaError):
    """A game record that is corrupt or does not replay."""


class ConfigError(ArenaError):
    """A malformed configuration file, manifest or command-line value."""


class SandboxError(ArenaError):
    """A sandbox level that cannot be provided on this host (the message says why)."""


class ProtocolError(ArenaError):
    """A bot message that breaks the protocol."""


class MalformedMessageError(ProtocolError):
    """Not a JSON object (garbage, truncated JSON, wrong encoding)."""


class SchemaViolationError(ProtocolError):
    """Valid JSON that does not match the message's JSON schema."""


class OversizeMessageError(ProtocolError):
    """A message larger than the transport's maximum size."""


class ProtocolViolationError(ProtocolError):
    """A well-formed message sent at the wrong time (e.g. a flood, a wrong handshake)."""


class BotError(ArenaError):
    """A bot process that cannot be used."""


class BotStartError(BotError):
    """A bot that could not be built or started, or never said hello."""


class BotTerminatedError(BotError):
    """A bot process that exited (the message gives the exit code or signal)."""


class BotTimeoutError(BotError):
    """A bot that did not answer in time (the message gives the overrun). ``silent``: no
    message at all came from it while the request waited (a hint may say why)."""

    def __init__(self, message: str, *, silent: bool = False) -> None:
        super().__init__(message)
        self.silent = silent
