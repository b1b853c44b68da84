"""Channel layer: how the referee talks to one bot.

``transport`` moves whole messages over a bot's pipes (stdio lines, or the frames of the
ZeroMQ bridge, ``zmq_bridge``, which runs inside the bot's sandbox) through one inbox and
one receive loop; ``session`` speaks the protocol over any such channel (handshake,
request numbers, messages built by :mod:`arena.protocol.messages`, decoded and checked).
"""
