"""`tfvariants serve`: bad input (one line, exit 2, nothing written), and real serving
workers with the numpy no-op model (no TensorFlow): in-process and over HTTP, and an
external --target that answers 500 or malformed JSON (failed cells with reasons)."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import socket

import pytest
from brokenhttp import broken_server
from conftest import require_loadgen

from tfvariants.cli import main
from tfvariants.store.result import load_result


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--models", "nope"], "--models: unknown model 'nope'"),
        (["--models", "missing.keras"], "--models: model file not found"),
        (["--concurrency", "0"], "--concurrency: expected a whole number from 1 to 1024, got 0"),
        (
            ["--concurrency", "1000000"],
            "--concurrency: expected a whole number from 1 to 1024, got 1000000",
        ),
        (["--server-qps", "nan"], "--server-qps: expected a number greater than 0"),
        (["--concurrency", "1,,4"], "--concurrency: expected a comma list"),
        (["--p99", "fast"], "--p99: expected a duration with a unit"),
        (["--p99", "100"], "--p99: expected a duration with a unit"),
        (["--p99", "0ms"], "--p99: must be greater than 0"),
        (["--p99", "1e9s"], "--p99: expected a duration"),
        (["--min-duration", "5s", "--max-duration", "1s"], "longer than --max-duration"),
        (["--scenarios", "burst"], "--scenarios: unknown scenario 'burst'"),
        (["--path", "grpc"], "--path: unknown path 'grpc'"),
        (["--variants", "nope"], "unknown variant 'nope'"),
        (["--baseline", "tpu"], "--baseline tpu: 'tpu' is not one of --variants"),
        (["--target", "ftp://x"], "--target ftp://x: target must be http://HOST:PORT"),
        (["--target", "http://127.0.0.1:{port}"], "cannot reach 127.0.0.1"),
        (
            ["--target", "http://127.0.0.1:1", "--models", "x.py"],
            "'x.py' is a file; name the model",
        ),
        (["--target", "http://127.0.0.1:1", "--models", "a b"], "not a model name a URL can carry"),
        (["--input-shape", "224,224,3"], "--input-shape is for --target"),
        (["--target", "http://127.0.0.1:1", "--input-shape", "224,0"], "--input-shape: expected"),
        (["--max-batch-size", "1,0"], "--max-batch-size: expected a whole number"),
        (["--batch-timeout", "5"], "--batch-timeout: expected a duration with a unit"),
        (["--budget", "soon"], "--budget: expected a duration"),
        (["--max-repeats", "3"], "--max-repeats 3 is below --repeats 5"),
        # run.json's own bound (options/limits.py), said before anything is written
        (["--repeats", "10001"], "--repeats: expected a whole number from 1 to 10000, got 10001"),
        (["--dry-run", "--pricing", "none"], "--dry-run needs --pricing"),
        (["--estimate-from", "x"], "--estimate-from is for --dry-run"),
        (["--resume"], "--resume: r/run.json not found"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    if "x.py" in argv:
        (tmp_path / "x.py").write_text("def build_model(keras):\n    pass\n")
    argv = [a.replace("{port}", str(_closed_port())) for a in argv]
    assert main(["serve", "--threads", "1", *argv, "--out", "r"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tfvariants: error: ") and err.count("\n") == 1, err
    assert message in err
    assert not (tmp_path / "r").exists() and not (tmp_path / "reports").exists()


FAST = ["--threads", "1", "--repeats", "1", "--min-duration", "0.2s", "--max-duration", "3s",
        "--min-queries", "20", "--pricing", "gce-2017"]  # fmt: skip


@pytest.mark.serve
def test_noop_model_in_process_and_over_http(tmp_path):
    out, report = tmp_path / "res", tmp_path / "rep" / "index.html"
    code = main(["serve", "--models", "noop", "--scenarios", "concurrency", "--concurrency", "1,2",
                 "--path", "inprocess,http", *FAST, "--out", str(out), "--report", str(report),
                 "--csv", str(tmp_path / "rep" / "serving.csv")])  # fmt: skip
    assert code == 0
    cells = sorted((out / "cells").glob("*.json"))
    assert len(cells) == 4
    for path in cells:
        r = load_result(path)
        assert r["kind"] == "tfvariants.serve_cell" and r["status"] == "ok", r.get("reason")
        assert r["closed_loop"]["completed"] >= 20 and r["closed_loop"]["errors"] == 0
        assert r["placement"]["loadgen_cpus"]
        assert r["cpu"]["wall_s"] > 0  # what else ran on the cell's CPUs, as training records
        # a server's inter-op pool is one thread per vCPU (TF Serving's default)
        assert r["applied"]["env"]["TF_NUM_INTEROP_THREADS"] == str(r["cell"]["threads"])
        if r["cell"]["path"] == "http":
            # a 2-core host: server child and client are pinned to the same CPUs
            assert r["placement"]["shared"] is True
            assert r["http_overhead"]["p50_ms"] > 0
            assert (out / r["artifacts"] / "server.log").is_file()
    html = report.read_text()
    assert "noop: throughput vs requests in flight" in html and "<svg" in html
    assert "server and load generator share CPUs" in html
    assert "$ per million predictions" in html
    rows = list(csv.DictReader((report.parent / "serving.csv").open()))
    assert len(rows) == 4 and {r["path"] for r in rows} == {"inprocess", "http"}
    # resume with the same arguments runs nothing; with others it refuses
    assert main(["serve", "--models", "noop", "--scenarios", "concurrency", "--concurrency", "1,2",
                 "--path", "inprocess,http", *FAST, "--out", str(out), "--report", str(report),
                 "--resume"]) == 0  # fmt: skip
    assert (
        main(
            [
                "serve",
                "--models",
                "noop",
                "--scenarios",
                "concurrency",
                "--concurrency",
                "1,4",
                "--path",
                "inprocess,http",
                *FAST,
                "--out",
                str(out),
                "--resume",
            ]
        )
        == 2
    )


@pytest.mark.parametrize("mode, words", [("500", "HTTP 500: out of memory"),
                                          ("malformed", "malformed JSON reply")])  # fmt: skip
def test_broken_target_gives_failed_cells_with_reasons(mode, words, tmp_path):
    out = tmp_path / "res"
    (tmp_path / "rep").mkdir()
    (tmp_path / "rep" / "serving.csv").write_text("the user's own file")  # never clobbered
    with broken_server(mode, error="out of memory") as url:
        code = main(["serve", "--models", "noop", "--target", url, "--scenarios", "concurrency",
                     "--concurrency", "2", *FAST, "--out", str(out),
                     "--report", str(tmp_path / "rep" / "index.html")])  # fmt: skip
    assert code == 1  # failed cells, report still written
    (path,) = (out / "cells").glob("*.json")
    r = load_result(path)
    assert r["status"] == "failed" and words in r["reason"]
    assert r["cell"]["path"] == "target"
    assert words in (tmp_path / "rep" / "index.html").read_text()
    assert (tmp_path / "rep" / "serving.csv").read_text() == "the user's own file"


def test_missing_loadgen_stops_before_the_sweep(tmp_path, monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "mlperf_loadgen" else real(name, *a),
    )
    monkeypatch.chdir(tmp_path)
    assert main(["serve", "--threads", "1", "--scenarios", "offline", "--out", "r"]) == 2
    err = capsys.readouterr().err
    assert "need MLPerf LoadGen" in err and err.count("\n") == 1
    assert os.listdir(tmp_path) == []


def test_serve_result_kind_is_validated(tmp_path):
    from tfvariants.store.result import ResultError, host_result, validate_result

    cell = {
        "task": "serve",
        "variant": "local",
        "threads": 1,
        "model": "noop",
        "scenario": "offline",
        "path": "inprocess",
        "workload": "noop/offline/inprocess",
    }
    failed = host_result(cell, "failed", "boom")
    assert failed["kind"] == "tfvariants.serve_cell"
    assert validate_result(json.loads(json.dumps(failed)))["reason"] == "boom"
    with pytest.raises(ResultError, match="no metrics"):
        validate_result({**failed, "status": "ok"})
    with pytest.raises(ResultError, match="serving 'cell'"):
        validate_result({**failed, "cell": {"variant": "local"}})
    assert os.listdir(tmp_path) == []


@pytest.mark.serve
def test_loadgen_scenarios_with_the_noop_model_match_detail_logs(tmp_path):
    """LoadGen without TensorFlow: the report's numbers are the detail logs' numbers,
    and the Server QPS search keeps one log folder per step."""
    require_loadgen()
    from workloads.serving import mllog

    out, report = tmp_path / "res", tmp_path / "rep" / "index.html"
    code = main(["serve", "--models", "noop", "--scenarios", "single_stream,server_search",
                 "--path", "inprocess", "--search-steps", "2", "--server-qps", "50",
                 "--p99", "50ms", *FAST, "--out", str(out), "--report", str(report)])  # fmt: skip
    assert code == 0
    html = report.read_text()
    cid = "serve__noop__single_stream__inprocess__local__t1__r0"
    detail = out / "artifacts" / cid / "loadgen" / "mlperf_log_detail.txt"
    p90 = mllog.parse_detail_log(detail)["result_90.00_percentile_latency_ns"] / 1e6
    assert f'data-cell="{cid}" data-metric="p90_ms" data-value="{p90!r}"' in html
    search = load_result(
        out / "cells" / "serve__noop__server_search__inprocess__local__t1__r0.json"
    )
    steps = search["server_search"]["steps"]
    assert [s["target_qps"] for s in steps] == [50.0, 100.0]  # both met 50 ms: doubling
    assert search["metrics"]["max_qps_under_bound"] == 100.0
    for s in steps:
        logs = out / search["artifacts"] / "loadgen" / s["log_dir"]
        assert (
            mllog.parse_detail_log(logs / "mlperf_log_detail.txt")[
                "result_99.00_percentile_latency_ns"
            ]
            / 1e6
            == s["p99_ms"]
        )


def _processes_naming(text: str) -> list[int]:
    """Pids of live processes whose command line contains ``text`` (zombies excluded)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmd and state != "Z":
            pids.append(int(entry))
    return pids


def _wait_for(predicate, timeout_s: float) -> bool:
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


@pytest.mark.serve
@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM", "timeout"])
def test_no_process_of_the_cell_outlives_the_host(how, tmp_path):
    """The HTTP server child of a serving worker dies with the worker and the host: the
    host killed mid-cell (SIGKILL, SIGTERM) or the cell timed out, no process naming the
    run folder remains."""
    import signal
    import subprocess
    import sys

    out = tmp_path / "res"
    timeout = ["--timeout", "20"] if how == "timeout" else []
    argv = [
        sys.executable,
        "-m",
        "tfvariants",
        "serve",
        "--models",
        "noop",
        "--path",
        "http",
        "--scenarios",
        "concurrency",
        "--concurrency",
        "1",
        "--threads",
        "1",
        "--repeats",
        "1",
        "--min-duration",
        "120s",
        "--max-duration",
        "120s",
        # the no-op model answers ~5,500/s: the default cap of 100,000 queries ended the
        # cell in 18 s, before the 20 s timeout (the flake seen before)
        "--max-queries",
        "100000000",
        "--out",
        str(out),
        "--report",
        str(tmp_path / "rep" / "index.html"),
        *timeout,
    ]
    host = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            cwd=tmp_path)  # fmt: skip
    try:
        # the server child is up once its port file exists in the cell's scratch folder
        assert _wait_for(lambda: any(out.glob(".scratch/*/server.port.json")), 120), "no server"
        assert len(_processes_naming(str(out))) >= 3  # host, worker, server
        if how == "timeout":
            assert host.wait(60) == 1
            assert load_result(next((out / "cells").glob("*.json")))["status"] == "timeout"
        else:
            host.send_signal(getattr(signal, how))
            code = host.wait(30)
            assert code == (130 if how == "SIGTERM" else -signal.SIGKILL)
        assert _wait_for(lambda: not _processes_naming(str(out)), 15), _processes_naming(str(out))
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
        for pid in _processes_naming(str(out)):  # a failing test leaves nothing either
            os.kill(pid, signal.SIGKILL)


def test_requirements_variants_get_loadgen_when_a_scenario_needs_it():
    from tfvariants.commands.serve import LOADGEN_SPEC, with_loadgen
    from tfvariants.variants import get_variant
    from tfvariants.variants.envbuild import env_key

    tf218 = get_variant("tf-2.18")
    assert tf218.kind == "requirements" and LOADGEN_SPEC not in tf218.requirements
    local = get_variant("local")
    closed = with_loadgen(("concurrency",), {"tf-2.18": tf218, "local": local})
    assert closed["tf-2.18"] is tf218  # the closed loop needs no LoadGen
    got = with_loadgen(("single_stream", "concurrency"), {"tf-2.18": tf218, "local": local})
    assert got["tf-2.18"].requirements == (*tf218.requirements, LOADGEN_SPEC)
    assert env_key(got["tf-2.18"]) != env_key(tf218)  # its own cached environment
    assert got["local"] is local
    named = dataclasses.replace(tf218, requirements=(*tf218.requirements, "mlcommons_loadgen==6.0"))
    assert with_loadgen(("server",), {"x": named})["x"] is named


def test_target_input_shape_from_the_model_metadata(tmp_path):
    from test_serving_http import SHAPE, doubling_model

    from workloads.serving.http_server import ModelServer

    out = tmp_path / "res"
    with ModelServer(doubling_model()) as server:
        code = main(["serve", "--models", "double", "--target", server.url, "--scenarios",
                     "concurrency", "--concurrency", "2", *FAST, "--out", str(out),
                     "--report", str(tmp_path / "rep" / "index.html")])  # fmt: skip
    assert code == 0
    (path,) = (out / "cells").glob("*.json")
    r = load_result(path)
    assert r["status"] == "ok", r.get("reason")
    assert r["model"] == {"name": "double", "input_shape": list(SHAPE),
                          "input_shape_from": "server metadata"}  # fmt: skip
    assert r["encoding"]["form"] == "b64"  # an image shape: PNG bodies


def test_target_without_any_input_shape_is_one_line(tmp_path, capsys):
    with broken_server("500", error="x") as url:
        code = main(["serve", "--models", "mystery", "--target", url, *FAST,
                     "--out", str(tmp_path / "r")])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "name one with --input-shape H,W,C" in err
    assert not (tmp_path / "r").exists()
