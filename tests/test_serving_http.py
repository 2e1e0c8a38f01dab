"""The serving HTTP server and client over real 127.0.0.1 sockets, with a trivial
numpy model (no TensorFlow), plus the closed loop, percentiles and the MLLOG parser."""

from __future__ import annotations

import base64
import json
import zlib

import numpy as np
import pytest
from brokenhttp import broken_server

from workloads.serving import closed_loop, http_client, mllog
from workloads.serving.http_server import ModelServer, parse_instances
from workloads.serving.models import Served
from workloads.serving.percentiles import percentile, summary
from workloads.serving.request import ServeRequest

SHAPE = (2, 2, 3)


def doubling_model(calls: list[int] | None = None) -> Served:
    def predict(batch):
        if calls is not None:
            calls.append(len(batch))
        return batch.reshape(len(batch), -1).sum(axis=1, keepdims=True) * 2

    def decode(blobs):  # our PNG writer's output: zlib rows with a filter byte each
        out = []
        for blob in blobs:
            idat = blob[blob.index(b"IDAT") + 4 : blob.index(b"IEND") - 8]
            rows = zlib.decompress(idat)
            stride = 1 + SHAPE[1] * SHAPE[2]
            px = b"".join(rows[r * stride + 1 : (r + 1) * stride] for r in range(SHAPE[0]))
            out.append(np.frombuffer(px, dtype=np.uint8).reshape(SHAPE).astype(np.float32))
        return np.stack(out)

    return Served("double", SHAPE, predict, decode, http_client.png_bytes, 0)


def test_predict_json_and_b64_over_loopback():
    x = np.arange(2 * 12, dtype=np.float32).reshape(2, *SHAPE)
    with ModelServer(doubling_model()) as server:
        assert server.url.startswith("http://127.0.0.1:")
        ep = http_client.Endpoint(server.url, "double")
        assert ep.check()["model_version_status"][0]["state"] == "AVAILABLE"
        session = http_client.Session(ep, 10)
        for encoding in ("json", "b64"):
            reply = session.predict(http_client.encode_body(x, encoding), 2)
            assert reply.count == 2 and reply.model_s is not None and reply.decode_s is not None
        # keep-alive: both requests went over one connection
        assert session.conn.sock is not None
        session.close()


def test_reply_values_are_the_models():
    x = np.ones((3, *SHAPE), dtype=np.float32)
    with ModelServer(doubling_model()) as server:
        conn = http_client.Endpoint(server.url, "double").connect(10)
        conn.request(
            "POST", "/v1/models/double/versions/1:predict", http_client.encode_body(x, "json")
        )
        doc = json.loads(conn.getresponse().read())
        assert doc == {"predictions": [[24.0], [24.0], [24.0]]}


@pytest.mark.parametrize(
    "path, body, code, words",
    [
        ("/v1/models/double:predict", b"{not json", 400, "JSON Parse error"),
        ("/v1/models/double:predict", b'{"instances": []}', 400, "instances"),
        ("/v1/models/double:predict", b'{"instances": [[1, 2]]}', 400, "shape"),
        ("/v1/models/double:predict", b'{"instances": [{"b64": "!!"}]}', 400, "b64"),
        ("/v1/models/other:predict", b'{"instances": [1]}', 404, "Servable not found"),
        ("/v2/whatever", b"{}", 404, "Malformed request"),
    ],
)
def test_bad_requests_get_tf_serving_errors(path, body, code, words):
    with ModelServer(doubling_model()) as server:
        conn = http_client.Endpoint(server.url, "double").connect(10)
        conn.request("POST", path, body)
        resp = conn.getresponse()
        assert resp.status == code
        assert words in json.loads(resp.read())["error"]


def test_server_side_batching_groups_concurrent_requests():
    calls: list[int] = []
    x = np.ones((1, *SHAPE), dtype=np.float32)
    body = http_client.encode_body(x, "json")
    with ModelServer(doubling_model(calls), max_batch_size=8, batch_timeout_ms=200) as server:
        ep = http_client.Endpoint(server.url, "double")
        res = closed_loop.run(
            lambda: (lambda s: (lambda i: s.predict(body, 1)))(http_client.Session(ep, 10)),
            concurrency=4, samples=1, min_duration_s=0.05, max_duration_s=5,
            min_requests=16, max_requests=16,
        )  # fmt: skip
    assert res["completed"] == 16 and res["errors"] == 0
    assert sum(calls) == 16 and max(calls) > 1  # some requests shared a model call


def test_closed_loop_is_bounded_and_reports_percentiles():
    res = closed_loop.run(
        lambda: (lambda i: None), concurrency=3, samples=4, min_duration_s=0.01,
        max_duration_s=5, min_requests=50, max_requests=50,
    )  # fmt: skip
    assert res["completed"] == 50 and res["concurrency"] == 3
    lat = res["latency"]
    assert lat["count"] == 50 and lat["p50_ms"] <= lat["p90_ms"] <= lat["p99_ms"] <= lat["max_ms"]


@pytest.mark.parametrize(
    "mode, words", [("500", "HTTP 500: boom"), ("malformed", "malformed JSON")]
)
def test_broken_server_gives_errors_with_reasons(mode, words):
    with broken_server(mode, malformed=b'{"predictions": [1, 2') as url:
        ep = http_client.Endpoint(url, "m")
        res = closed_loop.run(
            lambda: (lambda s: (lambda i: s.predict(b"{}", 1)))(http_client.Session(ep, 5)),
            concurrency=2, samples=1, min_duration_s=0.01, max_duration_s=5,
            min_requests=100, max_requests=100,
        )  # fmt: skip
    assert res["completed"] == 0 and res["errors"] >= closed_loop.FAIL_FAST_ERRORS
    assert res["errors"] < 100  # failed fast, not 100 times
    assert any(words in e for e in res["error_examples"])


def test_unreachable_target_is_one_line():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    with pytest.raises(http_client.ServingError, match="cannot reach 127.0.0.1"):
        http_client.Endpoint(f"http://127.0.0.1:{port}", "m").check(timeout_s=2)


def test_png_round_trip_header():
    img = np.arange(12, dtype=np.float32).reshape(SHAPE)
    blob = http_client.png_bytes(img)
    assert blob.startswith(b"\x89PNG") and b"IHDR" in blob
    assert (doubling_model().decode_png([blob])[0] == img).all()
    body = json.loads(http_client.encode_body(img[None], "b64"))
    assert base64.b64decode(body["instances"][0]["b64"]) == blob


def test_parse_instances_inputs_alias():
    batch = parse_instances(b'{"inputs": [[1, 2], [3, 4]]}', None)
    assert batch.shape == (2, 2) and batch.dtype == np.float32


def test_percentile_is_nearest_rank():
    xs = list(range(1, 101))
    assert percentile(xs, 50) == 50 and percentile(xs, 90) == 90 and percentile(xs, 99) == 99
    assert percentile([5.0], 99) == 5.0
    assert percentile([3, 1, 2], 100) == 3
    with pytest.raises(ValueError):
        percentile([], 50)
    assert summary([0.001, 0.002])["p50_ms"] == pytest.approx(1.0)


DETAIL = (
    ':::MLLOG {"key": "requested_scenario", "value": "Server", "time_ms": 1}\n'
    ':::MLLOG {"key": "result_validity", "value": "INVALID", "time_ms": 2}\n'
    ':::MLLOG {"key": "early_stopping_result", '
    '"value": " * Run unsuccessful.\n * Processed 54", "time_ms": 3}\n'
    ':::MLLOG {"key": "early_stopping_met", "value": false, "time_ms": 3}\n'
    ':::MLLOG {"key": "result_completed_samples_per_sec", "value": 50.6338, "time_ms": 4}\n'
    ':::MLLOG {"key": "result_99.00_percentile_latency_ns", "value": 3661812, "time_ms": 5}\n'
    ':::MLLOG {"key": "result_90.00_percentile_latency_ns", "value": 2372065, "time_ms": 5}\n'
    ':::MLLOG {"key": "truncated", "val'
)


def test_detail_log_parser_handles_multiline_and_truncation():
    records = mllog.parse_detail_text(DETAIL)
    assert records["early_stopping_result"].startswith(" * Run unsuccessful.\n")
    assert "truncated" not in records
    head = mllog.headline(records)
    assert head["scenario"] == "Server" and head["validity"] == "INVALID"
    assert head["early_stopping_met"] is False
    assert head["throughput_per_s"] == 50.6338
    assert head["p99_ms"] == pytest.approx(3.661812) and head["p90_ms"] == pytest.approx(2.372065)


@pytest.mark.parametrize(
    "change, words",
    [
        ({"scenario": "nope"}, "unknown scenario"),
        ({"concurrency": 0}, "concurrency"),
        ({"concurrency": 10**6}, "concurrency"),
        ({"path": "target"}, "target_url"),
        ({"min_duration_s": 5, "max_duration_s": 1}, "min_duration_s"),
        ({"bogus": 1}, "unknown field"),
    ],
)
def test_serve_request_rejects_bad_values(change, words):
    data = {"model": "noop", "scenario": "concurrency", **change}
    with pytest.raises((ValueError, TypeError), match=words):
        ServeRequest.from_json(json.dumps(data))


def test_model_metadata_gives_the_input_shape():
    from workloads.serving.http_server import metadata

    with ModelServer(doubling_model()) as server:
        ep = http_client.Endpoint(server.url, "double")
        assert ep.metadata_shape() == SHAPE
        assert http_client.Endpoint(server.url, "other").metadata_shape() is None  # 404
    # TensorFlow Serving's form: the batch axis first, sizes as strings
    doc = metadata(doubling_model())
    assert http_client.shape_from_metadata(doc) == SHAPE
    dims = doc["metadata"]["signature_def"]["signature_def"]["serving_default"]["inputs"]["input"]
    dims["tensor_shape"]["dim"][2]["size"] = "-1"  # not fully defined
    assert http_client.shape_from_metadata(doc) is None
    assert http_client.shape_from_metadata({"metadata": {}}) is None
