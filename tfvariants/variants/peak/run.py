"""A variant's peaks at a cell's pinning, cached by content: the probe that measures one
is given (execute/probe.py ``peak_probe``, launched by the caller's stage), so this
module decides what to probe and records what it found, and starts nothing itself."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfvariants.plan.pinning import PinPlan, plan_pinning
from tfvariants.plan.topology import Topology, read_topology
from tfvariants.store import cachefiles
from tfvariants.variants.census import cache_dir, file_hash, known_compiled_for, tensorflow_dir
from tfvariants.variants.peak import gpu, theory
from workloads import peakprobe

if TYPE_CHECKING:
    from tfvariants.variants.registry import Variant

DISTURBED = 0.10  # others' share of the CPUs: the default that marks a cell disturbed
MAX_PROBES = 3  # a disturbed peak is probed at most this often (a busy host stays busy)
Log = Callable[[str], None]
Probe = Callable[["Variant", PinPlan], dict[str, Any]]


def binary_identity(variant: Variant) -> str | None:
    """What the variant's kernels are, by content: its framework library's sha256, or a
    container image's id; None when neither can be found (then nothing is cached)."""
    if variant.kind_impl.takes_engine:  # a container image: its id
        from tfvariants.variants import engine as engines

        engine = engines.detect_engine(variant.engine)
        if engine is None:
            return None
        try:
            proc = subprocess.run(
                [engine, "image", "inspect", "--format", "{{.Id}}", variant.image or ""],
                capture_output=True,
                text=True,
                timeout=30,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return f"image:{proc.stdout.strip()}" if proc.returncode == 0 else None
    tf_dir = tensorflow_dir(variant)
    framework = tf_dir / "libtensorflow_framework.so.2" if tf_dir else None
    if framework is None or not framework.is_file():
        return None
    return f"sha256:{file_hash(framework)}"


def cache_key(binary: str, variant: Variant, plan: PinPlan, cpu: theory.Cpu) -> dict[str, Any]:
    """Everything that changes what the probe measures (and nothing else)."""
    return {
        "probe": peakprobe.VERSION,
        "binary": binary,
        "backend": variant.backend,
        "device": variant.device,
        "env": dict(sorted(variant.env.items())),
        "cpu": [cpu.vendor, cpu.family, cpu.model, cpu.model_name],
        "flags": hashlib.sha256(" ".join(sorted(cpu.flags)).encode()).hexdigest()[:16],
        "cpus": list(plan.cpus),
        "intra_op": plan.intra_op,
        "inter_op": plan.inter_op,
    }


def cache_path(key: dict[str, Any]) -> Path | None:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
    folder = cache_dir()
    return folder / f"peak-{digest}.json" if folder else None


def _cores(plan: PinPlan, topology: Topology) -> int:
    """Physical cores among the pinned CPUs: hyperthreads share a core's vector units."""
    chosen = set(plan.cpus)
    return len({(c.package, c.core) for c in topology.cpus if c.cpu in chosen}) or 1


def record(
    probed: dict[str, Any], variant: Variant, plan: PinPlan, topology: Topology, cpu: theory.Cpu
) -> dict[str, Any]:
    """What the report needs for one (variant, threads): attainable, theoretical, how."""
    out: dict[str, Any] = {
        "threads": plan.threads,
        "cpus": list(plan.cpus),
        "device": variant.device,
        "attainable_gflops_per_s": probed.get("gflops_per_s") if probed.get("measured") else None,
        "best_kernel": probed.get("best_kernel"),
        "kernels": {k: v.get("gflops_per_s") for k, v in (probed.get("kernels") or {}).items()},
        "onednn_isa": probed.get("onednn_isa"),
        "probe_s": probed.get("wall_s"),
        # a += b in place on arrays >> the last-level cache (workloads.peakprobe)
        "memory_gb_per_s": (probed.get("memory") or {}).get("gb_per_s"),
        "others_share": probed.get("others_share"),
        "probes": probed.get("probes", 1),
        # what the probe ran with, read back inside it (the pinning is the cell's)
        "applied": {k: probed.get(k) for k in ("affinity", "intra_op", "inter_op")},
        "why": probed.get("why"),
        "priority": probed.get("priority"),
        "cpu_model": cpu.model_name,
        # when it was measured (UTC, whole seconds like a cell's started_at): a probe
        # run by compare ends before the run's first cell starts (benchmarks/peak_aa.py)
        "probed_at": probed.get("probed_at"),
    }
    if variant.device == "gpu":
        return {**out, **_gpu_parts(probed)}
    compiled = None if probed.get("onednn_isa") else known_compiled_for(variant)
    level, source = theory.code_level(probed.get("onednn_isa"), dict(variant.env), compiled)
    out["theoretical"] = theory.theoretical(cpu, _cores(plan, topology), level, source).to_json()
    return out


def _gpu_parts(probed: dict[str, Any]) -> dict[str, Any]:
    """A GPU variant's peak: measured on the GPU the probe saw, against its datasheet
    figure (peak.gpu); with no GPU, "not measured (no GPU)" for both, with the reason."""
    if not probed.get("measured") and not probed.get("gpu_name"):
        why = str(probed.get("why") or "")
        if "no GPU" in why:  # the skip reason or the probe's own: nothing to measure on
            no_gpu = f"{gpu.NO_GPU}: {why}"
            return {"why": no_gpu, "theoretical": None, "theoretical_why": gpu.NO_GPU}
    theo, why = gpu.theoretical(probed.get("gpu_name"))
    return {"gpu_name": probed.get("gpu_name"), "theoretical": theo, "theoretical_why": why}


def measure(
    variant: Variant,
    threads: int,
    *,
    topology: Topology | None = None,
    cpu: theory.Cpu | None = None,
    probe: Probe,
    log: Log = lambda _m: None,
    binary: str | None = None,
    again: bool = True,
) -> dict[str, Any]:
    """One variant's peaks at ``threads``: from the cache, else measured by ``probe``
    (then cached). ``binary``: its binary_identity when the caller has it. ``again``:
    whether a cached peak measured on a busy host is probed again (a run with a budget
    keeps it: under a neighbour that stays, each probe is as busy, and its start-up and
    seconds come out of the budget the comparisons need)."""
    from tfvariants.variants import skip_reason

    topology = topology or read_topology()
    cpu = cpu or theory.read_cpu()
    plan = plan_pinning(threads, topology)
    reason = skip_reason(variant)
    if reason:
        return record({"measured": False, "why": reason}, variant, plan, topology, cpu)
    binary = binary or binary_identity(variant)
    path = cache_path(cache_key(binary, variant, plan, cpu)) if binary else None
    cached = cachefiles.read_entry(path, peak_check(variant.device, len(plan.cpus)))
    if cached is not None and not (again and _again(cached)):
        return {**record(cached, variant, plan, topology, cpu), "cached": True}
    log(f"peak probe: {variant.name} at {threads} thread(s) (once per binary and CPU set)")
    probed = probe(variant, plan)
    probed = {**probed, "probed_at": _now()}
    if cached is not None:  # a disturbed peak probed again: the better one is the peak
        probed = _better(cached, probed)
    if probed.get("measured"):
        cachefiles.write_entry(path, probed)
    return {**record(probed, variant, plan, topology, cpu), "cached": False}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _again(cached: dict[str, Any]) -> bool:
    """Whether a cached peak was measured while other processes used its CPUs (above the
    share that disturbs a cell) and may be probed again (a few times, then it stands)."""
    share = cached.get("others_share")
    return isinstance(share, float) and share > DISTURBED and cached.get("probes", 1) < MAX_PROBES


def _better(cached: dict[str, Any], probed: dict[str, Any]) -> dict[str, Any]:
    probes = int(cached.get("probes", 1)) + 1
    if not probed.get("measured"):
        return {**cached, "probes": probes}
    best = probed if probed["gflops_per_s"] >= cached["gflops_per_s"] else cached
    return {**best, "probes": probes}


# Far above what any device does, far below a poisoned figure: a CPU core retires at
# most 2 x 512-bit FMAs a cycle (64 FP32 FLOPs) at under 6 GHz, about 400 GFLOP/s; no
# GPU does 10 PFLOP/s; no memory moves 100 TB/s.
CORE_GFLOPS_MAX = 500.0
GPU_GFLOPS_MAX = 1e7
MEMORY_GB_MAX = 1e5


def _priority_ok(value: object) -> bool:
    """What the probe got of --priority: its nice values are -20 to 19 (shown)."""
    if value is None or isinstance(value, str):
        return True
    return isinstance(value, dict) and all(
        value.get(k) is None or cachefiles.number(value[k], -20, 19, whole=True)
        for k in ("nice", "autogroup_nice", "value")
    )


def peak_check(device: str, cpus: int) -> cachefiles.Check:
    """The check a cached peak must pass: measured, every number finite and possible
    on this device (a peak of 1e6 GFLOP/s on 2 cores is not a measurement)."""
    top = GPU_GFLOPS_MAX if device == "gpu" else CORE_GFLOPS_MAX * max(cpus, 1)

    def check(record: dict[str, Any]) -> str | None:
        if record.get("measured") is not True:
            return "not a measured peak"
        if not cachefiles.number(record.get("gflops_per_s"), 0, top) or not (
            record["gflops_per_s"] > 0
        ):
            return f"gflops_per_s is {str(record.get('gflops_per_s'))[:40]!r}, not 0 to {top:g}"
        kernels = record.get("kernels") or {}
        memory = record.get("memory") or {}
        if not isinstance(kernels, dict) or not isinstance(memory, dict):
            return "'kernels' or 'memory' is not a table"
        for name, kernel in kernels.items():
            if not isinstance(kernel, dict) or not cachefiles.optional_number(
                kernel.get("gflops_per_s"), 0, top
            ):
                return f"kernel {str(name)[:40]!r} has no possible gflops_per_s"
        return cachefiles.bad_fields(
            {**record, "gb_per_s": memory.get("gb_per_s")},
            {
                "gb_per_s": lambda v: cachefiles.optional_number(v, 0, MEMORY_GB_MAX),
                "others_share": lambda v: cachefiles.optional_number(v, 0, 1),
                "probes": lambda v: v is None or cachefiles.number(v, 1, MAX_PROBES, whole=True),
                "wall_s": lambda v: cachefiles.optional_number(v, 0, 1e6),
                "priority": _priority_ok,
                "intra_op": lambda v: v is None or cachefiles.number(v, 1, 4096, whole=True),
                "inter_op": lambda v: v is None or cachefiles.number(v, 1, 4096, whole=True),
                "affinity": lambda v: (
                    v is None
                    or (
                        isinstance(v, list)
                        and all(cachefiles.number(c, 0, 1 << 16, whole=True) for c in v)
                    )
                ),
                **dict.fromkeys(
                    ("best_kernel", "onednn_isa", "why", "probed_at", "gpu_name"), cachefiles.text
                ),
            },
        )

    return check


def measure_all(
    variants: dict[str, Variant],
    configurations: Iterable[tuple[str, int]],
    probe: Probe,
    log: Log | None = None,
    again: bool = True,
) -> dict[str, dict[str, Any]]:
    """{variant: {threads (as text): peaks}} for every configuration of a matrix, each
    not cached measured by ``probe`` (the caller's: at the priority the cells run at);
    ``again``: as :func:`measure`'s."""
    say = log or (lambda m: print(m, file=sys.stderr))
    topology, cpu = read_topology(), theory.read_cpu()
    out: dict[str, dict[str, Any]] = {}
    binaries: dict[str, str | None] = {}  # looked up once per variant (a child process)
    for name, threads in configurations:
        variant = variants.get(name)
        if variant is not None:
            if name not in binaries:
                binaries[name] = binary_identity(variant)
            found = measure(
                variant,
                threads,
                topology=topology,
                cpu=cpu,
                probe=probe,
                log=say,
                binary=binaries[name],
                again=again,
            )
            out.setdefault(name, {})[str(threads)] = found
    return out
