"""Channel layer: bot processes and the transports that talk to them (ZeroMQ, stdio)."""
