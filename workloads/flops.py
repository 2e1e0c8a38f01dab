"""FLOPs per training step from per-layer formulas.

Convention (the same one TensorFlow's profiler uses for MatMul/Conv2D, and the usual one
in papers):

- One multiply-add counts as 2 FLOPs. Counted: Dense, Conv2D and the matrix products of
  LSTM (all 2 FLOPs per multiply-add), and global average pooling (1 FLOP per input
  element: it is all the fastText model computes besides its tiny Dense). Left out:
  biases, activations, max pooling (comparisons), dropout, embedding look-ups, data
  augmentation, the loss and the optimizer's update. They are memory-bound and small
  next to the products for the CNN/LSTM models (well under 1 %); the fastText model's
  step time is dominated by them, so its GFLOP/s is not comparable to the others'.
- A training step costs 3x the forward pass: the backward pass computes the gradient with
  respect to the inputs and with respect to the weights, each about as costly as the
  forward product. (The first layer does not need its input gradient; the convention
  ignores that, as the profiler-based counts of the 2017-era papers did.)

All ``*_flops`` functions return FORWARD FLOPs for ONE sample; :func:`training_step`
turns a forward-per-sample count into the training FLOPs of one batch.

:func:`model_forward_flops` walks a built Keras model with the same formulas; the tests use
it to check that each workload's hand-written formula matches the model it builds.
"""

from __future__ import annotations

import math
from typing import Any

BACKWARD_FACTOR = 2.0  # backward ~ 2x forward (input gradients + weight gradients)


def dense_flops(inputs: int, units: int, *, positions: int = 1) -> float:
    """Dense layer: 2*in*out per sample (times positions when applied per timestep)."""
    return 2.0 * inputs * units * positions


def conv_output_size(size: int, kernel: int, padding: str = "valid", stride: int = 1) -> int:
    """Output height/width of a convolution or pooling window, as Keras computes it."""
    if padding == "same":
        return math.ceil(size / stride)
    return (size - kernel) // stride + 1


def conv2d_flops(
    out_height: int, out_width: int, kernel: int, in_channels: int, out_channels: int
) -> float:
    """Conv2D: 2*k*k*cin*cout per output position."""
    return 2.0 * kernel * kernel * in_channels * out_channels * out_height * out_width


def lstm_flops(timesteps: int, inputs: int, units: int) -> float:
    """LSTM: per timestep 4 gates, each a product of [x_t, h_{t-1}] with a weight matrix."""
    return timesteps * 4 * 2.0 * (inputs + units) * units


def average_pool_flops(input_elements: int) -> float:
    """Global average pooling: one add per input element (the divide is negligible)."""
    return float(input_elements)


def training_step(forward_per_sample: float, batch_size: int) -> float:
    """Training FLOPs of one step: (1 + BACKWARD_FACTOR) x forward, for the whole batch."""
    return (1.0 + BACKWARD_FACTOR) * forward_per_sample * batch_size


def _dims(shape: Any) -> list[int]:
    return [int(d) for d in tuple(shape)[1:]]


def layer_forward_flops(layer: Any) -> float:
    """Forward FLOPs per sample of one built Keras layer (0 for layers not counted)."""
    kind = type(layer).__name__
    if kind == "Dense":
        dims = _dims(layer.input.shape)
        positions = math.prod(dims[:-1]) if len(dims) > 1 else 1
        return dense_flops(dims[-1], layer.units, positions=positions)
    if kind == "Conv2D":
        kernel = layer.kernel_size
        if kernel[0] != kernel[1]:
            raise ValueError(f"non-square kernel in {layer.name}")
        cin = _dims(layer.input.shape)[-1]
        out_h, out_w = _dims(layer.output.shape)[:2]
        return conv2d_flops(out_h, out_w, kernel[0], cin, layer.filters)
    if kind == "LSTM":
        timesteps, inputs = _dims(layer.input.shape)[:2]
        return lstm_flops(timesteps, inputs, layer.units)
    if kind in ("GlobalAveragePooling1D", "GlobalAveragePooling2D"):
        return average_pool_flops(math.prod(_dims(layer.input.shape)))
    if kind == "Bidirectional":
        return 2 * layer_forward_flops_with_input(layer.forward_layer, layer.input.shape)
    return 0.0


def layer_forward_flops_with_input(layer: Any, input_shape: Any) -> float:
    """Like layer_forward_flops for a wrapped recurrent layer that has no input of its own."""
    if type(layer).__name__ != "LSTM":
        raise ValueError(f"cannot count {type(layer).__name__} inside a wrapper")
    timesteps, inputs = _dims(input_shape)[:2]
    return lstm_flops(timesteps, inputs, layer.units)


def model_forward_flops(model: Any) -> float:
    """Forward FLOPs per sample of a built Keras model (sum over its layers)."""
    total = 0.0
    for layer in model.layers:
        if hasattr(layer, "layers") and type(layer).__name__ in ("Sequential", "Functional"):
            total += model_forward_flops(layer)
        else:
            total += layer_forward_flops(layer)
    return total
