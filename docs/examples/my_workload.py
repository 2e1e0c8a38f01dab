"""An example user workload: a small MLP classifying noisy Gaussian clusters.

Run it like a built-in workload:

    tfvariants run docs/examples/my_workload.py --threads 2 --epochs 2

A workload file needs SPEC, load_data() and build_model(); flops_per_step() is optional.
Keep TensorFlow out of the module's top level: the host imports this file to read SPEC
without TensorFlow, and the worker passes `keras` in after it has set the thread pools.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workloads import data, flops  # helpers shipped with tfvariants (optional)

FEATURES, CLASSES, HIDDEN = 64, 4, 256

SPEC = {
    "name": "my_workload",  # used in result file names; letters, digits, _ and -
    "description": "Example: MLP on synthetic Gaussian clusters",
    "batch_size": 64,
    "epochs": 5,  # the full schedule, for projections
    "train_samples": 20000,  # the full training-set size, for projections
    "chance_accuracy": 1 / CLASSES,  # None for tasks that are not classification
    "quick_samples": 4096,  # suggested size for quick runs
    "quick_epochs": 2,
}


def load_data(source: str, *, data_dir: str | None, samples: int | None, seed: int) -> dict:
    """Return numpy arrays x, y (and optionally x_val, y_val); `samples` caps the train set."""
    if source != "synthetic":
        # Real data would be read from data_dir here; say how to get it when it's missing.
        raise data.DataUnavailable(
            "my_workload has no real data set; use --data synthetic (the offline default)"
        )
    n = data.capped(SPEC["train_samples"], samples)
    rng = np.random.default_rng(seed)
    centres = rng.normal(0.0, 1.0, (CLASSES, FEATURES)).astype(np.float32)

    def draw(count: int) -> tuple[np.ndarray, np.ndarray]:
        y = rng.integers(0, CLASSES, count).astype(np.int32)
        x = centres[y] + rng.normal(0.0, 2.0, (count, FEATURES)).astype(np.float32)
        return x, y  # labels depend on the inputs: a working model beats chance

    x, y = draw(n)
    x_val, y_val = draw(max(1, n // 5))
    return {"x": x, "y": y, "x_val": x_val, "y_val": y_val}


def build_model(keras: Any, *, compile_options: dict) -> Any:
    """Return a compiled model; pass compile_options (e.g. jit_compile) to compile()."""
    model = keras.Sequential(
        [
            keras.Input(shape=(FEATURES,)),
            keras.layers.Dense(HIDDEN, activation="relu"),
            keras.layers.Dense(HIDDEN, activation="relu"),
            keras.layers.Dense(CLASSES, activation="softmax"),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
        **compile_options,
    )
    return model


def flops_per_step(batch_size: int) -> float:
    """Training FLOPs of one step: forward per sample x 3 (forward + backward) x batch."""
    forward = (
        flops.dense_flops(FEATURES, HIDDEN)
        + flops.dense_flops(HIDDEN, HIDDEN)
        + flops.dense_flops(HIDDEN, CLASSES)
    )
    return flops.training_step(forward, batch_size)
