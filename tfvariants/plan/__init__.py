"""Plan: which cells to run (variant x threads x workload x repeat) and how each is pinned."""
