"""FLOP formulas against hand computations."""

from __future__ import annotations

import pytest

from workloads import flops


def test_mnist_mlp_matches_a_hand_count():
    from workloads import mnist_mlp

    macs = 784 * 512 + 512 * 512 + 512 * 10  # multiply-adds per sample, forward
    assert macs == 668_672  # = parameters (669,706) minus the 1,034 biases
    assert mnist_mlp.flops_per_step(128) == 3 * 2 * macs * 128
    assert mnist_mlp.flops_per_step(128) == pytest.approx(513.5e6, rel=1e-3)


def test_conv_output_sizes_follow_keras():
    assert flops.conv_output_size(28, 3) == 26
    assert flops.conv_output_size(32, 3, "same") == 32
    assert flops.conv_output_size(15, 3, "same") == 15
    assert flops.conv_output_size(28, 2, stride=2) == 14


def test_mnist_cnn_forward_by_hand():
    from workloads import mnist_cnn

    conv1 = 2 * 3 * 3 * 1 * 32 * 26 * 26
    conv2 = 2 * 3 * 3 * 32 * 64 * 24 * 24
    dense = 2 * 12 * 12 * 64 * 128 + 2 * 128 * 10
    assert mnist_cnn.forward_flops_per_sample() == conv1 + conv2 + dense == 23_984_896


def test_cifar10_cnn_forward_by_hand():
    from workloads import cifar10_cnn

    convs = 2 * 9 * (3 * 32 * 32 * 32 + 32 * 32 * 30 * 30 + 32 * 64 * 15 * 15 + 64 * 64 * 13 * 13)
    dense = 2 * (6 * 6 * 64 * 512 + 512 * 10)
    assert cifar10_cnn.forward_flops_per_sample() == convs + dense


def test_lstm_formula_and_bilstm():
    from workloads import imdb_bilstm

    assert flops.lstm_flops(1, 10, 4) == 4 * 2 * (10 + 4) * 4
    per_direction = 100 * 4 * 2 * (128 + 64) * 64
    assert imdb_bilstm.forward_flops_per_sample() == 2 * per_direction + 2 * 128


def test_text_generation_and_fasttext():
    from workloads import imdb_fasttext, text_generation

    assert text_generation.forward_flops_per_sample() == 40 * 8 * (57 + 128) * 128 + 2 * 128 * 57
    assert imdb_fasttext.forward_flops_per_sample() == 400 * 50 + 2 * 50


def test_training_step_is_three_forwards_per_sample_times_batch():
    assert flops.training_step(100.0, 32) == 3 * 100 * 32
