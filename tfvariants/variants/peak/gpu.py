"""The theoretical float32 peak of a GPU, looked up by the name its driver reports.

A GPU's peak is not derived from parts here (SM counts and boost clocks vary by board
and by the power limit a cloud sets): it is the vendor's datasheet figure for FP32
without sparsity or tensor cores, per device as TensorFlow sees it, with the sheet it
comes from. A GPU not in the table gets no figure ("unknown, not stated"), never a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

UNKNOWN = "unknown, not stated"
NO_GPU = "not measured (no GPU)"


@dataclass(frozen=True)
class GpuPeak:
    name: str  # the model as the table knows it
    gflops_per_s: float
    source: str


# (pattern on the reported name, model, FP32 GFLOP/s, source). More specific patterns
# first: "A10G" before any A10, the SXM and PCIe boards of one model apart.
_SHEET = "NVIDIA datasheet"
TABLE: tuple[tuple[str, str, float, str], ...] = (
    (
        r"\bK80\b",
        "Tesla K80 (one of its two GK210)",
        4365.0,
        f"{_SHEET} Tesla K80: 8.73 TFLOPS with GPU Boost for the board's two GPUs; "
        "TensorFlow sees each as one device",
    ),
    (r"\bP100\b.*\bSXM", "Tesla P100 SXM2", 10600.0, f"{_SHEET} Tesla P100 (SXM2): 10.6 TFLOPS"),
    (r"\bP100\b", "Tesla P100 PCIe", 9300.0, f"{_SHEET} Tesla P100 (PCIe): 9.3 TFLOPS"),
    (r"\bV100\b.*\bSXM", "Tesla V100 SXM2", 15700.0, f"{_SHEET} Tesla V100 (SXM2): 15.7 TFLOPS"),
    (r"\bV100\b", "Tesla V100 PCIe", 14000.0, f"{_SHEET} Tesla V100 (PCIe): 14 TFLOPS"),
    (r"\bT4\b", "Tesla T4", 8100.0, f"{_SHEET} T4: 8.1 TFLOPS"),
    (
        r"\bA10G\b",
        "A10G",
        31200.0,
        f"{_SHEET} A10: 31.2 TFLOPS (the A10G is AWS's A10; NVIDIA publishes no separate sheet)",
    ),
    (r"\bL4\b", "L4", 30300.0, f"{_SHEET} L4: 30.3 TFLOPS"),
    (r"\bA100\b", "A100", 19500.0, f"{_SHEET} A100 (PCIe and SXM): 19.5 TFLOPS"),
    (r"\bH100\b.*\bPCIe\b", "H100 PCIe", 51000.0, f"{_SHEET} H100 PCIe: 51 TFLOPS"),
    (r"\bH100\b", "H100 SXM", 67000.0, f"{_SHEET} H100 SXM: 67 TFLOPS"),
)


def lookup(name: str | None) -> GpuPeak | None:
    """The table's entry for a reported GPU name ("Tesla T4", "NVIDIA A100-SXM4-40GB",
    "NVIDIA H100 PCIe"), or None when the GPU is not in it."""
    for pattern, model, gflops, source in TABLE if name else ():
        if re.search(pattern, name or "", re.IGNORECASE):
            return GpuPeak(model, gflops, source)
    return None


def theoretical(name: str | None) -> tuple[dict[str, Any] | None, str]:
    """(the peak record's ``theoretical`` for a GPU, or None; why, when None). The
    record has the CPU's fields that apply (``level_source`` says where it came from)."""
    found = lookup(name)
    if found is None:
        return None, f"{name or 'a GPU whose name was not reported'}: {UNKNOWN}"
    return {
        "gflops_per_s": found.gflops_per_s,
        "level": None,
        "level_source": f"{name} = {found.name}: {found.source}",
        "gpu": found.name,
    }, ""
