"""What a cell is billed as: its device (CPU or GPU) and, when no price fits, why."""

from __future__ import annotations

from tfvariants.analyze.fields import get_path
from tfvariants.analyze.pricing import Pricing


def _says_gpu(result: dict) -> bool:
    """The result ran with a GPU: a CUDA build that saw at least one GPU."""
    gpus = get_path(result, "environment", "tensorflow", "gpus")
    cuda = get_path(result, "environment", "tensorflow", "cuda_build")
    return isinstance(gpus, list) and bool(gpus) and cuda is not False


def device_of(variant: str, run: dict, results: list[dict]) -> str:
    """cpu or gpu, for billing: run.json's variant_info when it says, else what the
    variant's results say (GPUs visible to a CUDA build), else its name."""
    dev = get_path(run, "variant_info", variant, "device")
    if dev in ("cpu", "gpu"):
        return dev
    mine = [r for r in results if get_path(r, "cell", "variant") == variant]
    probed = [r for r in mine if isinstance(get_path(r, "environment", "tensorflow"), dict)]
    if probed:
        return "gpu" if any(_says_gpu(r) for r in probed) else "cpu"
    return "gpu" if variant == "gpu" else "cpu"


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
