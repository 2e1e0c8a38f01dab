"""The preset a run started with (``--preset``), one record for every task: a compiled
preset's stock wheel, builds, those skipped and why, its band (commands/presets.py), the
study's matrix, or just a preset's name (serve --preset study). Stored in run.json's
options as ``to_json`` writes it; :func:`preset_record` reads that, and a serving run's
bare name as older runs stored it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class PresetRecord:
    """What a run records about its preset (empty fields: the preset has none)."""

    name: str | None = None
    stock: str | None = None
    builds: tuple[str, ...] = ()
    skipped: Mapping[str, str] = field(default_factory=dict)  # build -> why it was not run
    explanatory: tuple[str, ...] = ()
    band: float | None = None
    min_effect: float | None = None
    left_out: str | None = None  # the explanatory builds the budget left out, in words
    # the study's matrix (compare --preset study), as it resolved
    variants: str | None = None
    threads: tuple[int, ...] = ()
    pricing: str | None = None

    def to_json(self) -> dict[str, Any]:
        record = {
            "name": self.name,
            "stock": self.stock,
            "builds": list(self.builds),
            "skipped": dict(self.skipped),
            "explanatory": list(self.explanatory),
            "left_out": self.left_out,
            "band": self.band,
            "min_effect": self.min_effect,
            "variants": self.variants,
            "threads": list(self.threads),
            "pricing": self.pricing,
        }
        return {k: v for k, v in record.items() if v not in (None, [], {})}


def named(text: str) -> PresetRecord:
    """A preset given by its name alone (serve --preset NAME)."""
    return PresetRecord(name=text)


def preset_record(value: object) -> PresetRecord | None:
    """run.json's "preset", typed: the record, or a serving run's bare name (as runs
    stored it before the record); None when absent."""
    if isinstance(value, PresetRecord) or value is None:
        return value
    if isinstance(value, str):
        return named(value) if value else None
    if not isinstance(value, Mapping):
        return None
    return PresetRecord(
        name=_text(value.get("name")),
        stock=_text(value.get("stock")),
        builds=tuple(str(b) for b in _list(value.get("builds"))),
        skipped={str(k): str(v) for k, v in _map(value.get("skipped")).items()},
        explanatory=tuple(str(b) for b in _list(value.get("explanatory"))),
        band=_number(value.get("band")),
        min_effect=_number(value.get("min_effect")),
        left_out=_text(value.get("left_out")),
        variants=_text(value.get("variants")),
        threads=tuple(t for t in _list(value.get("threads")) if isinstance(t, int)),
        pricing=_text(value.get("pricing")),
    )


def problem(value: object) -> str | None:
    """The stored bound: a record, or a serving run's name as older runs stored it."""
    ok = isinstance(value, Mapping) or (isinstance(value, str) and value)
    return None if ok else "a preset's record (an object) or its name"


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _list(value: object) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _number(value: object) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok else None  # type: ignore[arg-type]
