"""The report, assembled: the run folder loaded once, each task's analysis, and the list
of sections the renderer lays out; the sentences, cautions and tables they hold."""
