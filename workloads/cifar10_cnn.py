"""CIFAR-10 convolutional network (Keras example cifar10_cnn.py, as in the 2017 study).

2x Conv 32 3x3 (first 'same'), MaxPool, Dropout .25, 2x Conv 64 3x3 (first 'same'),
MaxPool, Dropout .25, Flatten, Dense 512, Dropout .5, Dense 10; RMSprop lr 1e-4 (decay
1e-6); batch 32; 20 epochs. 1,250,858 parameters.

The original augmented on the fly with ImageDataGenerator (width/height shift 0.1,
horizontal flip). Here that is done by Keras preprocessing layers at the front of the
model, which are active only in training (so augmentation cost is part of the step time,
as it was part of the epoch time in 2017, but runs in the TensorFlow graph).
"""

from __future__ import annotations

from typing import Any

from workloads import data, flops

SPEC = {
    "name": "cifar10_cnn",
    "description": "CIFAR-10 CNN: 4x Conv2D + Dense 512, shift/flip augmentation, RMSprop",
    "batch_size": 32,
    "epochs": 20,
    "train_samples": 50000,
    "chance_accuracy": 0.1,
    "quick_samples": 3200,
    "quick_epochs": 2,
}


def load_data(source: str, *, data_dir: str | None, samples: int | None, seed: int) -> dict:
    """CIFAR-10 (real or synthetic) as 32x32x3 float32 images in [0, 1], int labels."""
    return data.image_dataset(
        "cifar10", source, data_dir=data_dir, samples=samples, seed=seed, shape=(32, 32, 3)
    )


def build_model(keras: Any, *, compile_options: dict) -> Any:
    layers = keras.layers
    model = keras.Sequential(
        [
            keras.Input(shape=(32, 32, 3)),
            # ImageDataGenerator(width_shift_range=0.1, height_shift_range=0.1,
            # horizontal_flip=True) with its default fill_mode='nearest'.
            layers.RandomTranslation(0.1, 0.1, fill_mode="nearest"),
            layers.RandomFlip("horizontal"),
            layers.Conv2D(32, (3, 3), padding="same", activation="relu"),
            layers.Conv2D(32, (3, 3), activation="relu"),
            layers.MaxPooling2D(pool_size=(2, 2)),
            layers.Dropout(0.25),
            layers.Conv2D(64, (3, 3), padding="same", activation="relu"),
            layers.Conv2D(64, (3, 3), activation="relu"),
            layers.MaxPooling2D(pool_size=(2, 2)),
            layers.Dropout(0.25),
            layers.Flatten(),
            layers.Dense(512, activation="relu"),
            layers.Dropout(0.5),
            layers.Dense(10, activation="softmax"),
        ],
        name="cifar10_cnn",
    )
    # RMSprop(lr=0.0001, decay=1e-6) in Keras 2 = lr / (1 + 1e-6 * iterations).
    schedule = keras.optimizers.schedules.InverseTimeDecay(1e-4, decay_steps=1, decay_rate=1e-6)
    model.compile(
        optimizer=keras.optimizers.RMSprop(learning_rate=schedule),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
        **compile_options,
    )
    return model


def forward_flops_per_sample() -> float:
    c1 = flops.conv_output_size(32, 3, "same")  # 32
    c2 = flops.conv_output_size(c1, 3)  # 30
    p1 = c2 // 2  # 15
    c3 = flops.conv_output_size(p1, 3, "same")  # 15
    c4 = flops.conv_output_size(c3, 3)  # 13
    p2 = c4 // 2  # 6
    return (
        flops.conv2d_flops(c1, c1, 3, 3, 32)
        + flops.conv2d_flops(c2, c2, 3, 32, 32)
        + flops.conv2d_flops(c3, c3, 3, 32, 64)
        + flops.conv2d_flops(c4, c4, 3, 64, 64)
        + flops.dense_flops(p2 * p2 * 64, 512)
        + flops.dense_flops(512, 10)
    )


def flops_per_step(batch_size: int) -> float:
    return flops.training_step(forward_flops_per_sample(), batch_size)
