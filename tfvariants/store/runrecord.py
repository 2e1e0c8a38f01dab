"""What a run adds to its run.json as it goes, besides its hosts (store/runhosts.py):
what the variants' probes found (``variant_info``) and the adaptive rounds' record
(``adaptive``). Each merges into what is stored and writes atomically (store/runfile.py),
so commands never read-modify-write run.json themselves."""

from __future__ import annotations

from pathlib import Path

from tfvariants.store.runfile import load_run, write_run


def store_variant_info(out: Path, info: dict[str, dict]) -> None:
    """Add what the probe found to run.json's variant_info (a resume keeps what a
    variant's first probe stored and adds only what is new)."""
    record = load_run(out)
    stored = record.get("variant_info") or {}
    merged = {name: {**entry, **stored.get(name, {})} for name, entry in info.items()}
    if merged != stored:
        write_run(out, {**record, "variant_info": merged})


def update_adaptive(out: Path, **fields: object) -> None:
    """Add or replace fields of run.json's "adaptive" record, keeping the others."""
    record = load_run(out)
    write_run(out, {**record, "adaptive": {**(record.get("adaptive") or {}), **fields}})
