"""A catalog of a whole cloud (`prices import` of every region: 100k-300k instances)
costs time in proportion to its size: reading it, and looking instances up by name,
never a scan of the catalog per instance. Checked by the ratio of CPU time at 4x the
size (linear: ~4x, quadratic: ~16x), the best of a few tries, so a busy host does not
make it flake."""

from __future__ import annotations

import contextlib
import gc
import io
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_bad_input import GOOD_CATALOG, make_run

from tfvariants.analyze.cost.catalog import Catalog, parse_catalog
from tfvariants.cli import main
from tfvariants.commands import compare

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
