"""Termination signals unwind the harness instead of killing it outright.

Python dies at once on SIGTERM or SIGHUP (``timeout``, ``kill``, a closed terminal, a
process manager): no ``with`` block or ``finally`` runs, so the bots it started would be
left behind, and under strict a frozen bot cannot even be killed until it is thawed. With
:func:`unwind_on_termination` the signal raises SystemExit in the main thread instead, so
the pools close their bots (thaw, then kill every process of each tree) on the way out.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

TERMINATION_SIGNALS: tuple[int, ...] = (signal.SIGTERM, signal.SIGHUP)


def unwind_on_termination(status: int | None = None) -> None:
    """Raise SystemExit (``status``, default 128 + the signal's number) on SIGTERM or SIGHUP;
    further ones are ignored while the clean-up runs. A no-op outside the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return

    def unwind(signum: int, frame: Any) -> None:
        if _running(frame, _unwind_again.__code__):
            # It came while the hook below ran (its thread's start waits): a SystemExit raised
            # here would be ignored again, and the process would carry on. Once more, later.
            _send_later(signum)
            return
        for number in TERMINATION_SIGNALS:
            # The clean-up must not be cut short. A handler that does nothing, not SIG_IGN:
            # a signal already pending when SIG_IGN is set raises OSError ("ignored due to
            # race condition") in the middle of the clean-up.
            signal.signal(number, _ignore)
        _unwinding[:] = [signum, unwind]
        sys.exit(128 + signum if status is None else status)

    for number in TERMINATION_SIGNALS:
        signal.signal(number, unwind)
    if sys.unraisablehook is not _unwind_again:
        _previous_hook[:] = [sys.unraisablehook]
        sys.unraisablehook = _unwind_again


_unwinding: list[Any] = []  # [the signal, its handler] once a termination signal came
_previous_hook: list[Any] = []


def _unwind_again(unraisable: Any) -> None:
    """The SystemExit of a signal that came while Python ran a finalizer or an at-fork hook
    (a worker starting a bot) is ignored there, with a traceback on stderr, and the process
    carried on. Raise it again, as soon as ordinary code runs, and print nothing."""
    if isinstance(unraisable.exc_value, SystemExit) and _unwinding:
        signum, handler = _unwinding
        signal.signal(signum, handler)
        # From another thread, a moment later: the main thread handles it in the code that runs
        # next (raise_signal and interrupt_main would run the handler here, in the hook). Should
        # it land in a finalizer again, it comes back here; in this hook, it is sent again.
        _send_later(signum)
        return
    (_previous_hook[0] if _previous_hook else sys.__unraisablehook__)(unraisable)


def _send_later(signum: int) -> None:
    try:
        threading.Timer(0.001, os.kill, (os.getpid(), signum)).start()
    except RuntimeError:  # the interpreter is shutting down: it exits anyway
        pass


def _running(frame: Any, code: Any) -> bool:
    """Whether ``code`` is on the stack that ``frame`` (a signal handler's) interrupted."""
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False


def terminated_by() -> int | None:
    """The termination signal being unwound from, or None."""
    return int(_unwinding[0]) if _unwinding else None


def ignore_termination() -> None:
    """From now on SIGTERM and SIGHUP do nothing (a worker closing its bots in peace)."""
    for number in TERMINATION_SIGNALS:
        signal.signal(number, _ignore)


def _ignore(_signum: int, _frame: Any) -> None:
    pass


_DEFERRED: tuple[int, ...] = (signal.SIGINT, *TERMINATION_SIGNALS)


@contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Hold Ctrl-C and the termination signals until the block is done, then act on each
    that came (once): for steps that must not stop half-way, such as killing a bot's process
    tree (its grace period, then SIGKILL) or starting a bot (a process not yet recorded would
    be left running). In the main thread only, where Python runs signal handlers; elsewhere
    a no-op. Nested blocks pass what they held to the outer one."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, _frame: Any) -> None:
        if signum not in held:
            held.append(signum)

    previous: dict[int, Any] = {}
    try:
        for number in _DEFERRED:
            handler = signal.getsignal(number)
            if handler is not None and handler is not signal.SIG_IGN:  # None: set outside Python
                previous[number] = signal.signal(number, hold)
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for number in held:
            signal.raise_signal(number)  # its own handler runs now, as if it had just come


def die_with_parent() -> None:
    """Ask Linux to SIGTERM this process when its parent dies, even by kill -9 (a tournament's
    workers, arena serve's game host and its checks; as a subprocess's preexec_fn too)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


__all__ = ["TERMINATION_SIGNALS", "deferred_interrupts", "die_with_parent", "ignore_termination",
           "terminated_by", "unwind_on_termination"]
