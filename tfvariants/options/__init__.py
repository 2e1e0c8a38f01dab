"""The run options, each declared once (declare.py): what one training cell runs with
(cell.py), how comparisons are decided (decision.py), the training task's whole set
(training.py), and the command-line value parsers (argtypes.py). Below the commands;
the run store checks stored options against the same declarations."""
