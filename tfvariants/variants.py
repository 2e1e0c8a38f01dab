"""Variants: named recipes for where a worker runs (this interpreter, a venv, an image).

Built-ins are defined here; a user TOML file adds or overrides them. This module knows
how to turn a worker's arguments into the command for each kind.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import workloads
from tfvariants.errors import UserError

KINDS = ("local", "venv", "image")
DEVICES = ("cpu", "gpu")

# The folder that contains the `workloads` package: the worker's PYTHONPATH.
WORKLOADS_PARENT = str(Path(workloads.__file__).resolve().parent.parent)


@dataclass(frozen=True)
class Variant:
    name: str
    kind: str
    python: str | None = None  # venv: interpreter path
    image: str | None = None  # image: container image reference
    env: Mapping[str, str] = field(default_factory=dict)
    device: str = "cpu"
    keras: Mapping[str, Any] = field(default_factory=dict)  # model.compile() options
    description: str = ""
    build: str | None = None  # how to make it, e.g. "make build-pip"

    def interpreter(self) -> str:
        if self.kind == "local":
            return sys.executable
        if self.kind == "venv":
            assert self.python
            return self.python
        raise ValueError(f"variant {self.name} ({self.kind}) has no host interpreter")

    def launch(
        self,
        worker_args: list[str],
        env: dict[str, str],
        cpus: tuple[int, ...],
        scratch_dir: Path,
        module: str = "workloads.worker",
    ) -> tuple[list[str], dict[str, str]]:
        """The command (and its environment) that runs ``python -m module`` (the worker,
        or workloads.envprobe) in this variant. It writes ``scratch_dir/result.json``."""
        if self.kind in ("local", "venv"):
            env = dict(env)
            env["PYTHONPATH"] = WORKLOADS_PARENT
            result = str(scratch_dir / "result.json")
            return [self.interpreter(), "-m", module, *worker_args, "--result", result], env
        raise UserError(f"variant '{self.name}': kind '{self.kind}' is not supported here")

    def pins_on_host(self) -> bool:
        """Host-side affinity applies to local/venv; containers use --cpuset-cpus."""
        return self.kind in ("local", "venv")


BUILTINS: dict[str, Variant] = {
    "local": Variant(
        name="local",
        kind="local",
        env={"TF_ENABLE_ONEDNN_OPTS": "1"},
        description="TensorFlow installed in this interpreter (pip wheel)",
        build="make install",
    ),
}


def _from_table(name: str, table: Mapping[str, Any], source: str) -> Variant:
    def bad(field_name: str, why: str) -> UserError:
        return UserError(f"{source}: variant '{name}': field '{field_name}' {why}")

    kind = table.get("kind")
    if kind not in KINDS:
        raise bad("kind", f"must be one of {', '.join(KINDS)} (got {kind!r})")
    env = table.get("env", {})
    if not isinstance(env, Mapping) or not all(
        isinstance(v, (str, int, float)) for v in env.values()
    ):
        raise bad("env", "must be a table of strings")
    device = table.get("device", "cpu")
    if device not in DEVICES:
        raise bad("device", f"must be cpu or gpu (got {device!r})")
    keras = table.get("keras", {})
    if not isinstance(keras, Mapping):
        raise bad("keras", "must be a table of model.compile() options")
    python = table.get("python")
    if kind == "venv":
        if not isinstance(python, str) or not python:
            raise bad("python", "is required for kind venv (path to the interpreter)")
        python = os.path.expanduser(python)
    image = table.get("image")
    if kind == "image" and (not isinstance(image, str) or not image):
        raise bad("image", "is required for kind image")
    return Variant(
        name=name,
        kind=kind,
        python=python,
        image=image,
        env={k: str(v) for k, v in env.items()},
        device=device,
        keras=dict(keras),
        description=str(table.get("description", "")),
        build=table.get("build"),
    )


def load_variants(variants_file: str | Path | None = None) -> dict[str, Variant]:
    """Built-ins plus the user's TOML file ([variants.NAME] tables)."""
    import tomllib

    variants = dict(BUILTINS)
    path = variants_file or os.environ.get("TFVARIANTS_CONFIG")
    if path is None and Path("tfvariants.toml").is_file():
        path = "tfvariants.toml"
    if path is None:
        return variants
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"cannot read variants file {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: invalid TOML: {exc}") from exc
    tables = data.get("variants", {})
    if not isinstance(tables, Mapping):
        raise UserError(f"{path}: [variants] must be a table of tables")
    for name, table in tables.items():
        if not isinstance(table, Mapping):
            raise UserError(f"{path}: variant '{name}' must be a table")
        variants[name] = _from_table(name, table, str(path))
    return variants


def get_variant(name: str, variants_file: str | Path | None = None) -> Variant:
    variants = load_variants(variants_file)
    if name not in variants:
        raise UserError(f"unknown variant '{name}' (known: {', '.join(sorted(variants))})")
    return variants[name]


def skip_reason(variant: Variant) -> str | None:
    """Why a cell of this variant cannot run on this host (it is then 'skipped')."""
    if variant.device == "gpu" and not _host_has_gpu():
        return "no GPU visible on this host"
    return None


def _host_has_gpu() -> bool:
    return any(Path("/dev").glob("nvidia[0-9]*")) or Path("/dev/kfd").exists()
