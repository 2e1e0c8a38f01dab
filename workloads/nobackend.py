"""The test suite's guard (TFV_NO_REAL_WORKERS=1): importing a Keras backend fails.

Finding one still works (``importlib.util.find_spec`` answers as without the guard, so
readiness checks are unchanged); only executing its module is refused."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

BACKENDS = ("tensorflow", "keras", "jax", "torch")


class _RefusingLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        raise ImportError(
            f"TFV_NO_REAL_WORKERS=1: importing {module.__name__} refused (a fast test must "
            "not start real TensorFlow: mark it @pytest.mark.tf, or fake the worker)"
        )


class _Refuse(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.split(".")[0] not in BACKENDS:
            return None
        for finder in sys.meta_path:  # is it there at all? ask the real finders
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            real = finder.find_spec(fullname, path, target)
            if real is not None:
                return importlib.machinery.ModuleSpec(
                    fullname,
                    _RefusingLoader(),
                    is_package=real.submodule_search_locations is not None,
                )
        return None


def install() -> None:
    if not any(isinstance(f, _Refuse) for f in sys.meta_path):
        sys.meta_path.insert(0, _Refuse())
