"""The run options, each declared once (declare.py): what one training cell runs with
(cell.py), how comparisons are decided (decision.py), the training task's whole set
(training.py), the serving task's (serving.py), the command-line value parsers
(argtypes.py), the bounds (limits.py) and the defaults about other loads
(interference.py). The ground floor: imports nothing of tfvariants but errors.py, so
every stage may read the options; the run store checks stored options against the same
declarations."""
