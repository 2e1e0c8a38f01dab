"""benchmarks/duet.py (issue 25 item 5): the schedule's slots and CPU swap, the pairs'
interval, and the real runner with stub workers: a duet's two cells run at once, each
pinned to its CPU; (tf) one round of each mode end to end."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tfvariants.plan.cell import Cell
from tfvariants.plan.topology import LogicalCpu, Topology, read_topology

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import duet  # noqa: E402

# A stub worker: its steady step time is 10 ms, x1.2 for variant b, x1.5 on the
# highest CPU it may use (a slower CPU the swap must cancel); it stays 1.5 s so two
# cells started together overlap, and records when it ran.
STUB = f"""#!{sys.executable}
import json, os, sys, time
args = sys.argv[1:]
request = json.loads(args[args.index("--request") + 1])
started = time.time()
time.sleep(1.5)
cpus = sorted(os.sched_getaffinity(0))
step = 0.010 * (1.2 if request["cell"]["variant"] == "b" else 1.0)
step *= 1.5 if cpus == [max(request["all_cpus"])] else 1.0
data = {{"schema_version": 1, "kind": "tfvariants.cell", "cell": request["cell"],
        "status": "ok", "timing": {{"epoch_times_s": [1.0], "steady_step_s": step}},
        "applied": {{"affinity": cpus}}, "ran": [started, time.time()]}}
with open(request["result"] + ".tmp", "w") as fh:
    json.dump(data, fh)
os.replace(request["result"] + ".tmp", request["result"])
"""

TWO = sorted(os.sched_getaffinity(0))[:2]


def _host_plans():
    plans = duet.host_plans(read_topology())
    assert plans is not None and (plans.first.cpus, plans.second.cpus) == ((TWO[0],), (TWO[1],))
    return plans


def stub_bench(tmp_path: Path) -> duet.Bench:
    script = tmp_path / "stub_python"
    script.write_text(STUB.replace('request["all_cpus"]', repr(TWO)))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    vfile = tmp_path / "variants.toml"
    vfile.write_text(
        "".join(f'[variants.{s}]\nkind = "venv"\npython = "{script}"\n' for s in duet.SIDES)
    )
    options = duet.replace(duet.RunOptions(), timeout_s=60.0)
    names = {s: s for s in duet.SIDES}
    return duet.Bench(names, vfile, "mnist_mlp", options, tmp_path / "out")


TWO_CORES = Topology(cpus=(LogicalCpu(0, 0, 0, 0), LogicalCpu(1, 1, 0, 0)))
NAMES = {"a": "a", "b": "b"}


def test_schedule_has_equal_slots_alternating_order_and_swapped_cpus():
    plans = duet.host_plans(TWO_CORES)
    assert plans is not None
    steps = duet.schedule(3, plans, NAMES, "mnist_mlp")
    seq = [s for s in steps if s.mode == "sequential"]
    pairs = [s for s in steps if s.mode == "duet"]
    # one sequential round (two cells one after the other) per two duet rounds
    assert len(seq) == 3 and len(pairs) == 6 and len(steps) == 9
    assert [s.mode for s in steps[:3]] == ["sequential", "duet", "duet"]
    assert [tuple(x for x, _ in s.runs) for s in seq] == [("a", "b"), ("b", "a"), ("a", "b")]
    assert all(not s.together and {c for _, c in s.runs} == {0} for s in seq)
    assert [s.round for s in pairs] == list(range(6))
    assert all(s.together for s in pairs)
    # the duet executor's placement: A on CPU 0 in even rounds, on CPU 1 in odd ones
    assert [dict(s.runs)["a"] for s in pairs] == [0, 1, 0, 1, 0, 1]
    assert all({c for _, c in s.runs} == {0, 1} for s in pairs)


def test_the_duet_cpus_are_the_products_duet_plans():
    """plan/duet.py's plans: two cores before two siblings of one; none on one CPU."""
    ht = Topology(cpus=(LogicalCpu(0, 0, 0, 0), LogicalCpu(2, 0, 0, 0), LogicalCpu(1, 1, 0, 0)))
    plans = duet.host_plans(ht)
    assert plans is not None and (plans.first.cpus, plans.second.cpus) == ((0,), (1,))
    assert duet.host_plans(Topology(cpus=(LogicalCpu(0, 0, 0, 0),))) is None


def _values(ratios: list[float]) -> dict[int, dict[str, float | None]]:
    return {r: {"a": 0.01, "b": 0.01 * x} for r, x in enumerate(ratios)}


def test_summary_pairs_only_rounds_both_measured_and_its_interval_narrows_with_noise():
    noisy = [1.10, 0.92, 1.05, 0.97, 1.12, 0.90, 1.03, 0.99, 1.08, 0.95, 1.01, 1.06]
    quiet = [1 + (x - 1) / 5 for x in noisy]
    wide = duet.summarise("seq", _values(noisy), range(12), 10.0, 0.95)
    narrow = duet.summarise("duet", _values(quiet), range(12), 10.0, 0.95)
    assert wide.pairs == narrow.pairs == 12
    assert wide.width is not None and narrow.width is not None
    assert narrow.width < wide.width / 3
    assert wide.lo is not None and wide.lo < 1 < (wide.hi or 0)
    assert wide.verdict != "different"
    # a failed cell drops its round; rounds outside the range are not used
    values = _values(noisy)
    values[0]["b"] = None
    assert duet.summarise("x", values, range(12), 1.0, 0.95).pairs == 11
    assert duet.summarise("x", values, range(5), 1.0, 0.95).pairs == 4
    none = duet.summarise("x", {}, range(3), 1.0, 0.95)
    assert none.pairs == 0 and none.width is None and "n/a" in none.line()


def test_conclusion_compares_widths_and_says_when_it_cannot():
    def row(width: float | None) -> duet.ModeSummary:
        lo, hi = (1.0, 1.0 + width) if width is not None else (None, None)
        return duet.ModeSummary("m", 10, 1.0, 1.0, lo, hi, 0.01, "undecided")

    assert "same rounds 0.50x, same wall 0.25x" in duet.conclusion([row(0.2), row(0.1), row(0.05)])
    assert "no conclusion" in duet.conclusion([row(None), row(0.1), row(0.05)])


@pytest.mark.skipif(len(TWO) < 2, reason="a duet needs two CPUs")
def test_real_runner_runs_a_duet_together_on_swapped_cpus(tmp_path):
    bench = stub_bench(tmp_path)
    for step in duet.schedule(1, _host_plans(), NAMES, "mnist_mlp"):
        bench.run(step)

    def stored(mode: str, side: str, rnd: int) -> dict:
        cid = Cell(variant=side, threads=1, workload="mnist_mlp", repeat=rnd).cell_id
        return json.loads((tmp_path / "out" / mode / "cells" / f"{cid}.json").read_text())

    for rnd, a_cpu in ((0, TWO[0]), (1, TWO[1])):
        a, b = stored("duet", "a", rnd), stored("duet", "b", rnd)
        assert a["applied"]["affinity"] == [a_cpu]
        assert b["applied"]["affinity"] == [x for x in TWO if x != a_cpu]
        assert a["ran"][0] < b["ran"][1] and b["ran"][0] < a["ran"][1]  # at the same time
    a, b = stored("sequential", "a", 0), stored("sequential", "b", 0)
    assert a["ran"][1] <= b["ran"][0]  # one after the other, A first in round 0
    assert a["applied"]["affinity"] == b["applied"]["affinity"] == [TWO[0]]
    # B is 1.2x A; CPU 1's 1.5x hits A in one duet round and B in the other
    assert bench.values["sequential"][0] == pytest.approx({"a": 0.010, "b": 0.012})
    rows = duet.summaries(bench, 1, 0.95)
    assert rows[0].median_ratio == pytest.approx(1.2)
    assert rows[2].pairs == 2 and rows[2].median_ratio == pytest.approx(1.2)
    assert bench.walls["duet"] > 0 and bench.walls["sequential"] > 0


def test_main_refuses_what_it_cannot_measure(tmp_path, capsys):
    assert duet.main(["--a", "local", "--b", "local", "--out", str(tmp_path / "x")]) == 2
    assert "different variants" in capsys.readouterr().err
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_text("")
    assert duet.main(["--out", str(tmp_path / "full")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not empty" in err
    assert duet.main(["--a", "nosuch", "--out", str(tmp_path / "y")]) == 2
    assert "unknown variant" in capsys.readouterr().err
    assert not (tmp_path / "y").exists()


@pytest.mark.tf
@pytest.mark.skipif(len(TWO) < 2, reason="a duet needs two CPUs")
def test_a_tiny_real_duet_end_to_end(tmp_path):
    out = tmp_path / "bench"
    tiny = ["--samples", "256", "--min-steady-s", "0.2", "--min-steady-steps", "3"]
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "duet.py"),
            "--rounds",
            "1",
            "--workload",
            "mnist_mlp",
            "--out",
            str(out),
            *tiny,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads((out / "bench-duet.json").read_text())
    values = report["values"]
    assert len(values["sequential"]) == 1 and len(values["duet"]) == 2
    steps = [
        v
        for rnd in (*values["sequential"].values(), *values["duet"].values())
        for v in rnd.values()
    ]
    assert len(steps) == 6 and all(v is not None and v > 0 for v in steps)
    assert [r["pairs"] for r in report["summaries"]] == [1, 1, 2]
    assert "duet interval width" in proc.stdout or "no conclusion" in proc.stdout


@pytest.mark.skipif(len(TWO) < 2, reason="a duet needs two CPUs")
def test_main_measures_under_the_hog_and_writes_its_summary(tmp_path, capsys, monkeypatch):
    from tfvariants.commands import matrix_args

    # the stubs have no TensorFlow for the readiness check to find
    monkeypatch.setattr(matrix_args, "ready_variants", lambda found, engine: found)
    bench = stub_bench(tmp_path)
    out = tmp_path / "bench"
    argv = ["--a", "a", "--b", "b", "--variants-file", str(bench.variants_file)]
    assert duet.main([*argv, "--rounds", "1", "--hog", "nice", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "[3/3] duet round 1" in printed and "sequential " in printed
    report = json.loads((out / "bench-duet.json").read_text())
    assert report["hog"]["kind"] == "nice" and report["hog"]["bursts"] == 1
    # the hog's processes did not end the cells (each cell runs in its own helper)
    assert [r["pairs"] for r in report["summaries"]] == [1, 1, 2]
    assert report["summaries"][0]["median_ratio"] == pytest.approx(1.2)


@pytest.mark.skipif(len(TWO) < 2, reason="a duet needs two CPUs")
def test_the_bench_runs_the_products_duet_executor(tmp_path, monkeypatch):
    """A deliberate change to the product's duet (execute/duet.py: no swap of the CPU
    sets with the round's parity) changes the bench's duet ratio: the slower CPU then
    hits B in every round instead of cancelling out."""
    from tfvariants.execute import duet as product

    def ratio(where: Path) -> float | None:
        where.mkdir()
        bench = stub_bench(where)
        for step in duet.schedule(1, _host_plans(), NAMES, "mnist_mlp"):
            bench.run(step)
        return duet.summaries(bench, 1, 0.95)[2].median_ratio

    assert ratio(tmp_path / "shipped") == pytest.approx(1.2)

    def never_swapped(self, first, second):
        a, b = self.plans.both()
        one, two = sorted((first, second), key=lambda c: str(c.cell_id))
        return product._Side(one, a), product._Side(two, b)

    monkeypatch.setattr(product.Duet, "sides", never_swapped)
    assert ratio(tmp_path / "changed") == pytest.approx(1.2 * 1.5)
