"""A big TOML catalog parsed once. tomllib takes seconds for a whole cloud's 100k
instances (JSON: a tenth of that), so the tables of a TOML catalog of a MiB or more
that validated are kept as JSON under the tool's cache (``catalogs/<sha256>.json``, by
the file's bytes: an edit is a new entry). An entry is read like every cache entry
(bounded, a JSON object naming this file's digest) and then validated as the file
itself is; one that fails is ignored with one warning and the file parsed again."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from tfvariants.store import cachefiles
from tfvariants.store.inputs import CATALOG_BYTES

CACHED_FROM = 1 << 20  # smaller ones (the built-ins: a few KB) parse in milliseconds


def entry_for(raw: bytes) -> Path | None:
    """Where the tables of a TOML catalog of these bytes are kept (None: not kept)."""
    if len(raw) < CACHED_FROM:
        return None
    folder = cachefiles.usable(cachefiles.home() / "catalogs")
    return None if folder is None else folder / f"{hashlib.sha256(raw).hexdigest()}.json"


def tables(entry: Path | None) -> dict[str, Any] | None:
    """The kept tables, or None (none kept, or an entry that is not one: warned)."""
    if entry is None:
        return None
    digest = entry.stem
    found = cachefiles.read_entry(entry, lambda record: _problem(record, digest), CATALOG_BYTES)
    return None if found is None else found["tables"]


def _problem(record: dict[str, Any], digest: str) -> str | None:
    if record.get("sha256") != digest:
        return "not the tables of this catalog"
    return None if isinstance(record.get("tables"), dict) else "field 'tables' is not a table"


def refuse(entry: Path, why: str) -> None:
    """Kept tables that did not validate: said once, the file parsed again."""
    cachefiles.warn_once(f"cache entry {entry}: ignored ({why}); found again")


def keep(entry: Path | None, data: dict[str, Any]) -> None:
    """Keep the tables of a catalog that validated (a cache that cannot take them: said)."""
    if entry is not None:
        cachefiles.write_entry(entry, {"sha256": entry.stem, "tables": data})
