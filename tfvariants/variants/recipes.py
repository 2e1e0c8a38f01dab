"""The built-in variants, written as the same tables a user's ``tfvariants.toml`` has.

Three families (docs/builds.md says what each changes and what it does not):

- where TensorFlow runs: ``local`` (this interpreter), ``pip``, ``compiled``, ``gpu``
  (container images built by ``make build-*``);
- environments tfvariants builds from requirement specs (kind ``requirements``):
  another TensorFlow release, or Keras on JAX or PyTorch;
- overlays (a ``base`` and nothing but ``env``/``keras``): oneDNN on/off, a cap on the
  instruction set oneDNN may use, XLA. Alone they apply to ``local``; ``BASE+OVERLAY``
  applies them to any variant (``tf-2.18+isa-sse41``).
"""

from __future__ import annotations

from typing import Any

# The TensorFlow version the built-in images are built for (builds/builds.mk TF_VERSION).
TF_VERSION = "2.21.0"

# Every TensorFlow built-in pins oneDNN explicitly: its default depends on the CPU
# (on only with AVX512_VNNI/BF16/AMX), and a variant must mean the same on every host.
_ONEDNN_ON = {"TF_ENABLE_ONEDNN_OPTS": "1"}

# Keras 3 release the JAX and PyTorch environments use (the one TensorFlow 2.21 ships with).
KERAS_SPEC = "keras==3.15.*"
# PyTorch's own CPU-only wheels: the package index's default torch is a multi-GB CUDA build.
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# What TensorFlow 2.14 needs beside its own wheel's metadata (it allows numpy 2).
TF_214_PINS = ("numpy<2",)
# The compiled-vs-stock question on one release: the stock wheel first (the baseline),
# then the compiled builds (`tfvariants compare --preset compiled`).
COMPILED_STOCK = "tf-2.14"
COMPILED_BUILDS = ("intel-2.14", "intel-avx512-2.14")


def _on_local(env: dict[str, str], description: str) -> dict[str, Any]:
    """An overlay of environment variables on this interpreter's TensorFlow."""
    return {"base": "local", "env": env, "description": description}


def _isa_cap(isa: str, what: str) -> dict[str, Any]:
    """An overlay that caps oneDNN's kernels at an instruction set."""
    return _on_local({"ONEDNN_MAX_CPU_ISA": isa}, f"oneDNN kernels capped at {what}")


BUILTIN_TABLES: dict[str, dict[str, Any]] = {
    "local": {
        "kind": "local",
        "env": _ONEDNN_ON,
        "description": "TensorFlow installed in this interpreter (pip wheel)",
        "build": "make install",
    },
    "pip": {
        "kind": "image",
        "image": f"tfvariants/pip:{TF_VERSION}",
        "env": _ONEDNN_ON,
        "description": "stock tensorflow-cpu wheel (AVX) in a container",
        "build": "make build-pip",
    },
    "compiled": {
        "kind": "image",
        "image": f"tfvariants/compiled:{TF_VERSION}",
        "env": _ONEDNN_ON,
        "description": "TensorFlow built from source with bazel for chosen CPU instructions",
        "build": "make build-compiled",
    },
    "gpu": {
        "kind": "image",
        "image": f"tfvariants/gpu:{TF_VERSION}",
        "env": _ONEDNN_ON,
        "device": "gpu",
        "description": "tensorflow[and-cuda] on an NVIDIA GPU",
        "build": "make build-gpu",
    },
    "tf-2.18": {
        "kind": "requirements",
        "requirements": ["tensorflow-cpu==2.18.*"],
        "env": _ONEDNN_ON,
        "description": "TensorFlow 2.18 (tensorflow-cpu 2.18.*, with the Keras 3 it pulls)",
    },
    # ---- the compiled-vs-stock recipes: one release (2.14), the stock wheel and the
    # published source-compiled builds (docs/builds.md has each one's instruction census).
    # TF 2.14 predates numpy 2 ("Unable to convert function return value to a Python
    # type" is all numpy 2 leaves of its error): the pin is part of the recipe.
    "tf-2.14": {
        "kind": "requirements",
        "requirements": ["tensorflow-cpu==2.14.0", *TF_214_PINS],
        "env": _ONEDNN_ON,
        "description": "stock tensorflow-cpu 2.14.0 (AVX baseline, Keras 2.14): the "
        "compiled builds' reference",
    },
    "intel-2.14": {
        "kind": "requirements",
        "requirements": ["intel-tensorflow==2.14.0", *TF_214_PINS],
        "env": _ONEDNN_ON,
        "description": "intel-tensorflow 2.14.0: Intel's source build (AVX baseline like "
        "stock, its own oneDNN build, oneDNN always on)",
    },
    "intel-avx512-2.14": {
        "kind": "requirements",
        "requirements": ["intel-tensorflow-avx512==2.14.0", *TF_214_PINS],
        "env": _ONEDNN_ON,
        "description": "intel-tensorflow-avx512 2.14.0: compiled for AVX-512 + FMA "
        "(SIGILL on a CPU without AVX-512)",
    },
    "tf-nightly": {
        "kind": "requirements",
        "requirements": ["tf-nightly"],
        "env": _ONEDNN_ON,
        "description": "TensorFlow's nightly build (tf-nightly: the newest dev wheel)",
    },
    "keras-jax": {
        "kind": "requirements",
        "requirements": ["jax[cpu]==0.10.2", KERAS_SPEC],
        "keras_backend": "jax",
        "description": "Keras 3 on JAX 0.10.2 (CPU jaxlib), no TensorFlow",
    },
    "keras-torch": {
        "kind": "requirements",
        "requirements": ["torch", KERAS_SPEC],
        "index_urls": [TORCH_CPU_INDEX],
        "keras_backend": "torch",
        "description": "Keras 3 on PyTorch (CPU-only wheel from PyTorch's index), no TensorFlow",
    },
    # ---- overlays: environment variables or compile options on top of a base ----
    "xla": {
        "base": "local",
        "keras": {"jit_compile": True},
        "description": "XLA-compiled models (jit_compile): host-ISA code generated at run time",
    },
    "onednn-on": _on_local(
        {"TF_ENABLE_ONEDNN_OPTS": "1"}, "TensorFlow's oneDNN custom operations on"
    ),
    "onednn-off": _on_local(
        {"TF_ENABLE_ONEDNN_OPTS": "0"}, "TensorFlow's oneDNN custom operations off (Eigen kernels)"
    ),
    "isa-sse41": _isa_cap("SSE41", "SSE4.1 (a stand-in for an SSE4 build)"),
    "isa-avx2": _isa_cap("AVX2", "AVX2"),
    "isa-avx512": _isa_cap("AVX512_CORE", "AVX-512 (Skylake-SP subsets, no VNNI/BF16)"),
}
