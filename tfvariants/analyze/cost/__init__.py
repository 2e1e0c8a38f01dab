"""The cost model: dated price catalogs, instance mapping, billing rules, the cost of a
cell, `prices import`, and the dry run's estimated bill."""
