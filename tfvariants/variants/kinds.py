"""Variant kinds: how a variant of each kind is checked, built, launched and pinned.

One small class per kind, registered by name (like asv's environment plugins): ``local``
(this interpreter), ``venv`` (another interpreter), ``requirements`` (an environment
tfvariants builds from requirement specs) and ``image`` (a container image). A
:class:`~tfvariants.variants.registry.Variant` holds the data; its kind does the work.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, TypeVar

import workloads
from tfvariants.errors import UserError
from tfvariants.variants import engine as engines
from tfvariants.variants import envbuild
from workloads.protocol import WorkerRequest

if TYPE_CHECKING:
    from tfvariants.variants.registry import Variant

# The folder that contains the `workloads` package: the worker's PYTHONPATH.
WORKLOADS_PARENT = str(Path(workloads.__file__).resolve().parent.parent)

# Keras backends and the module each needs (what readiness looks up, never imports).
BACKENDS: dict[str, tuple[str, str]] = {
    "tensorflow": ("tensorflow", "TensorFlow"),
    "jax": ("jax", "JAX"),
    "torch": ("torch", "PyTorch"),
}

# What the engine client itself needs from our environment (not the worker's: that is
# passed into the container with -e).
_ENGINE_CLIENT_ENV = (
    "PATH",
    "HOME",
    "USER",
    "LANG",
    "TMPDIR",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "DBUS_SESSION_BUS_ADDRESS",
    "DOCKER_HOST",
    "DOCKER_CONTEXT",
    "DOCKER_CONFIG",
    "DOCKER_CERT_PATH",
    "DOCKER_TLS_VERIFY",
    "CONTAINER_HOST",
    "CONTAINERS_CONF",
)

Bad = Callable[[str, str], UserError]


class Launching(NamedTuple):
    """What one launch of a worker needs beside its variant."""

    request: WorkerRequest
    env: dict[str, str]  # the worker's environment
    cpus: tuple[int, ...]  # the CPUs it is pinned to
    scratch_dir: Path  # holds the request's result path
    module: str  # run as ``python -m module``


class Kind:
    """The interface every kind implements. Subclasses set ``name``."""

    name: ClassVar[str] = ""
    pins_on_host: ClassVar[bool] = True  # host affinity; containers use --cpuset-cpus
    takes_engine: ClassVar[bool] = False  # a container engine runs it: --engine applies
    buildable: ClassVar[bool] = False  # tfvariants builds it from requirement specs
    this_interpreter: ClassVar[bool] = False  # runs in the interpreter tfvariants runs in

    def check(self, table: Mapping[str, Any], bad: Bad) -> dict[str, Any]:
        """Validate this kind's own TOML fields; return Variant keyword arguments."""
        return {}

    def readiness(self, variant: Variant) -> tuple[bool, str]:
        raise NotImplementedError

    def build_hint(self, name: str) -> str | None:
        """The command that makes a variant of this kind ready, when tfvariants knows it."""
        return None

    def build(self, variant: Variant, log: Callable[[str], None]) -> str:
        """Make the variant ready; return what was done. Kinds that tfvariants does
        not build say which command does."""
        ready, detail = self.readiness(variant)
        if ready:
            return detail
        how = f": run `{variant.build}`" if variant.build else ""
        raise UserError(f"variant '{variant.name}' ({self.name}) is not built by tfvariants{how}")

    def identity(self, variant: Variant) -> dict[str, Any]:
        """What names a built variant's environment in a cell's result."""
        return {"where": self.where(variant)}

    def interpreter(self, variant: Variant) -> str:
        raise ValueError(f"variant {variant.name} ({self.name}) has no host interpreter")

    def where(self, variant: Variant) -> str:
        return self.interpreter(variant)

    def launch(self, variant: Variant, how: Launching) -> tuple[list[str], dict[str, str]]:
        """``python -m module`` with the request (a probe's is ``--result`` alone)."""
        env = dict(how.env)
        env["PYTHONPATH"] = WORKLOADS_PARENT
        return [self.interpreter(variant), "-m", how.module, *how.request.to_argv()], env


KIND_REGISTRY: dict[str, Kind] = {}


def register(cls: type[Kind]) -> type[Kind]:
    """Class decorator: make a kind available by its name (TOML ``kind = ...``)."""
    KIND_REGISTRY[cls.name] = cls()
    return cls


def get_kind(name: str) -> Kind:
    try:
        return KIND_REGISTRY[name]
    except KeyError:
        raise UserError(f"unknown variant kind {name!r}") from None


T = TypeVar("T")


def _required(table: Mapping[str, Any], bad: Bad, field: str, kind: type[T], why: str) -> T:
    """A kind's required field: of type ``kind`` and not empty, or ``bad(field, why)``."""
    value = table.get(field)
    if not isinstance(value, kind) or not value:
        raise bad(field, why)
    return value


def _backend_module(variant: Variant) -> tuple[str, str]:
    return BACKENDS[variant.backend]


def _find_in(python: str, module: str) -> tuple[bool | None, str]:
    """Whether ``python`` can find ``module`` (looked up, not imported: seconds saved)."""
    code = f"import importlib.util,sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    try:
        proc = subprocess.run([python, "-c", code], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"cannot run {python}: {exc}"
    return proc.returncode == 0, ""


@register
class LocalKind(Kind):
    name = "local"
    this_interpreter = True

    def interpreter(self, variant: Variant) -> str:
        return sys.executable

    def readiness(self, variant: Variant) -> tuple[bool, str]:
        module, label = _backend_module(variant)
        if importlib.util.find_spec(module) is None:
            return False, f"no {label} in {sys.executable}: {variant.build or 'pip install'}"
        return True, f"{label} importable in this interpreter"


@register
class VenvKind(Kind):
    name = "venv"

    def check(self, table: Mapping[str, Any], bad: Bad) -> dict[str, Any]:
        python = _required(
            table, bad, "python", str, "is required for kind venv (path to the interpreter)"
        )
        return {"python": os.path.expanduser(python)}

    def interpreter(self, variant: Variant) -> str:
        assert variant.python
        return variant.python

    def readiness(self, variant: Variant) -> tuple[bool, str]:
        python = variant.python or ""
        if not python or not os.path.isfile(python):
            return False, f"interpreter not found: {python}"
        module, label = _backend_module(variant)
        found, problem = _find_in(python, module)
        if found is None:
            return False, problem
        if not found:
            package = "tensorflow-cpu" if module == "tensorflow" else module
            return False, f"no {label} in {python}: {python} -m pip install {package}"
        return True, f"{label} importable in this interpreter"


@register
class RequirementsKind(Kind):
    """An environment built by tfvariants from requirement specs, cached by their hash."""

    name = "requirements"
    buildable = True

    def check(self, table: Mapping[str, Any], bad: Bad) -> dict[str, Any]:
        why = "is required for kind requirements (a list of specs)"
        specs = _required(table, bad, "requirements", list, why)
        for spec in specs:
            problem = envbuild.spec_problem(spec)
            if problem:
                raise bad("requirements", problem)
        indexes = table.get("index_urls", [])
        if not isinstance(indexes, list) or not all(
            isinstance(u, str) and u.startswith(("https://", "http://", "file://")) for u in indexes
        ):
            raise bad("index_urls", "must be a list of http(s):// or file:// URLs")
        python = table.get("python")
        if python is not None and (not isinstance(python, str) or not python):
            raise bad("python", "must be an interpreter path or name")
        return {
            "requirements": tuple(specs),
            "index_urls": tuple(indexes),
            "python": os.path.expanduser(python) if python else None,
        }

    def interpreter(self, variant: Variant) -> str:
        return str(envbuild.env_python(envbuild.env_dir(variant)))

    def where(self, variant: Variant) -> str:
        return str(envbuild.env_dir(variant))

    def readiness(self, variant: Variant) -> tuple[bool, str]:
        try:
            info = envbuild.built_info(variant)
        except UserError as exc:
            return False, str(exc)
        if info is None:
            return False, f"not built: tfvariants variants build {variant.name}"
        return True, f"built {info.get('built_at', '')} ({len(info.get('lock', {}))} packages)"

    def build_hint(self, name: str) -> str | None:
        return f"tfvariants variants build {name}"

    def build(self, variant: Variant, log: Callable[[str], None]) -> str:
        return envbuild.build(variant, log)

    def identity(self, variant: Variant) -> dict[str, Any]:
        """What names the built environment in a cell's result (its content key)."""
        info = envbuild.built_info(variant) or {}
        keep = ("key", "built_at", "build_s", "installer", "import_check")
        return {"where": str(envbuild.env_dir(variant)), **{k: info.get(k) for k in keep}}


@register
class ImageKind(Kind):
    name = "image"
    pins_on_host = False
    takes_engine = True

    def check(self, table: Mapping[str, Any], bad: Bad) -> dict[str, Any]:
        image = _required(table, bad, "image", str, "is required for kind image")
        return {"image": image}

    def where(self, variant: Variant) -> str:
        return variant.image or ""

    def readiness(self, variant: Variant) -> tuple[bool, str]:
        engine = engines.detect_engine(variant.engine)
        if engine is None or engines.shutil.which(engine) is None:
            return False, "no container engine (install docker or podman)"
        if not engines.image_exists(engine, variant.image or ""):
            return False, f"not built: {variant.build}" if variant.build else "image not present"
        return True, f"image present ({engine})"

    def launch(self, variant: Variant, how: Launching) -> tuple[list[str], dict[str, str]]:
        assert variant.image
        request, env, cpus, scratch_dir, module = how
        engine = engines.require_engine(variant.engine)
        if not engines.image_exists(engine, variant.image):
            raise UserError(
                engines.missing_image_message(variant.name, variant.image, variant.build)
            )
        box = engines.Container(
            engine,
            variant.image,
            Path(WORKLOADS_PARENT) / "workloads",
            module=module,
            device=variant.device,
            # Named, so a container left behind by a killed client can be found.
            # (Engines allow [A-Za-z0-9_.-]: an overlay's '+' is replaced.)
            name="tfvariants-"
            + re.sub(r"[^A-Za-z0-9_.-]", "-", Path(scratch_dir).name.lstrip(".")),
        )
        command = engines.container_command(box, request, env, cpus, scratch_dir)
        client_env = {k: os.environ[k] for k in _ENGINE_CLIENT_ENV if k in os.environ}
        return command, client_env
