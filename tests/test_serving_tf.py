"""Serving with real TensorFlow (marker ``tf``; ~1-2 min): MobileNetV2 under LoadGen's
SingleStream, Server and Offline scenarios, and the report's numbers checked against
LoadGen's own detail logs; a user .py model over HTTP with b64 PNG bodies and a saved
.keras file in-process."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import require_loadgen

from tfvariants.cli import main
from tfvariants.store.result import load_result
from workloads.serving import mllog

pytestmark = [pytest.mark.tf, pytest.mark.usefixtures("needs_tf")]

SHORT = ["--threads", "2", "--repeats", "1", "--min-duration", "0.5s", "--max-duration", "4s",
         "--min-queries", "10", "--server-qps", "5", "--pricing", "gce-2017"]  # fmt: skip
ROW = re.compile(r'<tr data-cell="([^"]+)" data-metric="([^"]+)" data-value="([^"]*)">')


def test_report_numbers_equal_loadgen_detail_logs(tmp_path):
    require_loadgen()
    out, report = tmp_path / "res", tmp_path / "rep" / "index.html"
    code = main(
        [
            "serve",
            "--models",
            "mobilenet_v2",
            "--scenarios",
            "single_stream,server,offline,concurrency",
            "--concurrency",
            "1",
            "--path",
            "inprocess",
            *SHORT,
            "--out",
            str(out),
            "--report",
            str(report),
        ]
    )
    assert code == 0
    html = report.read_text()
    rows = {cell: (metric, value) for cell, metric, value in ROW.findall(html)}
    want = {"single_stream": ("p90_ms", "result_90.00_percentile_latency_ns"),
            "server": ("p99_ms", "result_99.00_percentile_latency_ns"),
            "offline": ("throughput_per_s", "result_samples_per_second")}  # fmt: skip
    assert len(rows) == 3
    for scenario, (metric, key) in want.items():
        cid = f"serve__mobilenet_v2__{scenario}__inprocess__local__t2__r0"
        assert rows[cid][0] == metric
        records = mllog.parse_detail_log(
            out / "artifacts" / cid / "loadgen" / "mlperf_log_detail.txt"
        )
        raw = float(records[key]) / (1e6 if key.endswith("_ns") else 1)
        assert float(rows[cid][1]) == pytest.approx(raw, rel=1e-12), (cid, rows[cid], raw)
        verdict = records["result_validity"]
        assert verdict in ("VALID", "INVALID") and f">{verdict}<" in html  # shown, never hidden
        assert (out / "artifacts" / cid / "loadgen" / "mlperf_log_summary.txt").is_file()
    closed = load_result(
        out / "cells" / "serve__mobilenet_v2__concurrency-c1__inprocess__local__t2__r0.json"
    )
    assert closed["status"] == "ok" and closed["model"]["params"] > 3_000_000
    assert closed["model"]["input_shape"] == [224, 224, 3]
    assert "mobilenet_v2: throughput vs requests in flight" in html


USER_MODEL = """
SPEC = {"name": "tiny"}


def build_model(keras):
    inp = keras.Input((16, 16, 3))
    x = keras.layers.Conv2D(4, 3, activation="relu")(inp)
    x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(inp, keras.layers.Dense(5)(x))
"""


def test_user_py_model_over_http_with_b64_and_a_keras_file(tmp_path):
    user = tmp_path / "tiny.py"
    user.write_text(USER_MODEL)
    saved = tmp_path / "tinysaved.keras"
    subprocess.run([sys.executable, "-c", (
        "import importlib.util, keras; "
        f"s = importlib.util.spec_from_file_location('t', {str(user)!r}); "
        "m = importlib.util.module_from_spec(s); s.loader.exec_module(m); "
        f"m.build_model(keras).save({str(saved)!r})")],
        check=True, capture_output=True, timeout=300)  # fmt: skip
    out = tmp_path / "res"
    code = main(["serve", "--models", f"{user},{saved}", "--scenarios", "concurrency",
                 "--concurrency", "2", "--path", "inprocess,http", "--encoding", "b64", *SHORT,
                 "--out", str(out), "--report", str(tmp_path / "rep" / "index.html")])  # fmt: skip
    assert code == 0
    results = [load_result(p) for p in sorted((out / "cells").glob("*.json"))]
    assert len(results) == 4 and all(r["status"] == "ok" for r in results)
    http = [r for r in results if r["cell"]["path"] == "http"]
    for r in http:
        assert r["encoding"]["form"] == "b64" and r["encoding"]["body_bytes"] < 16 * 16 * 3 * 2
        assert r["http_overhead"]["count"] >= 10
        # the server child ran the model: its TensorFlow and Keras are what is reported
        assert r["environment"]["tensorflow"]["version"].startswith("2.")
        assert r["environment"]["backend"]["keras_version"]
    assert {r["model"]["name"] for r in results} == {"tiny", "tinysaved"}
    assert all(r["model"]["input_shape"] == [16, 16, 3] for r in results)


@pytest.mark.serve
def test_study_preset_at_small_scale_with_a_gpu_variant(tmp_path):
    """--preset study, cut down: the no-op model and MobileNetV2 over HTTP with b64
    bodies on a CPU and a GPU variant (skipped here without a GPU: said so in the report,
    whose first sentence answers the study's question with the catalog's prices)."""
    out, report = tmp_path / "res", tmp_path / "rep" / "index.html"
    code = main(["serve", "--preset", "study", "--models", "noop,mobilenet_v2",
                 "--variants", "local,gpu", "--concurrency", "1,2", "--threads", "1",
                 "--repeats", "1", "--min-duration", "0.5s", "--max-duration", "4s",
                 "--min-queries", "10", "--pricing", "gce-2026", "--instance", "1=n2d-highcpu-8",
                 "--out", str(out), "--report", str(report)])  # fmt: skip
    cells = {p.stem: load_result(p) for p in (out / "cells").glob("*.json")}
    assert len(cells) == 2 * 2 * 2  # models x concurrency x variants, one path (http)
    gpu = [r for r in cells.values() if r["cell"]["variant"] == "gpu"]
    cpu = [r for r in cells.values() if r["cell"]["variant"] == "local"]
    if not any(r["status"] == "ok" for r in gpu):  # no GPU on this host
        assert {r["status"] for r in gpu} == {"skipped"}
    assert all(r["status"] == "ok" for r in cpu), [r.get("reason") for r in cpu]
    assert code == 0
    mobile = [r for r in cpu if r["cell"]["model"] == "mobilenet_v2"]
    assert {r["encoding"]["form"] for r in mobile} == {"b64"}
    assert all(r["cell"]["path"] == "http" for r in cells.values())
    html = report.read_text()
    first = re.search(r'<ul class="conclusions">\s*<li>([^<]*)</li>', html).group(1)
    assert first.startswith(("noop: ", "mobilenet_v2: ")) and "p99 within 100 ms" in first
    assert "gce-2026 prices" in html
    if not any(r["status"] == "ok" for r in gpu):
        assert "GPU: gpu@1 http: none ran (skipped: no GPU on this host?)" in html
