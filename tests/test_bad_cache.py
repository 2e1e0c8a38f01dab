"""Hostile caches (``$XDG_CACHE_HOME/tfvariants``): every entry of the census, gate, peak
and environment caches is an input like any other. A FIFO, a device, a folder, a file
too large, wrong types or impossible numbers in its place are ignored with one named
warning and found again; a cache folder that cannot be used means no cache, said once.
Never a hang, a traceback or a poisoned number."""

from __future__ import annotations

import json
import math
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_isacensus import AVX2_HOST, _fake_python
from test_peak import CPU, TOPO

from tfvariants.errors import UserError
from tfvariants.store import cachefiles
from tfvariants.variants import census, envbuild
from tfvariants.variants.peak import run as peakrun
from tfvariants.variants.registry import Variant


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh cache folder, warnings said afresh, and a test that would hang (a FIFO
    read on main) fails after 20 s instead."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv(census.GATE_VAR, "on")
    monkeypatch.setattr(cachefiles, "_said", set())

    def hung(signum: int, frame: object) -> None:
        raise TimeoutError("hung on a cache entry")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    yield tmp_path / "cache"
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


# ---- what can stand in a cache entry's place ----


def fifo(path: Path) -> None:
    os.mkfifo(path)


def dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def folder(path: Path) -> None:
    path.mkdir()


def huge(path: Path) -> None:
    with open(path, "wb") as f:
        f.truncate(cachefiles.ENTRY_BYTES + 1)


def nested(path: Path) -> None:
    path.write_text("[" * 100_000 + "]" * 100_000)


def text(content: str) -> Callable[[Path], None]:
    return lambda path: path.write_text(content)


def record(data: object) -> Callable[[Path], None]:
    return lambda path: path.write_text(json.dumps(data))


PLACES = {
    "fifo": (fifo, "FIFO"),
    "dev-zero": (dev_zero, "a device"),
    "folder": (folder, "a folder"),
    "huge": (huge, "larger than"),
    "nested": (nested, "nested too deeply"),
    "binary": (lambda path: path.write_bytes(b"\xff\xfe{"), "not UTF-8"),
    "not-json": (text("{"), "not JSON"),
    "a-list": (record([1, 2]), "not a JSON object"),
}


def _put(path: Path, make: Callable[[Path], None]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    make(path)


def _one_warning(err: str, fragment: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("tfvariants: warning: cache entry "), err
    assert fragment in lines[0], err


# ---- the census ----


AVX512 = {"SSE4": 2_287, "AVX": 147_420, "AVX2": 21_543, "FMA": 226, "AVX512": 14_405}


def _framework(tmp_path: Path) -> Path:
    lib = tmp_path / "lib" / census.FRAMEWORK
    lib.parent.mkdir()
    lib.write_bytes(b"\x7fELF " + os.urandom(16))
    return lib


@pytest.mark.parametrize("place", PLACES, ids=list(PLACES))
def test_a_census_entry_that_is_not_one_is_ignored(place, tmp_path, capsys):
    lib = _framework(tmp_path)
    make, fragment = PLACES[place]
    entry = census._census_path(census.file_hash(lib))
    assert entry is not None
    _put(entry, make)
    assert census.cached_census(lib) is None
    _one_warning(capsys.readouterr().err, fragment)


CENSUS_POISON = [
    ("rest", "AVX512", float("nan")),
    ("rest", "AVX512", -1),
    ("rest", "AVX512", 1e308),
    ("rest", "AVX512", "many"),
    ("rest", "AVX512", True),
    ("dispatched", "AVX", float("inf")),
    ("raw", "zmm", -5),
]


@pytest.mark.parametrize("part,isa,value", CENSUS_POISON)
def test_a_census_with_an_impossible_count_is_not_sse2(part, isa, value, tmp_path, capsys):
    # A NaN count compares false with everything: read as "needs nothing", SSE2.
    lib = _framework(tmp_path)
    data: dict[str, Any] = {"rest": dict(AVX512), "dispatched": {}, "raw": {}, "raw_rest": {}}
    data[part] = {**data[part], isa: value}
    entry = census._census_path(census.file_hash(lib))
    assert entry is not None
    entry.parent.mkdir(parents=True, exist_ok=True)
    entry.write_text(json.dumps(data))
    assert census.cached_census(lib) is None
    _one_warning(capsys.readouterr().err, f"{part}.{isa}")


# ---- the gate's verdicts ----


def _verdict_path(variant: Variant) -> Path:
    tf_dir = census.tensorflow_dir(variant)
    assert tf_dir is not None
    digest = census.file_hash(tf_dir / census.FRAMEWORK)
    calls: list[str] = []
    census.gate(variant, flags=AVX2_HOST, probe=lambda py: (calls.append(py), (0, ""))[1])
    assert calls, "the first gate probes"
    found = [p for p in census.cache_dir().glob("gate-*") if digest[:32] in p.name]  # type: ignore[union-attr]
    assert len(found) == 1
    return found[0]


@pytest.mark.parametrize(
    "stored",
    [
        {"reason": "poisoned: skip it"},
        {"reason": 42},
        {"reason": ["its TensorFlow is compiled for AVX512, which this CPU lacks (x)"]},
        {"framework_sha256": "0" * 64},
        # In the gate's own words, for this very binary: only what made it can confirm it.
        {"reason": "its TensorFlow is compiled for AVX512F, which this CPU lacks (forged)"},
        {"reason": "importing its TensorFlow dies of SIGILL: forged"},
    ],
    ids=["words", "number", "list", "other-binary", "forged-isa", "forged-sigill"],
)
def test_a_poisoned_gate_verdict_does_not_skip_a_variant(stored, tmp_path, capsys):
    variant = Variant(
        name="local2", kind="venv", python=str(_fake_python(tmp_path, import_dies=None))
    )
    path = _verdict_path(variant)
    real = json.loads(path.read_text())
    assert real["reason"] is None
    path.write_text(json.dumps({**real, **stored}))
    capsys.readouterr()
    probes: list[str] = []
    assert (
        census.gate(variant, flags=AVX2_HOST, probe=lambda py: (probes.append(py), (0, ""))[1])
        is None
    )
    assert probes, "probed again"
    _one_warning(capsys.readouterr().err, "ignored")
    assert json.loads(path.read_text())["reason"] is None, "the true verdict stored again"


def test_a_true_cached_skip_is_kept_and_confirmed_by_the_import(tmp_path, capsys):
    python = _fake_python(tmp_path, import_dies="sigill")
    variant = Variant(name="v", kind="venv", python=str(python))
    first = census.gate(variant, flags=AVX2_HOST)
    assert first and "SIGILL" in first
    capsys.readouterr()
    assert census.gate(variant, flags=AVX2_HOST) == first
    assert capsys.readouterr().err == "", "a confirmed skip is not warned about"


@pytest.mark.parametrize("place", ["fifo", "dev-zero", "folder", "nested"])
def test_a_gate_verdict_that_is_not_a_file_is_probed_again(place, tmp_path, capsys):
    variant = Variant(name="v", kind="venv", python=str(_fake_python(tmp_path, import_dies=None)))
    path = _verdict_path(variant)
    path.unlink()
    make, fragment = PLACES[place]
    make(path)
    capsys.readouterr()
    assert census.gate(variant, flags=AVX2_HOST, probe=lambda py: (0, "")) is None
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("tfvariants: warning: cache entry ") and fragment in err[0], err
    if place == "folder":  # and the new verdict cannot be stored there: said, no traceback
        assert "not stored" in err[1] and len(err) == 2, err


# ---- the peaks ----


def _probe(calls: list[int], gflops: float = 50.0) -> Callable[..., dict[str, Any]]:
    def probe(variant: Variant, plan: Any) -> dict[str, Any]:
        calls.append(plan.threads)
        return {
            "measured": True,
            "gflops_per_s": gflops,
            "best_kernel": "matmul_1024",
            "kernels": {"matmul_1024": {"gflops_per_s": gflops}},
            "memory": {"gb_per_s": 12.0},
            "wall_s": 3.0,
            "others_share": 0.01,
            "priority": {"nice": -20, "requested": "raised"},
        }

    return probe


def _peak_entry(monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, Any]]:
    monkeypatch.setattr(peakrun, "known_compiled_for", lambda v: None)
    monkeypatch.setattr("tfvariants.variants.skip_reason", lambda v: None)
    calls: list[int] = []
    local = Variant("local", "local")
    peakrun.measure(local, 1, topology=TOPO, cpu=CPU, probe=_probe(calls), binary="sha256:x")
    assert calls == [1]
    (path,) = census.cache_dir().glob("peak-*")  # type: ignore[union-attr]
    return path, json.loads(path.read_text())


PEAK_POISON = [
    ("gflops_per_s", 1e6),  # "no build can make it more than 121,000x faster"
    ("gflops_per_s", float("nan")),
    ("gflops_per_s", float("inf")),
    ("gflops_per_s", -1),
    ("gflops_per_s", 0),
    ("gflops_per_s", "fast"),
    ("measured", "yes"),
    ("others_share", float("nan")),
    ("others_share", -1),
    ("others_share", 1e308),
    ("probes", 1e308),
    ("probes", -3),
    ("wall_s", float("-inf")),
    ("kernels", {"matmul_1024": {"gflops_per_s": 1e308}}),
    ("kernels", [1]),
    ("memory", {"gb_per_s": 1e12}),
    ("memory", {"gb_per_s": float("nan")}),
    ("best_kernel", 7),
    ("priority", 5),
]


@pytest.mark.parametrize("field,value", PEAK_POISON, ids=[f"{f}={v}" for f, v in PEAK_POISON])
def test_a_poisoned_peak_is_measured_again(field, value, tmp_path, monkeypatch, capsys):
    path, real = _peak_entry(monkeypatch)
    path.write_text(json.dumps({**real, field: value}))
    capsys.readouterr()
    calls: list[int] = []
    got = peakrun.measure(
        Variant("local", "local"), 1, topology=TOPO, cpu=CPU, probe=_probe(calls), binary="sha256:x"
    )
    assert calls == [1] and got["cached"] is False
    assert got["attainable_gflops_per_s"] == 50.0
    _one_warning(capsys.readouterr().err, "ignored")
    assert json.loads(path.read_text())["gflops_per_s"] == 50.0  # rebuilt


# ---- environments ----


def _env_variant() -> Variant:
    return Variant(name="tiny", kind="requirements", requirements=("six==1.17.0",))


@pytest.mark.parametrize(
    "info",
    [
        {"lock": "six"},
        {"lock": {"six": 1.17}},
        {"build_s": float("nan")},
        {"build_s": -1},
        {"key": "someone else's"},
    ],
    ids=["lock-text", "lock-number", "build-nan", "build-negative", "other-key"],
)
def test_a_poisoned_environment_info_is_not_built(info, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(envbuild, "python_tag", lambda python: "CPython 3 11 7 x86_64")
    variant = _env_variant()
    folder = envbuild.env_dir(variant)
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").write_text("")
    good = {"key": envbuild.env_key(variant), "lock": {"six": "1.17.0"}, "build_s": 3.0}
    (folder / envbuild.INFO_FILE).write_text(json.dumps(good))
    assert envbuild.built_info(variant) is not None
    (folder / envbuild.INFO_FILE).write_text(json.dumps({**good, **info}))
    assert envbuild.built_info(variant) is None
    _one_warning(capsys.readouterr().err, "ignored")


def test_a_failed_environment_build_leaves_nothing_behind(tmp_path, monkeypatch):
    monkeypatch.setattr(envbuild, "python_tag", lambda python: "CPython 3 11 7 x86_64")
    monkeypatch.setattr(envbuild, "find_uv", lambda: None)
    variant = _env_variant()

    def half_made(command: list[str], log: Any, env: Any) -> None:
        if "venv" in command:
            (Path(command[-1]) / "bin").mkdir(parents=True)
            return
        raise UserError("`pip install` failed (exit 1): no such package")

    monkeypatch.setattr(envbuild, "_stream", half_made)
    with pytest.raises(UserError, match="building its environment: `pip install` failed"):
        envbuild.build(variant, lambda line: None)
    root = envbuild.cache_root()
    assert sorted(p.name for p in root.iterdir()) == [], "a half-made environment or a lock"


# ---- a cache folder that cannot be used ----


def _loop(tmp_path: Path) -> str:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    return str(tmp_path / "a")


def _a_file(tmp_path: Path) -> str:
    (tmp_path / "f").write_text("x")
    return str(tmp_path / "f")


LOCATIONS: dict[str, Callable[[Path], dict[str, str | None]]] = {
    "xdg-a-file": lambda t: {"XDG_CACHE_HOME": _a_file(t)},
    "xdg-proc": lambda t: {"XDG_CACHE_HOME": "/proc"},
    "xdg-link-loop": lambda t: {"XDG_CACHE_HOME": _loop(t)},
    "home-a-file": lambda t: {"XDG_CACHE_HOME": None, "HOME": _a_file(t)},
}


@pytest.mark.parametrize("where", LOCATIONS, ids=list(LOCATIONS))
def test_an_unusable_cache_folder_is_no_cache_said_once(where, tmp_path, monkeypatch, capsys):
    for name, value in LOCATIONS[where](tmp_path).items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    lib = _framework(tmp_path)
    assert census.cached_census(lib) is None
    assert census.cached_census(lib) is None
    calls: list[int] = []
    monkeypatch.setattr(peakrun, "known_compiled_for", lambda v: None)
    monkeypatch.setattr("tfvariants.variants.skip_reason", lambda v: None)
    for _ in range(2):
        got = peakrun.measure(
            Variant("local", "local"), 1, topology=TOPO, cpu=CPU, probe=_probe(calls), binary="b"
        )
        assert got["attainable_gflops_per_s"] == 50.0
    assert calls == [1, 1]  # measured each time: no cache
    variant = Variant(name="v", kind="venv", python=str(_fake_python(tmp_path, import_dies=None)))
    assert census.gate(variant, flags=AVX2_HOST, probe=lambda py: (0, "")) is None
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot be used" in err[0] and "without this cache" in err[0], err
    with pytest.raises(UserError, match="cannot be used.*TFVARIANTS_ENVS"):
        envbuild.build(_env_variant(), lambda line: None)


def test_every_cache_check_refuses_non_finite_numbers():
    # The shared check the cache records go through.
    for bad in (float("nan"), float("inf"), -math.inf, True, "1", None):
        assert not cachefiles.number(bad, 0, 10)
    assert cachefiles.number(3, 0, 10, whole=True) and not cachefiles.number(3.5, 0, 10, whole=True)
