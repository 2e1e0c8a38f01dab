"""The training analysis: stored training cells grouped by (workload, variant, threads),
with statistics, costs and comparisons to each workload's baseline."""
