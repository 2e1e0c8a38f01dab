"""What each variant's probe found on this host (run.json ``variant_info``), typed once
for the report's "Variants on this host" section."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tfvariants.store.record import VariantInfo


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


def probe_of(variant: str, info: VariantInfo) -> VariantProbe:
    o = info.onednn
    return VariantProbe(
        variant=variant,
        backend=info.backend,
        backend_version=o.get("backend_version"),
        requirements=info.requirements,
        base=info.base,
        overlay_env=tuple(info.overlay_env.items()),
        compiled_for=info.compiled_for,
        onednn_ran=o.get("onednn_ran") or o.get("custom_ops"),
        host_onednn_ran=o.get("host_onednn_ran") or o.get("host_custom_ops"),
        isa=o.get("isa"),
        host_isa=o.get("host_isa"),
        noop=tuple(o.get("noop") or ()),
        changes=tuple(o.get("changes") or ()),
        unknown=tuple(o.get("unknown") or ()),
    )


def probes_of(variant_info: Mapping[str, VariantInfo]) -> tuple[VariantProbe, ...]:
    """The variants whose probe ran (those with a backend), in the record's order."""
    return tuple(probe_of(v, info) for v, info in variant_info.items() if info.backend is not None)
