"""`arena serve`: a self-hosted arena (docs/serve.md).

server (start-up, privileges) -> app and pages (HTTP) -> service (the ladder, versions, the
live state) -> store (the arena's tables) and the results folder; host (the game host, which
keeps root for strict sandboxes) plays the games and runs the checks; ladder (pure) picks the
pairings; archive unpacks uploads; client is the CLI's side.
"""
