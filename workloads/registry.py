"""Finding a workload: a built-in name, or a path to a user's ``.py`` file.

Importing a workload module must not import TensorFlow (models are built in
functions), so the host can list workloads and read their SPEC cheaply.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from types import ModuleType

BUILTIN = (
    "mnist_mlp",
    "mnist_cnn",
    "cifar10_cnn",
    "imdb_fasttext",
    "imdb_bilstm",
    "text_generation",
)

REQUIRED_SPEC_KEYS = ("name", "batch_size", "epochs")
REQUIRED_FUNCTIONS = ("load_data", "build_model")


class WorkloadError(Exception):
    """A workload name or file that cannot be used."""


def available() -> list[str]:
    """Built-in workload names whose module is present in this copy."""
    here = os.path.dirname(os.path.abspath(__file__))
    return [n for n in BUILTIN if os.path.exists(os.path.join(here, f"{n}.py"))]


def is_path(name: str) -> bool:
    return name.endswith(".py") or os.sep in name


def load(name: str) -> ModuleType:
    """Import a workload by built-in name or file path and check its interface."""
    if is_path(name):
        path = os.path.abspath(name)
        if not os.path.isfile(path):
            raise WorkloadError(f"workload file not found: {name}")
        mod_name = "tfv_user_workload_" + os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(mod_name, path)
        if spec is None or spec.loader is None:
            raise WorkloadError(f"cannot import workload file: {name}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise WorkloadError(f"workload file {name} failed to import: {exc}") from exc
    else:
        if name not in available():
            known = ", ".join(available())
            raise WorkloadError(f"unknown workload '{name}' (known: {known}; or give a .py path)")
        module = importlib.import_module(f"workloads.{name}")
    check(module, name)
    return module


def check(module: ModuleType, label: str) -> None:
    spec = getattr(module, "SPEC", None)
    if not isinstance(spec, dict):
        raise WorkloadError(f"workload {label} has no SPEC dict")
    missing = [k for k in REQUIRED_SPEC_KEYS if k not in spec]
    if missing:
        raise WorkloadError(f"workload {label} SPEC lacks {', '.join(missing)}")
    for fn in REQUIRED_FUNCTIONS:
        if not callable(getattr(module, fn, None)):
            raise WorkloadError(f"workload {label} has no function {fn}()")
