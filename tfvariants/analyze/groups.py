"""Moved to :mod:`tfvariants.analyze.training.groups`; kept for the statistics modules
(noise.py) until they move into their own room."""

from tfvariants.analyze.training.groups import Group as Group

__all__ = ["Group"]
