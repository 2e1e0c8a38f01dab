"""Price catalogs: dated TOML files (built-in ones in ``catalogs/``), validated on load.

A catalog names its source and lists instances (vCPUs, GPU) with dated price points
per tier (on_demand, preemptible) and its billing rule (e.g. per second with a 1-minute
minimum). What a cell costs under it: :mod:`tfvariants.analyze.cost.pricing`.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import tomllib

from tfvariants.analyze.cost import catalog_cache
from tfvariants.analyze.cost.catalog_fields import (
    Where,
    at,
    field_at,
    finite_number,
    known_fields,
    printable,
    valid_date,
)
from tfvariants.errors import UserError
from tfvariants.store.inputs import CATALOG_BYTES, read_input

CATALOG_DIR = Path(__file__).parent / "catalogs"
DEFAULT_CATALOG = "gce-2017"
TIERS = ("preemptible", "on_demand")
# Today's clouds say "spot" for what GCE called "preemptible" in 2017: one tier, two words.
TIER_ALIASES = {"spot": "preemptible", "on-demand": "on_demand"}


def normalize_tier(tier: str | None) -> str | None:
    """The internal tier name for a user's or catalog's word (spot -> preemptible)."""
    return TIER_ALIASES.get(tier, tier) if tier is not None else None


_RULE_UNITS = {"per_second": 1, "per_minute": 60, "per_hour": 3600}
MAX_MINIMUM_S = 24 * 3600.0


@dataclass(frozen=True)
class PricePoint:
    as_of: str
    on_demand: float | None = None
    preemptible: float | None = None
    note: str = ""

    def get(self, tier: str) -> float | None:
        return self.on_demand if tier == "on_demand" else self.preemptible


@dataclass(frozen=True)
class Instance:
    name: str
    vcpus: int
    gpu_type: str | None
    gpu_count: int
    prices: tuple[PricePoint, ...]


@dataclass(frozen=True)
class Billing:
    rule: str
    minimum_seconds: float = 0.0

    @property
    def unit_seconds(self) -> int:
        return _RULE_UNITS[self.rule]

    def billed_seconds(self, seconds: float) -> float:
        """Seconds you pay for: rounded up to the billing unit, at least the minimum."""
        unit = self.unit_seconds
        rounded = math.ceil(seconds / unit - 1e-9) * unit if seconds > 0 else 0
        return float(max(self.minimum_seconds, rounded))

    def describe(self) -> str:
        text = self.rule.replace("_", " ")
        if self.minimum_seconds:
            text += f", minimum {self.minimum_seconds:g} s"
        return text


@dataclass(frozen=True)
class SelectedPrice:
    instance: Instance
    per_hour: float
    tier: str
    as_of: str
    note: str = ""


@dataclass(frozen=True)
class Catalog:
    name: str
    title: str
    source: str
    currency: str
    billing: Billing
    instances: tuple[Instance, ...]
    default_as_of: str | None
    default_tier: str
    default_gpu: str | None
    path: str
    spot_word: str = "preemptible"  # how this catalog names the interruptible tier
    warnings: tuple[str, ...] = ()  # what was accepted with a change (a dropped spot price)

    def tier_word(self, tier: str) -> str:
        """A tier in the catalog's own words (spot or preemptible; on-demand)."""
        return self.spot_word if tier == "preemptible" else "on-demand"

    @functools.cached_property
    def _by_name(self) -> dict[str, Instance]:
        # catalogs reach 100k+ instances (prices import of a cloud's list): one index
        return {inst.name: inst for inst in self.instances}

    def instance(self, name: str) -> Instance:
        found = self._by_name.get(name)
        if found is not None:
            return found
        known = ", ".join(i.name for i in self.instances[:20])
        known += f", ... ({len(self.instances):,} in all)" if len(self.instances) > 20 else ""
        raise UserError(f"catalog {self.name} has no instance {name!r} (known: {known})")

    def price(
        self, inst: Instance, *, as_of: str | None = None, tier: str | None = None
    ) -> SelectedPrice | None:
        """The latest price point on or before ``as_of`` in the preferred tier; falls
        back to the other tier (noted) when the preferred one has no figure."""
        as_of = as_of or self.default_as_of
        tier = tier or self.default_tier
        points = [p for p in inst.prices if as_of is None or p.as_of <= as_of]
        if not points:
            return None
        for want in (tier, *[t for t in TIERS if t != tier]):
            for point in sorted(points, key=lambda p: p.as_of, reverse=True):
                value = point.get(want)
                if value is not None:
                    note = point.note
                    if want != tier:
                        note = (
                            f"no {self.tier_word(tier)} price as of {as_of}; "
                            f"{self.tier_word(want)} used " + note
                        ).strip()
                    return SelectedPrice(inst, value, want, point.as_of, note)
        return None


CATALOG_FIELDS = ("name", "title", "source", "currency", "billing", "default", "instance")
BILLING_FIELDS = ("rule", "minimum_seconds")
DEFAULT_FIELDS = ("as_of", "tier", "gpu")
INSTANCE_FIELDS = ("name", "vcpus", "cpu", "gpu", "prices")  # cpu: the platform, for readers
MAX_VCPUS = 4096  # tfvariants.options.limits.MAX_THREADS: no cell asks for more
# --instance keys: a variant name (with +overlays), VARIANT@THREADS, or THREADS.
# An ISO 4217 code; amounts are shown as "$1.23" for USD and "1.23 EUR" for the others.
_CURRENCY = re.compile(r"[A-Z]{3}", re.ASCII)


def parse_catalog(data: dict, path: str) -> Catalog:
    """Validate a parsed TOML catalog; errors name the file, instance and field.

    A price point whose spot price is above its on-demand price keeps on-demand only,
    with a note and a warning in ``Catalog.warnings`` (as ``prices import`` does)."""
    known_fields(data, CATALOG_FIELDS, path)
    for key in ("name", "source"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise UserError(f"{field_at(path, None, key)}: missing or not a string")
        printable(data[key], field_at(path, None, key))
    title = printable(data.get("title", data["name"]), field_at(path, None, "title"))
    currency = data.get("currency", "USD")
    if not isinstance(currency, str) or not _CURRENCY.fullmatch(currency):
        raise UserError(
            f"{field_at(path, None, 'currency')}: expected a 3-letter currency code like USD "
            f"or EUR, got {str(currency)[:40]!r}"
        )
    billing = _billing(data, path)
    spot_word = "spot" if _uses_spot(data) else "preemptible"
    tier, as_of, default_gpu = _defaults(data, path, spot_word)
    raw_instances = data.get("instance")
    if not isinstance(raw_instances, list) or not raw_instances:
        raise UserError(f"{field_at(path, None, 'instance')}: no [[instance]] entries")
    instances: list[Instance] = []
    seen: set[str] = set()  # a set: a list scan per instance is quadratic at 100k
    warnings: list[str] = []
    for i, raw in enumerate(raw_instances):
        name = raw.get("name") if isinstance(raw, dict) else None
        if not isinstance(name, str) or not name:
            raise UserError(f"{path}: instance #{i + 1}: missing field 'name'")
        printable(name, functools.partial("{}: instance #{}, field 'name'".format, path, i + 1))
        if name in seen:
            raise UserError(f"{field_at(path, name, 'name')}: duplicate instance")
        seen.add(name)
        assert isinstance(raw, dict)  # a name was read from it
        instances.append(_instance(raw, name, path, spot_word, warnings))
    if default_gpu is not None and not any(i.gpu_type == default_gpu for i in instances):
        gpus = sorted({i.gpu_type for i in instances if i.gpu_type})
        raise UserError(
            f"{field_at(path, None, 'default.gpu')}: no instance has GPU {default_gpu!r} "
            f"(have: {', '.join(gpus) or 'none'})"
        )
    return Catalog(
        name=data["name"],
        title=title,
        source=data["source"],
        currency=currency,
        billing=billing,
        instances=tuple(instances),
        default_as_of=as_of,
        default_tier=tier,
        default_gpu=default_gpu,
        path=path,
        spot_word=spot_word,
        warnings=tuple(warnings),
    )


def _billing(data: dict, path: str) -> Billing:
    billing_raw = data.get("billing")
    if not isinstance(billing_raw, dict):
        raise UserError(f"{field_at(path, None, 'billing')}: missing table [billing]")
    known_fields(billing_raw, BILLING_FIELDS, field_at(path, None, "billing"))
    rule = billing_raw.get("rule")
    if rule not in _RULE_UNITS:
        raise UserError(
            f"{field_at(path, None, 'billing.rule')}: expected one of "
            f"{', '.join(_RULE_UNITS)}, got {rule!r}"
        )
    minimum = finite_number(
        billing_raw.get("minimum_seconds", 0),
        field_at(path, None, "billing.minimum_seconds"),
        positive=False,
    )
    if minimum > MAX_MINIMUM_S:
        raise UserError(
            f"{field_at(path, None, 'billing.minimum_seconds')}: at most {MAX_MINIMUM_S:g} "
            f"(a day), got {minimum:g}"
        )
    return Billing(rule, minimum)


def _defaults(data: dict, path: str, spot_word: str) -> tuple[str, str | None, str | None]:
    """The [default] table: (tier, as_of, gpu)."""
    default = data.get("default", {})
    if not isinstance(default, dict):
        raise UserError(f"{field_at(path, None, 'default')}: expected a table")
    known_fields(default, DEFAULT_FIELDS, field_at(path, None, "default"))
    tier = normalize_tier(default.get("tier", "on_demand"))
    if tier not in TIERS:
        raise UserError(
            f"{field_at(path, None, 'default.tier')}: expected {spot_word} or on_demand, "
            f"got {default.get('tier')!r}"
        )
    as_of = default.get("as_of")
    if as_of is not None and not valid_date(as_of):
        raise UserError(
            f"{field_at(path, None, 'default.as_of')}: expected YYYY-MM or YYYY-MM-DD, "
            f"got {as_of!r}"
        )
    default_gpu = default.get("gpu")
    if default_gpu is not None:
        printable(default_gpu, field_at(path, None, "default.gpu"))
    return tier, as_of, default_gpu


def _instance(raw: dict, name: str, path: str, spot_word: str, warnings: list[str]) -> Instance:
    """One [[instance]]; a dropped spot price adds to ``warnings``."""
    known_fields(raw, INSTANCE_FIELDS, lambda: f"{path}: instance {name!r}")
    if "cpu" in raw:
        printable(raw["cpu"], lambda: field_at(path, name, "cpu"))
    vcpus = raw.get("vcpus")
    if isinstance(vcpus, bool) or not isinstance(vcpus, int) or not 1 <= vcpus <= MAX_VCPUS:
        raise UserError(
            f"{field_at(path, name, 'vcpus')}: expected a whole number from 1 to {MAX_VCPUS}, "
            f"got {vcpus!r}"
        )
    gpu_type, gpu_count = _gpu(raw.get("gpu", "none"), lambda: field_at(path, name, "gpu"))
    raw_prices = raw.get("prices")
    if not isinstance(raw_prices, list) or not raw_prices:
        raise UserError(f"{field_at(path, name, 'prices')}: expected a list of price points")
    points: list[PricePoint] = []
    for j, rp in enumerate(raw_prices):
        point, warning = _price_point(
            rp, functools.partial(field_at, path, name, f"prices[{j}]"), spot_word
        )
        if any(p.as_of == point.as_of for p in points):
            raise UserError(
                f"{field_at(path, name, f'prices[{j}]')}: a second price point as of "
                f"{point.as_of} (which one applies would be ambiguous)"
            )
        points.append(point)
        if warning:
            warnings.append(warning)
    return Instance(name, vcpus, gpu_type, gpu_count, tuple(points))


def _gpu(gpu: object, where: Where) -> tuple[str | None, int]:
    """An instance's GPU: (type, count), or (None, 0) for "none"."""
    if isinstance(gpu, dict):
        gpu_type, gpu_count = gpu.get("type"), gpu.get("count", 1)
        if (
            set(gpu) - {"type", "count"}
            or not isinstance(gpu_type, str)
            or not gpu_type.strip()
            or not gpu_type.isprintable()
            or isinstance(gpu_count, bool)
            or not isinstance(gpu_count, int)
            or not 1 <= gpu_count <= 64
        ):
            raise UserError(
                f'{at(where)}: expected {{type = "K80", count = 1}} (1 to 64 GPUs) or "none", '
                f"got {gpu!r}"
            )
        return gpu_type, gpu_count
    if gpu not in ("none", None):
        raise UserError(f'{at(where)}: expected {{type = ..., count = ...}} or "none", got {gpu!r}')
    return None, 0


def _price_point(rp: object, where: Where, spot_word: str) -> tuple[PricePoint, str | None]:
    """One dated price point, and a warning when its spot price was dropped. Errors name
    the field by the catalog's own word (spot or preemptible)."""
    if not isinstance(rp, dict):
        raise UserError(f"{at(where)}: expected a table")
    if "spot" in rp and "preemptible" in rp:
        raise UserError(f"{at(where)}: give spot or preemptible, not both (one tier)")
    word = "spot" if "spot" in rp else "preemptible" if "preemptible" in rp else spot_word
    fields = ("as_of", "on_demand", word, "note")
    known_fields(rp, fields, where)
    date = rp.get("as_of")
    if not valid_date(date):
        raise UserError(f"{at(where)}.as_of: expected YYYY-MM or YYYY-MM-DD, got {date!r}")
    od, pe = rp.get("on_demand"), rp.get(word)
    if od is None and pe is None:
        raise UserError(f"{at(where)}: needs on_demand and/or {word}")
    on_demand = None if od is None else finite_number(od, lambda: f"{at(where)}.on_demand")
    spot = None if pe is None else finite_number(pe, lambda: f"{at(where)}.{word}")
    note = printable(rp.get("note", ""), lambda: f"{at(where)}.note", required=False)
    warning = None
    if on_demand is not None and spot is not None and spot > on_demand:
        # As `prices import` does with such rows: keep the on-demand price, say so.
        warning = f"{at(where)}: {word} {spot:g} above on-demand {on_demand:g}: {word} dropped"
        note = f"{note}; {word} {spot:g} > on-demand dropped".lstrip("; ")
        spot = None
    return PricePoint(date, on_demand, spot, note), warning


def _uses_spot(data: dict) -> bool:
    """Does the catalog say "spot" (in its default tier or any price point)?"""
    default = data.get("default")
    if isinstance(default, dict) and default.get("tier") == "spot":
        return True
    for raw in data.get("instance") or []:
        for rp in (raw.get("prices") or []) if isinstance(raw, dict) else []:
            if isinstance(rp, dict) and "spot" in rp:
                return True
    return False


def builtin_catalogs() -> list[str]:
    return sorted(p.stem for p in CATALOG_DIR.glob("*.toml"))


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        return False


def load_catalog(name_or_path: str) -> Catalog:
    """A built-in catalog by name (e.g. ``gce-2017``) or a file path (TOML, or JSON by
    its ``.json`` suffix)."""
    path = CATALOG_DIR / f"{name_or_path}.toml"
    if not (re.fullmatch(r"[\w.-]+", name_or_path) and _is_file(path)):
        path = Path(name_or_path)
        if not _is_file(path):
            raise UserError(
                f"no pricing catalog {name_or_path!r}: not a built-in "
                f"({', '.join(builtin_catalogs())}) and no such file"
            )
    form = "JSON" if path.suffix == ".json" else "TOML"
    try:
        raw = read_input(path, CATALOG_BYTES)
        entry = catalog_cache.entry_for(raw) if form == "TOML" else None
        kept = catalog_cache.tables(entry)
        if kept is not None and entry is not None:
            try:
                return parse_catalog(kept, str(path))
            except UserError as exc:  # validated as the file is: the file is the truth
                catalog_cache.refuse(entry, str(exc))
        text = raw.decode("utf-8")
        # JSON: what `prices import -o X.json` writes for a whole cloud, read 10x faster.
        data = json.loads(text) if form == "JSON" else tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # its message carries "(at line L, column C)"
        raise UserError(f"{path}: invalid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read: {exc}") from None
    except RecursionError:
        raise UserError(f"{path}: invalid {form}: nested too deeply") from None
    except ValueError as exc:  # JSON's errors; an integer of over 4300 digits
        raise UserError(f"{path}: invalid {form}: {exc}") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: invalid JSON: expected an object at the top")
    catalog = parse_catalog(data, str(path))
    catalog_cache.keep(entry, data)
    return catalog
