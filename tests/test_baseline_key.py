"""The report's frame keeps its baseline as a configuration key (a serving run's too:
plan/serve.py ServeKey), put in words only where render shows it."""

import shutil
from pathlib import Path

from tfvariants.analyze.report.build import build_report
from tfvariants.plan.serve import ServeKey
from tfvariants.render.labels import config_words
from tfvariants.store.training import ConfigKey

GOLDEN = Path(__file__).parent / "golden" / "runs"


def _frame_baseline(name: str, tmp_path: Path) -> object:
    run = tmp_path / name  # alone in its folder: the report reads no sibling runs
    shutil.copytree(GOLDEN / name, run)
    return build_report(run).frame.baseline


def test_a_serving_runs_baseline_is_its_key(tmp_path):
    key = _frame_baseline("serve", tmp_path)
    assert isinstance(key, ServeKey)
    assert config_words(key).startswith(f"{key.variant}@{key.threads} {key.path}")


def test_a_training_runs_baseline_is_its_key_and_none_is_said():
    key = ConfigKey("", "local", 2)
    assert config_words(key) == "local@2"
    assert config_words(ServeKey("gpu", 4, "m", "http", 8, 2.0)) == "gpu@4 http batch 8/2 ms"
    assert config_words(None) == "n/a"
