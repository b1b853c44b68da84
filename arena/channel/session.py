"""The protocol over one bot's channel: the handshake, request numbers, and messages.

A :class:`BotSession` speaks for the referee to one running bot. Every message it sends
is built by :mod:`arena.protocol.messages` and encoded once; every message it receives
is decoded and schema-checked by :mod:`arena.protocol.codec` before anyone looks at it.
It knows nothing of processes: the channel may be a real pipe or an in-process script
(the tests' ``tests/scripted.py``), which is how the referee's failure cases run without
starting a bot.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from arena.channel.transport import Channel
from arena.errors import BotStartError, MalformedMessageError, ProtocolViolationError
from arena.protocol import messages
from arena.protocol.codec import check_protocol, decode, encode_trusted

log = logging.getLogger("arena.wire")
BAD_TEXT_CHARS = 200  # of a message that was not JSON, kept for a hint

__all__ = ["BotSession"]


class BotSession:
    """One bot's conversation with the referee, over ``channel``.

    ``seq`` is the last request number already used: request numbers grow across the
    games and restarts of one entrant and are never reused (a reply to an old request
    is then always recognisably stale).
    """

    def __init__(self, channel: Channel, name: str, *, seq: int = 0) -> None:
        self.channel = channel
        self.name = name
        self.seq = seq
        self.hello: dict[str, Any] = {}  # the bot's hello, once the handshake is done
        self.protocol: int | None = None  # the version both speak, once the handshake is done
        self.unread = 0  # bytes sent since the bot last answered the latest request
        self.last_decode_ns = 0  # referee time spent decoding the last message
        self.last_bytes = 0  # the size of the last message (characters of its JSON text)
        self.last_sent = 0  # the size of the last message sent to the bot (characters, no newline)
        self.bad_text = ""  # the start of the last message that was not JSON (for hints)

    @property
    def wants_legal_moves(self) -> bool:
        return bool(self.hello.get("capabilities", {}).get("legal_moves"))

    def handshake(self, timeout_s: float) -> dict[str, Any] | None:
        """Wait for the bot's hello and :meth:`accept` it; None when nothing came within
        ``timeout_s``. Raises what :meth:`receive` and :meth:`accept` raise."""
        hello = self.receive(timeout_s)
        return None if hello is None else self.accept(hello)

    def accept(self, hello: dict[str, Any]) -> dict[str, Any]:
        """Check the bot's first message (decoded) and answer ``welcome``; returns it.

        Raises BotStartError for a first message that is not a hello, or a version this
        referee does not speak (after telling the bot with an ``error``, PROTOCOL.md
        section 11)."""
        if hello["type"] != "hello":
            raise BotStartError(f"bot {self.name}: the first message must be hello, got {hello['type']}")
        try:
            protocol = check_protocol(hello)
        except ProtocolViolationError as exc:
            try:
                self.send(messages.error(str(exc)))
            except Exception:  # noqa: BLE001 - best effort: the bot may be gone already
                pass
            raise BotStartError(f"bot {self.name}: {exc}") from None
        self.hello = hello
        self.protocol = protocol
        self.unread = 0
        self.send(messages.welcome(protocol))
        return hello

    def next_seq(self) -> int:
        """The sequence number of the next request to this bot."""
        self.seq += 1
        return self.seq

    def send(self, message: Mapping[str, Any]) -> None:
        """Send a message built by :mod:`arena.protocol.messages`."""
        self.send_text(encode_trusted(message))

    def send_text(self, text: str, timeout_s: float | None = None) -> None:
        """Send an already encoded message (the referee encodes a request before the bot's
        clock starts); ``timeout_s``: see :meth:`~arena.channel.transport.PipeChannel.send`."""
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s << %s", self.name, text[:500], extra={"size": len(text.encode(errors="replace"))})
        self.unread += len(text) + 1
        self.last_sent = len(text)
        self.channel.send(text, timeout_s)

    def receive(self, timeout_s: float) -> dict[str, Any] | None:
        """The next message, decoded and schema-checked, or None on timeout."""
        text = self.channel.recv(max(timeout_s, 0.0))
        if text is None:
            return None
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s >> %s", self.name, text[:500], extra={"size": len(text.encode(errors="replace"))})
        self.last_bytes = len(text)
        t0 = time.perf_counter_ns()
        try:
            message = decode(text, sender="bot")
        except MalformedMessageError:
            self.bad_text = text[:BAD_TEXT_CHARS]
            raise
        finally:
            self.last_decode_ns = time.perf_counter_ns() - t0
        if message["type"] == "move" and message["seq"] == self.seq:
            self.unread = 0  # it read the latest request, so everything sent before it
        return message
