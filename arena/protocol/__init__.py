"""The bot protocol: its constants, a pure codec (JSON text <-> validated dicts) and the
message builders.

The specification is ``protocol/PROTOCOL.md``; the schemas are package data,
``arena/protocol/schemas/`` (linked from ``protocol/schemas``). The codec's names are
loaded on first use, so that ``arena.protocol.constants`` stays cheap to import (the SDK
and the ZeroMQ bridge read it before a bot's hello).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from arena.protocol.constants import MAX_MESSAGE_BYTES, PROTOCOL_VERSION, SUPPORTED_PROTOCOLS

if TYPE_CHECKING:
    from arena.protocol.codec import (
        BOT_TYPES,
        REFEREE_TYPES,
        Sender,
        check_protocol,
        decode,
        encode,
        load_schemas,
        schema_dir,
        validate,
    )

_FROM_CODEC = frozenset({"BOT_TYPES", "REFEREE_TYPES", "Sender", "check_protocol", "decode",
                         "encode", "load_schemas", "schema_dir", "validate"})


def __getattr__(name: str) -> Any:
    if name in _FROM_CODEC:
        from arena.protocol import codec

        return getattr(codec, name)
    raise AttributeError(f"module 'arena.protocol' has no attribute {name!r}")


__all__ = ["BOT_TYPES", "MAX_MESSAGE_BYTES", "PROTOCOL_VERSION", "REFEREE_TYPES",
           "SUPPORTED_PROTOCOLS", "Sender", "check_protocol", "decode", "encode",
           "load_schemas", "schema_dir", "validate"]
