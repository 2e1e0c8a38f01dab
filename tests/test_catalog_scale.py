"""A catalog of a whole cloud (`prices import` of every region: 100k-300k instances)
costs time in proportion to its size: reading it, and looking instances up by name,
never a scan of the catalog per instance. Checked by the ratio of CPU time at 4x the
size (linear: ~4x, quadratic: ~16x), the best of a few tries, so a busy host does not
make it flake."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import tomllib
from test_bad_input import GOOD_CATALOG, make_run

from tfvariants.analyze.cost import catalog_cache
from tfvariants.analyze.cost.catalog import Catalog, load_catalog, parse_catalog
from tfvariants.cli import main
from tfvariants.commands import compare
from tfvariants.errors import UserError
from tfvariants.store import cachefiles

SMALL, LARGE = 2_500, 10_000  # 4x


def catalog_data(n: int) -> dict[str, Any]:
    return {
        "name": "big",
        "source": "test",
        "billing": {"rule": "per_second", "minimum_seconds": 60},
        "instance": [
            {
                "name": f"x{i}",
                "vcpus": 1 + i % 64,
                "prices": [{"as_of": "2017-07", "on_demand": 0.05 + i * 1e-7}],
            }
            for i in range(n)
        ],
    }


def cpu_s(work: Callable[[], object], tries: int = 3) -> float:
    # The collector off while timing: in a long test session a full collection walks
    # every earlier test's objects, a cost of the heap, not of the catalog.
    best = float("inf")
    for _ in range(tries):
        gc.collect()
        gc.disable()
        try:
            start = time.process_time()
            work()
            best = min(best, time.process_time() - start)
        finally:
            gc.enable()
    return best


def linear(small: float, large: float) -> bool:
    # 4x the size: well under the 16x a scan per instance would take
    return large < 8 * small + 0.05


def test_reading_a_catalog_is_linear_in_its_size():
    # larger: the duplicate-name scan it replaced only shows above ~10k instances
    small, large = catalog_data(2 * SMALL), catalog_data(2 * LARGE)
    assert linear(
        cpu_s(lambda: parse_catalog(small, "s"), 2), cpu_s(lambda: parse_catalog(large, "l"), 2)
    )


def test_looking_every_instance_up_by_name_is_linear():
    def all_lookups(cat: Catalog) -> Callable[[], object]:
        return lambda: [cat.instance(f"x{i}") for i in range(len(cat.instances))]

    small = parse_catalog(catalog_data(SMALL), "s")
    large = parse_catalog(catalog_data(LARGE), "l")
    assert linear(cpu_s(all_lookups(small)), cpu_s(all_lookups(large)))
    assert large.instance(f"x{LARGE - 1}").vcpus == 1 + (LARGE - 1) % 64


def test_an_unknown_instance_names_a_few_not_all():
    cat = parse_catalog(catalog_data(LARGE), "l")
    with pytest.raises(Exception, match=f"{LARGE:,} in all") as caught:
        cat.instance("nope")
    assert len(str(caught.value)) < 1000


def _toml(n: int) -> str:
    rows = [
        f'[[instance]]\nname = "x{i}"\nvcpus = {1 + i % 64}\n'
        'prices = [{ as_of = "2017-07", on_demand = 0.05 }]\n'
        for i in range(n)
    ]
    return GOOD_CATALOG + "".join(rows)


COMMANDS = {
    "prices": ["prices", "--catalog", "cat.toml"],
    "report-pricing": [
        *["report", "R", "-o", "out.html", "--pricing", "cat.toml", "--instance", "local=c1"]
    ],
    "dry-run": [
        *["compare", "--threads", "1", "--workloads", "mnist_mlp", "--dry-run"],
        *["--pricing", "cat.toml", "--instance", "local=c1"],
    ],
}


@pytest.mark.parametrize("command", COMMANDS, ids=list(COMMANDS))
def test_commands_on_a_big_catalog_take_time_in_proportion(command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(compare, "probe_variants", lambda *a, **k: None)
    make_run(tmp_path)
    times = []
    for n in (SMALL * 3 // 5, LARGE * 3 // 5):  # the commands do more than read it
        Path("cat.toml").write_text(_toml(n))

        def run() -> None:
            with (
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
            ):
                assert main(COMMANDS[command]) == 0

        times.append(cpu_s(run, tries=2))
    assert linear(*times), times


# ---- a big TOML catalog parsed once ----


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(cachefiles, "_said", set())
    return tmp_path / "cache" / "tfvariants" / "catalogs"


def _big_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A catalog "big" enough to be kept: the bar lowered, as tomllib's share of a read
    is the same at any size (a MiB of TOML would take seconds per test)."""
    path = tmp_path / "big.toml"
    path.write_text(_toml(3_000))
    monkeypatch.setattr(catalog_cache, "CACHED_FROM", path.stat().st_size)
    return path


def test_a_small_catalog_is_not_kept(cache):
    load_catalog("gce-2017")
    assert not cache.exists()


def test_a_big_toml_catalog_is_parsed_once_then_read_as_json(cache, tmp_path, monkeypatch):
    path = _big_toml(tmp_path, monkeypatch)

    def cold() -> None:
        shutil.rmtree(cache, ignore_errors=True)
        load_catalog(str(path))

    first, again = cpu_s(cold), cpu_s(lambda: load_catalog(str(path)))
    assert again < first / 2, (first, again)  # tomllib is most of a big catalog's read
    parsed: list[int] = []
    monkeypatch.setattr(tomllib, "loads", lambda text: parsed.append(1))
    assert load_catalog(str(path)) == load_catalog(str(path)) and not parsed
    path.write_text(path.read_text().replace("0.05", "0.06", 1))  # an edit: a new entry
    with pytest.raises(UserError):  # tomllib, patched, gives no tables
        load_catalog(str(path))
    assert parsed


@pytest.mark.parametrize(
    "forge",
    [
        lambda e: e.write_text("[]"),
        lambda e: e.write_text(json.dumps({"sha256": "0" * 64, "tables": {}})),
        lambda e: e.write_text(json.dumps({**json.loads(e.read_text()), "tables": []})),
        # shaped right, for this file, and not a valid catalog: validated as the file is
        lambda e: e.write_text(e.read_text().replace('"on_demand": 0.05', '"on_demand": -1', 1)),
    ],
    ids=["not-an-object", "another-file", "tables-a-list", "invalid-price"],
)
def test_a_forged_catalog_entry_is_warned_once_and_parsed_again(
    forge, cache, tmp_path, monkeypatch, capsys
):
    path = _big_toml(tmp_path, monkeypatch)
    true = load_catalog(str(path))
    (entry,) = cache.iterdir()
    forge(entry)
    capsys.readouterr()
    assert load_catalog(str(path)) == true
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(entry) in err[0] and "ignored" in err[0], err
    assert load_catalog(str(path)) == true and capsys.readouterr().err == "", "kept again"
