"""Tournaments: configuration, schedule, result storage, ratings and SPRT.

``config`` (what to play) -> ``schedule`` (pure: which games) -> ``storage`` (the
SQLite results folder, the raw truth) -> ``ratings`` and ``sprt`` (pure: tables
from tables). Every series of games (play, check-bot, sprt, bench-bots, tournaments)
is played by ``series.run_series`` over a schedule (from ``schedule``) or a scheduler (from
``scheduler``: the formats that hear results, Swiss and knockout) on an executor (in
process, ``workers``, ``distributed``). Import the submodules directly; this
package imports nothing.
"""
