"""MNIST multilayer perceptron (Keras example mnist_mlp.py, as in the 2017 study).

Dense 512 relu, Dropout .2, Dense 512 relu, Dropout .2, Dense 10 softmax; RMSprop;
batch 128; 20 epochs. 669,706 parameters.
"""

from __future__ import annotations

from typing import Any

from workloads import data, flops

SPEC = {
    "name": "mnist_mlp",
    "description": "MNIST MLP: 2x Dense 512 + Dropout, RMSprop",
    "batch_size": 128,
    "epochs": 20,
    "train_samples": 60000,
    "chance_accuracy": 0.1,
    "quick_samples": 5120,
    "quick_epochs": 2,
}

_DENSE = [(784, 512), (512, 512), (512, 10)]  # (inputs, units) of each Dense layer


def load_data(source: str, *, data_dir: str | None, samples: int | None, seed: int) -> dict:
    """MNIST (real or synthetic) as flat 784-float32 vectors in [0, 1], int labels."""
    return data.image_dataset(
        "mnist", source, data_dir=data_dir, samples=samples, seed=seed, shape=(784,)
    )


def build_model(keras: Any, *, compile_options: dict) -> Any:
    model = keras.Sequential(
        [
            keras.Input(shape=(784,)),
            keras.layers.Dense(512, activation="relu"),
            keras.layers.Dropout(0.2),
            keras.layers.Dense(512, activation="relu"),
            keras.layers.Dropout(0.2),
            keras.layers.Dense(10, activation="softmax"),
        ],
        name="mnist_mlp",
    )
    model.compile(
        optimizer=keras.optimizers.RMSprop(),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
        **compile_options,
    )
    return model


def forward_flops_per_sample() -> float:
    return sum(flops.dense_flops(i, o) for i, o in _DENSE)


def flops_per_step(batch_size: int) -> float:
    return flops.training_step(forward_flops_per_sample(), batch_size)
