"""The report, assembled: the run folder loaded once, each task's analysis, and the list
of sections the renderer lays out (the top room of analyze/: it may use every other)."""
