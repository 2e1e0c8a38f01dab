"""The peak probe for real: the `local` variant's TensorFlow at 1 thread, then the cache."""

from __future__ import annotations

import pytest

from tfvariants.execute.probe import peak_probe
from tfvariants.variants import get_variant
from tfvariants.variants.peak import run as peakrun
from tfvariants.variants.peak.theory import LEVELS

pytestmark = pytest.mark.tf


def test_local_peak_at_one_thread_then_from_the_cache(tmp_path, monkeypatch, needs_tf):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    local = get_variant("local")
    got = peakrun.measure(local, 1, probe=peak_probe)
    assert got["attainable_gflops_per_s"] and got["attainable_gflops_per_s"] > 0.5, got
    assert not got["cached"] and len(got["cpus"]) == 1
    assert got["applied"] == {"affinity": got["cpus"], "intra_op": 1, "inter_op": 1}
    assert set(got["kernels"]) >= {"matmul_1024", "conv2d_3x3"}
    assert got["memory_gb_per_s"] and got["memory_gb_per_s"] > 0.1, got  # the in-place add
    theo = got["theoretical"]
    assert theo["cores"] == 1 and (theo["level"] in LEVELS or theo["level"] is None)
    # well under 10 s on a quiet machine (TensorFlow's import included); a busy one is slower
    assert got["probe_s"] < 30, got["probe_s"]

    def no_probe(variant, plan):
        raise AssertionError("a cached peak must not start the probe again")

    # A busy machine's peak is probed again (tests/test_peak.py): here only the cache hit.
    monkeypatch.setattr(peakrun, "DISTURBED", 1.0)
    again = peakrun.measure(local, 1, probe=no_probe)
    assert again["cached"]
    assert again["attainable_gflops_per_s"] == got["attainable_gflops_per_s"]
