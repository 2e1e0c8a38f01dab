"""Data for the benchmark workloads: synthetic generators and real-data loaders.

Two sources, chosen by the worker's ``--data``:

- ``synthetic`` (the default, offline): arrays with the real data sets' shapes, dtypes and
  vocabulary sizes, and with *learnable* structure (labels depend on the inputs), so that
  a working TensorFlow build's accuracy rises above chance even in a quick run. Everything
  is deterministic for a given seed and built with numpy only.
- ``real``: the original data sets in the files Keras' own loaders cache (``mnist.npz``,
  the ``cifar-10-batches-py`` pickles, ``imdb.npz``, ``nietzsche.txt``), looked up in a data
  directory (default ``$KERAS_HOME/datasets`` or ``~/.keras/datasets``, the same place
  ``keras.datasets`` uses). A missing file is downloaded with ``keras.utils.get_file``;
  offline, :class:`DataUnavailable` says which file to place where.

Why not call ``keras.datasets.*.load_data()`` directly: in Keras 3 those functions take no
cache directory (only ``$KERAS_HOME``, read once at import), reject paths, and re-download
any cached file whose hash differs. Reading the same files here honours ``--data-dir``,
works with hand-placed files, and lets tests use small files in the real formats. The
parsing follows Keras' loaders (same key names, the same IMDb index shift, shuffle seed
and out-of-vocabulary rule).

Nothing here imports TensorFlow or Keras at import time.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

# The real data sets' files (re-exported: the workloads and tests use them from here).
from workloads.datafiles import IMDB_INDEX_FROM as IMDB_INDEX_FROM
from workloads.datafiles import IMDB_OOV as IMDB_OOV
from workloads.datafiles import IMDB_START as IMDB_START
from workloads.datafiles import NIETZSCHE_URL, _fetch, resolve_data_dir
from workloads.datafiles import DataUnavailable as DataUnavailable
from workloads.datafiles import default_data_dir as default_data_dir
from workloads.datafiles import load_cifar10 as load_cifar10
from workloads.datafiles import load_imdb as load_imdb
from workloads.datafiles import load_mnist as load_mnist

IMDB_TRAIN_SAMPLES = IMDB_TEST_SAMPLES = 25000
# Synthetic sentiment: each label has a set of SENTIMENT_WORDS words; that share of a
# review's words comes from its label's set, NOISE_RATE from the other label's set.
SENTIMENT_WORDS, SENTIMENT_RATE, NOISE_RATE = 30, 0.10, 0.02
IMDB_MEAN_LENGTH = 238  # average review length in tokens (printed by the Keras examples)

# Lower-cased Nietzsche has 57 distinct characters; the text workload's model is built for
# exactly this many, so every corpus is mapped onto N_CHARS symbols (see text_windows).
TEXT_ALPHABET = "\n !\"'(),-.0123456789:;=?[]_abcdefghijklmnopqrstuvwxyzäæéë"
N_CHARS = len(TEXT_ALPHABET)
NIETZSCHE_CHARS = 600893  # length of nietzsche.txt, for the full-schedule sample count


# ---------------------------------------------------------------------------------------
# Common helpers


def capped(n_full: int, samples: int | None) -> int:
    """Training-set size for a run: all of it, or at most ``samples``."""
    if samples is not None and samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    return n_full if samples is None else min(n_full, samples)


def validation_size(n_train: int, full_train: int, full_test: int) -> int:
    """Validation size that keeps the original train/test ratio at a capped scale."""
    return min(full_test, max(1, math.ceil(n_train * full_test / full_train)))


# ---------------------------------------------------------------------------------------
# Images: MNIST and CIFAR-10


def synthetic_images(
    n: int, shape: Sequence[int], *, classes: int = 10, seed: int = 0, n_val: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Class-template images plus noise, as float32 in [0, 1] on the uint8 grid.

    Each class has a smooth random template (a coarse random field, upsampled, like a
    blurry glyph); a sample is its class template at a random contrast plus uniform noise,
    quantised to 8 bits and scaled by 1/255 the way the Keras examples scale real pixels.
    A nearest-template classifier is far above chance; so is any working network.
    Returns x, y, x_val, y_val (labels are int32 class ids).
    """
    shape = tuple(int(s) for s in shape)
    rng = np.random.default_rng([seed, 7])  # templates: same for train and validation
    h, w = shape[0], shape[1]
    coarse = rng.random((classes, (h + 3) // 4, (w + 3) // 4) + shape[2:], dtype=np.float32)
    templates = np.repeat(np.repeat(coarse, 4, axis=1), 4, axis=2)[:, :h, :w]
    templates = (templates > 0.55).astype(np.float32) * 255.0  # glyph-like on/off areas

    size = int(np.prod(shape))
    flat_templates = templates.reshape(classes, size)

    def draw(count: int, stream: int) -> tuple[np.ndarray, np.ndarray]:
        x = np.empty((count, size), dtype=np.float32)
        y = np.empty(count, dtype=np.int32)
        # Chunks with their own random streams: a capped run gets exactly the first
        # samples of the full set. In place through one small buffer, because fresh
        # memory is the slow part, and 2-D because numpy is slow on a trailing axis of 1.
        chunk = 2048
        tmp = np.empty((min(chunk, count), size), dtype=np.float32)
        for index, lo in enumerate(range(0, count, chunk)):
            m = min(chunk, count - lo)
            part, buf = x[lo : lo + m], tmp[:m]
            labels, contrasts, noise = (
                np.random.default_rng([seed, stream, index, k]) for k in range(3)
            )
            y[lo : lo + m] = labels.integers(0, classes, chunk)[:m]
            contrast = contrasts.uniform(0.45, 0.75, (chunk, 1))[:m].astype(np.float32)
            noise.random(out=part, dtype=np.float32)
            part *= np.float32(110.0)
            np.take(flat_templates, y[lo : lo + m], axis=0, out=buf)
            buf *= contrast
            part += buf
            np.clip(part, 0, 255, out=part)
            np.floor(part, out=part)
            part *= np.float32(1 / 255)
        return x.reshape((count,) + shape), y

    x, y = draw(n, 1)
    x_val, y_val = draw(n_val, 2)
    return x, y, x_val, y_val


def image_dataset(
    name: str,
    source: str,
    *,
    data_dir: str | os.PathLike | None,
    samples: int | None,
    seed: int,
    shape: Sequence[int],
) -> dict[str, np.ndarray]:
    """MNIST or CIFAR-10 as the Keras examples feed them: float32 /255, int labels.

    ``shape`` is the per-sample shape the model takes (e.g. (784,) or (28, 28, 1)). The
    validation set (the original test set) is cut in the same proportion as the train set.
    """
    full_train, full_test = {"mnist": (60000, 10000), "cifar10": (50000, 10000)}[name]
    if source == "synthetic":
        native = (28, 28, 1) if name == "mnist" else (32, 32, 3)
        n = capped(full_train, samples)
        x, y, x_val, y_val = synthetic_images(
            n, native, seed=seed, n_val=validation_size(n, full_train, full_test)
        )
    elif source == "real":
        loader = load_mnist if name == "mnist" else load_cifar10
        x, y, x_val, y_val = loader(data_dir)
        n = capped(len(x), samples)
        n_val = validation_size(n, len(x), len(x_val))
        x, y, x_val, y_val = x[:n], y[:n], x_val[:n_val], y_val[:n_val]
        x = x.astype(np.float32) / np.float32(255)
        x_val = x_val.astype(np.float32) / np.float32(255)
    else:
        raise ValueError(f"unknown data source {source!r} (expected 'synthetic' or 'real')")
    shape = tuple(shape)
    return {
        "x": x.reshape((len(x),) + shape),
        "y": np.asarray(y, dtype=np.int32).reshape(-1),
        "x_val": x_val.reshape((len(x_val),) + shape),
        "y_val": np.asarray(y_val, dtype=np.int32).reshape(-1),
    }


def imdb_dataset(
    source: str,
    *,
    data_dir: str | os.PathLike | None,
    samples: int | None,
    seed: int,
    num_words: int = 20000,
) -> tuple[list[np.ndarray], np.ndarray, list[np.ndarray], np.ndarray]:
    """IMDb reviews (ragged id lists) and labels, train and test, capped to ``samples``."""
    if source == "synthetic":
        n = capped(IMDB_TRAIN_SAMPLES, samples)
        n_val = validation_size(n, IMDB_TRAIN_SAMPLES, IMDB_TEST_SAMPLES)
        x, y = synthetic_reviews(n, seed=seed, stream=1, num_words=num_words)
        x_val, y_val = synthetic_reviews(n_val, seed=seed, stream=2, num_words=num_words)
        return x, y, x_val, y_val
    if source == "real":
        x, y, x_val, y_val = load_imdb(data_dir, num_words=num_words)
        n = capped(len(x), samples)
        n_val = validation_size(n, len(x), len(x_val))
        return x[:n], y[:n], x_val[:n_val], y_val[:n_val]
    raise ValueError(f"unknown data source {source!r} (expected 'synthetic' or 'real')")


# IMDb reviews


def synthetic_reviews(
    n: int, *, seed: int = 0, stream: int = 1, num_words: int = 20000
) -> tuple[list[np.ndarray], np.ndarray]:
    """Token-id reviews in IMDb's conventions, with sentiment carried by word choice.

    Lengths follow a log-normal near IMDb's (mean ~238 tokens); words are Zipf-distributed
    ids in [3, num_words); each review starts with the start id 1. Two disjoint sets of
    SENTIMENT_WORDS mid-frequency words act as "positive" and "negative" words: 10 % of a
    label-1 review's words are positive ones and 2 % negative ones, and vice versa. Returns
    (list of int32 arrays, int32 labels).
    """
    positive, negative = sentiment_word_sets(seed)
    r = np.random.default_rng([seed, stream])
    labels = r.integers(0, 2, n).astype(np.int32)
    lengths = np.clip(r.lognormal(np.log(175), 0.75, n), 10, 2000).astype(np.int64)
    total = int(lengths.sum())
    # Zipf-like ranks by inverting the CDF of p(k) ~ 1/(k + 10) in closed form.
    span = np.float32(np.log((num_words - IMDB_INDEX_FROM + 10) / 10.0))
    u = r.random(total, dtype=np.float32)
    u *= span
    np.exp(u, out=u)
    u *= np.float32(10.0)
    flat = u.astype(np.int32)
    flat += IMDB_INDEX_FROM - 10
    np.clip(flat, IMDB_INDEX_FROM, num_words - 1, out=flat)
    signal = r.random(total, dtype=np.float32)
    hits = np.flatnonzero(signal < SENTIMENT_RATE + NOISE_RATE)
    owner = np.repeat(labels, lengths)[hits]
    agrees = signal[hits] < SENTIMENT_RATE
    pick = r.integers(0, SENTIMENT_WORDS, len(hits))
    use_positive = (owner == 1) == agrees
    flat[hits] = np.where(use_positive, positive[pick], negative[pick])
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    flat[starts] = IMDB_START
    return np.split(flat, np.cumsum(lengths)[:-1]), labels


def sentiment_word_sets(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The (positive, negative) word ids used by :func:`synthetic_reviews` for ``seed``."""
    roles = np.random.default_rng([seed, 11]).permutation(np.arange(50, 5000)) + IMDB_INDEX_FROM
    return roles[:SENTIMENT_WORDS], roles[SENTIMENT_WORDS : 2 * SENTIMENT_WORDS]


def pad_sequences(seqs: Sequence[np.ndarray], maxlen: int) -> np.ndarray:
    """keras.utils.pad_sequences defaults: keep the LAST maxlen ids, zero-pad in front."""
    out = np.zeros((len(seqs), maxlen), dtype=np.int32)
    for i, seq in enumerate(seqs):
        tail = seq[-maxlen:]
        if len(tail):
            out[i, maxlen - len(tail) :] = tail
    return out


def add_hashed_bigrams(
    seqs: Sequence[np.ndarray], *, num_words: int, buckets: int
) -> list[np.ndarray]:
    """Append one bigram id per adjacent pair, as the fastText example's add_ngram does.

    The example numbers the distinct bigrams of the training set (ids from num_words + 1);
    here each bigram is hashed into ``buckets`` ids from num_words + 1, so the embedding
    size (and so the model) is fixed and identical for every data source and scale.
    """
    out = []
    for seq in seqs:
        a = seq[:-1].astype(np.int64)
        b = seq[1:].astype(np.int64)
        h = ((a * num_words + b) * 2654435761) % (1 << 32) % buckets
        out.append(np.concatenate([seq, (h + num_words + 1).astype(np.int32)]))
    return out


# ---------------------------------------------------------------------------------------
# Text for character-level generation


def synthetic_corpus(n_chars: int, *, seed: int = 0) -> np.ndarray:
    """A text-like stream of ``n_chars`` character indices into TEXT_ALPHABET.

    Words from a fixed random lexicon of 3,000 pseudo-words are chosen with Zipf
    frequencies and joined by spaces, commas, full stops and newlines. Word spellings come
    from a letter Markov chain (English letter frequencies, a few likely successors per
    letter, like "th", "he", "in"), with rare digits and accents. So the next character is
    predictable from the previous ones, and a character model learns well above the
    majority-class rate.
    """
    alphabet = {c: i for i, c in enumerate(TEXT_ALPHABET)}
    r = np.random.default_rng([seed, 21])
    letters = np.array([alphabet[c] for c in "etaoinshrdlcumwfgypbvkjxqz"])
    # English letter frequencies (%), in the order of `letters`.
    freq = [12.7, 9.1, 8.2, 7.5, 7.0, 6.7, 6.3, 6.1, 6.0, 4.3, 4.0, 2.8, 2.8]
    freq += [2.4, 2.4, 2.2, 2.0, 2.0, 1.9, 1.5, 1.0, 0.8, 0.2, 0.2, 0.1, 0.1]
    letter_p = np.array(freq) / sum(freq)
    # Each letter: 4 favoured successors (50/25/15/10 % of 80 %) + 20 % by frequency.
    successors = np.tile(0.2 * letter_p, (26, 1))
    for a in range(26):
        successors[a, r.choice(26, size=4, replace=False, p=letter_p)] += 0.8 * np.array(
            [0.5, 0.25, 0.15, 0.1]
        )
    cumulative = np.cumsum(successors, axis=1)
    cumulative /= cumulative[:, -1:]
    n_lex = 3000
    lengths = r.integers(1, 10, n_lex)
    spelled = np.empty((n_lex, 9), dtype=np.int64)
    spelled[:, 0] = r.choice(26, size=n_lex, p=letter_p)
    for pos in range(1, 9):
        u = r.random(n_lex)[:, None]
        spelled[:, pos] = (u > cumulative[spelled[:, pos - 1]]).sum(axis=1)
    rare = np.array([alphabet[c] for c in "0123456789äæéë-'"])
    lexicon = []
    for word, length in zip(letters[np.minimum(spelled, 25)], lengths, strict=True):
        word = word[:length].copy()
        if r.random() < 0.02:
            word[int(r.integers(0, length))] = r.choice(rare)
        lexicon.append(word)
    separators = [np.array([alphabet[c] for c in s]) for s in (" ", ", ", ". ", "\n", "; ", '" ')]
    lexicon += separators
    sep_p = np.array([0.84, 0.07, 0.05, 0.025, 0.01, 0.005])

    lengths = np.array([len(w) for w in lexicon])
    flat_lex = np.concatenate(lexicon)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])

    s = np.random.default_rng([seed, 22])
    n_words = n_chars // 4 + 16  # average word + separator is > 4 characters
    zipf = 1.0 / (np.arange(3000) + 5.0)
    word_ids = s.choice(3000, size=n_words, p=zipf / zipf.sum())
    sep_ids = 3000 + s.choice(len(separators), size=n_words, p=sep_p)
    tokens = np.stack([word_ids, sep_ids], axis=1).reshape(-1)
    token_len = lengths[tokens]
    starts = np.cumsum(token_len) - token_len
    within = np.arange(int(token_len.sum())) - np.repeat(starts, token_len)
    chars = flat_lex[np.repeat(offsets[tokens], token_len) + within]
    return chars[:n_chars].astype(np.int32)


def window_count(n_chars: int, maxlen: int = 40, step: int = 3) -> int:
    """How many (window, next char) pairs the text example cuts from n_chars characters."""
    return len(range(0, max(n_chars - maxlen, 0), step))


def text_windows(
    chars: np.ndarray, n: int, *, maxlen: int = 40, step: int = 3
) -> tuple[np.ndarray, np.ndarray]:
    """The example's training pairs: one-hot windows (n, maxlen, N_CHARS) bool, next char."""
    starts = np.arange(n) * step
    idx = chars[starts[:, None] + np.arange(maxlen)]
    x = np.eye(N_CHARS, dtype=bool)[idx]
    y = chars[starts + maxlen].astype(np.int32)
    return x, y


def encode_text(text: str) -> np.ndarray:
    """Character indices for ``text`` (lower-cased, as in the example) in N_CHARS symbols.

    Characters of TEXT_ALPHABET keep their slot. A corpus with other characters keeps its
    most frequent ones, reusing the slots its text does not need; whatever still does not
    fit shares the last slot. So any text trains the same model shape.
    """
    text = text.lower()
    table = {c: i for i, c in enumerate(TEXT_ALPHABET)}
    counts: dict[str, int] = {}
    for c in text:
        counts[c] = counts.get(c, 0) + 1
    unused = [i for c, i in table.items() if c not in counts]
    extra = sorted((c for c in counts if c not in table), key=lambda c: -counts[c])
    for c in extra:
        table[c] = unused.pop(0) if unused else N_CHARS - 1
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    lookup = {ord(c): i for c, i in table.items()}
    uniq, inverse = np.unique(codes, return_inverse=True)
    return np.array([lookup[int(u)] for u in uniq], dtype=np.int32)[inverse]


def load_text(data_dir: str | os.PathLike | None) -> np.ndarray:
    """Encoded characters of nietzsche.txt in the data dir, or of the text file named.

    ``data_dir`` may name a text file directly (``--data-dir my_corpus.txt``) to train on
    any corpus; otherwise ``nietzsche.txt`` in the data directory is used (downloaded as
    the Keras example does when absent).
    """
    if data_dir and Path(data_dir).expanduser().is_file():
        path = Path(data_dir).expanduser()
    else:
        directory = resolve_data_dir(data_dir)
        path = _fetch("The Nietzsche text", "nietzsche.txt", NIETZSCHE_URL, directory)
    return encode_text(path.read_text(encoding="utf-8", errors="replace"))


def text_dataset(
    source: str,
    *,
    data_dir: str | os.PathLike | None,
    samples: int | None,
    seed: int,
    maxlen: int = 40,
    step: int = 3,
) -> dict[str, np.ndarray]:
    """The text example's (one-hot window, next character) pairs, capped to ``samples``."""
    if source == "synthetic":
        n = capped(window_count(NIETZSCHE_CHARS, maxlen, step), samples)
        chars = synthetic_corpus(n * step + maxlen + 1, seed=seed)
    elif source == "real":
        chars = load_text(data_dir)
        n = capped(window_count(len(chars), maxlen, step), samples)
        if n == 0:
            raise ValueError(f"the text has {len(chars)} characters; it needs > {maxlen}")
    else:
        raise ValueError(f"unknown data source {source!r} (expected 'synthetic' or 'real')")
    x, y = text_windows(chars, n, maxlen=maxlen, step=step)
    return {"x": x, "y": y}
