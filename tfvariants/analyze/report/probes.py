"""What each variant's probe found on this host (run.json ``variant_info``), typed once
for the report's "Variants on this host" section."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class VariantProbe:
    """One probed variant: its backend, what it was built as, what oneDNN did."""

    variant: str
    backend: object
    backend_version: object = None
    requirements: tuple[str, ...] = ()
    base: object = None
    overlay_env: tuple[tuple[str, object], ...] = ()
    compiled_for: object = None
    onednn_ran: object = None  # oneDNN ran (or custom ops) in the variant
    host_onednn_ran: object = None  # the same probe without the oneDNN settings
    isa: object = None
    host_isa: object = None
    noop: tuple[object, ...] = ()  # settings that changed nothing on this host
    changes: tuple[object, ...] = ()
    unknown: tuple[object, ...] = ()


def _dict(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def probe_of(variant: str, info: Mapping[str, Any]) -> VariantProbe:
    o = _dict(info.get("onednn"))
    return VariantProbe(
        variant=variant,
        backend=info["backend"],
        backend_version=o.get("backend_version"),
        requirements=tuple(info.get("requirements") or ()),
        base=info.get("base"),
        overlay_env=tuple(_dict(info.get("overlay_env")).items()),
        compiled_for=info.get("compiled_for"),
        onednn_ran=o.get("onednn_ran") or o.get("custom_ops"),
        host_onednn_ran=o.get("host_onednn_ran") or o.get("host_custom_ops"),
        isa=o.get("isa"),
        host_isa=o.get("host_isa"),
        noop=tuple(o.get("noop") or ()),
        changes=tuple(o.get("changes") or ()),
        unknown=tuple(o.get("unknown") or ()),
    )


def probes_of(variant_info: object) -> tuple[VariantProbe, ...]:
    """The variants whose probe ran (those with a backend), in the record's order."""
    return tuple(
        probe_of(str(v), info)
        for v, info in _dict(variant_info).items()
        if isinstance(info, dict) and "backend" in info
    )
