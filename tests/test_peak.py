"""The peak: theoretical arithmetic against hand-computed values, the probe's cache,
each configuration's share of the peaks (a fixture) and where the report shows them."""

from __future__ import annotations

import csv
import functools
import json
from pathlib import Path

import pytest
import resultfactory as rf

from tfvariants.analyze.training import roofline
from tfvariants.commands.report import write_report
from tfvariants.execute import probe as probe_mod
from tfvariants.plan.topology import LogicalCpu, Topology
from tfvariants.store import runfile
from tfvariants.store.record import run_record
from tfvariants.variants.peak import run as peakrun
from tfvariants.variants.peak import theory
from tfvariants.variants.registry import Variant
from workloads import peakprobe

SKYLAKE_GOLD = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 85
model name\t: Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz
cpu MHz\t\t: 1000.000
flags\t\t: fpu sse sse2 sse4_1 sse4_2 avx avx2 fma avx512f avx512bw

processor\t: 1
vendor_id\t: GenuineIntel
"""


def _cpu(text: str, tmp_path: Path, max_khz: str | None = None) -> theory.Cpu:
    if max_khz is not None:
        freq = tmp_path / "devices/system/cpu/cpu0/cpufreq"
        freq.mkdir(parents=True)
        (freq / "cpuinfo_max_freq").write_text(max_khz + "\n")
    return theory.read_cpu(text, sys_root=tmp_path)


def test_theoretical_peak_of_a_skylake_gold_by_hand(tmp_path):
    cpu = _cpu(SKYLAKE_GOLD, tmp_path, max_khz="3700000")
    # The clock is the maximum from /sys, not the idle 1000 MHz of /proc/cpuinfo.
    assert cpu.mhz == 3700.0 and "cpuinfo_max_freq" in cpu.mhz_source
    # 4 cores x 3.7 GHz x 16 lanes x 2 FMA units x 2 FLOPs = 947.2 GFLOP/s
    peak = theory.theoretical(cpu, 4, "AVX512", "probe")
    assert peak.gflops_per_s == pytest.approx(4 * 3.7 * 16 * 2 * 2)
    assert (peak.level, peak.vector_bits, peak.fma, peak.flops_per_cycle) == (
        "AVX512",
        512,
        True,
        64,
    )
    # Capped at SSE4.1 (isa-sse41): 4 lanes, no FMA, one multiply+add pair a cycle.
    capped = theory.theoretical(cpu, 4, theory.onednn_level("SSE41"), "cap")
    assert capped.gflops_per_s == pytest.approx(4 * 3.7 * 4 * 1 * 2)
    # AVX2 + FMA: 8 lanes x 2 units x 2
    assert theory.theoretical(cpu, 1, "AVX2", "x").gflops_per_s == pytest.approx(3.7 * 32)


def test_theoretical_peak_per_microarchitecture_by_hand(tmp_path):
    zen4 = theory.Cpu(
        "AuthenticAMD",
        25,
        17,
        "AMD EPYC",
        frozenset({"sse4_1", "avx", "avx2", "fma", "avx512f"}),
        2596.142,
        "/proc/cpuinfo",
    )
    # Two 256-bit FMA pipes: an AVX-512 FMA takes both, so 16 lanes x 1 x 2 = 32 a cycle.
    assert theory.theoretical(zen4, 1, "AVX512", "x").gflops_per_s == pytest.approx(83.076544)
    # SSE4.1: 4 lanes x (2 multiply + 2 add pipes = 2 pairs) x 2 = 16 a cycle.
    assert theory.theoretical(zen4, 1, "SSE4", "x").flops_per_cycle == 16
    zen1 = theory.Cpu(
        "AuthenticAMD", 23, 1, "AMD EPYC 7601", frozenset({"avx", "avx2", "fma"}), 2000.0, "x"
    )
    assert theory.theoretical(zen1, 2, None, "assumed").gflops_per_s == pytest.approx(2 * 2 * 16)
    silver = theory.Cpu(
        "GenuineIntel",
        6,
        85,
        "Intel(R) Xeon(R) Silver 4114 CPU",
        frozenset({"avx", "avx2", "fma", "avx512f"}),
        2200.0,
        "x",
    )
    assert theory.theoretical(silver, 1, "AVX512", "x").flops_per_cycle == 32
    # The binary cannot use more than the CPU has: an AVX-512 kernel on an AVX2 CPU.
    avx2 = theory.Cpu(
        "GenuineIntel", 6, 63, "Xeon E5", frozenset({"avx", "avx2", "fma"}), 2300.0, "x"
    )
    assert theory.theoretical(avx2, 1, "AVX512", "x").level == "AVX2"


@pytest.mark.parametrize(
    ("text", "level"),
    [
        ("Intel AVX-512 with Intel DL Boost and bfloat16 support", "AVX512"),
        ("Intel AVX2", "AVX2"),
        ("Intel SSE4.1", "SSE4"),
        ("SSE41", "SSE4"),
        ("AVX2_VNNI", "AVX2"),
        ("AVX512_CORE_AMX", "AVX512"),
        ("AVX", "AVX"),
        (None, None),
        ("bogus", None),
    ],
)
def test_onednn_isa_names_map_to_levels(text, level):
    assert theory.onednn_level(text) == level


def test_code_level_prefers_what_onednn_said_then_the_cap():
    assert theory.code_level("Intel AVX2", {"ONEDNN_MAX_CPU_ISA": "SSE41"})[0] == "AVX2"
    level, how = theory.code_level(None, {"ONEDNN_MAX_CPU_ISA": "SSE41"})
    assert level == "SSE4" and "ONEDNN_MAX_CPU_ISA=SSE41" in how
    assert theory.code_level(None, {})[0] is None
    # no oneDNN kernel ran (Eigen's are not dispatched at run time): the census decides
    assert theory.code_level(None, {}, "AVX") == ("AVX", "compiled for AVX (census)")
    assert theory.code_level(None, {}, "AVX512+FMA+AVX2")[0] == "AVX512"
    assert theory.code_level(None, {}, "SSE2")[0] == "SSE4"


def test_best_time_warms_up_then_keeps_the_fastest():
    durations = iter([9.0, 0.3, 0.1, 0.2] + [0.5] * 20)
    now = [0.0]
    calls = []

    def timed() -> None:
        calls.append(1)
        now[0] += next(durations)

    best, reps = peakprobe.best_time(timed, budget_s=1.0, clock=lambda: now[0])
    # the 9 s warm-up is not counted; 0.3+0.1+0.2+0.5 >= 1.0 stops it after 4 timed calls
    assert best == pytest.approx(0.1) and reps == 4 and len(calls) == 5
    # never fewer than 3 timed calls, however slow
    slow = iter([5.0] * 10)
    assert (
        peakprobe.best_time(
            lambda: now.__setitem__(0, now[0] + next(slow)), 1.0, clock=lambda: now[0]
        )[1]
        == 3
    )


TOPO = Topology((LogicalCpu(0, 0, 0, 0), LogicalCpu(1, 1, 0, 0)))
CPU = theory.Cpu(
    "AuthenticAMD",
    25,
    17,
    "AMD EPYC",
    frozenset({"sse4_1", "avx", "avx2", "fma", "avx512f"}),
    2600.0,
    "test",
)


def _fake_probe(calls: list):
    def probe(variant, plan, priority="normal"):
        calls.append((variant.name, plan.threads))
        isa = "Intel SSE4.1" if variant.env.get("ONEDNN_MAX_CPU_ISA") else "Intel AVX2"
        return {
            "measured": True,
            "gflops_per_s": 50.0 * plan.threads,
            "best_kernel": "matmul_1024",
            "kernels": {"matmul_1024": {"gflops_per_s": 50.0 * plan.threads}},
            "onednn_isa": isa,
            "wall_s": 3.0,
        }

    return probe


def test_measure_is_cached_by_binary_env_cpus_and_threads(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(peakrun, "known_compiled_for", lambda v: None)
    monkeypatch.setattr(peakrun, "binary_identity", lambda v: "sha256:abc")
    calls: list = []
    local = Variant("local", "local")
    capped = Variant("isa-sse41", "local", env={"ONEDNN_MAX_CPU_ISA": "SSE41"})
    kw = {"topology": TOPO, "cpu": CPU, "probe": _fake_probe(calls)}
    first = peakrun.measure(local, 1, **kw)
    again = peakrun.measure(local, 1, **kw)
    assert calls == [("local", 1)] and not first["cached"] and again["cached"]
    assert again["attainable_gflops_per_s"] == 50.0
    # another thread count, another env (the same binary): probed once each
    two = peakrun.measure(local, 2, **kw)
    low = peakrun.measure(capped, 1, **kw)
    assert calls == [("local", 1), ("local", 2), ("isa-sse41", 1)]
    assert two["theoretical"]["cores"] == 2
    # the SSE4.1 cap shows its lower theoretical peak: 4 lanes x 2 pairs x 2 vs 32 a cycle
    assert low["theoretical"]["level"] == "SSE4"
    assert low["theoretical"]["gflops_per_s"] == pytest.approx(2.6 * 16)
    assert first["theoretical"]["gflops_per_s"] == pytest.approx(2.6 * 32)
    # another binary is another key; a failed probe is not cached
    monkeypatch.setattr(peakrun, "binary_identity", lambda v: "sha256:def")
    kw["probe"] = lambda v, p: {"measured": False, "why": "boom"}
    failed = peakrun.measure(local, 1, **kw)
    assert failed["attainable_gflops_per_s"] is None and failed["why"] == "boom"
    assert not peakrun.measure(local, 1, **kw)["cached"]


def test_a_gpu_variant_without_a_gpu_is_not_measured(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(peakrun, "known_compiled_for", lambda v: None)
    monkeypatch.setattr("tfvariants.variants.skip_reason", lambda v: "no GPU on this host")
    got = peakrun.measure(
        Variant("gpu", "local", device="gpu"),
        1,
        topology=TOPO,
        cpu=CPU,
        probe=lambda v, p: pytest.fail("must not probe"),
    )
    assert got["attainable_gflops_per_s"] is None
    assert got["why"] == "not measured (no GPU): no GPU on this host"
    assert got["theoretical"] is None


def _run_with_peaks(tmp_path: Path) -> Path:
    results = [
        rf.make_result(v, t, "mnist_cnn", r, steady_epoch_s=s)
        for v, s in (("local", 2.0), ("isa-sse41", 4.0))
        for t in (1, 2)
        for r in range(3)
    ]
    run = {
        "schema_version": 1,
        "kind": "tfvariants.run",
        "hosts": [],
        "variants": ["local", "isa-sse41"],
        "threads": [1, 2],
        "workloads": ["mnist_cnn"],
        "repeats": 3,
        "variant_info": {},
    }
    for v, attain, theo in (("local", 92.0, 83.2), ("isa-sse41", 40.0, 41.6)):
        run["variant_info"][v] = {
            "kind": "local",
            "device": "cpu",
            "peak": {
                str(t): {
                    "device": "cpu",
                    "attainable_gflops_per_s": attain * t,
                    "best_kernel": "matmul_2048",
                    "theoretical": {
                        "gflops_per_s": theo * t,
                        "level": "AVX512",
                        "cores": t,
                        "mhz": 2600.0,
                        "mhz_source": "test",
                    },
                }
                for t in (1, 2)
            },
        }
    return rf.write_results(tmp_path / "res", results, run)


def test_shares_against_a_fixture(tmp_path):
    from tfvariants.analyze.training.analysis import analyze

    a = analyze(_run_with_peaks(tmp_path))
    roof = roofline.roofline(a.workloads, a.run)
    assert roof is not None
    shares = {s.label: s for s in roof.shares}
    # mnist_cnn: 1.6e9 FLOPs x 46 steps / 2.0 s = 36.8 GFLOP/s (local), 18.4 (isa-sse41)
    local1, sse2 = shares["local@1"], shares["isa-sse41@2"]
    assert local1.achieved == pytest.approx(36.8)
    assert local1.share(local1.cpu_attainable) == pytest.approx(36.8 / 92.0)
    assert local1.share(local1.cpu_theoretical) == pytest.approx(36.8 / 83.2)
    assert local1.headroom == pytest.approx(92.0 / 36.8)
    # the capped build against its own (lower) peak and against the CPU's best
    assert sse2.share(sse2.own_attainable) == pytest.approx(18.4 / 80.0)
    assert sse2.share(sse2.cpu_attainable) == pytest.approx(18.4 / 184.0)
    text = " ".join(roof.sentences)
    assert "mnist_cnn at 1 thread(s) (local) runs at 40 % of this CPU's attainable peak" in text
    assert "more than 2.50x faster" in text
    assert "beat the theoretical peak (local@1, local@2)" in text


def test_report_and_csv_show_the_peaks(tmp_path):
    folder = _run_with_peaks(tmp_path)
    out, table = tmp_path / "r.html", tmp_path / "r.csv"
    write_report(folder, out, csv_path=table)
    html = out.read_text()
    assert "How close to the hardware" in html and "attainable (solid)" in html
    assert "matmul_2048" in html and "40 %" in html
    rows = list(csv.DictReader(table.open()))
    row = next(r for r in rows if r["variant"] == "local" and r["threads"] == "1")
    assert float(row["pct_of_attainable"]) == pytest.approx(0.4)
    assert float(row["cpu_attainable_gflops_per_s"]) == 92.0


def test_a_run_without_peaks_has_no_section(tmp_path):
    results = [rf.make_result("local", 1, "mnist_cnn", r) for r in range(3)]
    folder = rf.write_results(tmp_path / "res", results)
    write_report(folder, tmp_path / "r.html")
    assert "How close to the hardware" not in (tmp_path / "r.html").read_text()


def test_store_peaks_keeps_other_thread_counts_on_resume(tmp_path):
    folder = _run_with_peaks(tmp_path)
    runfile.store_peaks(folder, {"local": {"4": {"attainable_gflops_per_s": 1.0}}})
    stored = json.loads((folder / "run.json").read_text())["variant_info"]["local"]["peak"]
    assert sorted(stored) == ["1", "2", "4"]


def test_the_compiled_answer_gives_each_builds_headroom(tmp_path):
    from tfvariants.analyze.report.build import build_report

    folder = _run_with_peaks(tmp_path)
    run = json.loads((folder / "run.json").read_text())
    run["options"] = {"preset": {"name": "compiled", "stock": "local", "builds": ["isa-sse41"]}}
    (folder / "run.json").write_text(json.dumps(run))
    lines = build_report(folder).compiled
    # isa-sse41@1: 18.4 of the CPU's 92 GFLOP/s (20 %), 46 % of its own 40: 5.00x
    assert (
        "Headroom: mnist_cnn on isa-sse41@1 ran at 20 % of this CPU's attainable peak "
        "(46 % of its own build's): at most 5.00x faster with any build." in lines
    )
    assert lines[-1].startswith("The 2017 study")


def test_compare_probes_each_configuration_before_its_first_cell(tmp_path, monkeypatch):
    from test_compare import FakeRunCell

    from tfvariants.cli import main
    from tfvariants.commands import compare
    from tfvariants.execute import runner

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(compare, "probe_variants", lambda *a, **k: None)
    monkeypatch.setattr(peakrun, "binary_identity", lambda v: "sha256:abc")
    events: list = []
    probe = _fake_probe(events)
    monkeypatch.setattr(probe_mod, "peak_probe", probe)
    fake = FakeRunCell()

    def run_cell(cell, *a, **k):
        events.append(("cell", cell.cell_id))
        return fake(cell, *a, **k)

    monkeypatch.setattr(runner, "run_cell", run_cell)
    argv = [
        "compare",
        "--threads",
        "1,2",
        "--workloads",
        "mnist_cnn",
        "--repeats",
        "2",
        "--pricing",
        "none",
        "--out",
        "R",
        "-o",
        "r.html",
    ]
    assert main(argv) == 0
    assert events[:2] == [("local", 1), ("local", 2)] and events[2][0] == "cell"
    stored = json.loads((tmp_path / "R/run.json").read_text())["variant_info"]["local"]["peak"]
    assert stored["2"]["attainable_gflops_per_s"] == 100.0 and not stored["2"]["cached"]
    assert "How close to the hardware" in (tmp_path / "r.html").read_text()
    # a resume finds them in the cache; --no-peak does not probe at all
    events.clear()
    assert main(["compare", "--resume", "--out", "R", "-o", "r2.html"]) == 0
    assert [e for e in events if e[0] != "cell"] == []
    assert main([*argv[:-4], "--out", "R3", "-o", "r3.html", "--no-peak"]) == 0
    assert "peak" not in json.loads((tmp_path / "R3/run.json").read_text())["variant_info"]["local"]


def test_the_chart_draws_both_peak_lines_and_escapes_names():
    from tfvariants.render.rooflinechart import roofline_chart

    peaks = tuple(
        roofline.Peak("local", t, "cpu", 90.0 * t, "matmul_1024", 80.0 * t, "AVX512", "x", None)
        for t in (1, 2)
    )
    shares = (roofline.Share("<b>wl</b>", "local", 2, 40.0, 180.0, 180.0, 160.0),)
    svg = str(roofline_chart(roofline.Roofline(peaks, shares, ()), ["local"]))
    assert svg.count("<polyline") == 2 and 'stroke-dasharray="5,4"' in svg
    assert "<b>" not in svg and "&lt;b&gt;wl&lt;/b&gt;" in svg
    assert "40.0 GFLOP/s" in svg


def test_a_disturbed_peak_is_probed_again_and_the_best_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(peakrun, "known_compiled_for", lambda v: None)
    monkeypatch.setattr(peakrun, "binary_identity", lambda v: "sha256:abc")
    results = iter([(40.0, 0.5), (90.0, 0.3), (60.0, 0.4), (99.0, 0.0)])
    calls = []

    def probe(variant, plan):
        calls.append(1)
        rate, busy = next(results)
        return {"measured": True, "gflops_per_s": rate, "others_share": busy, "kernels": {}}

    kw = {"topology": TOPO, "cpu": CPU, "probe": probe}
    local = Variant("local", "local")
    got = [peakrun.measure(local, 1, **kw) for _ in range(5)]
    # 40 (busy) -> 90 kept -> 60 is worse: 90 stays; after 3 probes the busy peak stands
    assert [g["attainable_gflops_per_s"] for g in got] == [40.0, 90.0, 90.0, 90.0, 90.0]
    assert len(calls) == 3 and [g["cached"] for g in got] == [False, False, False, True, True]
    assert got[-1]["probes"] == 3
    roof = roofline.peaks_of(run_record({"variant_info": {"local": {"peak": {"1": got[-1]}}}}))
    assert roof[0].disturbed and roof[0].busy == 0.3
    # a quiet probe is cached at once
    monkeypatch.setattr(peakrun, "binary_identity", lambda v: "sha256:quiet")
    kw["probe"] = lambda v, p: {"measured": True, "gflops_per_s": 50.0, "others_share": 0.01}
    peakrun.measure(local, 1, **kw)
    assert peakrun.measure(local, 1, **kw)["cached"]


def test_a_run_with_a_budget_keeps_a_busy_hosts_cached_peak(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(peakrun, "known_compiled_for", lambda v: None)
    monkeypatch.setattr(peakrun, "binary_identity", lambda v: "sha256:busy")
    calls = []

    def probe(variant, plan):  # a neighbour that stays: every probe is busy
        calls.append(1)
        return {"measured": True, "gflops_per_s": 40.0, "others_share": 0.3, "kernels": {}}

    kw = {"topology": TOPO, "cpu": CPU, "probe": probe}
    local = Variant("local", "local")
    assert not peakrun.measure(local, 1, **kw)["cached"]
    # inside a budget the busy peak stands (its probe would cost the comparisons' time)
    assert peakrun.measure(local, 1, again=False, **kw)["cached"] and len(calls) == 1
    assert not peakrun.measure(local, 1, **kw)["cached"] and len(calls) == 2


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("echo boom >&2; exit 3", "peak probe failed (3): boom"),
        ("sleep 2", "peak probe gave no result in 0.5 s"),
        (
            'echo "{\\"measured\\": true, \\"gflops_per_s\\": 7.0, \\"affinity\\": [0]}" > "$4"',
            None,
        ),
    ],
)
def test_run_probe_launches_the_variant_pinned_and_reads_its_result(
    tmp_path, monkeypatch, body, why
):
    # An interpreter that is a shell script: the launch, pinning and failure paths
    # without TensorFlow (argv: -m workloads.peakprobe --result PATH).
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    monkeypatch.delenv("TFV_NO_REAL_WORKERS")
    monkeypatch.setattr(probe_mod, "PEAK_TIMEOUT_S", 0.5)
    plan = peakrun.plan_pinning(1, TOPO)
    got = probe_mod.peak_probe(Variant("v", "venv", python=str(script)), plan)
    if why is None:
        assert got.pop("priority")["requested"] == "normal"  # what it ran at, read back
        assert got == {"measured": True, "gflops_per_s": 7.0, "affinity": [0]}
    else:
        assert got == {"measured": False, "why": why}


@pytest.mark.parametrize("priority", ["raised", "normal"])
def test_run_probe_runs_at_the_runs_priority(tmp_path, monkeypatch, priority):
    """The probe's worker is launched at the priority its cells run at, and records
    what it got (runner.Launch and read_back, as for a cell)."""
    from tfvariants.execute import runner

    script = tmp_path / "python"
    script.write_text('#!/bin/sh\necho "{\\"measured\\": true, \\"gflops_per_s\\": 7.0}" > "$4"\n')
    script.chmod(0o755)
    monkeypatch.delenv("TFV_NO_REAL_WORKERS")
    launched: list = []
    real_watch = runner.watch

    def watch(launch, timeout_s, sink):
        launched.append(launch)
        return real_watch(launch, timeout_s, sink)

    monkeypatch.setattr(runner, "watch", watch)
    plan = peakrun.plan_pinning(1, TOPO)
    got = probe_mod.peak_probe(Variant("v", "venv", python=str(script)), plan, priority=priority)
    assert [launch.priority for launch in launched] == [priority]
    assert got["measured"] and got["priority"]["requested"] == priority


def test_measure_all_probes_with_the_given_probe(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(peakrun, "known_compiled_for", lambda v: None)
    monkeypatch.setattr(peakrun, "binary_identity", lambda v: "sha256:abc")
    monkeypatch.setattr(peakrun, "read_topology", lambda: TOPO)
    monkeypatch.setattr(peakrun.theory, "read_cpu", lambda: CPU)
    asked: list = []

    def probe(variant, plan, priority="normal"):
        asked.append((plan.threads, priority))
        return {"measured": True, "gflops_per_s": 5.0, "priority": {"requested": priority}}

    local = Variant("local", "local")
    got = peakrun.measure_all(
        {"local": local}, [("local", 1), ("local", 2)], functools.partial(probe, priority="raised")
    )
    assert asked == [(1, "raised"), (2, "raised")]
    assert got["local"]["2"]["priority"] == {"requested": "raised"}


@pytest.mark.parametrize("priority", ["raised", "normal"])
def test_compare_probes_peaks_at_its_priority(tmp_path, monkeypatch, priority):
    from test_compare import FakeRunCell

    from tfvariants.cli import main
    from tfvariants.commands import compare
    from tfvariants.execute import runner

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(compare, "probe_variants", lambda *a, **k: None)
    monkeypatch.setattr(peakrun, "binary_identity", lambda v: "sha256:abc")
    asked: list = []

    def probe(variant, plan, priority="normal"):
        asked.append(priority)
        return {"measured": True, "gflops_per_s": 5.0}

    monkeypatch.setattr(probe_mod, "peak_probe", probe)
    monkeypatch.setattr(runner, "run_cell", FakeRunCell())
    argv = ["compare", "--threads", "1", "--workloads", "mnist_cnn", "--repeats", "1"]
    argv += ["--priority", priority, "--pricing", "none", "--out", "R", "-o", "r.html"]
    assert main(argv) == 0
    assert asked == [priority]
