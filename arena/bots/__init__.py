"""Bots as the referee sees them: manifests, sessions over a channel, the pool of entrants."""
