"""Models to serve, each behind one compiled call.

Built-ins are Keras applications with random weights (``weights=None``: nothing is
downloaded) at their native input sizes; ``noop`` is the harness's own ceiling (numpy
only, no TensorFlow). A user model is a ``.py`` file (``SPEC`` + ``build_model(keras)``,
like a custom training workload) or a saved ``.keras`` file.

Every model is called through ``tf.function`` with a batch-polymorphic input signature:
``model.predict()`` per request costs ~4x the model itself (Keras set-up per call), so
a benchmark calling it would measure Keras, not the model. Inputs are generated images
(float32, 0..255); the application's ``preprocess_input`` is excluded from the timing,
except that the ``b64`` request form includes PNG decoding on the server.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# name -> (keras.applications class name, input height/width)
APPLICATIONS: dict[str, tuple[str, int]] = {
    "mobilenet_v2": ("MobileNetV2", 224),
    "resnet50": ("ResNet50", 224),
    "inception_v3": ("InceptionV3", 299),
    "densenet121": ("DenseNet121", 224),
    "efficientnet_b0": ("EfficientNetB0", 224),
    "nasnet_mobile": ("NASNetMobile", 224),
    "nasnet_large": ("NASNetLarge", 331),
}
NOOP = "noop"  # no model at all: what the harness itself costs
NOOP_SHAPE = (8,)


def builtin_names() -> list[str]:
    return [*APPLICATIONS, NOOP]


def is_file(name: str) -> bool:
    return name.endswith((".py", ".keras")) or os.sep in name


def label(name: str) -> str:
    """The name a model is served under (a file's stem: URL paths take no slashes)."""
    return os.path.splitext(os.path.basename(name))[0] if is_file(name) else name


def input_shape_of(name: str) -> tuple[int, ...] | None:
    """A built-in model's input shape without building it (None for files)."""
    if name == NOOP:
        return NOOP_SHAPE
    if name in APPLICATIONS:
        size = APPLICATIONS[name][1]
        return (size, size, 3)
    return None


def check_name(name: str) -> None:
    """Raise ValueError for a name that is neither built in nor an existing file
    (cheap: no TensorFlow; the host calls it too)."""
    if is_file(name):
        if not os.path.isfile(name):
            raise ValueError(f"model file not found: {name}")
        if not name.endswith((".py", ".keras")):
            raise ValueError(f"model file must be .py or .keras: {name}")
        return
    if name not in builtin_names():
        raise ValueError(
            f"unknown model {name!r} (known: {', '.join(builtin_names())}; or a .py / .keras file)"
        )


@dataclass
class Served:
    """A model ready to serve: ``predict`` takes and returns numpy batches."""

    name: str
    input_shape: tuple[int, ...]  # one instance, without the batch axis
    predict: Callable[[Any], Any]
    decode_png: Callable[[list[bytes]], Any]  # b64 request form -> a float32 batch
    encode_png: Callable[[Any], bytes]  # one instance -> PNG (client side, before the clock)
    params: int | None = None
    build_s: float = 0.0


def _noop(input_shape: tuple[int, ...] = NOOP_SHAPE) -> Served:
    import numpy as np

    def predict(batch: Any) -> Any:
        return np.zeros((len(batch), 1), dtype=np.float32)

    def decode(blobs: list[bytes]) -> Any:
        return np.zeros((len(blobs), *input_shape), dtype=np.float32)

    return Served(NOOP, input_shape, predict, decode, lambda x: bytes(np.asarray(x).tobytes()), 0)


def _user_module(path: str) -> Any:
    mod_name = "tfv_user_serving_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(mod_name, os.path.abspath(path))
    if spec is None or spec.loader is None:
        raise ValueError(f"cannot import model file: {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    spec.loader.exec_module(module)
    if not callable(getattr(module, "build_model", None)):
        raise ValueError(f"model file {path} has no function build_model(keras)")
    return module


def _build_keras(name: str, keras: Any) -> Any:
    if name in APPLICATIONS:
        cls_name, size = APPLICATIONS[name]
        cls = getattr(keras.applications, cls_name)
        return cls(weights=None, input_shape=(size, size, 3))
    if name.endswith(".keras"):
        return keras.models.load_model(name, compile=False)
    return _user_module(name).build_model(keras)


def load(name: str, threads: int | None = None, inter_op: int | None = None) -> Served:
    """Build the model and its compiled call (imports TensorFlow unless ``noop``).
    Thread pools are sized first: TensorFlow refuses once its runtime is up."""
    import time

    check_name(name)
    if name == NOOP:
        return _noop()
    t0 = time.perf_counter()
    import tensorflow as tf

    if threads:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(inter_op or 1)
    import keras
    import numpy as np

    model = _build_keras(name, keras)
    shape = tuple(int(d) for d in model.inputs[0].shape[1:])
    if any(d <= 0 for d in shape):
        raise ValueError(f"model {name}: input shape {shape} is not fully defined")
    spec = tf.TensorSpec((None, *shape), tf.float32)
    call = tf.function(lambda x: model(x, training=False), input_signature=[spec])

    def predict(batch: Any) -> Any:
        out = call(tf.convert_to_tensor(batch, dtype=tf.float32))
        if isinstance(out, (list, tuple)):
            out = out[0]
        return out.numpy()

    def decode(blobs: list[bytes]) -> Any:
        images = []
        for blob in blobs:
            img = tf.io.decode_png(blob, channels=shape[-1] if len(shape) == 3 else 0)
            images.append(tf.reshape(tf.cast(img, tf.float32), shape))
        return tf.stack(images).numpy()

    def encode(instance: Any) -> bytes:
        img = np.clip(np.asarray(instance), 0, 255).astype(np.uint8)
        if img.ndim != 3:
            raise ValueError("the b64 form needs an image input (height, width, channels)")
        return bytes(tf.io.encode_png(img).numpy())

    predict(np.zeros((1, *shape), dtype=np.float32))  # trace once, outside any timing
    return Served(
        label(name),
        shape,
        predict,
        decode,
        encode,
        int(model.count_params()),
        time.perf_counter() - t0,
    )


def inputs(served: Served, count: int, seed: int) -> Any:
    """``count`` generated instances (float32 images 0..255), reproducible by seed."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, size=(count, *served.input_shape)).astype(np.float32)
