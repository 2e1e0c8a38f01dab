"""The cost of a cell: a catalog (:mod:`tfvariants.analyze.cost.catalog`) plus the
selection (date, tier), the cell -> instance mapping, and price per hour x billed
seconds under the catalog's billing rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tfvariants.analyze.cost.catalog import (
    MAX_VCPUS,
    TIERS,
    Catalog,
    Instance,
    load_catalog,
    normalize_tier,
)
from tfvariants.analyze.cost.catalog_fields import valid_date
from tfvariants.errors import UserError
from tfvariants.plan.cell import config_label

# --instance keys: VARIANT, VARIANT@THREADS or THREADS
_MAP_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*(?:@[0-9]{1,4})?|[0-9]{1,4}", re.ASCII)


@dataclass(frozen=True)
class CellCost:
    instance: str
    per_hour: float
    tier: str
    as_of: str
    seconds: float
    billed_seconds: float
    cost: float
    note: str = ""
    tier_word: str = ""  # the tier in the catalog's own word (spot, preemptible, on-demand)


@dataclass(frozen=True)
class Pricing:
    """A catalog plus the selection (date, tier) and the cell -> instance mapping.

    ``overrides`` maps "variant@threads", "variant" or "threads" to an instance name.
    Without one, GPU variants map to the catalog's default GPU instance, and CPU cells to
    the smallest instance (without GPU) that has at least ``threads`` vCPUs."""

    catalog: Catalog
    as_of: str | None = None
    tier: str | None = None
    overrides: dict[str, str] = field(default_factory=dict)
    # CPU instance families to choose from ("c3", "n2d": name prefixes before "-"); empty:
    # every CPU instance of the catalog.
    families: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "tier", normalize_tier(self.tier))  # the one spelling
        if self.tier is not None and self.tier not in TIERS:
            raise UserError(
                f"unknown price tier {self.tier!r}: expected spot (= preemptible) or on_demand"
            )
        if self.as_of is not None and not valid_date(self.as_of):
            raise UserError(f"price date {self.as_of!r}: expected YYYY-MM or YYYY-MM-DD")
        for target in self.overrides.values():
            self.catalog.instance(target)  # fail early on a typo
        cpu_names = [i.name for i in self.catalog.instances if not i.gpu_type]
        for fam in self.families:
            if not any(_in_family(n, fam) for n in cpu_names):
                known = sorted({re.split(r"[-.]", n)[0] for n in cpu_names})
                raise UserError(
                    f"--instance-family {fam!r}: catalog {self.catalog.name} has no CPU "
                    f"instance of that family (families: {', '.join(known)})"
                )

    @property
    def effective_as_of(self) -> str | None:
        return self.as_of or self.catalog.default_as_of

    @property
    def effective_tier(self) -> str:
        return self.tier or self.catalog.default_tier

    def instance_for(
        self, variant: str, threads: int, device: str = "cpu"
    ) -> tuple[Instance, str] | None:
        for key in (config_label(variant, threads), variant, str(threads)):
            if key in self.overrides:
                return self.catalog.instance(self.overrides[key]), f"mapped by option {key}"
        if device == "gpu":
            gpus = [i for i in self.catalog.instances if i.gpu_type]
            preferred = [i for i in gpus if i.gpu_type == self.catalog.default_gpu] or gpus
            if not preferred:
                return None
            inst = min(preferred, key=lambda i: (i.gpu_count, i.vcpus))
            return inst, f"GPU variant billed as {inst.name}"
        # The smallest priced CPU instance that holds the threads; among equal sizes the
        # cheapest (the one a user would rent). The dry run and the report both use this.
        priced = [
            (i, sel.per_hour)
            for i in self.catalog.instances
            if not i.gpu_type and i.vcpus >= threads
            if not self.families or any(_in_family(i.name, f) for f in self.families)
            for sel in [self.catalog.price(i, as_of=self.as_of, tier=self.tier)]
            if sel is not None
        ]
        if not priced:
            return None
        size = min(i.vcpus for i, _ in priced)
        inst = min((p for p in priced if p[0].vcpus == size), key=lambda p: p[1])[0]
        if inst.vcpus == threads:
            return inst, ""
        return inst, f"smallest instance with at least {threads} vCPUs"

    def cost(
        self, variant: str, threads: int, seconds: float, device: str = "cpu"
    ) -> CellCost | None:
        """Cost of ``seconds`` of training for this cell; None when nothing fits."""
        found = self.instance_for(variant, threads, device)
        if found is None:
            return None
        inst, why = found
        sel = self.catalog.price(inst, as_of=self.as_of, tier=self.tier)
        if sel is None:
            return None
        billed = self.catalog.billing.billed_seconds(seconds)
        note = "; ".join(x for x in (why, sel.note) if x)
        return CellCost(
            inst.name,
            sel.per_hour,
            sel.tier,
            sel.as_of,
            seconds,
            billed,
            sel.per_hour * billed / 3600,
            note,
            self.catalog.tier_word(sel.tier),
        )


def _in_family(name: str, family: str) -> bool:
    """``n2d-highcpu-8`` is of family ``n2d`` (and of ``n2d-highcpu``), not of ``n2``;
    EC2 names split at a dot: ``c7a.2xlarge`` is of family ``c7a``."""
    return name == family or name.startswith((family + "-", family + "."))


def parse_families(text: str | None) -> tuple[str, ...]:
    """``c3,n2d`` -> ("c3", "n2d"); an empty item is bad input."""
    if text is None:
        return ()
    items = tuple(x.strip() for x in text.split(","))  # '' is one empty item: refused
    if any(not x or not x.isprintable() for x in items):
        raise UserError(f"--instance-family {text!r}: expected FAMILY[,FAMILY...], e.g. n2d,n2")
    return items


def parse_pricing_option(
    text: str,
    *,
    tier: str | None = None,
    instance_map: list[str] | None = None,
    families: tuple[str, ...] = (),
) -> Pricing:
    """``NAME|FILE[@AS_OF]`` plus ``VARIANT[@THREADS]=INSTANCE`` mappings -> Pricing."""
    as_of = None
    m = re.match(r"^(.*)@(\d{4}-\d{2}(?:-\d{2})?)$", text)
    if m:
        text, as_of = m.group(1), m.group(2)
    catalog = load_catalog(text)
    overrides: dict[str, str] = {}
    for item in instance_map or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or not value.strip():
            raise UserError(f"--instance {item!r}: expected VARIANT[@THREADS]=INSTANCE")
        # A key no cell can match would be silently ignored: "local@x", "local@1_0".
        if not _MAP_KEY.fullmatch(key) or any(
            not 1 <= int(t) <= MAX_VCPUS for t in re.findall(r"(?:^|@)([0-9]+)$", key)
        ):
            raise UserError(
                f"--instance {item!r}: expected VARIANT, VARIANT@THREADS or THREADS before "
                f"'=' (THREADS a whole number from 1 to {MAX_VCPUS})"
            )
        # "08" and "local@08" name the cells of 8 threads (keys are matched as text).
        variant, at, threads = key.rpartition("@")
        key = f"{variant}@{int(threads)}" if at else str(int(key)) if key.isdigit() else key
        overrides[key] = value.strip()
    return Pricing(catalog, as_of=as_of, tier=tier, overrides=overrides, families=families)
