"""What compare learns about each variant once, before the sweep (never inside a timed
cell): its backend and overlays, what its TensorFlow is compiled for, and the oneDNN
probe; stored in run.json's variant_info."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfvariants.errors import UserError

if TYPE_CHECKING:
    from tfvariants.variants.registry import Variant


def store_variant_info(out: Path, info: dict[str, dict]) -> None:
    """Add what the probe found to run.json's variant_info (a resume keeps what a
    variant's first probe stored and adds only what is new)."""
    from tfvariants.store.runfile import load_run, write_run

    record = load_run(out)
    stored = record.get("variant_info") or {}
    merged = {name: {**entry, **stored.get(name, {})} for name, entry in info.items()}
    if merged != stored:
        write_run(out, {**record, "variant_info": merged})


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
    from tfvariants.commands.env import probe_variant
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
        print(f"probing oneDNN in {name} (once, outside timed cells)", file=sys.stderr)
        try:
            result = probe_variant(variant, module="workloads.onednn")
        except UserError as exc:
            result = {"error": str(exc)}
        entry["onednn"] = judge(variant.overlay_env, variant.backend, result)
        for line in entry["onednn"]["noop"] + entry["onednn"]["unknown"]:
            print(f"  {name}: {line}", file=sys.stderr)
