"""The statistics of the verdicts: intervals and the one comparison (stats, pairing,
verdicts, ranktests), the stopping rule and its looks (adaptive, looks, decide),
statements across comparisons (family), steady windows and interference (windows,
interference); the machine's own noise, read from a run's groups, is the training
analysis's (analyze/training/noise.py). Pure Python: the host renders reports
without numpy."""
