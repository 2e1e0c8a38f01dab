"""Why a cell has no price (its device is a CellResult field, store/cellresult.py)."""

from __future__ import annotations

from tfvariants.analyze.cost.pricing import Pricing


def no_price_reason(pricing: Pricing, variant: str, threads: int, device: str) -> str:
    """Why ``pricing.cost`` has no figure for this cell, in words naming the catalog."""
    name, as_of = pricing.catalog.name, pricing.effective_as_of or "any date"
    found = pricing.instance_for(variant, threads, device)
    if found is not None:
        return f"catalog {name} has no price for {found[0].name} on or before {as_of}"
    if device == "gpu":
        return f"catalog {name} has no GPU instance"
    fits = sorted(
        (i for i in pricing.catalog.instances if not i.gpu_type and i.vcpus >= threads),
        key=lambda i: i.vcpus,
    )
    if not fits:
        return f"catalog {name} has no instance with at least {threads} vCPUs"
    return f"catalog {name} has no price for {fits[0].name} on or before {as_of}"
