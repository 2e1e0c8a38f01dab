"""Environments built from requirement specs (the ``requirements`` variant kind).

An environment is a virtualenv in the cache folder (``$TFVARIANTS_ENVS``, else
``$XDG_CACHE_HOME/tfvariants/envs``), named by a hash of the specs, the extra index URLs
and the base Python's version: the same specs reuse it, changed specs build a new one.
uv builds it when it is installed (much faster, shared download cache), else
``python -m venv`` + pip. After the install, every installed distribution and its
version is written to ``tfvariants-env.json`` in the environment (the lock); the file
is written last, so an environment without it is an unfinished build and is rebuilt.
The worker's environment probe reads the same file (see workloads.envprobe).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfvariants.errors import UserError, one_line
from tfvariants.store import cachefiles
from tfvariants.variants.census import died_of_sigill, run_code
from workloads.protocol import write_json_atomic

if TYPE_CHECKING:
    from tfvariants.variants.registry import Variant

ENVS_VAR = "TFVARIANTS_ENVS"
INFO_FILE = "tfvariants-env.json"  # also named in workloads/envprobe.py

# A PEP 508 requirement in the forms a variant needs: name, extras, version specifiers
# and markers ("tensorflow-cpu==2.18.*", "jax[cpu]>=0.4; python_version>='3.10'"), or
# "name @ https://...". A leading '-' would be an installer option, so it is refused.
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_SPEC = re.compile(
    rf"^{_NAME}(\[{_NAME}(\s*,\s*{_NAME})*\])?"
    r"(\s*(\(?\s*(===|==|!=|~=|<=|>=|<|>)\s*[A-Za-z0-9.*+!_-]+"
    r"(\s*,\s*(===|==|!=|~=|<=|>=|<|>)\s*[A-Za-z0-9.*+!_-]+)*\s*\)?)"
    r"|\s*@\s*(https?|file)://\S+)?"
    r"(\s*;\s*[A-Za-z0-9_.'\"<>=!~ ()-]+)?$"
)


def spec_problem(spec: object) -> str | None:
    """Why ``spec`` is not an acceptable requirement spec (None when it is)."""
    if not isinstance(spec, str) or not spec.strip():
        return "must be a list of non-empty requirement strings"
    if not _SPEC.match(spec.strip()):
        return f"has a bad requirement spec {spec!r} (e.g. 'tensorflow-cpu==2.18.*')"
    return None


def cache_root() -> Path:
    if os.environ.get(ENVS_VAR):
        return Path(os.environ[ENVS_VAR]).expanduser()
    return cachefiles.home() / "envs"


def base_python(variant: Variant) -> str:
    """The interpreter the environment is made from (the variant's ``python``, else
    the one running tfvariants)."""
    python = variant.python or sys.executable
    found = shutil.which(python) if os.sep not in python else python
    if not found or not os.path.isfile(found):
        raise UserError(f"variant '{variant.name}': base Python not found: {python}")
    return found


@functools.lru_cache(maxsize=16)
def python_tag(python: str) -> str:
    """Implementation, version and machine of an interpreter: part of the cache key."""
    code = (
        "import platform,sys;"
        "print(platform.python_implementation(),*sys.version_info[:3],platform.machine())"
    )
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UserError(f"cannot run {python}: {exc}") from None
    if out.returncode != 0:
        raise UserError(f"cannot run {python}: exit {out.returncode}")
    return out.stdout.strip()


def env_key(variant: Variant) -> str:
    blob = json.dumps(
        {
            "requirements": list(variant.requirements),
            "index_urls": list(variant.index_urls),
            "python": python_tag(base_python(variant)),
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def env_dir(variant: Variant) -> Path:
    return cache_root() / f"env-{env_key(variant)}"


def env_python(folder: Path) -> Path:
    return folder / "bin" / "python"


def built_info(variant: Variant) -> dict[str, Any] | None:
    """The environment's info file (with the lock), or None when it is not built."""
    key = env_key(variant)
    path = env_dir(variant) / INFO_FILE
    info = cachefiles.read_entry(path, lambda record: _info_problem(record, key))
    if info is None or not env_python(path.parent).exists():
        return None
    return info


def _info_problem(info: dict[str, Any], key: str) -> str | None:
    """Why an environment's info file is not one this build wrote."""
    if info.get("key") != key:
        return "not the environment of these specs"
    lock = info.get("lock")
    if not isinstance(lock, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in lock.items()
    ):
        return "its lock is not a table of package versions"
    return cachefiles.bad_fields(
        info,
        {
            "build_s": lambda v: cachefiles.optional_number(v, 0, 1e7),
            "built_at": lambda v: cachefiles.text(v, 40),
            "import_check": cachefiles.text,
        },
    )


def find_uv() -> str | None:
    """uv on PATH, or next to this interpreter (installed into the same venv)."""
    beside = Path(sys.executable).parent / "uv"
    return shutil.which("uv") or (str(beside) if beside.is_file() else None)


# uv reads no pip configuration: the index, extra indexes and CA bundle pip is given
# through the environment are handed on (unless uv's own variables are set).
_PIP_TO_UV = (
    ("PIP_INDEX_URL", "UV_DEFAULT_INDEX"),
    ("PIP_EXTRA_INDEX_URL", "UV_INDEX"),
    ("PIP_CERT", "SSL_CERT_FILE"),
    ("PIP_FIND_LINKS", "UV_FIND_LINKS"),
)


_NETWORK_BOUNDS = (("PIP_DEFAULT_TIMEOUT", "20"), ("PIP_RETRIES", "1"), ("UV_HTTP_TIMEOUT", "20"))


def uv_env(env: dict[str, str]) -> dict[str, str]:
    out = dict(env)
    for pip_var, uv_var in _PIP_TO_UV:
        if env.get(pip_var) and uv_var not in env:
            out[uv_var] = env[pip_var]
    return out


def _stream(command: list[str], log: Callable[[str], None], env: dict[str, str]) -> None:
    """Run ``command``, passing each output line to ``log`` (progress); raise on failure."""
    tail: list[str] = []
    try:
        proc = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except OSError as exc:
        raise UserError(f"cannot run {command[0]}: {exc.strerror}") from None
    assert proc.stdout
    for line in proc.stdout:
        line = line.rstrip()
        if line:
            log(line)
            tail = (tail + [line])[-1:]
    code = proc.wait()
    if code != 0:
        last = tail[0] if tail else "no output"
        raise UserError(f"`{' '.join(command[:4])} ...` failed (exit {code}): {last}")


# Names normalised as package indexes do (PEP 503): tensorflow_cpu -> tensorflow-cpu.
_LOCK_CODE = (
    "import importlib.metadata as m, json, re;"
    "print(json.dumps({re.sub(r'[-_.]+', '-', d.metadata['Name']).lower(): d.version"
    " for d in m.distributions() if d.metadata['Name']}, sort_keys=True))"
)


def import_check(python: Path, backend: str, env: dict[str, str]) -> str:
    """Import the backend (and Keras on it) in the new environment, so a wrong pin fails
    the build with the backend's own message; returns what it found. A SIGILL is not a
    broken environment but a CPU that cannot run this binary: the build stands and the
    variant is skipped on this host (tfvariants.variants.census)."""
    code = f"import {backend}, keras, sys; print({backend}.__version__, 'keras', keras.__version__)"
    child_env = {**env, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "2"}
    try:
        proc = run_code(str(python), code, child_env, 600)
    except subprocess.TimeoutExpired:
        raise UserError(f"importing {backend} took over 10 minutes") from None
    if died_of_sigill(proc.returncode):
        return f"{backend} dies of SIGILL on this CPU (built; skipped on this host)"
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
        raise UserError(
            f"importing {backend} in the new environment failed: "
            + (lines[-1].strip() if lines else f"exit {proc.returncode}, no output")
        )
    return f"{backend} {proc.stdout.strip()} imports"


@contextlib.contextmanager
def _build_lock(path: Path) -> Iterator[None]:
    """Hold ``path``'s exclusive lock, and remove the file when done, so no lock file
    outlives a build. A waiter that got the lock on a file already removed tries again
    (the file at the path is the lock)."""
    while True:
        with open(path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # a second build of the same specs waits
            try:
                current = os.stat(path).st_ino
            except FileNotFoundError:
                current = -1
            if current != os.fstat(lock.fileno()).st_ino:
                continue  # removed by the build that held it: lock the new one
            try:
                yield
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            return


def build(variant: Variant, log: Callable[[str], None]) -> str:
    """Build the variant's environment unless the cache has it; return what happened.
    A build that fails leaves nothing behind (no half-made environment, no lock)."""
    info = built_info(variant)
    folder = env_dir(variant)
    if info is not None:
        return f"reused {folder} (same requirements and Python)"
    root = cache_root()
    why = cachefiles.unusable(root)
    if why is not None:
        raise UserError(
            f"variant '{variant.name}': no folder to build its environment in "
            f"({root} cannot be used: {why}): set {ENVS_VAR} to a writable folder"
        )
    with _build_lock(root / f"{folder.name}.lock"):
        if built_info(variant) is not None:
            return f"reused {folder} (built meanwhile)"
        shutil.rmtree(folder, ignore_errors=True)  # an unfinished earlier build
        try:
            info = _install(variant, folder, log)
        except BaseException as exc:
            shutil.rmtree(folder, ignore_errors=True)
            if isinstance(exc, (UserError, OSError, subprocess.SubprocessError, ValueError)):
                raise UserError(
                    f"variant '{variant.name}': building its environment: {one_line(exc)}"
                ) from None
            raise
    return f"built {folder} in {info['build_s']} s ({len(info['lock'])} packages)"


def _install(variant: Variant, folder: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """Make the environment, install, lock and check it; its info file is written last."""
    started = time.monotonic()
    python = base_python(variant)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    # An unreachable package index (a node without network) ends the build in
    # about a minute, not pip's 5 retries x 15 s per request.
    for var, value in _NETWORK_BOUNDS:
        env.setdefault(var, value)
    uv = find_uv()
    if uv:
        env = uv_env(env)
    index_args = [f"--extra-index-url={url}" for url in variant.index_urls]
    if uv:
        log(f"uv: creating {folder} from {python}")
        _stream([uv, "venv", "--python", python, str(folder)], log, env)
        install = [uv, "pip", "install", "--python", str(env_python(folder))]
    else:
        log(f"venv: creating {folder} from {python}")
        _stream([python, "-m", "venv", str(folder)], log, env)
        pip = [str(env_python(folder)), "-m", "pip"]
        install = [*pip, "install", "--disable-pip-version-check"]
    log("installing " + " ".join(variant.requirements))
    _stream([*install, *index_args, *variant.requirements], log, env)
    lock_out = subprocess.run(
        [str(env_python(folder)), "-c", _LOCK_CODE],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    if lock_out.returncode != 0:
        raise UserError(f"cannot list the installed packages in {folder}")
    imported = import_check(env_python(folder), variant.backend, env)
    log(f"import check: {imported}")
    info = {
        "kind": "tfvariants.env",
        "key": env_key(variant),
        "variant": variant.name,
        "requirements": list(variant.requirements),
        "index_urls": list(variant.index_urls),
        "python": python_tag(python),
        "installer": "uv" if uv else "pip",
        "lock": json.loads(lock_out.stdout),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "build_s": round(time.monotonic() - started, 1),
        "import_check": imported,
    }
    write_json_atomic(folder / INFO_FILE, info)
    return info
