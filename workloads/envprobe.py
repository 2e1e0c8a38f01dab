"""Environment capture: this CPU, this Python, this TensorFlow (or JAX, PyTorch) binary.

Runs inside the variant (the worker calls it after importing TensorFlow) and on the
host (``tfvariants env``). Every probe fails soft: a probe that raises just leaves its
key out, like pyperf's metadata collection. Environment variables come only from an
allowlist, so secrets in the caller's environment never reach a result file.

Run as ``python -m workloads.envprobe [--json]`` to probe an interpreter or image.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from typing import Any

# Only these environment variables are ever recorded (names, not patterns).
ENV_ALLOWLIST = (
    "TF_ENABLE_ONEDNN_OPTS",
    "TF_NUM_INTRAOP_THREADS",
    "TF_NUM_INTEROP_THREADS",
    "OMP_NUM_THREADS",
    "KMP_AFFINITY",
    "KMP_BLOCKTIME",
    "KERAS_BACKEND",
    "TF_XLA_FLAGS",
    "TF_CPP_MIN_LOG_LEVEL",
    "ONEDNN_VERBOSE",
    "CUDA_VISIBLE_DEVICES",
    "OPENBLAS_CORETYPE",
    "MALLOC_ARENA_MAX",
    "ONEDNN_MAX_CPU_ISA",
    "DNNL_MAX_CPU_ISA",
    "XLA_FLAGS",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
)

# Written by tfvariants into an environment it built from requirement specs: the specs
# and every installed distribution's version (the lock).
ENV_INFO_FILE = "tfvariants-env.json"

# ISA flags worth reporting (as /proc/cpuinfo names them); prefixes end with '*'.
ISA_FLAGS = ("sse4_1", "sse4_2", "avx", "avx2", "fma", "f16c", "avx512*", "amx*", "avx_vnni")

# cpu_feature_guard / port.cc wordings across TensorFlow versions, newest first.
# Each captures the space-separated instruction list the binary was NOT built for.
_GUARD_PATTERNS = (
    # 2.4+ (2.21 included): "... To enable the following instructions: AVX2 AVX512F FMA,
    # in other operations, rebuild TensorFlow with the appropriate compiler flags."
    re.compile(
        r"To enable the following instructions:\s*([A-Z0-9_. ]+?)\s*,?\s*in other operations"
    ),
    # 2.0-2.3: "... optimized with oneAPI Deep Neural Network Library (oneDNN)to use the
    # following CPU instructions in performance-critical operations:  AVX2 FMA"
    # (and the MKL-DNN spelling of 1.15/2.0).
    re.compile(
        r"to use the following CPU instructions in performance[- ]critical operations:"
        r"\s*([A-Z0-9_. ]+?)\s*(?:\n|To enable|$)"
    ),
    # 1.3-1.15: "Your CPU supports instructions that this TensorFlow binary was not
    # compiled to use: AVX2 FMA"
    re.compile(r"was not compiled to use:\s*([A-Z0-9_. ]+?)\s*$", re.MULTILINE),
)
# 1.0-1.2: one line per instruction: "The TensorFlow library wasn't compiled to use
# SSE4.2 instructions, but these are available on your machine ..."
_GUARD_PER_LINE = re.compile(r"wasn't compiled to use ([A-Z0-9_.]+) instructions")


def parse_missing_instructions(log_text: str) -> list[str] | None:
    """Instructions the TensorFlow binary was not compiled for, from its start-up log.

    Returns None when the log has no cpu_feature_guard message at all (e.g. a binary
    built for everything this CPU has, or logging turned off), so callers can tell
    "nothing missing" from "unknown" only together with the log level.
    """
    for pattern in _GUARD_PATTERNS:
        match = pattern.search(log_text)
        if match:
            return [tok for tok in match.group(1).replace(",", " ").split() if tok]
    per_line = _GUARD_PER_LINE.findall(log_text)
    if per_line:
        return list(dict.fromkeys(per_line))
    return None


def parse_onednn_state(log_text: str) -> str | None:
    """'on' when TensorFlow logged that oneDNN custom operations are on."""
    if "oneDNN custom operations are on" in log_text:
        return "on"
    return None


def capture_fd(fd: int, action: Callable[[], Any]) -> tuple[Any, str]:
    """Run ``action`` with file descriptor ``fd`` redirected to a temp file; return its
    result and what was written there. C++ code (TensorFlow's logging, oneDNN's verbose
    lines) writes straight to the descriptor, so Python-level redirection would miss it."""
    stream = sys.stdout if fd == 1 else sys.stderr
    stream.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), fd)
        try:
            result = action()
        finally:
            stream.flush()
            os.dup2(saved, fd)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode("utf-8", "replace")
    return result, text


def capture_fd2(action: Callable[[], Any]) -> tuple[Any, str]:
    """:func:`capture_fd` on fd 2 (TensorFlow's C++ log), with the captured text echoed
    back to the real stderr so nothing is hidden from the user."""
    result, text = capture_fd(2, action)
    if text:
        sys.stderr.write(text)
        sys.stderr.flush()
    return result, text


def _soft(probe: Callable[[], Any]) -> Any:
    try:
        return probe()
    except Exception:  # a probe must never break a benchmark
        return None


def _device_details(tf: Any, gpu: Any) -> Any:
    return tf.config.experimental.get_device_details(gpu)


def _cpuinfo() -> dict[str, str]:
    info: dict[str, str] = {}
    with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if not line.strip():
                break  # the first processor block is enough
            key, _, value = line.partition(":")
            info[key.strip()] = value.strip()
    return info


def probe_cpu() -> dict[str, Any]:
    out: dict[str, Any] = {"machine": platform.machine(), "logical_cpus": os.cpu_count()}
    info = _soft(_cpuinfo) or {}
    if info.get("model name"):
        out["model"] = info["model name"]
    if info.get("cpu MHz"):
        out["mhz"] = _soft(lambda: float(info["cpu MHz"]))
    flags = info.get("flags", "").split()
    if flags:
        wanted = []
        for flag in sorted(set(flags)):
            for pattern in ISA_FLAGS:
                if (pattern.endswith("*") and flag.startswith(pattern[:-1])) or flag == pattern:
                    wanted.append(flag)
                    break
        out["isa_flags"] = wanted
    physical = _soft(_physical_cores)
    if physical:
        out["physical_cores"] = physical
    if hasattr(os, "sched_getaffinity"):
        out["affinity"] = sorted(os.sched_getaffinity(0))
    load = _soft(os.getloadavg)
    if load:
        out["load_avg"] = [round(x, 2) for x in load]
    return out


def _physical_cores() -> int | None:
    seen = set()
    base = "/sys/devices/system/cpu"
    for name in os.listdir(base):
        if name.startswith("cpu") and name[3:].isdigit():
            topo = os.path.join(base, name, "topology")
            try:
                with open(os.path.join(topo, "core_id")) as fh:
                    core = fh.read().strip()
                with open(os.path.join(topo, "physical_package_id")) as fh:
                    pkg = fh.read().strip()
            except OSError:
                continue
            seen.add((pkg, core))
    return len(seen) or None


def probe_python() -> dict[str, Any]:
    return {
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "platform": platform.platform(),
    }


def probe_env() -> dict[str, str]:
    return {k: os.environ[k] for k in ENV_ALLOWLIST if k in os.environ}


def probe_tensorflow(tf: Any, log_text: str = "") -> dict[str, Any]:
    """What this TensorFlow binary is. ``log_text`` is its captured start-up log."""
    out: dict[str, Any] = {}
    out["version"] = _soft(lambda: tf.__version__)
    out["git_version"] = _soft(lambda: tf.version.GIT_VERSION)
    out["compiler_version"] = _soft(lambda: tf.version.COMPILER_VERSION)
    build = _soft(lambda: dict(tf.sysconfig.get_build_info())) or {}
    out["build_info"] = {k: str(v) for k, v in build.items()}
    out["cuda_build"] = _soft(lambda: bool(tf.test.is_built_with_cuda()))
    out["rocm_build"] = _soft(lambda: bool(tf.test.is_built_with_rocm()))
    gpus = _soft(lambda: tf.config.list_physical_devices("GPU")) or []
    out["gpus"] = [getattr(g, "name", str(g)) for g in gpus]
    details = []
    for gpu in gpus:
        detail = _soft(partial(_device_details, tf, gpu))
        if detail:
            details.append({k: str(v) for k, v in detail.items()})
    if details:
        out["gpu_details"] = details
    # From the installed metadata: importing Keras here would initialise its backend.
    keras_version = _soft(lambda: __import__("importlib.metadata").metadata.version("keras"))
    if keras_version:
        out["keras_version"] = keras_version
    out["missing_instructions"] = parse_missing_instructions(log_text)
    # The binary's own view of oneDNN; the env var as set is in probe_env().
    logged = parse_onednn_state(log_text)
    onednn_env = os.environ.get("TF_ENABLE_ONEDNN_OPTS")
    if logged:
        state = logged
    elif onednn_env is not None:
        state = "off" if onednn_env.strip() in ("0", "false", "False") else "requested"
    else:
        state = "default"
    out["onednn"] = {"state": state, "TF_ENABLE_ONEDNN_OPTS": onednn_env}
    return out


def probe_backend(name: str, module: Any = None) -> dict[str, Any]:
    """The Keras backend's version, build and devices, in one shape for all three."""
    import importlib.metadata as metadata

    out: dict[str, Any] = {"name": name}
    # From the installed metadata: importing Keras here would import a backend.
    keras_version = _soft(lambda: metadata.version("keras"))
    if keras_version:
        out["keras_version"] = keras_version
    if module is None:
        return out
    out["version"] = _soft(lambda: module.__version__)
    if name == "tensorflow":
        out["build"] = _soft(
            lambda: {
                "git_version": module.version.GIT_VERSION,
                "compiler": module.version.COMPILER_VERSION,
                "cuda": bool(module.test.is_built_with_cuda()),
            }
        )
        devices = _soft(lambda: module.config.list_physical_devices()) or []
        out["devices"] = [getattr(d, "name", str(d)) for d in devices]
    elif name == "jax":
        out["build"] = {
            "jaxlib": _soft(lambda: metadata.version("jaxlib")),
            "platform": _soft(lambda: module.default_backend()),
        }
        out["devices"] = [str(d) for d in _soft(module.devices) or []]
    elif name == "torch":
        out["build"] = {
            "cuda": _soft(lambda: module.version.cuda),
            "mkldnn": _soft(lambda: bool(module.backends.mkldnn.is_available())),
            "cpu_capability": _soft(lambda: module.backends.cpu.get_cpu_capability()),
        }
        gpus = _soft(lambda: module.cuda.device_count()) or 0
        out["devices"] = ["cpu"] + [f"cuda:{i}" for i in range(gpus)]
    return out


def probe_env_lock() -> dict[str, Any] | None:
    """The specs and lock of an environment tfvariants built, when this is one."""
    path = os.path.join(sys.prefix, ENV_INFO_FILE)
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as fh:
        info = json.load(fh)
    keep = ("key", "requirements", "index_urls", "installer", "built_at", "lock")
    return {k: info.get(k) for k in keep}


def probe(tf: Any = None, log_text: str = "") -> dict[str, Any]:
    """Everything we record about where a cell ran."""
    env: dict[str, Any] = {
        "probed_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host_id": _soft(host_id),
        "cpu": _soft(probe_cpu) or {},
        "python": _soft(probe_python) or {},
        "env": _soft(probe_env) or {},
        "in_container": _soft(_in_container),
    }
    lock = _soft(probe_env_lock)
    if lock:
        env["requirements_env"] = lock
    if tf is not None:
        env["tensorflow"] = _soft(lambda: probe_tensorflow(tf, log_text)) or {}
    return env


def host_id() -> str:
    """A stable, non-identifying tag for the machine (a hash of its hostname, which is
    not recorded itself), so results from different hosts are never merged by accident.
    Inside a container the hostname is the container's, so the host runner records its
    own id in result["runner"]["host_id"] and readers trust that first."""
    return hashlib.sha256(platform.node().encode()).hexdigest()[:12]


def _in_container() -> bool:
    # A read-only podman container may have neither marker file, but podman (like
    # systemd-nspawn) sets $container, and cgroup paths name the runtime.
    if os.path.exists("/run/.containerenv") or os.path.exists("/.dockerenv"):
        return True
    if os.environ.get("container"):
        return True
    try:
        with open("/proc/1/cgroup", encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return False
    return any(tag in text for tag in ("/docker", "libpod", "containerd", "kubepods"))


def import_tensorflow(configure: Callable[[Any], None] | None = None) -> tuple[Any, str]:
    """Import TensorFlow and initialise its CPU device, capturing the start-up log
    (the cpu_feature_guard message appears when the first device is created).

    ``configure(tf)`` runs between the import and the first op: thread-pool sizes can
    only be set there, before the runtime initialises.
    """

    def _import() -> Any:
        import tensorflow as tf  # deliberately late: the host never imports it

        if configure is not None:
            configure(tf)
        tf.constant(1.0) + 1.0  # creates the CPU device: triggers the guard message
        return tf

    return capture_fd2(_import)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m workloads.envprobe")
    parser.add_argument("--no-tf", action="store_true", help="do not import the backend")
    parser.add_argument("--result", help="write JSON here (atomically) instead of stdout")
    args = parser.parse_args(argv)
    tf = None
    log_text = ""
    error = None
    backend = os.environ.get("KERAS_BACKEND") or "tensorflow"
    module = None
    if not args.no_tf:
        try:
            if backend == "tensorflow":
                tf, log_text = import_tensorflow()
                module = tf
            else:
                module = __import__(backend)
        except ImportError as exc:
            error = f"{backend} not importable: {exc}"
    data = probe(tf, log_text)
    if module is not None:
        data["backend"] = _soft(lambda: probe_backend(backend, module))
    if tf is None and backend == "tensorflow":
        data["tensorflow"] = {"error": error} if error else None
    elif error:
        data["backend"] = {"name": backend, "error": error}
    if args.result:
        from workloads.protocol import write_json_atomic

        write_json_atomic(args.result, data)
    else:
        print(json.dumps(data, indent=2, default=str))
    return 0


if __name__ == "__main__":
    from workloads.protocol import exit_now

    exit_now(main())
