"""Termination signals unwind the harness instead of killing it outright.

Python dies at once on SIGTERM or SIGHUP (``timeout``, ``kill``, a closed terminal, a
process manager): no ``with`` block or ``finally`` runs, so the bots it started would be
left behind, and under strict a frozen bot cannot even be killed until it is thawed. With
:func:`unwind_on_termination` the signal raises SystemExit in the main thread instead, so
the pools close their bots (thaw, then kill every process of each tree) on the way out.
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any

TERMINATION_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def unwind_on_termination(status: int | None = None) -> None:
    """Raise SystemExit (``status``, default 128 + the signal's number) on SIGTERM or SIGHUP;
    further ones are ignored while the clean-up runs. A no-op outside the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return

    def unwind(signum: int, _frame: Any) -> None:
        for number in TERMINATION_SIGNALS:
            # The clean-up must not be cut short. A handler that does nothing, not SIG_IGN:
            # a signal already pending when SIG_IGN is set raises OSError ("ignored due to
            # race condition") in the middle of the clean-up.
            signal.signal(number, _ignore)
        sys.exit(128 + signum if status is None else status)

    for number in TERMINATION_SIGNALS:
        signal.signal(number, unwind)


def ignore_termination() -> None:
    """From now on SIGTERM and SIGHUP do nothing (a worker closing its bots in peace)."""
    for number in TERMINATION_SIGNALS:
        signal.signal(number, _ignore)


def _ignore(_signum: int, _frame: Any) -> None:
    pass


__all__ = ["TERMINATION_SIGNALS", "ignore_termination", "unwind_on_termination"]
