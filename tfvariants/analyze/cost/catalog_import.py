"""`tfvariants prices import`: a catalog TOML from a SkyPilot catalog CSV (vms.csv) or a
simple CSV (instance, vcpus, gpu, on_demand, spot, region, date).

Validation is as strict as for TOML catalogs: prices finite and > 0, vCPUs whole and
positive, dates real; a malformed row is one error naming the file, line and field. A
spot price above on-demand (seen in SkyPilot's H100 rows) is dropped and noted.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

from tfvariants.analyze.cost.catalog import MAX_VCPUS
from tfvariants.analyze.cost.catalog_fields import valid_date
from tfvariants.errors import UserError
from tfvariants.options.limits import decimal
from tfvariants.store.inputs import CSV_BYTES, read_input_text

SKYPILOT_HEADER = (
    "InstanceType",
    "vCPUs",
    "AcceleratorName",
    "AcceleratorCount",
    "Region",
    "Price",
    "SpotPrice",
)
SIMPLE_HEADER = ("instance", "vcpus", "gpu", "on_demand", "spot", "region", "date")
_GPU = re.compile(r"^(?:(\d+)\s*x\s*)?([A-Za-z0-9][\w.-]*)$")


@dataclass(frozen=True)
class Row:
    instance: str
    vcpus: int
    gpu_type: str | None
    gpu_count: int
    on_demand: float | None
    spot: float | None
    as_of: str
    note: str = ""


@dataclass(frozen=True)
class Imported:
    rows: list[Row]
    warnings: list[str]


def _price(text: str, where: str) -> float | None:
    text = (text or "").strip()
    if not text:
        return None
    value = decimal(text)
    if value is None or value <= 0:
        raise UserError(f"{where}: a price must be finite and > 0, got {text[:40]!r}")
    return value


def _vcpus(text: str, where: str) -> int:
    value = decimal(text or "")
    if value is None or not 1 <= value <= MAX_VCPUS or value != int(value):
        raise UserError(
            f"{where}: expected a whole number of vCPUs from 1 to {MAX_VCPUS}, got {text[:40]!r}"
        )
    return int(value)


def _name(text: str, where: str) -> str:
    """An instance name: printable, one line (it lands in messages, tables, the report)."""
    if not text.isprintable():
        raise UserError(f"{where}: control characters are not allowed, got {text[:40]!r}")
    return text


def _check_spot(row: Row, warnings: list[str]) -> Row:
    """The row, without a spot price above its on-demand one (said in ``warnings``)."""
    if row.spot is not None and row.on_demand is not None and row.spot > row.on_demand:
        warnings.append(
            f"{row.instance}: spot {row.spot:g} above on-demand {row.on_demand:g}: spot dropped"
        )
        note = (row.note + f"; spot {row.spot:g} > on-demand dropped").lstrip("; ")
        return replace(row, note=note, spot=None)
    return row


def read_csv(path: Path, *, region: str | None, as_of: str, match: list[str]) -> Imported:
    """Rows from either CSV flavour (detected from the header)."""
    # A regular file or a pipe, of bounded size (never /dev/zero), without a spreadsheet's
    # byte order mark; newline="" so that only CSV's own line ends split records (a
    # U+2028 inside a quoted name stays in the name, and is refused there).
    text = read_input_text(path, CSV_BYTES, pipe=True)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = tuple(reader.fieldnames or ())
        if set(SKYPILOT_HEADER) <= set(header):
            return _skypilot(path, reader, region=region, as_of=as_of, match=match)
        if set(SIMPLE_HEADER) <= set(header):
            return _simple(path, reader, region=region, match=match)
    except csv.Error as exc:  # e.g. a field over csv's 128 KiB limit, a NUL byte
        raise UserError(f"{path}: unreadable CSV at line {reader.line_num}: {exc}") from None
    raise UserError(
        f"{path}: unknown CSV header; expected SkyPilot's vms.csv columns or "
        f"{','.join(SIMPLE_HEADER)}"
    )


def _wanted(name: str, match: list[str]) -> bool:
    return not match or any(
        name == m or (m.endswith("*") and name.startswith(m[:-1])) for m in match
    )


def _skypilot(
    path: Path, reader: csv.DictReader, *, region: str | None, as_of: str, match: list[str]
) -> Imported:
    if region is None:
        raise UserError(f"{path}: a SkyPilot catalog lists many regions: choose one with --region")
    by_name: dict[str, list[tuple[int, dict]]] = {}
    skipped_accel = 0
    regions: set[str] = set()
    for line, rec in enumerate(reader, start=2):
        regions.add(rec.get("Region") or "")
        if rec.get("Region") != region:
            continue
        name = _name((rec.get("InstanceType") or "").strip(), f"{path}:{line}: InstanceType")
        if not name:
            skipped_accel += 1  # GCE lists GPUs apart from their host VM
            continue
        if _wanted(name, match):
            by_name.setdefault(name, []).append((line, rec))
    if not by_name:
        if region not in regions:
            raise UserError(f"{path}: no rows for region {region!r}")
        raise UserError(f"{path}: no instance in {region} matches {','.join(match)}")
    rows, warnings = [], []
    for name, recs in sorted(by_name.items()):
        line, rec = recs[0]
        where = f"{path}:{line}: {name}"
        ods = {p for _l, r in recs if (p := _price(r.get("Price", ""), f"{where}: Price"))}
        spots = {
            p for _l, r in recs if (p := _price(r.get("SpotPrice", ""), f"{where}: SpotPrice"))
        }
        if not ods and not spots:
            warnings.append(f"{name}: no price in {region}: skipped")
            continue
        accel = (rec.get("AcceleratorName") or "").strip() or None
        count = (
            _vcpus(rec.get("AcceleratorCount") or "1", f"{where}: AcceleratorCount") if accel else 0
        )
        note = "" if len(ods) <= 1 and len(spots) <= 1 else "zones differ: highest used"
        row = Row(
            name,
            _vcpus(rec.get("vCPUs", ""), f"{where}: vCPUs"),
            accel,
            count,
            max(ods) if ods else None,
            max(spots) if spots else None,
            as_of,
            note,
        )
        rows.append(_check_spot(row, warnings))
    if skipped_accel:
        warnings.append(
            f"{skipped_accel} accelerator-only row(s) skipped (GCE prices GPUs apart from "
            "their host VM: add host + GPU as one row of a simple CSV)"
        )
    return Imported(rows, warnings)


def _simple(
    path: Path, reader: csv.DictReader, *, region: str | None, match: list[str]
) -> Imported:
    rows: list[Row] = []
    warnings: list[str] = []
    seen: set[str] = set()
    for line, rec in enumerate(reader, start=2):
        where = f"{path}:{line}"
        name = _name((rec.get("instance") or "").strip(), f"{where}: instance")
        if not name:
            raise UserError(f"{where}: instance: missing")
        if (region and rec.get("region", "").strip() != region) or not _wanted(name, match):
            continue
        if name in seen:
            raise UserError(f"{where}: instance {name!r} listed twice")
        seen.add(name)
        gpu_type, gpu_count = None, 0
        gpu = (rec.get("gpu") or "").strip()
        if gpu and gpu.lower() not in ("none", "-"):
            m = _GPU.match(gpu)
            if not m:
                raise UserError(f"{where}: gpu: expected e.g. L4 or 2x A100, got {gpu!r}")
            gpu_count, gpu_type = int(m.group(1) or 1), m.group(2)
            if gpu_count < 1:
                raise UserError(f"{where}: gpu: count must be >= 1, got {gpu!r}")
        when = (rec.get("date") or "").strip()
        if not valid_date(when):
            raise UserError(f"{where}: date: expected a real YYYY-MM or YYYY-MM-DD, got {when!r}")
        od = _price(rec.get("on_demand", ""), f"{where}: on_demand")
        spot = _price(rec.get("spot", ""), f"{where}: spot")
        if od is None and spot is None:
            raise UserError(f"{where}: needs on_demand and/or spot")
        row = Row(
            name,
            _vcpus(rec.get("vcpus", ""), f"{where}: vcpus"),
            gpu_type,
            gpu_count,
            od,
            spot,
            when,
        )
        rows.append(_check_spot(row, warnings))
    if not rows:
        raise UserError(f"{path}: no rows{' for region ' + region if region else ''}")
    return Imported(rows, warnings)


def _q(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, except that TOML also wants DEL
    escaped."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def to_data(imported: Imported, *, name: str, source: str, minimum_s: float) -> dict[str, Any]:
    """The catalog (spot tier named "spot"; per-second billing with a minimum), as
    `parse_catalog` reads it. Its default date is the latest row's, so every row's price
    is selected."""
    default: dict[str, Any] = {"as_of": max(r.as_of for r in imported.rows), "tier": "spot"}
    gpus = sorted({r.gpu_type for r in imported.rows if r.gpu_type})
    if gpus:
        default["gpu"] = gpus[0]
    instances = []
    for r in imported.rows:
        inst: dict[str, Any] = {"name": r.instance, "vcpus": r.vcpus}
        if r.gpu_type:
            inst["gpu"] = {"type": r.gpu_type, "count": r.gpu_count}
        point: dict[str, Any] = {"as_of": r.as_of, "on_demand": r.on_demand, "spot": r.spot}
        if r.note:
            point["note"] = r.note
        inst["prices"] = [{k: v for k, v in point.items() if v is not None}]
        instances.append(inst)
    return {
        "name": name,
        "source": source,
        "currency": "USD",
        "billing": {"rule": "per_second", "minimum_seconds": minimum_s},
        "default": default,
        "instance": instances,
    }


def _value(value: object) -> str:
    """A TOML value of the shapes `to_data` makes."""
    if isinstance(value, str):
        return _q(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_value(v)}" for k, v in value.items()) + " }"
    assert isinstance(value, list)
    return "[" + ", ".join(_value(v) for v in value) + "]"


def to_toml(data: dict[str, Any]) -> str:
    """`to_data`'s catalog as TOML text."""
    lines = [f"# Imported by `tfvariants prices import` on {date.today().isoformat()}."]
    lines += [f"{k} = {_value(data[k])}" for k in ("name", "source", "currency")]
    for table in ("billing", "default"):
        lines += ["", f"[{table}]", *(f"{k} = {_value(v)}" for k, v in data[table].items())]
    for inst in data["instance"]:
        lines += ["", "[[instance]]", *(f"{k} = {_value(v)}" for k, v in inst.items())]
    return "\n".join(lines) + "\n"
