"""Execute: run planned cells in fresh, pinned workers and hand their results to the store."""
