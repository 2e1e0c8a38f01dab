"""Moved to :mod:`tfvariants.analyze.report.fields`; kept for the statistics modules
(noise.py) until they move into their own room."""

from tfvariants.analyze.report.fields import median_of as median_of

__all__ = ["median_of"]
