"""The test suite's guard (TFV_NO_REAL_WORKERS=1): importing a Keras backend fails."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

BACKENDS = ("tensorflow", "keras", "jax", "torch")


class _RefusingLoader(importlib.abc.Loader):
    """Fails the import itself, not the lookup: ``importlib.util.find_spec`` (a variant's
    readiness check) still answers, an ``import tensorflow`` raises."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        raise ImportError(
            f"TFV_NO_REAL_WORKERS=1: importing {spec.name} refused (a fast test must not "
            "start real TensorFlow: mark it @pytest.mark.tf, or fake the worker)"
        )

    def exec_module(self, module: ModuleType) -> None:  # never reached: create_module raises
        raise ImportError(f"TFV_NO_REAL_WORKERS=1: importing {module.__name__} refused")


class _Refuse(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> Any:
        if fullname.split(".")[0] in BACKENDS:
            return importlib.machinery.ModuleSpec(fullname, _RefusingLoader())
        return None


def install() -> None:
    if not any(isinstance(f, _Refuse) for f in sys.meta_path):
        sys.meta_path.insert(0, _Refuse())
