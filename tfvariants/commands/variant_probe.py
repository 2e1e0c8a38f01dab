"""What compare learns about each variant once, before the sweep (never inside a timed
cell): its backend and overlays, what its TensorFlow is compiled for, and the oneDNN
probe; stored in run.json's variant_info."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from tfvariants.errors import UserError

if TYPE_CHECKING:
    from tfvariants.variants.registry import Variant


def compiled_for(variant: Variant, *, count: bool) -> str | None:
    """What the variant's TensorFlow is compiled for: from the census cache, or with
    ``count`` from a census of its framework library (~45 MB: under a minute, once per
    binary)."""
    from tfvariants.variants import census

    known = census.known_compiled_for(variant)
    if known or not count:
        return known
    try:
        print(
            f"counting instructions in {variant.name}'s TensorFlow (once per binary)",
            file=sys.stderr,
        )
        return str(census.variant_census(variant)["compiled_for"])
    except (OSError, RuntimeError):
        return None


def probe_variants(
    info: dict[str, dict], variant_objs: dict[str, Any], probe: bool, count_isa: bool = False
) -> None:
    """Once per variant, before the sweep (never inside a timed cell: oneDNN's verbose
    output is large): its backend and overlays, the oneDNN ISA it uses against this
    host's default, and which overlay settings are no-ops here."""
    from tfvariants.variants import skip_reason
    from tfvariants.variants.noop import judge

    for name, variant in variant_objs.items():
        entry = info.setdefault(name, {})
        entry.update(
            backend=variant.backend,
            base=variant.base,
            overlay_env=dict(variant.overlay_env),
            env=dict(variant.env),
        )
        if variant.kind_impl.buildable:
            entry["requirements"] = list(variant.requirements)
        if not probe or skip_reason(variant):
            continue
        entry["compiled_for"] = compiled_for(variant, count=count_isa)
        result = _onednn(name, variant)
        entry["onednn"] = judge(variant.overlay_env, variant.backend, result)
        for line in entry["onednn"]["noop"] + entry["onednn"]["unknown"]:
            print(f"  {name}: {line}", file=sys.stderr)


def _onednn(name: str, variant: Variant) -> dict[str, Any]:
    """The oneDNN probe's record: cached per binary, settings and CPU (about 11 s a
    variant otherwise, out of the run's budget)."""
    from tfvariants.commands.env import probe_variant
    from tfvariants.variants import onednn
    from tfvariants.variants.peak.run import binary_identity
    from tfvariants.variants.peak.theory import read_cpu

    def probe() -> dict[str, Any]:
        print(
            f"probing oneDNN in {name} (once per binary and CPU, outside timed cells)",
            file=sys.stderr,
        )
        try:
            return probe_variant(variant, module="workloads.onednn")
        except UserError as exc:
            return {"error": str(exc)}

    return onednn.probed(variant, binary_identity(variant), read_cpu(), probe)[0]
