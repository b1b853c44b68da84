"""The protocol's numbers, defined once: imported by the codec, the session, the transports,
the ZeroMQ bridge and the SDK.

This module imports nothing, so a bot (the SDK) or the bridge can use it without loading
the codec and its validators (``arena.protocol`` loads those lazily, on first use).
"""

PROTOCOL_VERSION = 1
"""The protocol version this code speaks (see protocol/PROTOCOL.md, "Versioning")."""

SUPPORTED_PROTOCOLS: tuple[int, ...] = (1,)
"""Every version a referee of this code accepts in a bot's hello."""

MAX_MESSAGE_BYTES = 1 << 20
"""Largest message a bot may send: 1 MiB of UTF-8, not counting the line terminator."""
