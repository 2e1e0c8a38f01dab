"""benchmarks/noise.py (`make bench-noise`): the hog stops by itself, the summary reads
the run folder as the report does, and (tf) a tiny run end to end."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from resultfactory import make_result, write_results

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import noise  # noqa: E402


def test_the_hog_is_bounded_and_stops_with_the_compare():
    t0 = time.monotonic()
    with noise.Hog("nice", [0], seed=1, max_s=0.5) as hog:
        deadline = time.monotonic() + 10
        while not hog.procs and time.monotonic() < deadline:  # a busy machine starts slowly
            time.sleep(0.05)
        pids = [p.pid for p in hog.procs]
        assert hog.duty > 0  # counted while it runs, not only once it ended
    assert pids and time.monotonic() - t0 < 20
    assert all(p.poll() is not None for p in hog.procs)
    with noise.Hog("nice", [0], seed=1, max_s=0.3) as hog:
        hog.thread.join(timeout=10)  # ends by itself, nobody stops it
    assert not hog.thread.is_alive() and hog.on_s > 0


def test_summary_reads_verdicts_twin_and_disturbed_cells(tmp_path):
    results = [
        make_result(v, t, "mnist_cnn", r, steady_epoch_s={1: 3.0, 2: 2.0}[t], noise=0.02, seed=s)
        for s, (v, t) in enumerate((("local", 1), ("local", 2), ("twin", 2)))
        for r in range(5)
    ]
    results[0]["cpu"] = {"others_share": 0.5}
    results[1]["runner"] = {"priority": {"requested": "raised", "shielded": True}}
    out = write_results(tmp_path / "run", results)
    summary = noise.RunSummary("bursts", 1, str(out), 0, 500.0, 0.4, 12)
    noise.summarise(out, summary)
    assert summary.comparisons["mnist_cnn"]["verdict"] == "different"
    assert summary.comparisons["mnist_cnn"]["ratio"] > 1
    assert summary.twin["mnist_cnn"] != "different"
    assert summary.twin_ok and summary.cells == 15 and summary.disturbed == 1
    assert (summary.raised, summary.shielded) == (1, 1)
    # No look recorded it: the final report alone does not count as decided.
    assert not summary.decided and summary.answer_s == 500.0
    assert "not decided at any look" in summary.line()

    from tfvariants.plan.spec import MatrixSpec
    from tfvariants.store.runfile import local_host, new_run

    spec = MatrixSpec(("local", "twin"), (1, 2), ("mnist_cnn",), 5, {}, {})
    run = new_run(spec, [local_host()])
    undecided = {"verdict": "undecided", "ratio": 1.4}
    different = {"verdict": "different", "ratio": 1.5}
    run["adaptive"] = {"looks_made": [
        {"after_repeats": 5, "at_s": 290.0, "verdicts": {"mnist_cnn local@1 vs local@2": undecided}},
        {"after_repeats": 10, "at_s": 420.0, "verdicts": {"mnist_cnn local@1 vs local@2": different}},
    ]}  # fmt: skip
    (out / "run.json").write_text(json.dumps(run))
    summary = noise.RunSummary("bursts", 1, str(out), 0, 500.0, 0.4, 12)
    noise.summarise(out, summary)
    assert summary.decided and (summary.decided_after, summary.answer_s) == (10, 420.0)
    line = summary.line()
    assert "DECIDED at the look after 10 repeats, 7.0 min" in line and "disturbed 1 of 15" in line
    assert "twin: mnist_cnn" in line and "raised priority 1 of 1 shielded" in line


def test_bad_options_exit_2(tmp_path, capsys):
    assert noise.main(["--scenarios", "storm", "--out", str(tmp_path / "x")]) == 2
    assert "bursts and/or nice" in capsys.readouterr().err


@pytest.mark.tf
def test_a_tiny_noisy_run_end_to_end(tmp_path):
    out = tmp_path / "bench"
    tiny = ["--compare-arg=--repeats=1", "--compare-arg=--max-repeats=1",
            "--compare-arg=--samples=256", "--compare-arg=--min-steady-s=0.2",
            "--compare-arg=--min-steady-steps=3", "--compare-arg=--quiet-wait=2s"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "noise.py"), "--scenarios", "nice",
         "--workloads", "mnist_cnn", "--max-s", "600", "--out", str(out), *tiny],
        capture_output=True, text=True, env=env, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "nice run 1:" in proc.stdout and "twin:" in proc.stdout
    (summary,) = json.loads((out / "bench-noise.json").read_text())
    assert summary["cells"] >= 3 and summary["exit_code"] == 0  # local@1, local@2, twin@2
