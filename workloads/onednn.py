"""Which oneDNN instruction set a variant really uses, and this host's default.

    python -m workloads.onednn --result PATH      (run inside the variant, once per compare)

Two short child processes of this interpreter each import the backend and run one
small convolution and one matrix product with ``ONEDNN_VERBOSE=1``: one with the
variant's environment as given, one without the oneDNN settings (ISA cap and
TF_ENABLE_ONEDNN_OPTS), which is this host's default. oneDNN prints the ISA it
dispatches to (``onednn_verbose,...,info,cpu,isa:Intel AVX2``) when its first primitive
is created. Verbose output is large for real models (~28 MB for 20 convolutions), so
this probe is never part of a timed cell. Standard library only in this process.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from typing import Any

# The variables whose effect is measured against the host default.
ONEDNN_SETTINGS = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "TF_ENABLE_ONEDNN_OPTS")

_SNIPPETS = {
    "tensorflow": (
        "import json, numpy as np, tensorflow as tf, keras\n"
        "x = tf.constant(np.ones((2, 16, 16, 8), np.float32))\n"
        "k = tf.constant(np.ones((3, 3, 8, 8), np.float32))\n"
        "tf.nn.conv2d(x, k, 1, 'SAME').numpy()\n"
        "tf.matmul(tf.ones((16, 16)), tf.ones((16, 16))).numpy()\n"
        "print('TFV_BACKEND ' + json.dumps({'version': tf.__version__,"
        " 'keras': keras.__version__}))\n"
    ),
    "torch": (
        "import json, torch, keras\n"
        "torch.nn.functional.conv2d(torch.ones(2, 8, 16, 16), torch.ones(8, 8, 3, 3))\n"
        "torch.ones(16, 16) @ torch.ones(16, 16)\n"
        "print('TFV_BACKEND ' + json.dumps({'version': torch.__version__,"
        " 'keras': keras.__version__}))\n"
    ),
}

_ISA = re.compile(r"onednn_verbose,(?:v\d+,)?info,cpu,isa:(.+)")
_VERSION = re.compile(r"onednn_verbose,(?:v\d+,)?info,oneDNN (v[0-9.]+)")
_EXEC = re.compile(r"onednn_verbose,(?:v\d+,)?(?:primitive,)?exec,cpu,([a-z_]+)")


def parse_verbose(text: str) -> dict[str, Any]:
    """ISA, version and primitive counts from oneDNN's verbose output, plus whether
    TensorFlow said its oneDNN custom operations are on."""
    isa = _ISA.search(text)
    version = _VERSION.search(text)
    counts: dict[str, int] = {}
    for kind in _EXEC.findall(text):
        counts[kind] = counts.get(kind, 0) + 1
    out: dict[str, Any] = {
        "isa": isa.group(1).strip() if isa else None,
        "version": version.group(1) if version else None,
        "primitives": counts,
        "custom_ops_on": "oneDNN custom operations are on" in text,
    }
    for line in text.splitlines():
        if line.startswith("TFV_BACKEND "):
            out["backend"] = json.loads(line[len("TFV_BACKEND ") :])
    return out


def _run(backend: str, env: dict[str, str]) -> dict[str, Any]:
    env = dict(env, ONEDNN_VERBOSE="1", TF_CPP_MIN_LOG_LEVEL="0")
    proc = subprocess.run(
        [sys.executable, "-c", _SNIPPETS[backend]],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    out = parse_verbose(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        out["error"] = f"exit {proc.returncode}: {tail[:300]}"
    return out


def probe(backend: str | None = None) -> dict[str, Any]:
    backend = backend or os.environ.get("KERAS_BACKEND") or "tensorflow"
    if backend not in _SNIPPETS:
        return {
            "backend": backend,
            "applies": False,
            "why": f"{backend} does not dispatch these ops to oneDNN",
        }
    env = dict(os.environ)
    default_env = {k: v for k, v in env.items() if k not in ONEDNN_SETTINGS}
    return {
        "backend": backend,
        "applies": True,
        "settings": {k: env[k] for k in ONEDNN_SETTINGS if k in env},
        "variant": _run(backend, env),
        "host_default": _run(backend, default_env),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workloads.onednn")
    parser.add_argument("--result", help="write JSON here (atomically) instead of stdout")
    args = parser.parse_args(argv)
    data = probe()
    if args.result:
        from workloads.protocol import write_json_atomic

        write_json_atomic(args.result, data)
    else:
        print(json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    from workloads.protocol import exit_now

    exit_now(main())
