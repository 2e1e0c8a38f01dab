"""Golden: stored run folders (training, serving, compiled preset, resumed, adaptive)
render to the same CSV and the same terminal lines (verdicts, answers, warnings) as
when they were recorded. A restructuring that keeps behaviour keeps these files; a
change of what the report says updates them on purpose:
``TFV_GOLDEN_UPDATE=1 pytest tests/test_golden.py`` and review the diff.

tests/golden/runs/ holds the run folders: `quick` and `serve` from real runs of
`compare --quick --workloads mnist_cnn --budget 4m` and `serve --models mobilenet_v2
--budget 3m` on a 2-core host; `compiled`, `resumed` and `multi` from fake-runner runs of
`compare --preset compiled`, an interrupted `compare` then `--resume`, and a two-variant
`compare` priced on gce-2026."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tfvariants.cli import main

GOLDEN = Path(__file__).resolve().parent / "golden"
RUNS = sorted(p.name for p in (GOLDEN / "runs").iterdir() if p.is_dir())


def _render(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    # Each run alone in its folder: the report reads no sibling runs.
    run = tmp_path / "results" / name
    shutil.copytree(GOLDEN / "runs" / name, run)
    html, csv = tmp_path / "out" / "index.html", tmp_path / "out" / "cells.csv"
    capsys.readouterr()
    assert main(["report", str(run), "-o", str(html), "--csv", str(csv)]) == 0
    captured = capsys.readouterr()
    text = (captured.out + "--- stderr\n" + captured.err).replace(str(tmp_path), "TMP")
    return {"terminal.txt": text, "cells.csv": csv.read_text(encoding="utf-8")}


def test_the_golden_runs_are_there() -> None:
    assert set(RUNS) == {"compiled", "multi", "quick", "resumed", "serve"}


@pytest.mark.parametrize("name", RUNS)
def test_a_stored_run_renders_as_recorded(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    got = _render(name, tmp_path, capsys)
    for file, text in got.items():
        expected = GOLDEN / "expected" / name / file
        if os.environ.get("TFV_GOLDEN_UPDATE") == "1":
            expected.parent.mkdir(parents=True, exist_ok=True)
            expected.write_text(text, encoding="utf-8")
        assert text == expected.read_text(encoding="utf-8"), f"{name}/{file} changed"
