"""What every task's analysis and the report share, below them all: the run's frame and
the report's settings, which cells are usable (coverage), the builds' parity, the
cautions about a group of repeats, run-field helpers and the formatting of numbers."""
