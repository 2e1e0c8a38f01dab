"""A configuration's key in words, where the report shows it (the analysis keeps keys)."""

from __future__ import annotations

from tfvariants.plan.cell import config_label
from tfvariants.plan.serve import ServeKey, serve_label
from tfvariants.store.training import ConfigKey


def config_words(key: ConfigKey | ServeKey | None) -> str:
    """``VARIANT@THREADS`` (training), with the path and batching (serving); "n/a"
    where there is none."""
    if isinstance(key, ServeKey):
        return serve_label(key)
    return config_label(key.variant, key.threads) if key is not None else "n/a"
