"""What a reader of the report and of `tfvariants report`'s summary sees: every sentence
can be tied to its workload, numbers keep three significant digits, and intervals say
what they are."""

from __future__ import annotations

import re

import pytest
import resultfactory as rf

from tfvariants.analyze.pricing import Pricing, load_catalog
from tfvariants.cli import main
from tfvariants.render.html import write_report


@pytest.fixture(scope="module")
def gce():
    return Pricing(load_catalog("gce-2017"))


@pytest.fixture
def study(tmp_path):
    results, run = rf.study_like_results(repeats=5)
    return rf.write_results(tmp_path / "res", results, run)


def _summary(html: str) -> str:
    return html[html.index("<h2>Summary</h2>") : html.index("<h2>This machine")]


def test_summary_names_the_workload_of_every_sentence(study, tmp_path, gce):
    out = tmp_path / "r.html"
    a = write_report(study, out, pricing=gce)
    summary = _summary(out.read_text())
    # "GPU vs the fastest CPU configuration" is said once per workload, under its name
    heads = [m.start() for m in re.finditer(r'<h3 class="summary-workload">', summary)]
    assert len(heads) == len(a.workloads) == 2
    for w, start, end in zip(a.workloads, heads, [*heads[1:], len(summary)], strict=True):
        block = summary[start:end]
        assert f">{w.name}</h3>" in block
        assert block.count("<li>") == len(w.conclusions)


def test_cli_summary_heads_each_workload(study, tmp_path, capsys):
    assert main(["report", str(study), "-o", str(tmp_path / "r.html")]) == 0
    out = capsys.readouterr().out.splitlines()
    heads = [i for i, line in enumerate(out) if line in ("mnist_mlp:", "mnist_cnn:")]
    assert len(heads) == 2
    # the GPU sentences come right under their workload's name
    assert all(out[i + 1].startswith("  GPU vs the fastest CPU") for i in heads[:1])
