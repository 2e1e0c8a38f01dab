"""MNIST multilayer perceptron (Keras example mnist_mlp.py, as in the 2017 study).

Dense 512 relu, Dropout .2, Dense 512 relu, Dropout .2, Dense 10 softmax; RMSprop;
batch 128; 20 epochs. 669,706 parameters.
"""

from __future__ import annotations

from typing import Any

SPEC = {
    "name": "mnist_mlp",
    "description": "MNIST MLP: 2x Dense 512 + Dropout, RMSprop",
    "batch_size": 128,
    "epochs": 20,
    "train_samples": 60000,
    "chance_accuracy": 0.1,
    "quick_samples": 6000,
    "quick_epochs": 2,
}

_LAYERS = [(784, 512), (512, 512), (512, 10)]


def load_data(source: str, *, data_dir: str | None, samples: int | None, seed: int) -> dict:
    import numpy as np

    if source == "real":
        import keras

        path = None
        if data_dir:
            import os

            path = os.path.join(os.path.abspath(data_dir), "mnist.npz")
        (x, y), (xv, yv) = keras.datasets.mnist.load_data(path=path or "mnist.npz")
        x = x.reshape(-1, 784).astype("float32") / 255.0
        xv = xv.reshape(-1, 784).astype("float32") / 255.0
    else:
        rng = np.random.default_rng(seed)
        n = samples or SPEC["train_samples"]
        templates = rng.random((10, 784), dtype=np.float32)
        y = rng.integers(0, 10, n)
        x = np.clip(templates[y] * 0.6 + rng.random((n, 784), dtype=np.float32) * 0.4, 0, 1)
        yv = rng.integers(0, 10, max(n // 6, 100))
        xv = np.clip(templates[yv] * 0.6 + rng.random((len(yv), 784), dtype=np.float32) * 0.4, 0, 1)
    if samples:
        x, y = x[:samples], y[:samples]
    return {"x": x, "y": y, "x_val": xv, "y_val": yv}


def build_model(keras: Any, *, compile_options: dict) -> Any:
    model = keras.Sequential(
        [
            keras.Input(shape=(784,)),
            keras.layers.Dense(512, activation="relu"),
            keras.layers.Dropout(0.2),
            keras.layers.Dense(512, activation="relu"),
            keras.layers.Dropout(0.2),
            keras.layers.Dense(10, activation="softmax"),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.RMSprop(),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
        **compile_options,
    )
    return model


def flops_per_step(batch_size: int) -> float:
    # Forward: 2 FLOPs per multiply-add; backward ~2x forward (input and weight grads).
    forward = sum(2 * i * o for i, o in _LAYERS) * batch_size
    return 3.0 * forward
