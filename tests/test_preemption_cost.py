"""What preemptions cost: the report's line per node type from the cells' lost
attempts, priced with the run's catalog, and the dry run's expected preemptions."""

from __future__ import annotations

import pytest

from tfvariants.analyze.cost.preemption import expected, preempted, run_preemptions
from tfvariants.analyze.cost.pricing import parse_pricing_option


def _lost(instance, *seconds):
    return {"attempts": [{"instance": instance, "lost_s": s} for s in seconds]}


def test_the_reports_line_counts_and_prices_per_node_type():
    results = [
        _lost("n2-highcpu-8", 30.4),
        _lost("n2-highcpu-8", 6.6),
        _lost("n2-highcpu-16", 100),
        {},
    ]
    lines = run_preemptions(results, parse_pricing_option("gce-2026"))
    # 37 s at n2-highcpu-8's spot price, 100 s at n2-highcpu-16's
    assert lines[1].startswith("2 preemptions (n2-highcpu-8), 37 s lost ($0.000")
    assert lines[0].startswith("1 preemption (n2-highcpu-16), 100 s lost ($0.00")
    assert [p.line for p in preempted([_lost("sim-1", 5)])] == ["1 preemption (sim-1), 5 s lost"]
    # an instance the catalog lacks is counted, not priced
    assert run_preemptions([_lost("sim-1", 5)], parse_pricing_option("gce-2026")) == [
        "1 preemption (sim-1), 5 s lost"
    ]


def test_expected_preemptions_cost_half_a_cell_and_a_boot():
    count, lost_s = expected(node_seconds=36000, cells=10, rate=0.01, boot_s=180)
    assert count == pytest.approx(0.1)  # 10 node-hours at 0.01 an hour
    assert lost_s == pytest.approx(0.1 * (3600 / 2 + 180))
    assert expected(0, 0, 0.004, 180) == (0.0, 0.0)
