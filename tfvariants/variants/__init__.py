"""Variants: named recipes for where a worker runs, and how their images are built.

The public names live in :mod:`tfvariants.variants.registry` (kinds in ``kinds``, the
built-in recipes in ``recipes``, requirement-spec environments in ``envbuild``); they are
re-exported here so callers can write ``from tfvariants.variants import get_variant``.
"""

from tfvariants.variants.kinds import WORKLOADS_PARENT
from tfvariants.variants.recipes import TF_VERSION
from tfvariants.variants.registry import (
    BUILTINS,
    DEVICES,
    FIELDS,
    KINDS,
    Variant,
    ensure_built,
    get_variant,
    get_variants,
    load_variants,
    skip_reason,
)

__all__ = [
    "BUILTINS",
    "DEVICES",
    "FIELDS",
    "KINDS",
    "TF_VERSION",
    "WORKLOADS_PARENT",
    "Variant",
    "ensure_built",
    "get_variant",
    "get_variants",
    "load_variants",
    "skip_reason",
]
