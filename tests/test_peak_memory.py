"""The probe's memory bandwidth: arrays sized from the last-level cache, the figure
carried into the peak record and the report's peaks table (not onto the chart)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_peak import CPU, TOPO, _run_with_peaks

from tfvariants.analyze.training import roofline
from tfvariants.commands.report import write_report
from tfvariants.store.record import run_record
from tfvariants.variants.peak import run as peakrun
from tfvariants.variants.registry import Variant
from workloads import peakprobe


def _caches(root: Path, sizes: dict[str, str]) -> Path:
    for index, size in sizes.items():
        folder = root / "devices/system/cpu/cpu0/cache" / index
        folder.mkdir(parents=True)
        (folder / "size").write_text(size + "\n")
    return root


def test_the_arrays_are_eight_times_the_last_level_cache_within_bounds(tmp_path):
    root = _caches(tmp_path, {"index0": "48K", "index2": "2048K", "index3": "32768K"})
    assert peakprobe.llc_bytes(str(root)) == 32 << 20
    assert peakprobe.stream_elements(32 << 20) == (256 << 20) // 4
    assert peakprobe.stream_elements(1 << 20) == (64 << 20) // 4  # at least 64 MiB
    assert peakprobe.stream_elements(1 << 30) == (512 << 20) // 4  # at most 512 MiB
    assert peakprobe.stream_elements(None) == (64 << 20) // 4
    assert peakprobe.llc_bytes(str(tmp_path / "none")) is None


def test_the_bandwidth_reaches_the_record_and_the_peaks_table(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(peakrun, "known_compiled_for", lambda v: None)
    monkeypatch.setattr(peakrun, "binary_identity", lambda v: "sha256:abc")

    def probe(variant, plan, priority="normal"):
        memory = {"bytes": 3e9, "best_s": 0.25, "reps": 5, "gb_per_s": 12.0}
        return {"measured": True, "gflops_per_s": 90.0, "kernels": {}, "memory": memory}

    got = peakrun.measure(Variant("local", "local"), 1, topology=TOPO, cpu=CPU, probe=probe)
    assert got["memory_gb_per_s"] == 12.0
    folder = _run_with_peaks(tmp_path)
    run_json = folder / "run.json"
    text = run_json.read_text().replace(
        '"attainable_gflops_per_s": 92.0',
        '"memory_gb_per_s": 17.5, "attainable_gflops_per_s": 92.0',
    )
    run_json.write_text(text)
    peaks = {p.label: p for p in roofline.peaks_of(run_record(json.loads(text)))}
    assert peaks["local@1"].memory == pytest.approx(17.5) and peaks["local@2"].memory is None
    write_report(folder, tmp_path / "r.html")
    html = (tmp_path / "r.html").read_text()
    assert "<th>memory GB/s</th>" in html and ">17.5<" in html
