"""The theoretical float32 peak of this CPU for the instructions a variant's kernels use.

    peak GFLOP/s = cores x clock (GHz) x lanes x vector units x (2 with FMA, else 2 per
                   multiply+add pair)

- lanes: float32 lanes of the highest instruction set the binary's kernels AND the CPU
  share (SSE4.1/4.2: 128-bit = 4, AVX/AVX2: 256-bit = 8, AVX-512: 512-bit = 16). The
  binary's side is what oneDNN said it dispatched to in the peak probe, else the
  ``ONEDNN_MAX_CPU_ISA`` cap of the variant, else (stated) the CPU's own.
- vector units per core, per microarchitecture (table below, with its source): how many
  full-width FMAs a core starts per cycle, and without FMA how many multiply+add pairs.
  Unknown CPUs: 2 FMA units (every Intel core since Haswell and AMD since Zen 2).
- cores: physical cores among the CPUs the cell is pinned to (hyperthreads share units).
- clock: ``cpuinfo_max_freq`` from /sys when present, else /proc/cpuinfo's "cpu MHz"
  (the current or, under a hypervisor, the nominal clock: boost may exceed it, and then
  a measured kernel can beat this "peak"; the report says so).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# (level, vector bits, fused multiply-add) from lowest to highest.
LEVELS: dict[str, tuple[int, bool]] = {
    "SSE4": (128, False),
    "AVX": (256, False),
    "AVX2": (256, True),  # AVX2 arrived with FMA3 (Haswell); oneDNN's avx2 kernels use it
    "AVX512": (512, True),
}
ORDER = tuple(LEVELS)


@dataclass(frozen=True)
class Cpu:
    vendor: str
    family: int | None
    model: int | None
    model_name: str
    flags: frozenset[str]
    mhz: float | None
    mhz_source: str


@dataclass(frozen=True)
class Microarch:
    name: str
    fma_units: int  # FMA pipes per core
    pairs: int  # multiply+add pairs per cycle without FMA (separate add pipes count)
    pipe_bits: int  # width of each pipe: a wider instruction takes several
    source: str


_AMD_GUIDE = "AMD Software Optimization Guide for the family"
_DEFAULT = Microarch(
    "unknown (assumed)",
    2,
    1,
    512,
    "assumption: 2 FMA units per core (Intel Optimization Reference Manual: Haswell and "
    "later; server Skylake Gold 6xxx/Platinum for AVX-512), add and multiply sharing them",
)


def microarch(cpu: Cpu) -> Microarch:
    """The vector units of this CPU's cores, with where that figure comes from."""
    name = cpu.model_name
    if cpu.vendor == "AuthenticAMD" and cpu.family is not None:
        model = cpu.model or 0
        if cpu.family == 0x17 and model < 0x30:
            return Microarch(
                "AMD Zen/Zen+",
                2,
                2,
                128,
                f"{_AMD_GUIDE} 17h: 2 FMA + 2 FADD "
                "pipes of 128 bits (256-bit instructions split in two)",
            )
        if cpu.family in (0x17, 0x19):
            zen = "Zen 4" if "avx512f" in cpu.flags else "Zen 2/3"
            return Microarch(
                f"AMD {zen}",
                2,
                2,
                256,
                f"{_AMD_GUIDE} {cpu.family:x}h: 2 FMA + "
                "2 FADD pipes of 256 bits (AVX-512 in two halves)",
            )
        if cpu.family == 0x1A:
            return Microarch(
                "AMD Zen 5",
                2,
                2,
                512,
                f"{_AMD_GUIDE} 1Ah: 2 FMA + 2 FADD "
                "pipes of 512 bits (server parts; client parts are 256)",
            )
    if cpu.vendor == "GenuineIntel" and re.search(r"\b(Silver|Bronze)\b", name):
        return Microarch(
            "Intel Xeon Silver/Bronze",
            2,
            1,
            256,
            "Intel Xeon Scalable specifications: one AVX-512 FMA unit (ports 0+1 fused) per core",
        )
    if "fma" not in cpu.flags and "avx" in cpu.flags:
        return Microarch(
            "Intel Sandy/Ivy Bridge class",
            0,
            1,
            256,
            "Intel Optimization Reference Manual: one 256-bit add and one multiply port",
        )
    return _DEFAULT


def cpu_level(flags: frozenset[str] | set[str]) -> str | None:
    """The highest counted instruction set this CPU runs (None below SSE4.1)."""
    if "avx512f" in flags:
        return "AVX512"
    if "avx2" in flags and "fma" in flags:
        return "AVX2"
    if "avx" in flags:
        return "AVX"
    return "SSE4" if "sse4_1" in flags else None


def onednn_level(text: str | None) -> str | None:
    """A oneDNN ISA as printed ("Intel AVX-512 with ...", "Intel SSE4.1") or as an
    ``ONEDNN_MAX_CPU_ISA`` value (SSE41, AVX2_VNNI, AVX512_CORE_AMX) -> a level."""
    if not text:
        return None
    t = text.upper().replace("-", "").replace("_", "").replace(".", "")
    if "AVX512" in t or "AMX" in t or "AVX10" in t:
        return "AVX512"
    if "AVX2" in t:
        return "AVX2"
    if "AVX" in t:
        return "AVX"
    if "SSE4" in t or "SSE41" in t:
        return "SSE4"
    return "AVX512" if t in ("ALL", "DEFAULT") else None


def lower(a: str | None, b: str | None) -> str | None:
    known = [x for x in (a, b) if x in LEVELS]
    return min(known, key=ORDER.index) if known else None


def read_cpu(cpuinfo: str | None = None, sys_root: str | Path = "/sys") -> Cpu:
    """This CPU from /proc/cpuinfo (first processor) and its clock, with the source."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            cpuinfo = ""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    mhz, source = _max_freq_mhz(Path(sys_root))
    if mhz is None:
        mhz, source = _number(fields.get("cpu MHz")), "/proc/cpuinfo cpu MHz (current or nominal)"
    return Cpu(
        vendor=fields.get("vendor_id", ""),
        family=_whole(fields.get("cpu family")),
        model=_whole(fields.get("model")),
        model_name=fields.get("model name", ""),
        flags=frozenset(fields.get("flags", "").split()),
        mhz=mhz,
        mhz_source=source if mhz is not None else "no clock found",
    )


def _max_freq_mhz(sys_root: Path) -> tuple[float | None, str]:
    path = sys_root / "devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"
    try:
        khz = float(path.read_text().strip())
    except (OSError, ValueError):
        return None, ""
    return khz / 1000.0, "/sys cpufreq cpuinfo_max_freq"


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text else None
    except ValueError:
        return None
    return value if value is not None and value > 0 else None


def _whole(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


@dataclass(frozen=True)
class Theoretical:
    gflops_per_s: float | None
    level: str | None
    level_source: str
    vector_bits: int | None
    fma: bool
    units: float
    flops_per_cycle: float
    cores: int
    mhz: float | None
    mhz_source: str
    microarch: str
    units_source: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def theoretical(cpu: Cpu, cores: int, code_level: str | None, code_source: str) -> Theoretical:
    """The peak for ``cores`` cores running kernels of ``code_level`` (None: the CPU's
    own level is assumed and ``code_source`` says so)."""
    arch = microarch(cpu)
    level = lower(cpu_level(cpu.flags), code_level) if code_level else cpu_level(cpu.flags)
    if level is None:
        return Theoretical(
            None,
            None,
            code_source,
            None,
            False,
            0.0,
            0.0,
            cores,
            cpu.mhz,
            cpu.mhz_source,
            arch.name,
            arch.source,
        )
    bits, fma = LEVELS[level]
    fma = fma and "fma" in cpu.flags and arch.fma_units > 0
    pipes = arch.fma_units if fma else arch.pairs
    # A pipe narrower than the instruction takes several to start one of them.
    units = pipes * min(1.0, arch.pipe_bits / bits)
    per_cycle = (bits / 32) * units * 2  # an FMA or a multiply+add pair: 2 FLOPs a lane
    gflops = cores * per_cycle * cpu.mhz / 1000.0 if cpu.mhz else None
    return Theoretical(
        gflops,
        level,
        code_source,
        bits,
        fma,
        units,
        per_cycle,
        cores,
        cpu.mhz,
        cpu.mhz_source,
        arch.name,
        arch.source,
    )


def code_level(
    onednn_isa: str | None, env: dict[str, str], compiled_for: str | None = None
) -> tuple[str | None, str]:
    """The level the variant's kernels use, and how that is known: what oneDNN said it
    dispatched to, else its cap, else (no oneDNN: Eigen's kernels, which are not
    dispatched at run time) what the instruction census says the binary is compiled for."""
    found = onednn_level(onednn_isa)
    if found:
        return found, f"oneDNN dispatched to {onednn_isa} (peak probe)"
    cap = env.get("ONEDNN_MAX_CPU_ISA") or env.get("DNNL_MAX_CPU_ISA")
    if onednn_level(cap):
        return onednn_level(cap), f"ONEDNN_MAX_CPU_ISA={cap}"
    top = (compiled_for or "").split("+")[0]
    if top in LEVELS or top == "SSE2":  # SSE2 and SSE4 are both 128-bit, without FMA
        return (top if top in LEVELS else "SSE4"), f"compiled for {compiled_for} (census)"
    return None, "assumed: the CPU's own (the probe saw no oneDNN kernel name its ISA)"
