"""Analyse stored results into plain data (no HTML).

Rooms, from the ground up (each imports only rooms below it; tests/test_layers.py):
``statistics/`` (intervals, verdicts, the stopping rule, windows, interference),
``cost/`` (catalogs, prices, the dry run's bill), ``baseline.py`` (the one baseline rule
of both tasks), ``shared/`` (the run's frame, the report's settings, coverage, parity,
cautions, formatting: what every task's analysis uses), ``training/`` and then
``serving/`` (each task's analysis; the training one with the machine's noise, load
labels and the report's sentences), ``report/`` (the report assembled: sections, the
compiled answer, other runs).
"""
