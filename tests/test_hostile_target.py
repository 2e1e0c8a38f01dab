"""``serve --target`` against a hostile server on loopback, as a table: every reply that
breaks HTTP or JSON, or never ends, is one line on stderr and exit 2 within the request
deadline, in the up-front check and in a measurement's request alike; the URL's
credentials are never printed, its path is used and its query refused."""

from __future__ import annotations

import json
import re
import threading
import time

import pytest
from hostilehttp import hostile_server

from tfvariants.cli import main
from tfvariants.execute import runner
from workloads.serving import http_client

DEADLINE_S = 1.0
SLACK_S = 4.0  # a loaded 2-CPU machine; a hang is still far past it
SERVE = ["serve", "--models", "noop", "--scenarios", "concurrency", "--concurrency", "1"]
SERVE += ["--repeats", "1", "--out", "R2"]

# (mode, a pattern of the words the one line names)
CASES = [
    ("garbage-status", "BadStatusLine"),
    ("status-line-endless", "LineTooLong"),
    ("many-headers", "more than 100 headers"),
    ("long-header", "LineTooLong"),
    ("short-body", "a short reply, 10 of 1000 bytes"),
    ("deep-json", "nested deeper than 64"),
    ("huge-declared", "a reply of 1000000000000 bytes"),
    # 4 MiB ends the check; 256 MiB or the deadline, whichever comes first, a request
    ("huge-endless", "a reply longer than|no complete reply within"),
    ("slow-loris", f"no complete reply within {DEADLINE_S:g} s"),
    ("trickled-body", f"no complete reply within {DEADLINE_S:g} s"),
    ("error-500", "HTTP 500"),
]


def within(seconds: float, call):  # noqa: ANN001, ANN201
    """call() in a thread: its result, or a test failure (not a hung suite) after seconds."""
    box: dict = {}

    def go() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001
            box["error"] = exc

    t0 = time.monotonic()
    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds:g} s"
    return box, time.monotonic() - t0


@pytest.mark.parametrize("mode, words", CASES, ids=[c[0] for c in CASES])
def test_the_up_front_check(mode, words, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(http_client, "CONNECT_TIMEOUT_S", DEADLINE_S)
    monkeypatch.setattr(runner, "run_cell", lambda *a, **k: pytest.fail("must not run a cell"))
    with hostile_server(mode) as (url, _):
        box, took = within(DEADLINE_S + SLACK_S, lambda: main([*SERVE, "--target", url]))
    err = capsys.readouterr().err
    assert "error" not in box, box.get("error")
    assert box["value"] == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert re.search(words, err) and len(err) < 600, err
    assert not (tmp_path / "R2").exists()


@pytest.mark.parametrize("mode, words", CASES, ids=[c[0] for c in CASES])
def test_a_measurement_request(mode, words):
    """The request a measurement makes (one keep-alive session): a ServingError of one
    line by the deadline, which fails the cell with its reason."""
    with hostile_server(mode) as (url, _):
        session = http_client.Session(http_client.Endpoint(url, "m"), DEADLINE_S)
        box, took = within(DEADLINE_S + SLACK_S, lambda: session.predict(b'{"instances":[0]}', 1))
        session.close()
    error = box.get("error")
    assert isinstance(error, http_client.ServingError), error
    assert re.search(words, str(error)) and "\n" not in str(error), error


@pytest.mark.parametrize(
    "url, words",
    [
        ("http://alice:s3cret@127.0.0.1:1", "credentials in the URL"),
        ("http://alice:s3cret@127.0.0.1:1/x?token=s3cret", "credentials in the URL"),
        ("http://127.0.0.1:1/?token=1", "a query"),
        ("http://127.0.0.1:1/v1/models/resnet", "--target-model"),
        ("http://alice:s3cret@[::1", "http://***@"),  # unparseable, still not shown
    ],
)
@pytest.mark.parametrize("dry", [False, True], ids=["run", "dry-run"])
def test_the_url_is_refused_in_one_line_without_its_password(
    url, words, dry, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    rc = main([*SERVE, "--target", url, *(["--dry-run"] if dry else [])])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert words in err and "s3cret" not in err, err


def test_a_path_prefix_is_used(tmp_path, monkeypatch):
    """Behind a reverse proxy: the URL's path goes before /v1, not dropped."""
    monkeypatch.setattr(http_client, "CONNECT_TIMEOUT_S", DEADLINE_S)
    with hostile_server("ok") as (url, paths):
        http_client.Endpoint(url + "/tfs/", "m").check()
    assert paths == ["/tfs/v1/models/m"]


# A request's deadline in a measurement is --max-duration + 30 s: the replies that never
# end take that long, so they run with the serving tests (CI), the rest here.
SLOW = {"slow-loris", "trickled-body"}
MEASURE = ["--threads", "1", "--repeats", "1", "--min-duration", "0.2s", "--max-duration", "1s"]
MEASURE += ["--min-queries", "5", "--pricing", "none"]


@pytest.mark.parametrize(
    "mode, words",
    [pytest.param(m, w, marks=[pytest.mark.serve] if m in SLOW else []) for m, w in CASES],
    ids=[c[0] for c in CASES],
)
def test_a_server_that_turns_hostile_during_the_measurement(mode, words, tmp_path, capsys):
    """The up-front check passes (its GETs are answered well); the measurement's
    predictions meet the hostile reply: the cell fails with it as a one-line reason and
    the command ends non-zero, by the request deadline, with no traceback."""
    out = tmp_path / "R"
    argv = [*SERVE[:-4], *MEASURE, "--out", str(out)]
    with hostile_server(mode, posts_only=True) as (url, paths):
        box, took = within(31 + 60, lambda: main([*argv, "--target", url]))
    err = capsys.readouterr().err
    assert "error" not in box, box.get("error")
    assert box["value"] == 1, err
    assert "Traceback" not in err
    assert any(p.startswith("/v1/models/") and ":predict" in p for p in paths), paths
    paths_ = sorted((out / "cells").glob("*.json"))
    assert len(paths_) == 1, paths_
    cell = json.loads(paths_[0].read_text())
    assert cell["status"] == "failed" and "\n" not in cell["reason"], cell
    deadline = words.replace(f"{DEADLINE_S:g} s", "31 s")  # --max-duration 1s + 30 s
    assert re.search(deadline, cell["reason"]), cell["reason"]
