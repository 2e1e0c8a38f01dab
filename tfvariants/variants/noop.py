"""Which of a variant's overlay settings change anything on this host.

A oneDNN ISA cap at or above what oneDNN picks on this CPU, or a TF_ENABLE_ONEDNN_OPTS
value equal to TensorFlow's default here, is a no-op: the variant is then the base
under another name, and the report must say so rather than present it as different.
The judgement is empirical: it compares what workloads.onednn measured inside the
variant (the ISA oneDNN dispatched to, whether TensorFlow's oneDNN ops are on) with the
same probe run without the oneDNN settings (this host's default).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ISA_CAPS = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")
OPTS = "TF_ENABLE_ONEDNN_OPTS"


def _on(value: bool | None) -> str:
    return "unknown" if value is None else ("on" if value else "off")


def _ran(probed: Mapping[str, Any]) -> str:
    if probed.get("error") or not probed:
        return "unknown"
    primitives = probed.get("primitives") or {}
    return "on" if sum(primitives.values()) > 0 else "off"


def judge(overlay_env: Mapping[str, str], backend: str, probe: Mapping[str, Any] | None) -> dict:
    """Summary for the report: ISA used, host default, and per-setting verdicts
    (``noop`` and ``changes`` are lists of one-line explanations)."""
    probe = probe or {}
    variant = probe.get("variant") or {}
    host = probe.get("host_default") or {}
    tf_probed = bool(probe.get("applies")) and backend == "tensorflow"
    out: dict[str, Any] = {
        "isa": variant.get("isa"),
        "host_isa": host.get("isa"),
        "onednn_version": variant.get("version"),
        "custom_ops": _on(variant.get("custom_ops_on")) if tf_probed else None,
        "host_custom_ops": _on(host.get("custom_ops_on")) if tf_probed else None,
        # On/off from what the probe saw run (oneDNN primitives executed by its conv2d
        # and matmul), not from a log line: intel-tensorflow runs oneDNN without saying so.
        "onednn_ran": _ran(variant) if tf_probed else None,
        "host_onednn_ran": _ran(host) if tf_probed else None,
        "backend_version": (variant.get("backend") or {}).get("version"),
        "noop": [],
        "changes": [],
        "unknown": [],
    }
    if probe.get("error"):
        out["unknown"].append(f"oneDNN probe failed: {probe['error']}")
    for name, value in overlay_env.items():
        setting = f"{name}={value}"
        if name == OPTS and backend != "tensorflow":
            out["noop"].append(f"{setting}: no effect on {backend} (a TensorFlow setting)")
            continue
        if name in ISA_CAPS or name == OPTS:
            if not probe.get("applies"):
                why = probe.get("why") or "not probed"
                out["noop"].append(f"{setting}: no effect on {backend} ({why})")
                continue
            if variant.get("error") or host.get("error"):
                out["unknown"].append(
                    f"{setting}: probe failed ({variant.get('error') or host.get('error')})"
                )
                continue
        if name in ISA_CAPS:
            used, default = variant.get("isa"), host.get("isa")
            if used is None or default is None:
                out["unknown"].append(f"{setting}: oneDNN printed no ISA (not used by these ops?)")
            elif used == default:
                out["noop"].append(
                    f"{setting}: no-op on this host (oneDNN uses {used} either way: the cap is "
                    "at or above this CPU's ISA)"
                )
            else:
                out["changes"].append(f"{setting}: oneDNN uses {used} instead of {default}")
        elif name == OPTS:
            mine, default = variant.get("custom_ops_on"), host.get("custom_ops_on")
            if mine == default:
                out["noop"].append(
                    f"{setting}: no-op on this host (TensorFlow's default here is {_on(default)})"
                )
            else:
                out["changes"].append(
                    f"{setting}: oneDNN custom ops {_on(mine)} (default here: {_on(default)})"
                )
    return out
