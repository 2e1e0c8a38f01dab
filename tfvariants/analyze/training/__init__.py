"""The training analysis: stored training cells grouped by (workload, variant, threads),
with statistics, costs and comparisons to each workload's baseline; the machine's noise
across them (noise), the labels of verdicts measured under load (loadlabel) and the
report's sentences (conclusions)."""
