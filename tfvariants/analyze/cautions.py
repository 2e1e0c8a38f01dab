"""Moved to :mod:`tfvariants.analyze.report.cautions`; kept for the statistics modules
(noise.py) until they move into their own room."""

from tfvariants.analyze.report.cautions import StatWarning as StatWarning

__all__ = ["StatWarning"]
