"""GPU variants' peaks: measured on the GPU the probe names, against the datasheet
figure of that GPU (tfvariants.variants.peak.gpu); "not measured (no GPU)" without one;
"unknown, not stated" for a GPU the table does not know."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import resultfactory as rf
from test_peak import CPU, TOPO

from tfvariants.analyze.training import roofline
from tfvariants.commands.report import write_report
from tfvariants.variants.peak import gpu
from tfvariants.variants.peak import run as peakrun
from tfvariants.variants.registry import Variant
from workloads import peakprobe

GPU_VARIANT = Variant("gpu", "local", device="gpu")


@pytest.mark.parametrize(
    ("name", "model", "gflops"),
    [
        ("Tesla K80", "Tesla K80 (one of its two GK210)", 4365.0),
        ("Tesla P100-PCIE-16GB", "Tesla P100 PCIe", 9300.0),
        ("Tesla P100-SXM2-16GB", "Tesla P100 SXM2", 10600.0),
        ("Tesla V100-SXM2-16GB", "Tesla V100 SXM2", 15700.0),
        ("Tesla V100-PCIE-32GB", "Tesla V100 PCIe", 14000.0),
        ("Tesla T4", "Tesla T4", 8100.0),
        ("NVIDIA A10G", "A10G", 31200.0),
        ("NVIDIA L4", "L4", 30300.0),
        ("NVIDIA A100-SXM4-40GB", "A100", 19500.0),
        ("NVIDIA H100 80GB HBM3", "H100 SXM", 67000.0),
        ("NVIDIA H100 PCIe", "H100 PCIe", 51000.0),
    ],
)
def test_known_gpus_get_their_datasheet_figure(name, model, gflops):
    found = gpu.lookup(name)
    assert found is not None and (found.name, found.gflops_per_s) == (model, gflops)
    assert found.source.startswith("NVIDIA datasheet")


@pytest.mark.parametrize("name", ["NVIDIA GeForce RTX 4090", "NVIDIA L40S", "NVIDIA A10", None])
def test_unknown_gpus_are_not_guessed(name):
    assert gpu.lookup(name) is None
    theo, why = gpu.theoretical(name)
    assert theo is None and why.endswith(": unknown, not stated")


def _probe(name: str | None, rate: float = 6000.0):
    def probe(variant, plan, priority="normal"):
        return {
            "measured": True,
            "gflops_per_s": rate,
            "best_kernel": "matmul_2048",
            "kernels": {"matmul_2048": {"gflops_per_s": rate}},
            "device": "gpu",
            "gpu_name": name,
        }

    return probe


def _measure(monkeypatch, tmp_path, probe) -> dict:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(peakrun, "binary_identity", lambda v: "sha256:gpu")
    monkeypatch.setattr("tfvariants.variants.skip_reason", lambda v: None)
    return peakrun.measure(GPU_VARIANT, 1, topology=TOPO, cpu=CPU, probe=probe)


def test_a_gpu_peak_is_measured_and_set_against_the_datasheet(tmp_path, monkeypatch):
    got = _measure(monkeypatch, tmp_path, _probe("Tesla T4"))
    assert got["attainable_gflops_per_s"] == 6000.0 and got["gpu_name"] == "Tesla T4"
    assert got["theoretical"]["gflops_per_s"] == 8100.0
    assert "T4: 8.1 TFLOPS" in got["theoretical"]["level_source"]
    # cached like a CPU's (a peak cached before the probe named its GPU was probe version 1,
    # another key: probed again)
    assert _measure(monkeypatch, tmp_path, pytest.fail)["cached"]
    assert peakprobe.VERSION >= 2


def test_an_unknown_gpu_is_measured_but_its_theoretical_peak_not_stated(tmp_path, monkeypatch):
    got = _measure(monkeypatch, tmp_path, _probe("NVIDIA GeForce RTX 4090"))
    assert got["attainable_gflops_per_s"] == 6000.0 and got["theoretical"] is None
    assert got["theoretical_why"] == "NVIDIA GeForce RTX 4090: unknown, not stated"


def test_without_a_gpu_the_probe_reports_no_gpu(tmp_path, monkeypatch):
    def no_gpu(variant, plan, priority="normal"):
        return {"measured": False, "why": "no GPU visible to TensorFlow", "gpu_name": None}

    got = _measure(monkeypatch, tmp_path, no_gpu)
    assert got["why"] == "not measured (no GPU): no GPU visible to TensorFlow"
    assert got["theoretical"] is None and got["theoretical_why"] == gpu.NO_GPU


def test_the_worker_probe_reads_the_gpu_name_from_tensorflow():
    class Experimental:
        @staticmethod
        def get_device_details(device):
            return {"device_name": "NVIDIA A100-SXM4-40GB", "compute_capability": (8, 0)}

    class Config:
        experimental = Experimental()

    class FakeTf:
        config = Config()

    assert peakprobe.gpu_name(FakeTf(), object()) == "NVIDIA A100-SXM4-40GB"
    Experimental.get_device_details = staticmethod(lambda d: {})
    assert peakprobe.gpu_name(FakeTf(), object()) is None


def _gpu_run(tmp_path: Path, peak: dict) -> Path:
    results = [rf.make_result("gpu", 1, "mnist_cnn", r, gpu=True) for r in range(3)]
    results += [rf.make_result("local", 1, "mnist_cnn", r) for r in range(3)]
    cpu_peak = {
        "device": "cpu",
        "attainable_gflops_per_s": 90.0,
        "best_kernel": "matmul_2048",
        "theoretical": {"gflops_per_s": 100.0, "level": "AVX2"},
    }
    run = {
        "schema_version": 1,
        "kind": "tfvariants.run",
        "hosts": [],
        "variants": ["local", "gpu"],
        "threads": [1],
        "workloads": ["mnist_cnn"],
        "repeats": 3,
        "variant_info": {
            "gpu": {"kind": "local", "device": "gpu", "peak": {"1": peak}},
            "local": {"kind": "local", "device": "cpu", "peak": {"1": cpu_peak}},
        },
    }
    return rf.write_results(tmp_path / "res", results, run)


def test_report_and_csv_say_not_measured_no_gpu(tmp_path, monkeypatch):
    monkeypatch.setattr("tfvariants.variants.skip_reason", lambda v: "no GPU visible on this host")
    peak = peakrun.measure(GPU_VARIANT, 1, topology=TOPO, cpu=CPU, probe=pytest.fail)
    folder = _gpu_run(tmp_path, peak)
    out, table = tmp_path / "r.html", tmp_path / "r.csv"
    write_report(folder, out, csv_path=table)
    html = out.read_text()
    assert html.count("not measured (no GPU)") >= 2  # the attainable and theoretical columns
    row = next(r for r in csv.DictReader(table.open()) if r["variant"] == "gpu")
    assert row["attainable_gflops_per_s"] == "" and "not measured (no GPU)" in row["peak_note"]
    cpu_row = next(r for r in csv.DictReader(table.open()) if r["variant"] == "local")
    assert cpu_row["peak_note"] == "" and float(cpu_row["cpu_attainable_gflops_per_s"]) == 90.0


def test_a_gpu_configuration_is_set_against_the_gpu_peaks(tmp_path, monkeypatch):
    from tfvariants.analyze.training.analysis import analyze

    monkeypatch.setattr("tfvariants.variants.skip_reason", lambda v: None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(peakrun, "binary_identity", lambda v: None)
    peak = peakrun.measure(GPU_VARIANT, 1, topology=TOPO, cpu=CPU, probe=_probe("Tesla T4"))
    a = analyze(_gpu_run(tmp_path, peak))
    roof = roofline.roofline(a.workloads, a.run)
    assert roof is not None
    share = next(s for s in roof.shares if s.variant == "gpu")
    # against the GPU's own figures, never the CPU's
    assert (share.device, share.cpu_attainable, share.cpu_theoretical) == ("gpu", 6000.0, 8100.0)
    cpu_share = next(s for s in roof.shares if s.variant == "local")
    assert cpu_share.cpu_theoretical == 100.0
    html_path = tmp_path / "r.html"
    write_report(_gpu_run(tmp_path / "again", peak), html_path)
    assert "NVIDIA datasheet T4: 8.1 TFLOPS" in html_path.read_text()
