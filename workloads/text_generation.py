"""Character-level text generation LSTM (Keras example lstm_text_generation.py).

One-hot windows of 40 characters, cut every 3 characters from the lower-cased corpus;
LSTM 128, Dense(n_chars) softmax; RMSprop lr 0.01; batch 128; 10 epochs. With Nietzsche's
57 characters: 102,585 parameters. Any corpus is mapped onto 57 symbols (see
workloads.data.encode_text), so the model is the same for every text.
"""

from __future__ import annotations

from typing import Any

from workloads import data, flops

MAXLEN = 40
STEP = 3

SPEC = {
    "name": "text_generation",
    "description": "Character LSTM 128 over 40-char one-hot windows, RMSprop",
    "batch_size": 128,
    "epochs": 10,
    "train_samples": data.window_count(data.NIETZSCHE_CHARS, MAXLEN, STEP),  # 200,285
    # Guessing among 57 characters. A model that learned only character frequencies
    # already gets the majority-class rate (the space, ~16 %); a quick run reaches that.
    "chance_accuracy": 1 / 57,
    "quick_samples": 2560,
    "quick_epochs": 2,
}


def load_data(source: str, *, data_dir: str | None, samples: int | None, seed: int) -> dict:
    """(samples, 40, 57) bool one-hot windows and the next character's index.

    ``--data real`` reads nietzsche.txt from the data directory, or the text file that
    ``--data-dir`` names. The original script had no validation set.
    """
    return data.text_dataset(
        source, data_dir=data_dir, samples=samples, seed=seed, maxlen=MAXLEN, step=STEP
    )


def build_model(keras: Any, *, compile_options: dict) -> Any:
    layers = keras.layers
    model = keras.Sequential(
        [
            keras.Input(shape=(MAXLEN, data.N_CHARS)),
            layers.LSTM(128),
            layers.Dense(data.N_CHARS, activation="softmax"),
        ],
        name="text_generation",
    )
    model.compile(
        optimizer=keras.optimizers.RMSprop(learning_rate=0.01),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
        **compile_options,
    )
    return model


def forward_flops_per_sample() -> float:
    return flops.lstm_flops(MAXLEN, data.N_CHARS, 128) + flops.dense_flops(128, data.N_CHARS)


def flops_per_step(batch_size: int) -> float:
    return flops.training_step(forward_flops_per_sample(), batch_size)
