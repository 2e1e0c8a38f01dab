"""Variants: named recipes for where a worker runs (this interpreter, a venv, an image).

Built-ins are defined here; a user TOML file adds or overrides them. This module knows
how to turn a worker's arguments into the command for each kind, and whether a variant
is ready to run on this host (see docs/builds.md for the TOML format).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import workloads
from tfvariants.errors import UserError
from tfvariants.variants import engine as engines
from workloads.protocol import WorkerRequest

KINDS = ("local", "venv", "image")
DEVICES = ("cpu", "gpu")

# The folder that contains the `workloads` package: the worker's PYTHONPATH.
WORKLOADS_PARENT = str(Path(workloads.__file__).resolve().parent.parent)

# The TensorFlow version the built-in images are built for (builds/builds.mk TF_VERSION).
TF_VERSION = "2.21.0"

# TOML fields a variant table may have; anything else is a typo worth an error.
FIELDS = ("kind", "python", "image", "engine", "env", "device", "keras", "description", "build")

# What the engine client itself needs from our environment (not the worker's: that is
# passed into the container with -e).
_ENGINE_CLIENT_ENV = (
    "PATH", "HOME", "USER", "LANG", "TMPDIR", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME",
    "DBUS_SESSION_BUS_ADDRESS", "DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG",
    "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY", "CONTAINER_HOST", "CONTAINERS_CONF",
)  # fmt: skip

# Asks an interpreter whether it has TensorFlow without importing it (seconds saved).
_HAS_TF = "import importlib.util,sys; sys.exit(importlib.util.find_spec('tensorflow') is None)"


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
    engine: str | None = None  # image: docker or podman (default: detected)

    def interpreter(self) -> str:
        if self.kind == "local":
            return sys.executable
        if self.kind == "venv":
            assert self.python
            return self.python
        raise ValueError(f"variant {self.name} ({self.kind}) has no host interpreter")

    def launch(
        self,
        request: WorkerRequest | None,
        env: dict[str, str],
        cpus: tuple[int, ...],
        scratch_dir: Path,
        module: str = "workloads.worker",
    ) -> tuple[list[str], dict[str, str]]:
        """The command (and its environment) that runs ``python -m module`` in this
        variant: the worker with ``request`` (whose result path is inside
        ``scratch_dir``), or, with ``request=None``, ``module --result
        scratch_dir/result.json`` (workloads.envprobe)."""
        if self.kind in ("local", "venv"):
            env = dict(env)
            env["PYTHONPATH"] = WORKLOADS_PARENT
            args = (
                request.to_argv()
                if request is not None
                else ["--result", str(Path(scratch_dir) / "result.json")]
            )
            return [self.interpreter(), "-m", module, *args], env
        if self.kind == "image":
            return self._container_launch(request, env, cpus, scratch_dir, module)
        raise UserError(f"variant '{self.name}': kind '{self.kind}' is not supported here")

    def _container_launch(
        self,
        request: WorkerRequest | None,
        env: dict[str, str],
        cpus: tuple[int, ...],
        scratch_dir: Path,
        module: str,
    ) -> tuple[list[str], dict[str, str]]:
        assert self.image
        engine = engines.require_engine(self.engine)
        if not engines.image_exists(engine, self.image):
            raise UserError(engines.missing_image_message(self.name, self.image, self.build))
        command = engines.container_command(
            engine,
            self.image,
            request,
            env,
            cpus,
            scratch_dir,
            Path(WORKLOADS_PARENT) / "workloads",
            device=self.device,
            # Named, so a container left behind by a killed client can be found.
            name="tfvariants-" + Path(scratch_dir).name.lstrip("."),
            module=module,
        )
        client_env = {k: os.environ[k] for k in _ENGINE_CLIENT_ENV if k in os.environ}
        return command, client_env

    def where(self) -> str:
        """The interpreter or image this variant runs in, for display."""
        if self.kind == "image":
            return self.image or ""
        if self.kind == "venv":
            return self.python or ""
        return sys.executable

    def readiness(self) -> tuple[bool, str]:
        """(ready, detail): can a cell of this variant run here now? Cheap: TensorFlow is
        looked up, never imported."""
        if self.kind == "local":
            if importlib.util.find_spec("tensorflow") is None:
                return False, f"no TensorFlow in {sys.executable}: {self.build or 'pip install'}"
            ready, detail = True, "TensorFlow importable in this interpreter"
        elif self.kind == "venv":
            ready, detail = _venv_readiness(self.python or "")
        else:
            ready, detail = _image_readiness(self)
        if ready and self.device == "gpu":
            reason = skip_reason(self)
            if reason:
                return False, reason
        return ready, detail

    def pins_on_host(self) -> bool:
        """Host-side affinity applies to local/venv; containers use --cpuset-cpus."""
        return self.kind in ("local", "venv")


def _venv_readiness(python: str) -> tuple[bool, str]:
    if not python or not os.path.isfile(python):
        return False, f"interpreter not found: {python}"
    try:
        proc = subprocess.run([python, "-c", _HAS_TF], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"cannot run {python}: {exc}"
    if proc.returncode != 0:
        return False, f"no TensorFlow in {python}: {python} -m pip install tensorflow-cpu"
    return True, "TensorFlow importable in this interpreter"


def _image_readiness(variant: Variant) -> tuple[bool, str]:
    engine = engines.detect_engine(variant.engine)
    if engine is None or engines.shutil.which(engine) is None:
        return False, "no container engine (install docker or podman)"
    if not engines.image_exists(engine, variant.image or ""):
        return False, f"not built: {variant.build}" if variant.build else "image not present"
    return True, f"image present ({engine})"


# Every built-in pins oneDNN explicitly: its default depends on the CPU, and a variant
# must mean the same thing on every host.
_ONEDNN_ON = {"TF_ENABLE_ONEDNN_OPTS": "1"}

BUILTINS: dict[str, Variant] = {
    "local": Variant(
        name="local",
        kind="local",
        env=_ONEDNN_ON,
        description="TensorFlow installed in this interpreter (pip wheel)",
        build="make install",
    ),
    "xla": Variant(
        name="xla",
        kind="local",
        env=_ONEDNN_ON,
        keras={"jit_compile": True},
        description="this interpreter's TensorFlow with XLA: host-ISA code generated at "
        "run time, no build needed",
        build="make install",
    ),
    "pip": Variant(
        name="pip",
        kind="image",
        image=f"tfvariants/pip:{TF_VERSION}",
        env=_ONEDNN_ON,
        description="stock tensorflow-cpu wheel (AVX) in a container",
        build="make build-pip",
    ),
    "compiled": Variant(
        name="compiled",
        kind="image",
        image=f"tfvariants/compiled:{TF_VERSION}",
        env=_ONEDNN_ON,
        description="TensorFlow built from source with bazel for chosen CPU instructions",
        build="make build-compiled",
    ),
    "gpu": Variant(
        name="gpu",
        kind="image",
        image=f"tfvariants/gpu:{TF_VERSION}",
        env=_ONEDNN_ON,
        device="gpu",
        description="tensorflow[and-cuda] on an NVIDIA GPU",
        build="make build-gpu",
    ),
}


def _from_table(name: str, table: Mapping[str, Any], source: str) -> Variant:
    def bad(field_name: str, why: str) -> UserError:
        return UserError(f"{source}: variant '{name}': field '{field_name}' {why}")

    for key in table:
        if key not in FIELDS:
            raise bad(key, f"is not a variant field (fields: {', '.join(FIELDS)})")
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
    engine = table.get("engine")
    if engine is not None and engine not in engines.ENGINES:
        raise bad("engine", f"must be docker or podman (got {engine!r})")
    for text_field in ("description", "build"):
        if not isinstance(table.get(text_field, ""), str):
            raise bad(text_field, "must be a string")
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
        engine=engine,
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
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text (a binary file?)") from None
    except RecursionError:
        raise UserError(f"{path}: invalid TOML: nested too deeply") from None
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
    return (
        any(Path("/dev").glob("nvidia[0-9]*"))
        or Path("/dev/kfd").exists()
        or engines.gpu_visible()  # nvidia-smi -L: e.g. when /dev is not the host's
    )
