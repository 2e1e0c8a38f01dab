"""The statistics of the verdicts: intervals and the one comparison (stats, pairing,
verdicts, ranktests), the stopping rule and its looks (adaptive, looks, decide),
statements across comparisons (family), and the machine's own noise, steady windows
and interference (noise, windows, interference). Pure Python: the host renders reports
without numpy."""
