"""Piped output keeps every number: each listing command's tables, read through a pipe
(as in a log or CI), have no cell cut short ("…") and keep their full values."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

LISTINGS = [
    ["env", "--no-tf"],
    ["variants"],
    ["prices", "--catalog", "gce-2026"],
    ["prices", "--catalog", "aws-2026"],
    ["prices", "--catalog", "gce-2017"],
    ["compare", "--executor", "ray", "--dry-run", "--threads", "8,16,32,64", "--variants",
     "pip,gpu", "--workloads", "all", "--pricing", "gce-2026"],
    ["compare", "--dry-run", "--estimate-from", "study-2017", "--threads", "8,16,32,64",
     "--variants", "pip,compiled,gpu", "--workloads", "all", "--pricing", "gce-2017"],
]  # fmt: skip


def _piped(argv: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "80"}  # what a CI log's pseudo-width often is
    env.pop("FORCE_COLOR", None)
    # `variants` looks up whether TensorFlow is installed (find_spec), nothing runs.
    env.pop("TFV_NO_REAL_WORKERS", None)
    return subprocess.run(
        [sys.executable, "-m", "tfvariants", *argv], capture_output=True, text=True, env=env,
        timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("argv", LISTINGS, ids=lambda a: " ".join(a[:2]))
def test_piped_tables_are_never_cut(argv):
    proc = _piped(argv)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout + proc.stderr
    assert "…" not in text, text
    assert text.strip()


def test_piped_dry_run_keeps_prices_and_costs_whole():
    proc = _piped(LISTINGS[5])
    lines = proc.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("node type"))
    columns = lines[header].split()
    assert columns[:4] == ["node", "type", "vCPUs", "GPU"]
    rows = [line for line in lines[header + 1 :] if line.strip()][:5]
    for row in rows:
        # every cost is a whole money figure and the price per hour has its 4 decimals
        assert row.count("$") == 2, row
        assert any(len(p.split(".")[-1]) == 4 for p in row.split() if p.replace(".", "").isdigit())
