"""The report, assembled: the run folder loaded once, each task's part, and the list of
sections the renderer lays out. Its modules name no task: the tasks' rooms sit above it
and build their parts on it; build.py finds each by the task's stem."""
