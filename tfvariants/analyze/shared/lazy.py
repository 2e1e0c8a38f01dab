"""A task package's names imported on first use (PEP 562): a command's start-up (e.g.
``tfvariants --help``) does not pay for a whole analysis it may never run."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy_names(package: str, modules: Mapping[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package``: each name in ``modules`` read from its
    submodule when first asked for."""

    def getattr_(name: str) -> object:
        if name not in modules:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{modules[name]}"), name)

    return getattr_
