"""IMDb bidirectional LSTM (Keras example imdb_bidirectional_lstm.py, as in the 2017 study).

Embedding(20000, 128) over 100 tokens, Bidirectional(LSTM 64), Dropout .5, Dense 1
sigmoid; Adam; batch 32; 4 epochs. 2,658,945 parameters.
"""

from __future__ import annotations

from typing import Any

from workloads import data, flops

MAX_FEATURES = 20000
MAXLEN = 100

SPEC = {
    "name": "imdb_bilstm",
    "description": "IMDb sentiment: Embedding 128 + Bidirectional LSTM 64, Adam",
    "batch_size": 32,
    "epochs": 4,
    "train_samples": data.IMDB_TRAIN_SAMPLES,
    "chance_accuracy": 0.5,
    "quick_samples": 640,
    "quick_epochs": 2,
}


def load_data(source: str, *, data_dir: str | None, samples: int | None, seed: int) -> dict:
    """Reviews as the last 100 token ids (zero-padded in front), labels 0/1."""
    x, y, x_val, y_val = data.imdb_dataset(
        source, data_dir=data_dir, samples=samples, seed=seed, num_words=MAX_FEATURES
    )
    return {
        "x": data.pad_sequences(x, MAXLEN),
        "y": y,
        "x_val": data.pad_sequences(x_val, MAXLEN),
        "y_val": y_val,
    }


def build_model(keras: Any, *, compile_options: dict) -> Any:
    layers = keras.layers
    model = keras.Sequential(
        [
            keras.Input(shape=(MAXLEN,), dtype="int32"),
            layers.Embedding(MAX_FEATURES, 128),
            layers.Bidirectional(layers.LSTM(64)),
            layers.Dropout(0.5),
            layers.Dense(1, activation="sigmoid"),
        ],
        name="imdb_bilstm",
    )
    model.compile(
        optimizer=keras.optimizers.Adam(),
        loss="binary_crossentropy",
        metrics=["accuracy"],
        **compile_options,
    )
    return model


def forward_flops_per_sample() -> float:
    return 2 * flops.lstm_flops(MAXLEN, 128, 64) + flops.dense_flops(2 * 64, 1)


def flops_per_step(batch_size: int) -> float:
    return flops.training_step(forward_flops_per_sample(), batch_size)
