"""The protocol's numbers are defined once (arena.protocol.constants) and stay cheap to import."""

from __future__ import annotations

import subprocess
import sys

from arena import sdk
from arena.channel import transport, zmq_bridge
from arena.protocol import codec, constants, messages


def test_every_layer_uses_the_one_definition() -> None:
    assert sdk.PROTOCOL_VERSION is constants.PROTOCOL_VERSION
    assert messages.welcome()["protocol"] == constants.PROTOCOL_VERSION
    assert constants.PROTOCOL_VERSION in constants.SUPPORTED_PROTOCOLS
    assert codec.MAX_MESSAGE_BYTES is constants.MAX_MESSAGE_BYTES
    assert transport.DEFAULT_MAX_BYTES is constants.MAX_MESSAGE_BYTES
    assert zmq_bridge.MAX_MESSAGE_BYTES is constants.MAX_MESSAGE_BYTES
    argv = transport.bridge_argv(["bot"])
    assert argv[argv.index("--max-bytes") + 1] == str(constants.MAX_MESSAGE_BYTES)


def test_the_sdk_and_the_bridge_load_no_codec_before_a_hello() -> None:
    # A bot pays its imports before its hello, within the referee's start timeout.
    code = ("import sys, arena.sdk, arena.channel.zmq_bridge; "
            "print(sorted(m for m in ('jsonschema', 'orjson', 'arena.protocol.codec', 'numpy') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
