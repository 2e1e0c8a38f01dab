"""The six built-in workloads and the documented example follow the module interface."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from workloads import registry

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "docs" / "examples" / "my_workload.py"
BUILTIN = ["mnist_mlp", "mnist_cnn", "cifar10_cnn", "imdb_fasttext", "imdb_bilstm",
           "text_generation"]  # fmt: skip

# The 2017 study's settings (issue 3): batch size, epochs, full training-set size.
STUDY = {
    "mnist_mlp": (128, 20, 60000),
    "mnist_cnn": (128, 12, 60000),
    "cifar10_cnn": (32, 20, 50000),
    "imdb_fasttext": (32, 5, 25000),
    "imdb_bilstm": (32, 4, 25000),
    "text_generation": (128, 10, 200285),
}


def test_all_six_are_registered():
    assert sorted(registry.available()) == sorted(BUILTIN)


@pytest.mark.parametrize("name", BUILTIN)
def test_spec_has_the_study_schedule_and_quick_scale(name):
    module = registry.load(name)
    spec = module.SPEC
    assert spec["name"] == name
    assert (spec["batch_size"], spec["epochs"], spec["train_samples"]) == STUDY[name]
    assert 0 < spec["chance_accuracy"] < 1
    assert spec["quick_epochs"] == 2
    assert spec["batch_size"] <= spec["quick_samples"] < spec["train_samples"]
    assert spec["quick_samples"] % spec["batch_size"] == 0  # no ragged last batch


@pytest.mark.parametrize("name", BUILTIN)
def test_flops_per_step_is_linear_in_batch(name):
    module = importlib.import_module(f"workloads.{name}")
    assert module.flops_per_step(64) == pytest.approx(2 * module.flops_per_step(32))
    assert module.flops_per_step(1) > 0


EXPECTED_SHAPES = {
    "mnist_mlp": ((784,), np.float32),
    "mnist_cnn": ((28, 28, 1), np.float32),
    "cifar10_cnn": ((32, 32, 3), np.float32),
    "imdb_fasttext": ((400,), np.int32),
    "imdb_bilstm": ((100,), np.int32),
    "text_generation": ((40, 57), np.bool_),
}


@pytest.mark.parametrize("name", BUILTIN)
def test_synthetic_data_shapes(name):
    module = importlib.import_module(f"workloads.{name}")
    d = module.load_data("synthetic", data_dir=None, samples=96, seed=0)
    shape, dtype = EXPECTED_SHAPES[name]
    assert d["x"].shape == (96, *shape) and d["x"].dtype == dtype
    assert d["y"].shape == (96,) and d["y"].dtype == np.int32
    if "x_val" in d:
        assert d["x_val"].shape[1:] == shape and len(d["x_val"]) == len(d["y_val"]) >= 1


def test_imdb_ids_fit_the_embeddings():
    from workloads import imdb_bilstm, imdb_fasttext

    d = imdb_bilstm.load_data("synthetic", data_dir=None, samples=64, seed=0)
    assert 0 <= d["x"].min() and d["x"].max() < imdb_bilstm.MAX_FEATURES
    f = imdb_fasttext.load_data("synthetic", data_dir=None, samples=64, seed=0)
    assert f["x"].max() < imdb_fasttext.MAX_FEATURES and f["x"].max() > 20000


def test_importing_workloads_does_not_import_tensorflow():
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from workloads import registry\n"
        f"for n in {BUILTIN!r}: registry.load(n)\n"
        f"registry.load({str(EXAMPLE)!r})\n"
        "assert 'tensorflow' not in sys.modules and 'keras' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_documented_example_is_a_valid_workload():
    module = registry.load(str(EXAMPLE))
    assert module.SPEC["name"] == "my_workload"
    d = module.load_data("synthetic", data_dir=None, samples=500, seed=0)
    assert d["x"].shape == (500, 64) and len(d["x_val"]) == 100
    assert module.flops_per_step(64) > 0


def test_documented_example_is_in_the_docs():
    text = (ROOT / "docs" / "workloads.md").read_text()
    assert "docs/examples/my_workload.py" in text
    assert "def build_model" in EXAMPLE.read_text()
