import json
import re

import pytest

from tfvariants.store.result import (
    ResultError,
    host_result,
    load_result,
    write_json_atomic,
)


def ok_result():
    return {
        "schema_version": 1,
        "kind": "tfvariants.cell",
        "cell": {"variant": "local", "threads": 2, "workload": "mnist_mlp", "repeat": 0},
        "status": "ok",
        "timing": {"epoch_times_s": [2.0, 1.0]},
    }


def test_round_trip(tmp_path):
    write_json_atomic(tmp_path / "a.json", ok_result())
    assert load_result(tmp_path / "a.json")["status"] == "ok"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]  # no temp file left


def test_atomic_write_leaves_old_file_on_failure(tmp_path):
    target = tmp_path / "a.json"
    write_json_atomic(target, ok_result())
    with pytest.raises(ValueError):
        write_json_atomic(target, {"bad": float("nan")})
    assert load_result(target)["status"] == "ok"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


@pytest.mark.parametrize(
    "content, message",
    [
        ("{broken", "corrupt JSON at line 1"),
        ("[1, 2]", "not a tfvariants result"),
        (json.dumps({"kind": "pyperf"}), "not a tfvariants result"),
        (json.dumps({**ok_result(), "schema_version": 99}), "newer than this tfvariants"),
        (json.dumps({**ok_result(), "status": "great"}), "unknown status"),
        (json.dumps({**ok_result(), "timing": {}}), "field .timing.epoch_times_s. is missing"),
        (json.dumps({k: v for k, v in ok_result().items() if k != "cell"}), "'cell'"),
    ],
)
def test_bad_files_get_clear_errors(tmp_path, content, message):
    path = tmp_path / "r.json"
    path.write_text(content)
    with pytest.raises(ResultError, match=message) as info:
        load_result(path)
    assert str(path) in str(info.value)


def test_host_result_is_valid_and_loadable(tmp_path):
    res = host_result(ok_result()["cell"], "timeout", "too slow", stderr="a\n" * 100)
    write_json_atomic(tmp_path / "cells" / "x.json", res)
    (loaded,) = [load_result(p) for p in (tmp_path / "cells").glob("*.json")]
    assert loaded["status"] == "timeout"
    assert loaded["stderr_tail"].count("\n") == 39


@pytest.mark.parametrize(
    "timing, field",
    [
        ({"epoch_times_s": [1.0, None]}, "timing.epoch_times_s[1]"),
        (
            {"epoch_times_s": [1.0], "per_epoch": {"train_s": [1.0, -2.0]}},
            "timing.per_epoch.train_s[1]",
        ),
        ({"epoch_times_s": [1.0], "nested_s": [[1.0], ["x"]]}, "timing.nested_s[1][0]"),
        ({"epoch_times_s": [1.0], "samples_per_s": float("inf")}, "timing.samples_per_s"),
    ],
)
def test_every_number_in_timing_is_checked_nested_ones_too(tmp_path, timing, field):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({**ok_result(), "timing": timing}))
    with pytest.raises(ResultError, match=re.escape(f"field '{field}'")):
        load_result(path)


def test_text_and_nulls_where_no_figure_needs_a_number_are_fine(tmp_path):
    timing = {"epoch_times_s": [2.0, 1.0], "steady_epoch_s": None, "clock": "perf_counter",
              "detail": {"labels": ["a", None]}, "samples_per_s": 1e9}  # fmt: skip
    path = tmp_path / "r.json"
    path.write_text(json.dumps({**ok_result(), "timing": timing}))
    assert load_result(path)["timing"]["clock"] == "perf_counter"
