"""Analyse stored results into plain data (no HTML).

Rooms: ``cost/`` (catalogs, prices, the dry run's bill), ``training/`` and ``serving/``
(each task's analysis), ``report/`` (the report assembled: frame, sections, sentences,
cautions); ``baseline.py`` is the one baseline rule of both tasks. The statistics
modules (stats, verdicts, ranktests, looks, decide, adaptive, noise, windows,
interference) sit here until they get a room of their own; ``cautions.py``,
``fields.py`` and ``groups.py`` here only re-export what noise.py imports from the
rooms.
"""
