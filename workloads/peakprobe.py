"""The attainable peak of a variant's TensorFlow at a cell's pinning: a short dense
matrix product and one convolution, best of a few timed repetitions.

    python -m workloads.peakprobe --result PATH     (run inside the variant)

The host starts it like a worker (tfvariants.variants.peak): pinned to the cell's CPUs
(affinity or --cpuset-cpus) with the cell's thread variables, once per binary, CPU set
and thread count, never inside a timed cell. The pools are set before TensorFlow's
runtime initialises (they cannot be changed afterwards). ``ONEDNN_VERBOSE=1`` makes
oneDNN name the instruction set its kernels dispatch to; fd 1 is captured to read it.
Standard library only until TensorFlow is imported.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from typing import Any

from workloads.envprobe import capture_fd

VERSION = 2  # 2: the memory bandwidth (in-place add) and the GPU's name
# Matrix sizes: the larger one only when the smaller finishes fast (a slow CPU or an
# SSE4.1 cap at one thread would spend seconds per product at 2048).
MATMUL_SIZES = (1024, 2048)
BIGGER_BELOW_S = 0.05
# One 3x3 convolution, 64 -> 64 channels on 56x56 (a ResNet stage), batch 8.
CONV_SHAPE = (8, 56, 56, 64)
CONV_KERNEL = (3, 3, 64, 64)
# Memory bandwidth: STREAM's "add" in place (a += b: two arrays read, one written, no
# new output allocated per call, whose first-touch page faults would be timed too), on
# arrays 8x the last-level cache (at least 64 MiB, at most 512 MiB each).
STREAM_MIN_BYTES, STREAM_MAX_BYTES = 64 << 20, 512 << 20
KERNEL_BUDGET_S = 1.0  # timed repetitions per kernel after the warm-up
MIN_REPS, MAX_REPS = 3, 12


def best_time(
    run: Callable[[], Any],
    budget_s: float = KERNEL_BUDGET_S,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[float, int]:
    """(fastest of several timed calls, how many): one warm-up call first, then at
    least MIN_REPS and as many more as fit in ``budget_s``. The best, not the mean:
    a peak is what the kernel can do, and a busy host only ever slows it down."""
    run()
    times: list[float] = []
    spent = 0.0
    while len(times) < MIN_REPS or (spent < budget_s and len(times) < MAX_REPS):
        t0 = clock()
        run()
        times.append(clock() - t0)
        spent += times[-1]
    return min(times), len(times)


def matmul_flops(n: int) -> float:
    return 2.0 * n**3  # one multiply-add = 2 FLOPs (the workloads' convention)


def conv_flops(shape: tuple[int, ...], kernel: tuple[int, ...]) -> float:
    batch, height, width, _ = shape
    kh, kw, cin, cout = kernel
    return 2.0 * batch * height * width * cout * kh * kw * cin  # 'SAME', stride 1


def _kernels(tf: Any, device: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    with tf.device(device):
        for n in MATMUL_SIZES:
            a = tf.random.uniform((n, n), dtype=tf.float32)
            b = tf.random.uniform((n, n), dtype=tf.float32)

            def product(a: Any = a, b: Any = b) -> Any:
                return tf.matmul(a, b).numpy()

            best, reps = best_time(product)
            out[f"matmul_{n}"] = {
                "flops": matmul_flops(n),
                "best_s": best,
                "reps": reps,
                "gflops_per_s": matmul_flops(n) / best / 1e9,
            }
            if best > BIGGER_BELOW_S:
                break
        x = tf.random.uniform(CONV_SHAPE, dtype=tf.float32)
        k = tf.random.uniform(CONV_KERNEL, dtype=tf.float32)
        best, reps = best_time(lambda: tf.nn.conv2d(x, k, 1, "SAME").numpy())
        flops = conv_flops(CONV_SHAPE, CONV_KERNEL)
        out["conv2d_3x3"] = {
            "flops": flops,
            "best_s": best,
            "reps": reps,
            "gflops_per_s": flops / best / 1e9,
        }
    return out


def gpu_name(tf: Any, gpu: Any) -> str | None:
    """The GPU's model as its driver names it ("Tesla T4", "NVIDIA A100-SXM4-40GB"): the
    host looks its datasheet peak up by it (tfvariants.variants.peak.gpu)."""
    try:
        details = tf.config.experimental.get_device_details(gpu)
    except (AttributeError, RuntimeError, ValueError):  # an older TF, or no details
        return None
    name = details.get("device_name") if isinstance(details, dict) else None
    return str(name) if name else None


def llc_bytes(sys_root: str = "/sys") -> int | None:
    """The largest cache of CPU 0 (its last level), from sysfs; None when unknown."""
    found: list[int] = []
    base = os.path.join(sys_root, "devices/system/cpu/cpu0/cache")
    for index in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        try:
            with open(os.path.join(base, index, "size"), encoding="ascii") as fh:
                text = fh.read().strip()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
        digits = text.rstrip("KMGkmg")
        if digits.isdigit():
            found.append(int(digits) * scale)
    return max(found) if found else None


def stream_elements(llc: int | None) -> int:
    """float32 elements per array: 8x the last-level cache, within the bounds above."""
    wanted = 8 * llc if llc else STREAM_MIN_BYTES
    return min(max(wanted, STREAM_MIN_BYTES), STREAM_MAX_BYTES) // 4


def _bandwidth(tf: Any, device: str) -> dict[str, Any]:
    """GB/s of a += b in place (3 x 4 bytes moved per element: STREAM's counting)."""
    n = stream_elements(llc_bytes() if device == "/CPU:0" else None)
    with tf.device(device):
        a = tf.Variable(tf.zeros((n,), dtype=tf.float32))
        b = tf.ones((n,), dtype=tf.float32)

        def add() -> Any:
            a.assign_add(b)
            return a[:1].numpy()  # waits for the update (a GPU runs asynchronously)

        best, reps = best_time(add)
    moved = 3.0 * 4 * n
    return {"bytes": moved, "best_s": best, "reps": reps, "gb_per_s": moved / best / 1e9}


def _threads_from_env() -> tuple[int, int]:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    intra = int(os.environ.get("TF_NUM_INTRAOP_THREADS") or cpus or 1)
    inter = int(os.environ.get("TF_NUM_INTEROP_THREADS") or 1)
    return intra, inter


def probe(device: str = "cpu") -> dict[str, Any]:
    """The attainable peak of this interpreter's TensorFlow, as pinned by the caller."""
    from workloads import cpuload
    from workloads.onednn import parse_verbose

    backend = os.environ.get("KERAS_BACKEND") or "tensorflow"
    if backend != "tensorflow":
        return {
            "version": VERSION,
            "measured": False,
            "why": f"the peak probe runs TensorFlow's kernels, not {backend}'s",
        }
    intra, inter = _threads_from_env()
    t_start = time.perf_counter()

    def measure() -> dict[str, Any]:
        import tensorflow as tf  # deliberately late: pools are set before the first op

        tf.config.threading.set_intra_op_parallelism_threads(intra)
        tf.config.threading.set_inter_op_parallelism_threads(inter)
        gpus = tf.config.list_physical_devices("GPU")
        if device == "gpu" and not gpus:
            return {"tf": tf.__version__, "kernels": None, "why": "no GPU visible to TensorFlow"}
        before = cpuload.snapshot()
        on = "/GPU:0" if device == "gpu" else "/CPU:0"
        kernels = _kernels(tf, on)
        memory = _bandwidth(tf, on)
        # Other processes on these CPUs lower a peak: the host re-probes a disturbed one.
        used = cpuload.usage(before, cpuload.snapshot(), sorted(os.sched_getaffinity(0)))
        found = {"tf": tf.__version__, "kernels": kernels, "memory": memory}
        found["others_share"] = used.get("others_share")
        return {**found, "gpu_name": gpu_name(tf, gpus[0])} if device == "gpu" else found

    os.environ.setdefault("ONEDNN_VERBOSE", "1")
    found, text = capture_fd(1, measure)  # oneDNN's verbose lines
    kernels = found.get("kernels")
    verbose = parse_verbose(text)
    out: dict[str, Any] = {
        "version": VERSION,
        "device": device,
        "measured": bool(kernels),
        "tf_version": found.get("tf"),
        "intra_op": intra,
        "inter_op": inter,
        "affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "kernels": kernels or {},
        "onednn_isa": verbose.get("isa"),
        "onednn_primitives": verbose.get("primitives"),
        "wall_s": time.perf_counter() - t_start,
        "others_share": found.get("others_share"),
        "gpu_name": found.get("gpu_name"),
        "memory": found.get("memory"),
    }
    if kernels:
        best = max(kernels.values(), key=lambda k: k["gflops_per_s"])
        out["gflops_per_s"] = best["gflops_per_s"]
        out["best_kernel"] = next(n for n, k in kernels.items() if k is best)
    else:
        out["why"] = found.get("why")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workloads.peakprobe")
    parser.add_argument("--result", help="write JSON here (atomically) instead of stdout")
    args = parser.parse_args(argv)
    data = probe(os.environ.get("TFV_PEAK_DEVICE", "cpu"))
    if args.result:
        from workloads.protocol import write_json_atomic

        write_json_atomic(args.result, data)
    else:
        print(json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    from workloads.protocol import exit_now

    exit_now(main())
