"""Analyse stored results into plain data (no HTML).

Rooms, from the ground up (each imports only rooms below it; tests/test_layers.py):
``statistics/`` (intervals, verdicts, the stopping rule, windows, interference),
``cost/`` (catalogs, prices, the dry run's bill), ``baseline.py`` (the one baseline rule
of both tasks), ``shared/`` (the run's frame, the report's settings, coverage, parity,
cautions, formatting: what every task's analysis uses), ``report/`` (the report
assembled: sections, the answer, other runs; it names no task), then each task's own
room, ``training/`` and then ``serving/`` (its analysis, dry run and part of the report,
one importable name ``tfvariants.analyze.<stem>``).
"""
