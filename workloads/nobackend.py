"""The test suite's guard (TFV_NO_REAL_WORKERS=1): importing a Keras backend fails."""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

BACKENDS = ("tensorflow", "keras", "jax", "torch")


class _Refuse(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> Any:
        if fullname.split(".")[0] in BACKENDS:
            raise ImportError(
                f"TFV_NO_REAL_WORKERS=1: importing {fullname} refused (a fast test must not "
                "start real TensorFlow: mark it @pytest.mark.tf, or fake the worker)"
            )
        return None


def install() -> None:
    if not any(isinstance(f, _Refuse) for f in sys.meta_path):
        sys.meta_path.insert(0, _Refuse())
