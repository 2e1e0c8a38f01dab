"""Every number the tool reads back, poisoned: each numeric field of a cell, of run.json
and of each cache record (census, gate verdict, peak, environment) set to NaN, +-inf, -1
and 1e308.
Each either is refused with a message naming the field (a cell or a cache entry is then
left out with a named warning, run.json is one line), or changes nothing that a verdict
is made of. Never a traceback."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import resultfactory as rf
from test_peak import CPU, TOPO

from tfvariants.errors import UserError
from tfvariants.plan.pinning import plan_pinning
from tfvariants.store import cachefiles
from tfvariants.store.record import run_record
from tfvariants.store.result import ResultError, validate_result
from tfvariants.store.runfile import validate_run
from tfvariants.store.training import parse_training
from tfvariants.variants import census, envbuild
from tfvariants.variants.peak import run as peakrun
from tfvariants.variants.registry import Variant
from workloads import isacensus

BAD = (math.nan, math.inf, -math.inf, -1, 1e308)
Path_ = tuple[Any, ...]


def numeric_paths(data: Any, at: Path_ = ()) -> Iterator[Path_]:
    """The path (keys and list indexes) of every number in ``data``."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield from numeric_paths(value, (*at, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from numeric_paths(value, (*at, i))
    elif isinstance(data, (int, float)) and not isinstance(data, bool):
        yield at


def poisoned(data: Any, path: Path_, value: float) -> Any:
    out = copy.deepcopy(data)
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


def cases(data: Any) -> list[tuple[Path_, float]]:
    return [(path, bad) for path in numeric_paths(data) for bad in BAD]


def label(case: tuple[Path_, float]) -> str:
    return ".".join(map(str, case[0])) + f"={case[1]}"


# ---- a cell ----

CELL = rf.make_result("local", 1, "mnist_mlp", 0)
CELL["cpu"] = {"others_share": 0.3, "steal_share": 0.0, "utilisation": 0.95, "wall_s": 9.0}


def verdict_parts(result: dict[str, Any]) -> tuple[Any, ...]:
    """What a cell adds to a verdict: whether it counts, and its figures."""
    c = parse_training(result)
    return (
        c.status,
        c.disturbed,
        c.training_time_s,
        c.steady_epoch_s,
        c.steady_step_s,
        c.samples_per_s,
        c.oversubscribed,
        c.accuracy,
        c.cell,
    )


@pytest.mark.parametrize("case", cases(CELL), ids=label)
def test_a_poisoned_cell_number_is_named_or_changes_no_verdict(case):
    path, bad = case
    cell = poisoned(CELL, path, bad)
    try:
        validate_result(json.loads(json.dumps(cell)), "cells/x.json")
    except ResultError as exc:
        named = str(path[-2] if isinstance(path[-1], int) else path[-1])
        assert named in str(exc), exc
        return
    assert verdict_parts(cell) == verdict_parts(CELL), f"{label(case)} changed a verdict"


def test_a_disturbed_cell_stays_disturbed():
    assert verdict_parts(CELL)[1] is True  # the property above would not see a flip


# ---- run.json ----

RUN = {
    "schema_version": 3,
    "kind": "tfvariants.run",
    "tfvariants_version": "0.1.0",
    "variants": ["local"],
    "threads": [1, 2],
    "fixed_threads": {"local": 1},
    "workloads": ["mnist_mlp"],
    "repeats": 3,
    "options": {
        "epochs": 2,
        "samples": 6000,
        "seed": 0,
        "min_steady_s": 10.0,
        "min_steady_steps": 100,
        "confidence": 0.95,
        "min_effect": 0.05,
        "equivalence_band": 0.05,
        "disturbed_share": 0.1,
        "shielded_share": 0.25,
        "budget_s": 600.0,
        "max_repeats": 20,
        "quiet_share": 0.05,
        "quiet_wait_s": 30.0,
        "disturbed_retries": 1,
        "order_seed": 7,
        "timeout_s": 1800.0,
    },
    "variant_info": {"local": {"kind": "local", "device": "cpu"}},
    "hosts": [{"host_id": "h", "kind": "local"}],
    "logical_cpus": 2,
}


@pytest.mark.parametrize("case", cases(RUN), ids=label)
def test_a_poisoned_run_json_number_is_refused_naming_it(case):
    path, bad = case
    run = poisoned(RUN, path, bad)
    try:
        validate_run(json.loads(json.dumps(run)), "run.json")
    except UserError as exc:
        assert str(path[-2] if isinstance(path[-1], int) else path[-1]) in str(exc), exc
        assert "\n" not in str(exc)
        return
    # accepted: then it changed nothing the report judges with
    assert run_record(run).options == run_record(RUN).options, label(case)


# ---- cache records ----

CENSUS = {
    "dispatched": {"SSE4": 10, "AVX": 20, "AVX2": 30, "FMA": 5, "AVX512": 40},
    "rest": {"SSE4": 2_287, "AVX": 147_420, "AVX2": 21_543, "FMA": 226, "AVX512": 14_405},
    "raw": {"ymm": 100, "zmm": 50, "vfmadd": 20},
    "raw_rest": {"ymm": 80, "zmm": 40, "vfmadd": 10},
    "file": census.FRAMEWORK,
    "bytes": 45_000_000,
}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(cachefiles, "_said", set())
    return tmp_path / "entry.json"


def read_back(path: Path, record: Any, check: cachefiles.Check, capsys: Any) -> Any:
    """The entry as the cache reads it; None must come with one named warning."""
    path.write_text(json.dumps(record))
    capsys.readouterr()
    got = cachefiles.read_entry(path, check)
    err = capsys.readouterr().err
    if got is None:
        assert err.startswith("tfvariants: warning: cache entry ") and "ignored" in err, err
        assert len(err.strip().splitlines()) == 1, err
    else:
        assert err == "", err
    return got


@pytest.mark.parametrize("case", cases(CENSUS), ids=label)
def test_a_poisoned_census_number_is_ignored_or_changes_nothing(case, cache, capsys):
    path, bad = case
    got = read_back(cache, poisoned(CENSUS, path, bad), census.census_problem, capsys)
    if got is not None:
        assert isacensus.compiled_for(got) == isacensus.compiled_for(CENSUS), label(case)
        assert isacensus.required(got) == isacensus.required(CENSUS), label(case)


PEAK = {
    "measured": True,
    "gflops_per_s": 121.6,
    "best_kernel": "matmul_2048",
    "kernels": {
        "matmul_1024": {"flops": 2.1e9, "best_s": 0.02, "reps": 12, "gflops_per_s": 104.9},
        "matmul_2048": {"flops": 1.7e10, "best_s": 0.14, "reps": 6, "gflops_per_s": 121.6},
    },
    "onednn_isa": "Intel AVX2",
    "wall_s": 6.9,
    "others_share": 0.003,
    "memory": {"bytes": 9.0e8, "best_s": 0.056, "reps": 12, "gb_per_s": 16.2},
    "intra_op": 1,
    "inter_op": 1,
    "affinity": [0],
    "probes": 1,
    "priority": {"requested": "raised", "autogroup_nice": -20, "nice": -20, "value": -20},
}


def peak_effect(record: dict[str, Any]) -> dict[str, Any]:
    """What a report shows of a cached peak."""
    plan = plan_pinning(1, TOPO)
    out = peakrun.record(record, Variant("local", "local"), plan, TOPO, CPU)
    return {k: v for k, v in out.items() if k != "priority"}


@pytest.mark.parametrize("case", cases(PEAK), ids=label)
def test_a_poisoned_peak_number_is_ignored_or_changes_nothing(case, cache, capsys, monkeypatch):
    monkeypatch.setattr(peakrun, "known_compiled_for", lambda v: None)
    path, bad = case
    check = peakrun.peak_check("cpu", 1)
    got = read_back(cache, poisoned(PEAK, path, bad), check, capsys)
    if got is not None:
        assert peak_effect(got) == peak_effect(PEAK), label(case)
        priority = got.get("priority") or {}
        for key in ("nice", "autogroup_nice", "value"):  # shown as the cell's priority
            assert priority.get(key) in (None, *range(-20, 20)), label(case)


ENV_INFO = {"key": "k", "lock": {"six": "1.17.0"}, "build_s": 3.2, "built_at": "2026-01-01"}


@pytest.mark.parametrize("case", cases(ENV_INFO), ids=label)
def test_a_poisoned_environment_number_is_ignored(case, cache, capsys):
    path, bad = case
    check = lambda info: envbuild._info_problem(info, "k")  # noqa: E731
    assert read_back(cache, poisoned(ENV_INFO, path, bad), check, capsys) is None


# The gate's verdict has no number of its own: a number in either of its fields (a
# forged entry) is no verdict of the gate, so it never skips a variant.
VERDICT = {"framework_sha256": "a" * 64, "reason": None}


@pytest.mark.parametrize("field,bad", [(f, b) for f in VERDICT for b in BAD], ids=lambda v: str(v))
def test_a_number_in_a_gate_verdict_is_ignored(field, bad, cache, capsys):
    check = lambda v: census.verdict_problem(v, "a" * 64)  # noqa: E731
    assert read_back(cache, VERDICT, check, capsys) == VERDICT  # the true one is taken
    assert read_back(cache, {**VERDICT, field: bad}, check, capsys) is None
