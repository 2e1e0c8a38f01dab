"""A report loads its run folder once (issue 27): `report` builds its settings once
(analyze/shared/settings.py), analyze/report/build.py loads the folder once and reads
the run's decision settings once, and the training and serving analyses share both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import resultfactory as rf
from test_serving_analysis import _serving_run

from tfvariants.cli import main
from tfvariants.store import rundir


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every folder load (store/rundir.py load_run_dir makes one RunContents per load),
    however the loader was imported."""
    seen: list[Path] = []
    original = rundir.RunContents.__init__

    def counting(self: rundir.RunContents, results_dir: Path, *args: Any, **kw: Any) -> None:
        seen.append(Path(results_dir))
        original(self, results_dir, *args, **kw)

    monkeypatch.setattr(rundir.RunContents, "__init__", counting)
    return seen


def _report(folder: Path, out: Path, *more: str) -> int:
    return main(
        ["report", str(folder), "-o", str(out), "--csv", str(out.with_suffix(".csv")), *more]
    )


def test_a_training_report_loads_its_folder_once(tmp_path, loads, capsys):
    results, run = rf.study_like_results()
    folder = rf.write_results(tmp_path / "res", results, run)
    assert _report(folder, tmp_path / "r.html", "--confidence", "0.9") == 0
    assert loads == [folder]
    assert "report:" in capsys.readouterr().out


def test_a_serving_report_loads_its_folder_once(tmp_path, loads, capsys):
    folder = _serving_run(tmp_path / "res")
    assert _report(folder, tmp_path / "r.html", "--pricing", "gce-2017", "--verbose") == 0
    assert loads == [folder]
    assert "serving m:" in capsys.readouterr().out


def _mixed(folder: Path) -> Path:
    """Training and serving cells in one folder."""
    results, run = rf.study_like_results()
    return _serving_run(rf.write_results(folder, results, run))


def test_a_report_of_training_and_serving_cells_loads_its_folder_once(tmp_path, loads, capsys):
    folder = _mixed(tmp_path / "res")
    assert _report(folder, tmp_path / "r.html", "--min-effect", "10%", "--verbose") == 0
    assert loads == [folder]
    out = capsys.readouterr().out
    assert "serving m:" in out and "mnist_mlp:" in out


def test_both_analyses_decide_with_the_one_reading_of_the_settings(tmp_path):
    from tfvariants.analyze.report.build import build_report
    from tfvariants.analyze.serving.part import ServingPart
    from tfvariants.analyze.shared.settings import ReportSettings
    from tfvariants.analyze.training.part import TrainingPart
    from tfvariants.options.decision import Override

    report = build_report(
        _mixed(tmp_path / "res"), ReportSettings(decision=Override(confidence=0.9))
    )
    training, serving = report.part(TrainingPart), report.part(ServingPart)
    assert training is not None and serving is not None
    assert training.analysis.settings is serving.analysis.settings
    assert training.analysis.settings.confidence == 0.9
