"""The workloads with real TensorFlow (marked `tf`; each test is kept short)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from workloads import data, flops

pytestmark = [pytest.mark.tf, pytest.mark.usefixtures("needs_tf")]

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "docs" / "examples" / "my_workload.py"

# Parameter counts: mnist_mlp and mnist_cnn as printed by the original Keras examples'
# model.summary(); the others computed by hand from the layers (see docs/workloads.md).
PARAMS = {
    "mnist_mlp": 669_706,
    "mnist_cnn": 1_199_882,
    "cifar10_cnn": 1_250_858,  # 896 + 9,248 + 18,496 + 36,928 + 1,180,160 + 5,130
    "imdb_fasttext": 61_000_101,  # 1,220,001 x 50 + 51
    "imdb_bilstm": 2_658_945,  # 2,560,000 + 2 x 49,408 + 129
    "text_generation": 102_585,  # 4 x (57 + 128 + 1) x 128 + 128 x 57 + 57
}


def test_models_have_the_study_parameter_counts_and_flops():
    import keras

    for name, expected in PARAMS.items():
        module = importlib.import_module(f"workloads.{name}")
        model = module.build_model(keras, compile_options={})
        assert model.count_params() == expected, name
        # the hand-written formula matches the layers the model really has
        assert flops.model_forward_flops(model) == module.forward_flops_per_sample(), name
        keras.backend.clear_session()


def _profiled_flops(fn, *specs) -> float:
    import tensorflow as tf

    graph = tf.function(fn).get_concrete_function(*specs).graph
    options = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
    options["output"] = "none"
    profile = tf.compat.v1.profiler.profile(
        graph=graph, run_meta=tf.compat.v1.RunMetadata(), cmd="op", options=options
    )
    return float(profile.total_float_ops)


def test_formulas_agree_with_tensorflow_profiler():
    import keras
    import tensorflow as tf

    from workloads import mnist_cnn, mnist_mlp

    for module, shape in ((mnist_mlp, (784,)), (mnist_cnn, (28, 28, 1))):
        model = module.build_model(keras, compile_options={})
        spec = tf.TensorSpec((1, *shape), tf.float32)
        forward = _profiled_flops(lambda x, m=model: m(x, training=False), spec)
        # The profiler also counts biases and the like: within 1 % of the formula.
        assert forward / module.forward_flops_per_sample() == pytest.approx(1.0, abs=0.01)

        loss_fn = keras.losses.SparseCategoricalCrossentropy()

        def gradients(x, y, m=model, loss_fn=loss_fn):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, m(x, training=True))
            return tape.gradient(loss, m.trainable_variables)

        batch = (tf.TensorSpec((32, *shape), tf.float32), tf.TensorSpec((32,), tf.int32))
        ratio = _profiled_flops(gradients, *batch) / module.flops_per_step(32)
        # 3x forward is a convention: TF skips the first layer's input gradient (the MLP
        # measures 0.80) and counts element-wise gradient ops (the CNN measures 1.11).
        assert 0.75 < ratio < 1.2, (module.__name__, ratio)
        keras.backend.clear_session()


def test_imdb_loader_matches_keras_own_loader(tmp_path, monkeypatch):
    import keras.src.datasets.imdb as keras_imdb

    from tests.test_data_real import write_imdb

    write_imdb(tmp_path)
    # Point keras' loader at the same small file (its own cache lookup would re-download
    # a file whose hash differs from the real one).
    monkeypatch.setattr(keras_imdb, "get_file", lambda *a, **k: str(tmp_path / "imdb.npz"))
    (kx, ky), (kxt, kyt) = keras_imdb.load_data(num_words=20000)
    x, y, xt, yt = data.load_imdb(tmp_path, num_words=20000)
    assert [list(s) for s in kx] == [s.tolist() for s in x] and ky.tolist() == y.tolist()
    assert [list(s) for s in kxt] == [s.tolist() for s in xt] and kyt.tolist() == yt.tolist()


def test_mnist_loader_matches_keras_own_loader(tmp_path, monkeypatch):
    import keras.src.datasets.mnist as keras_mnist

    from tests.test_data_real import write_mnist

    write_mnist(tmp_path)
    monkeypatch.setattr(keras_mnist, "get_file", lambda *a, **k: str(tmp_path / "mnist.npz"))
    theirs = keras_mnist.load_data()
    ours = data.load_mnist(tmp_path)
    for a, b in zip((*theirs[0], *theirs[1]), ours, strict=True):
        assert np.array_equal(a, b)


def cli(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tfvariants", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# How far above chance a quick run (quick_samples, 2 epochs, synthetic data) must get.
MARGIN = {
    "mnist_mlp": 0.5,
    "mnist_cnn": 0.5,
    "cifar10_cnn": 0.2,
    "imdb_fasttext": 0.02,  # 40 steps of Adam on a 61M-parameter table: a weak signal
    "imdb_bilstm": 0.1,
    "text_generation": 0.08,  # chance is 1/57; character frequencies alone give ~0.15
}


# Both Keras generations: Keras 3 (this interpreter's TensorFlow 2.21) and Keras 2
# (tf.keras of TensorFlow 2.14: the compiled-vs-stock recipes' release; its environment
# is built from the package index, hence `envs`).
KERAS = [
    pytest.param("local", "3", id="keras3"),
    pytest.param("tf-2.14", "2", id="keras2", marks=pytest.mark.envs),
]


def _keras_ran(res: dict) -> str:
    """The Keras major version a cell recorded."""
    return res["environment"]["backend"]["keras_version"].split(".")[0]


@pytest.mark.parametrize(("variant", "keras_major"), KERAS)
@pytest.mark.parametrize("name", list(MARGIN))
def test_quick_run_learns_above_chance(tmp_path, name, variant, keras_major):
    from tfvariants.store.result import load_result

    spec = importlib.import_module(f"workloads.{name}").SPEC
    proc = cli("run", name, "--threads", "2", "--epochs", str(spec["quick_epochs"]),
               "--samples", str(spec["quick_samples"]), "--out", str(tmp_path),
               "--variant", variant)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    res = load_result(tmp_path / "cells" / f"{name}__{variant}__t2__r0.json")
    assert res["status"] == "ok", res.get("reason")
    assert _keras_ran(res) == keras_major
    metrics = res["metrics"]
    accuracy = metrics.get("val_accuracy") or metrics["accuracy"]
    assert accuracy > spec["chance_accuracy"] + MARGIN[name], metrics
    assert res["flops_per_step"] == pytest.approx(
        importlib.import_module(f"workloads.{name}").flops_per_step(spec["batch_size"])
    )
    assert res["schedule"]["full_epochs"] == spec["epochs"]
    assert res["schedule"]["full_samples"] == spec["train_samples"]


@pytest.mark.parametrize(("variant", "keras_major"), KERAS)
def test_documented_example_runs_through_the_cli(tmp_path, variant, keras_major):
    from tfvariants.store.result import load_result

    proc = cli("run", str(EXAMPLE), "--threads", "1", "--epochs", "2", "--samples", "1024",
               "--out", str(tmp_path), "--variant", variant)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    # A workload file's cell id carries a hash of its path: my_workload@<hash>__...
    (cell,) = (tmp_path / "cells").glob(f"my_workload*__{variant}__t1__r0.json")
    res = load_result(cell)
    assert res["status"] == "ok" and res["metrics"]["val_accuracy"] > 0.5
    assert _keras_ran(res) == keras_major
