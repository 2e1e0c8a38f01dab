"""Variants: named recipes for where a worker runs (this interpreter, a venv, an
environment built from requirement specs, an image), plus env-only overlays.

The built-ins (tfvariants.variants.recipes) and a user TOML file are read the same way
here; what each kind does lives in tfvariants.variants.kinds. ``BASE+OVERLAY[+...]``
names a variant made on the fly: the base with the overlays' env and keras options on
top (see docs/builds.md for the TOML format).
"""

from __future__ import annotations

import importlib.util  # noqa: F401  (tests patch importlib.util.find_spec through here)
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tfvariants.errors import UserError
from tfvariants.store.inputs import VARIANTS_FILE_BYTES, InputError, read_input
from tfvariants.variants import engine as engines
from tfvariants.variants.kinds import BACKENDS, KIND_REGISTRY, Kind, Launching, get_kind
from tfvariants.variants.recipes import BUILTIN_TABLES
from workloads.protocol import WorkerRequest

KINDS = tuple(KIND_REGISTRY)
DEVICES = ("cpu", "gpu")

# TOML fields a variant table may have; anything else is a typo worth an error.
FIELDS = (
    "kind",
    "base",
    "python",
    "image",
    "engine",
    "env",
    "device",
    "keras",
    "keras_backend",
    "requirements",
    "index_urls",
    "description",
    "build",
)
# An overlay (a table with `base`) changes only these.
OVERLAY_FIELDS = ("base", "env", "keras", "description")
# \Z, not $: "$" also matches before a trailing newline, which would reach file names.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
_MAX_ENV_ENTRY = (
    128 * 1024
)  # Linux's MAX_ARG_STRLEN: execve refuses a longer KEY=VALUE  # '+' joins overlays, ',' lists


@dataclass(frozen=True)
class Variant:
    name: str
    kind: str
    python: str | None = None  # venv: interpreter; requirements: base Python to build from
    image: str | None = None  # image: container image reference
    env: Mapping[str, str] = field(default_factory=dict)
    device: str = "cpu"
    keras: Mapping[str, Any] = field(default_factory=dict)  # model.compile() options
    description: str = ""
    build: str | None = None  # how to make it, e.g. "make build-pip"
    engine: str | None = None  # image: docker or podman (default: detected)
    keras_backend: str | None = None  # tensorflow (default), jax or torch
    requirements: tuple[str, ...] = ()  # requirements: the specs it is built from
    index_urls: tuple[str, ...] = ()  # requirements: extra package indexes
    base: str | None = None  # the variant an overlay was applied to
    overlay_env: Mapping[str, str] = field(default_factory=dict)  # what overlays set

    @property
    def backend(self) -> str:
        return self.keras_backend or "tensorflow"

    @property
    def kind_impl(self) -> Kind:
        return get_kind(self.kind)

    def interpreter(self) -> str:
        return self.kind_impl.interpreter(self)

    def launch(
        self,
        request: WorkerRequest,
        env: dict[str, str],
        cpus: tuple[int, ...],
        scratch_dir: Path,
        module: str = "workloads.worker",
    ) -> tuple[list[str], dict[str, str]]:
        """The command (and its environment) that runs ``python -m module`` in this
        variant with ``request`` (whose result path is inside ``scratch_dir``): a
        training or serving worker, or a probe (``WorkerRequest.probe``: ``module
        --result PATH``, workloads.envprobe)."""
        return self.kind_impl.launch(self, Launching(request, env, cpus, scratch_dir, module))

    def where(self) -> str:
        """The interpreter, environment or image this variant runs in, for display."""
        return self.kind_impl.where(self)

    def readiness(self) -> tuple[bool, str]:
        """(ready, detail): can a cell of this variant run here now? Cheap: the backend
        is looked up, never imported."""
        ready, detail = self.kind_impl.readiness(self)
        if ready and self.device == "gpu":
            reason = skip_reason(self)
            if reason:
                return False, reason
        return ready, detail

    def with_engine(self, engine: str | None) -> Variant:
        """This variant with ``--engine`` applied, when an engine runs it."""
        return replace(self, engine=engine) if engine and self.kind_impl.takes_engine else self

    def pins_on_host(self) -> bool:
        """Host-side affinity applies to local/venv/requirements; containers use
        --cpuset-cpus."""
        return self.kind_impl.pins_on_host

    def skip_reason(self) -> str | None:
        """Why a cell of this variant cannot run on this host (:func:`skip_reason`)."""
        return skip_reason(self)

    def prepare(self, log: Callable[[str], None]) -> dict[str, Any] | None:
        """Make the variant ready here when tfvariants builds it (requirement specs: on
        first use, under the environment's file lock, so concurrent cells wait for one
        build); return the environment's identity (None: a kind with nothing to build).
        Raises UserError when the build fails."""
        if not self.kind_impl.buildable:
            return None
        done = ensure_built(self, log)
        info = self.kind_impl.identity(self)
        return {**info, "this_cell": done or "reused (already built)"}


def _finite_json(value: Any) -> bool:
    """JSON without NaN or infinity (TOML dates are not JSON either)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (str, int, bool)):
        return True
    if isinstance(value, list):
        return all(_finite_json(v) for v in value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _finite_json(v) for k, v in value.items())
    return False


def _from_table(name: str, table: Mapping[str, Any], source: str) -> dict[str, Any]:
    """Check one variant table; return Variant keyword arguments (plus ``base`` for an
    overlay, resolved later)."""

    def bad(field_name: str, why: str) -> UserError:
        return UserError(f"{source}: variant '{name}': field '{field_name}' {why}")

    if not _NAME.match(name):
        raise UserError(f"{source}: variant name {name!r}: use letters, digits, '.', '_', '-'")
    for key in table:
        if key not in FIELDS:
            raise bad(key, f"is not a variant field (fields: {', '.join(FIELDS)})")
    base = table.get("base")
    if base is not None:
        if not isinstance(base, str) or not base:
            raise bad("base", "must name the variant this overlay applies to")
        extra = [k for k in table if k not in OVERLAY_FIELDS]
        if extra:
            raise bad(
                extra[0],
                f"cannot be set in an overlay (one with 'base'): only {', '.join(OVERLAY_FIELDS)}",
            )
    kind = table.get("kind")
    if base is None and kind not in KIND_REGISTRY:
        raise bad("kind", f"must be one of {', '.join(KINDS)} (got {kind!r})")
    env = table.get("env", {})
    if not isinstance(env, Mapping) or not all(
        isinstance(v, (str, int, float)) for v in env.values()
    ):
        raise bad("env", "must be a table of strings")
    for key, value in env.items():
        # What execve and `docker run -e KEY=VALUE` can carry: a name without '=' (or it
        # splits elsewhere), no NUL anywhere. Portable names, as POSIX shells write them.
        if not _ENV_NAME.fullmatch(key):
            raise bad(
                "env", f"has the name {key!r}: use letters, digits and '_' (not first a digit)"
            )
        if "\x00" in str(value):
            raise bad(f"env.{key}", "contains a NUL character")
        if len(key) + len(str(value)) + 1 >= _MAX_ENV_ENTRY:
            raise bad(f"env.{key}", "is longer than one environment entry can be (128 KiB)")
    device = table.get("device", "cpu")
    if device not in DEVICES:
        raise bad("device", f"must be cpu or gpu (got {device!r})")
    keras = table.get("keras", {})
    if not isinstance(keras, Mapping):
        raise bad("keras", "must be a table of model.compile() options")
    for key, value in keras.items():
        # They travel to the worker as JSON (no NaN/inf there) and into compile(**options).
        if not key.isidentifier():
            raise bad("keras", f"has the option {key!r}: not a keyword argument name")
        if not _finite_json(value):
            raise bad(f"keras.{key}", "must be finite numbers, text, booleans, lists or tables")
    backend = table.get("keras_backend")
    if backend is not None and backend not in BACKENDS:
        raise bad("keras_backend", f"must be one of {', '.join(BACKENDS)} (got {backend!r})")
    engine = table.get("engine")
    if engine is not None and engine not in engines.ENGINES:
        raise bad("engine", f"must be docker or podman (got {engine!r})")
    for text_field in ("description", "build"):
        if not isinstance(table.get(text_field, ""), str):
            raise bad(text_field, "must be a string")
    fields: dict[str, Any] = {
        "name": name,
        "env": {k: str(v) for k, v in env.items()},
        "keras": dict(keras),
        "description": str(table.get("description", "")),
    }
    if base is not None:
        return {**fields, "base": base}
    assert isinstance(kind, str)  # checked above: a variant that is not an overlay has a kind
    return {
        **fields,
        **get_kind(kind).check(table, bad),
        "kind": kind,
        "device": device,
        "build": table.get("build") or get_kind(kind).build_hint(name),
        "engine": engine,
        "keras_backend": backend,
    }


def _apply(base: Variant, overlay: Mapping[str, Any], name: str) -> Variant:
    """``base`` with an overlay's env and keras options on top."""
    return replace(
        base,
        name=name,
        env={**base.env, **overlay["env"]},
        keras={**base.keras, **overlay["keras"]},
        description=" + ".join(d for d in (base.description, overlay["description"]) if d),
        base=base.base or base.name,
        overlay_env={**base.overlay_env, **overlay["env"]},
    )


def _resolve(tables: dict[str, dict[str, Any]], source: dict[str, str]) -> dict[str, Variant]:
    """Concrete variants from checked tables: overlays applied to their bases."""
    out: dict[str, Variant] = {}

    def resolve(name: str, seen: tuple[str, ...]) -> Variant:
        if name in out:
            return out[name]
        table = tables[name]
        if "base" not in table:
            out[name] = Variant(**table)
            return out[name]
        base = table["base"]
        if base in seen or base == name:
            raise UserError(f"{source[name]}: variant '{name}': field 'base' is circular")
        if base not in tables:
            raise UserError(
                f"{source[name]}: variant '{name}': field 'base' names unknown variant "
                f"'{base}' (known: {', '.join(sorted(tables))})"
            )
        out[name] = _apply(resolve(base, (*seen, name)), table, name)
        return out[name]

    for name in tables:
        resolve(name, ())
    return out


def _read_tables(variants_file: str | Path | None) -> tuple[dict, dict[str, str]]:
    import tomllib

    tables = {name: _from_table(name, t, "built-in") for name, t in BUILTIN_TABLES.items()}
    source = dict.fromkeys(tables, "built-in")
    path = variants_file or os.environ.get("TFVARIANTS_CONFIG")
    found_here = path is None and Path("tfvariants.toml").is_file()
    if found_here:
        path = "tfvariants.toml"
    if path is None:
        return tables, source
    path = Path(path)
    try:
        # Regular files only, bounded: /dev/zero or a FIFO is one line, never a hang.
        data = tomllib.loads(read_input(path, VARIANTS_FILE_BYTES).decode("utf-8"))
    except InputError as exc:
        raise UserError(f"cannot read variants file {path}: {exc.reason}") from None
    except OSError as exc:
        raise UserError(f"cannot read variants file {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: invalid TOML: {exc}") from exc
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text (a binary file?)") from None
    except RecursionError:
        raise UserError(f"{path}: invalid TOML: nested too deeply") from None
    except ValueError as exc:  # an integer of over 4300 digits (Python's int limit)
        raise UserError(f"{path}: invalid TOML: {exc}") from None
    user = data.get("variants", {})
    if not isinstance(user, Mapping):
        raise UserError(f"{path}: [variants] must be a table of tables")
    for name, table in user.items():
        if not isinstance(table, Mapping):
            raise UserError(f"{path}: variant '{name}' must be a table")
        if found_here and source.get(name) == "built-in":
            # A file merely lying in the working folder must not change what a built-in
            # name (the `local` baseline above all) means; a named file may.
            raise UserError(
                f"{path} (found in the working folder) redefines the built-in variant "
                f"'{name}': rename it, or name the file with --variants-file to replace it"
            )
        tables[name] = _from_table(name, table, str(path))
        source[name] = str(path)
    return tables, source


def load_variants(variants_file: str | Path | None = None) -> dict[str, Variant]:
    """Built-ins plus the user's TOML file ([variants.NAME] tables), overlays resolved."""
    return _resolve(*_read_tables(variants_file))


def get_variant(name: str, variants_file: str | Path | None = None) -> Variant:
    """A variant by name, or ``BASE+OVERLAY[+OVERLAY...]``: the base with each overlay's
    env and keras options applied in order (an overlay is a variant declared with a
    ``base``, e.g. onednn-off, isa-sse41, xla)."""
    return get_variants([name], variants_file)[name]


def get_variants(
    names: Iterable[str], variants_file: str | Path | None = None
) -> dict[str, Variant]:
    """Each named variant (as get_variant names them), by name in the given order. The
    variants file is read and resolved once for all of them: per name, 10,000 declared
    variants would be parsed 10,000 times."""
    tables, source = _read_tables(variants_file)
    variants = _resolve(tables, source)
    return {name: _named(name, tables, variants) for name in names}


def _named(
    name: str, tables: Mapping[str, Mapping[str, Any]], variants: dict[str, Variant]
) -> Variant:
    base_name, *overlays = name.split("+")
    if base_name not in variants:
        raise UserError(f"unknown variant '{base_name}' (known: {', '.join(sorted(variants))})")
    variant = variants[base_name]
    for overlay in overlays:
        if "base" not in tables.get(overlay, {}):
            known = sorted(n for n, t in tables.items() if "base" in t)
            raise UserError(
                f"variant '{name}': '{overlay}' is not an overlay (overlays: {', '.join(known)})"
            )
        variant = _apply(variant, tables[overlay], name)
    return variant


def ensure_built(variant: Variant, log: Callable[[str], None]) -> str | None:
    """Build a variant tfvariants knows how to build (kind requirements) when it is not
    ready yet; return what was done, or None when nothing was needed or possible."""
    if not variant.kind_impl.buildable or variant.readiness()[0]:
        return None
    return variant.kind_impl.build(variant, log)


def skip_reason(variant: Variant) -> str | None:
    """Why a cell of this variant cannot run on this host (it is then 'skipped')."""
    if variant.device == "gpu" and not _host_has_gpu():
        return "no GPU visible on this host"
    if variant.device == "cpu" and variant.readiness()[0]:
        # A binary built for instructions this CPU lacks dies of SIGILL: say so up front.
        from tfvariants.variants import census

        return census.gate(variant)
    return None


def _host_has_gpu() -> bool:
    return (
        any(Path("/dev").glob("nvidia[0-9]*"))
        or Path("/dev/kfd").exists()
        or engines.gpu_visible()  # nvidia-smi -L: e.g. when /dev is not the host's
    )


BUILTINS: dict[str, Variant] = _resolve(
    {name: _from_table(name, t, "built-in") for name, t in BUILTIN_TABLES.items()},
    dict.fromkeys(BUILTIN_TABLES, "built-in"),
)
