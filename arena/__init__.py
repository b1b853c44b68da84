"""patchwork-arena: a tournament and bot-arena harness for Patchwork.

Layers (imports only point down): ``arena.engine`` (pure rules) ->
``arena.protocol`` (pure codec) -> ``arena.channel`` (processes and transports)
-> ``arena.referee`` (one game) -> tournaments, ratings, reports -> ``arena.cli``.
"""

__version__ = "0.1.0"
