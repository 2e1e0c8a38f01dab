"""IMDb fastText-style classifier (Keras example imdb_fasttext.py with ngram_range=2).

Unigram ids from the 20,000 most frequent words plus one id per bigram, padded/truncated
to 400 tokens; Embedding(MAX_FEATURES, 50), GlobalAveragePooling1D, Dense 1 sigmoid; Adam;
batch 32; 5 epochs.

The example numbered the distinct bigrams of the training set (about 1.2 million for
IMDb), so its embedding size depended on the data. Here bigrams are hashed into
BIGRAM_BUCKETS ids (fastText's own "hashing trick"), so the model is the same for real
and synthetic data at any scale: 61,000,101 parameters. The cost of a step is dominated
by the embedding table (gather, and Adam's update of the whole table), not by FLOPs.
"""

from __future__ import annotations

from typing import Any

from workloads import data, flops

NUM_WORDS = 20000
BIGRAM_BUCKETS = 1_200_000  # the order of IMDb's distinct training bigrams
MAX_FEATURES = NUM_WORDS + 1 + BIGRAM_BUCKETS  # ids 0..NUM_WORDS, then the buckets
MAXLEN = 400
EMBEDDING_DIMS = 50

SPEC = {
    "name": "imdb_fasttext",
    "description": "IMDb sentiment: fastText bigram embedding average, Adam",
    "batch_size": 32,
    "epochs": 5,
    "train_samples": data.IMDB_TRAIN_SAMPLES,
    "chance_accuracy": 0.5,
    "quick_samples": 640,
    "quick_epochs": 2,
}


def _features(seqs: list) -> Any:
    with_bigrams = data.add_hashed_bigrams(seqs, num_words=NUM_WORDS, buckets=BIGRAM_BUCKETS)
    return data.pad_sequences(with_bigrams, MAXLEN)


def load_data(source: str, *, data_dir: str | None, samples: int | None, seed: int) -> dict:
    """Reviews with bigram ids appended, last 400 ids kept (as the example), labels 0/1."""
    x, y, x_val, y_val = data.imdb_dataset(
        source, data_dir=data_dir, samples=samples, seed=seed, num_words=NUM_WORDS
    )
    return {"x": _features(x), "y": y, "x_val": _features(x_val), "y_val": y_val}


def build_model(keras: Any, *, compile_options: dict) -> Any:
    layers = keras.layers
    model = keras.Sequential(
        [
            keras.Input(shape=(MAXLEN,), dtype="int32"),
            layers.Embedding(MAX_FEATURES, EMBEDDING_DIMS),
            layers.GlobalAveragePooling1D(),
            layers.Dense(1, activation="sigmoid"),
        ],
        name="imdb_fasttext",
    )
    model.compile(
        optimizer=keras.optimizers.Adam(),
        loss="binary_crossentropy",
        metrics=["accuracy"],
        **compile_options,
    )
    return model


def forward_flops_per_sample() -> float:
    return flops.average_pool_flops(MAXLEN * EMBEDDING_DIMS) + flops.dense_flops(EMBEDDING_DIMS, 1)


def flops_per_step(batch_size: int) -> float:
    return flops.training_step(forward_flops_per_sample(), batch_size)
