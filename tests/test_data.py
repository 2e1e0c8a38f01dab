"""Synthetic data: shapes, determinism, and learnable structure (numpy only, fast)."""

from __future__ import annotations

import numpy as np
import pytest

from workloads import data


def nearest_template_accuracy(x, y, x_val, y_val, classes=10) -> float:
    flat, flat_val = x.reshape(len(x), -1), x_val.reshape(len(x_val), -1)
    means = np.stack([flat[y == c].mean(axis=0) for c in range(classes)])
    dist = ((flat_val[:, None, :] - means[None]) ** 2).sum(axis=-1)
    return float((dist.argmin(axis=1) == y_val).mean())


@pytest.mark.parametrize("shape", [(28, 28, 1), (32, 32, 3)])
def test_images_shape_range_and_8bit_grid(shape):
    x, y, x_val, y_val = data.synthetic_images(300, shape, seed=0, n_val=50)
    assert x.shape == (300, *shape) and x_val.shape == (50, *shape)
    assert x.dtype == np.float32 and y.dtype == np.int32
    assert 0.0 <= x.min() and x.max() <= 1.0
    assert np.allclose(x * 255, np.round(x * 255), atol=1e-3)  # scaled uint8 values
    assert set(np.unique(y)) == set(range(10))


def test_images_are_deterministic_by_seed():
    a = data.synthetic_images(64, (28, 28, 1), seed=3, n_val=8)
    b = data.synthetic_images(64, (28, 28, 1), seed=3, n_val=8)
    c = data.synthetic_images(64, (28, 28, 1), seed=4, n_val=8)
    for u, v in zip(a, b, strict=True):
        assert np.array_equal(u, v)
    assert not np.array_equal(a[0], c[0])


def test_images_prefix_is_stable_under_a_bigger_sample():
    # A capped run must see the same first samples as a bigger one (same templates).
    small = data.synthetic_images(100, (28, 28, 1), seed=0)[0]
    big = data.synthetic_images(3000, (28, 28, 1), seed=0)[0]
    assert np.array_equal(small, big[:100])


@pytest.mark.parametrize("shape", [(28, 28, 1), (32, 32, 3)])
def test_images_have_learnable_classes(shape):
    x, y, x_val, y_val = data.synthetic_images(500, shape, seed=1, n_val=200)
    assert nearest_template_accuracy(x, y, x_val, y_val) > 0.5  # chance is 0.1
    shuffled = np.random.default_rng(0).permutation(y)
    assert nearest_template_accuracy(x, shuffled, x_val, y_val) < 0.4  # labels matter


def test_image_dataset_caps_and_keeps_the_test_ratio():
    d = data.image_dataset("mnist", "synthetic", data_dir=None, samples=600, seed=0, shape=(784,))
    assert d["x"].shape == (600, 784) and d["y"].shape == (600,)
    assert len(d["x_val"]) == 100  # 10k/60k of 600
    d = data.image_dataset(
        "cifar10", "synthetic", data_dir=None, samples=50, seed=0, shape=(32, 32, 3)
    )
    assert d["x"].shape == (50, 32, 32, 3) and len(d["y_val"]) == 10


def test_unknown_source_is_refused():
    with pytest.raises(ValueError, match="unknown data source"):
        data.image_dataset("mnist", "imagenet", data_dir=None, samples=1, seed=0, shape=(784,))


def test_capped_rejects_nonpositive():
    assert data.capped(100, None) == 100 and data.capped(100, 500) == 100
    with pytest.raises(ValueError):
        data.capped(100, 0)


def test_reviews_follow_imdb_conventions():
    seqs, labels = data.synthetic_reviews(400, seed=0)
    assert len(seqs) == 400 and labels.dtype == np.int32
    assert set(np.unique(labels)) == {0, 1}
    assert all(s[0] == data.IMDB_START for s in seqs)
    ids = np.concatenate(seqs)
    assert ids.min() >= 1 and ids.max() < 20000
    mean_len = np.mean([len(s) for s in seqs])
    assert 150 < mean_len < 330  # IMDb averages 238 tokens


def test_reviews_sentiment_is_learnable():
    seqs, labels = data.synthetic_reviews(600, seed=2)
    positive, negative = data.sentiment_word_sets(2)
    # Only the last 100 tokens, as imdb_bilstm sees them.
    score = np.array(
        [np.isin(s[-100:], positive).sum() - np.isin(s[-100:], negative).sum() for s in seqs]
    )
    assert ((score > 0) == (labels == 1)).mean() > 0.75  # chance is 0.5


def test_reviews_are_deterministic_and_streams_differ():
    a, la = data.synthetic_reviews(50, seed=0, stream=1)
    b, lb = data.synthetic_reviews(50, seed=0, stream=1)
    c, _ = data.synthetic_reviews(50, seed=0, stream=2)
    assert np.array_equal(la, lb) and all(np.array_equal(u, v) for u, v in zip(a, b, strict=True))
    assert not all(len(u) == len(v) and np.array_equal(u, v) for u, v in zip(a, c, strict=True))


def test_pad_sequences_matches_keras_defaults():
    seqs = [np.array([1, 2, 3]), np.array([4, 5, 6, 7, 8]), np.array([], dtype=np.int32)]
    out = data.pad_sequences(seqs, 4)
    # padding='pre', truncating='pre': zeros in front, the LAST maxlen ids kept
    assert out.tolist() == [[0, 1, 2, 3], [5, 6, 7, 8], [0, 0, 0, 0]]


def test_hashed_bigrams_append_one_id_per_pair_in_range():
    seqs = [np.array([1, 5, 9, 5]), np.array([7])]
    out = data.add_hashed_bigrams(seqs, num_words=20, buckets=100)
    assert out[0][:4].tolist() == [1, 5, 9, 5] and len(out[0]) == 7 and len(out[1]) == 1
    assert all(21 <= b < 121 for b in out[0][4:])
    again = data.add_hashed_bigrams([np.array([5, 9])], num_words=20, buckets=100)
    assert again[0][-1] == out[0][5]  # the same bigram gets the same id


def test_corpus_uses_a_nietzsche_like_alphabet():
    chars = data.synthetic_corpus(20000, seed=0)
    assert data.N_CHARS == 57 and len(set(data.TEXT_ALPHABET)) == 57
    assert chars.shape == (20000,) and chars.min() >= 0 and chars.max() < 57
    counts = np.bincount(chars, minlength=57) / len(chars)
    space = data.TEXT_ALPHABET.index(" ")
    assert counts.argmax() == space and 0.1 < counts[space] < 0.25
    assert len(np.unique(chars)) > 30


def test_text_windows_are_the_examples_pairs():
    chars = np.arange(100) % 57
    x, y = data.text_windows(chars, 5, maxlen=40, step=3)
    assert x.shape == (5, 40, 57) and x.dtype == bool and x.sum() == 5 * 40
    assert x[2].argmax(axis=1).tolist() == chars[6:46].tolist() and y[2] == chars[46]
    assert data.window_count(data.NIETZSCHE_CHARS) == 200285


def test_corpus_next_char_is_predictable():
    chars = data.synthetic_corpus(60000, seed=5)
    train, test = chars[:40000], chars[40000:]
    # A bigram (previous two chars -> next) table beats the majority-char rate by far.
    table = np.zeros((57, 57, 57))
    np.add.at(table, (train[:-2], train[1:-1], train[2:]), 1)
    pred = table[test[:-2], test[1:-1]].argmax(axis=1)
    majority = np.bincount(train, minlength=57).max() / len(train)
    assert (pred == test[2:]).mean() > majority + 0.15


def test_text_dataset_caps_samples():
    d = data.text_dataset("synthetic", data_dir=None, samples=300, seed=0)
    assert d["x"].shape == (300, 40, 57) and d["y"].shape == (300,)
    assert "x_val" not in d  # the original script had no validation set


def test_encode_text_maps_any_corpus_onto_57_symbols():
    codes = data.encode_text("Hello, World!\n")
    assert codes.tolist() == [data.TEXT_ALPHABET.index(c) for c in "hello, world!\n"]
    exotic = "".join(chr(0x4E00 + i) for i in range(80)) + "abc"
    codes = data.encode_text(exotic)
    assert codes.max() < 57 and len(codes) == 83
    assert codes[-3:].tolist() == [data.TEXT_ALPHABET.index(c) for c in "abc"]
