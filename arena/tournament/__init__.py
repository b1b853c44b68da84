"""Tournaments: configuration, schedule, result storage, ratings and SPRT.

``config`` (what to play) -> ``schedule`` (pure: which games) -> ``storage`` (the
SQLite results folder, the raw truth) -> ``ratings`` and ``sprt`` (pure: tables
from tables). Import the submodules directly; this package imports nothing.
"""
