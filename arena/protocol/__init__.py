"""The bot protocol: a pure codec (JSON text <-> validated dicts) and message builders.

The specification is ``protocol/PROTOCOL.md``; the schemas are package data,
``arena/protocol/schemas/`` (linked from ``protocol/schemas``).
"""

from arena.protocol.codec import (
    BOT_TYPES,
    MAX_MESSAGE_BYTES,
    PROTOCOL_VERSION,
    REFEREE_TYPES,
    SUPPORTED_PROTOCOLS,
    Sender,
    check_protocol,
    decode,
    encode,
    load_schemas,
    schema_dir,
    validate,
)

__all__ = ["BOT_TYPES", "MAX_MESSAGE_BYTES", "PROTOCOL_VERSION", "REFEREE_TYPES",
           "SUPPORTED_PROTOCOLS", "Sender", "check_protocol", "decode", "encode",
           "load_schemas", "schema_dir", "validate"]
