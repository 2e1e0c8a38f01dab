"""Store: the run folder (run.json + cells/*.json), its one loader and one writer."""
