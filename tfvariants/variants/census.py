"""What a variant's TensorFlow binary needs from the CPU, known before any cell runs.

Two levels, both cached on disk by the content hash of the files they looked at
(``$XDG_CACHE_HOME/tfvariants/census/``), so each runs once per binary (and host):

- the gate (cheap, up front, automatic): a probe process imports the variant's backend.
  If it dies of SIGILL, or TensorFlow's guard aborts it for instructions this CPU lacks,
  the variant is *skipped* with that reason, and the census of its smallest library
  (``libtensorflow_framework.so.2``, ~45 MB, ~1 min of objdump) names the extension it
  lacks. A census already in the cache decides without the probe.
- the census (on demand: ``tfvariants variants census NAME [--full]``):
  workloads.isacensus over the framework library, or with ``--full`` every TensorFlow
  shared object (``libtensorflow_cc.so.2`` alone is 550 MB: ~11 min on 2 cores).

Container images are not gated here: their build runs builds/compiled/check_isa.py,
and a SIGILL in a cell is named as such. ``TFVARIANTS_ISA_GATE=off`` turns the gate off.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfvariants.store import cachefiles
from workloads import isacensus

if TYPE_CHECKING:
    from tfvariants.variants.registry import Variant

GATE_VAR = "TFVARIANTS_ISA_GATE"
FRAMEWORK = "libtensorflow_framework.so.2"
# The shared objects a full census reads (relative to the tensorflow package).
FULL_LIBS = (FRAMEWORK, "libtensorflow_cc.so.2", "python/_pywrap_tensorflow_internal.so")
# TensorFlow's guard, when the binary was built for more than this CPU has.
_UNAVAILABLE = r"compiled to use ([A-Z0-9_.]+) instructions, but these aren't available"

Log = Callable[[str], None]
_GATE_LOCK = threading.Lock()


def cache_dir() -> Path | None:
    """The census, gate and peak cache; None (said once) when it cannot be used."""
    return cachefiles.usable(cachefiles.home() / "census")


def gate_enabled() -> bool:
    return os.environ.get(GATE_VAR, "on").lower() not in ("off", "0", "no", "false")


@functools.lru_cache(maxsize=64)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_hash(path: Path) -> str:
    """sha256 of a file's content (memoised per path, size and mtime in this process)."""
    stat = path.stat()
    return _sha256(str(path), stat.st_size, stat.st_mtime_ns)


def _census_path(sha256: str) -> Path | None:
    folder = cache_dir()
    return folder / f"{sha256}-v{isacensus.VERSION}.json" if folder else None


_COUNT_PARTS = ("dispatched", "rest", "raw", "raw_rest")


def census_problem(record: dict[str, Any]) -> str | None:
    """Why a cached census cannot be used: every count a whole number from 0 up (a NaN
    or negative count would read as "needs nothing": SSE2)."""
    if not isinstance(record.get("rest"), dict):
        return "no 'rest' counts"
    for part in _COUNT_PARTS:
        counts = record.get(part, {})
        if not isinstance(counts, dict):
            return f"{part!r} is not a table of counts"
        for isa, count in counts.items():
            if not cachefiles.number(count, 0, 1e12, whole=True):
                return f"{part}.{isa} is {str(count)[:40]!r}, not a count"
    return None


def cached_census(path: Path) -> dict[str, Any] | None:
    """The census of one file if it was ever taken (any path with the same content)."""
    return cachefiles.read_entry(_census_path(file_hash(path)), census_problem)


def census_file(path: Path, log: Log = lambda _m: None) -> dict[str, Any]:
    """The census of one shared object, from the cache or objdump (then cached)."""
    found = cached_census(path)
    if found is not None:
        return found
    log(f"census: objdump {path.name} ({path.stat().st_size / 1e6:.0f} MB, once per binary)")
    counts = isacensus.census_file(path)
    counts["sha256"] = file_hash(path)
    cachefiles.write_entry(_census_path(counts["sha256"]), counts)
    return counts


def tensorflow_dir(variant: Variant) -> Path | None:
    """The tensorflow package folder a variant imports (looked up, never imported);
    None for other backends, images, or when it cannot be found."""
    if variant.backend != "tensorflow":
        return None
    code = (
        "import importlib.util as u; s = u.find_spec('tensorflow'); "
        "print(s.submodule_search_locations[0] if s and s.submodule_search_locations else '')"
    )
    try:
        python = variant.interpreter()  # an image's kind has none: ValueError
        proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    found = proc.stdout.strip()
    return Path(found) if proc.returncode == 0 and found else None


def libraries(tf_dir: Path, full: bool) -> list[Path]:
    names = FULL_LIBS if full else (FRAMEWORK,)
    return [tf_dir / name for name in names if (tf_dir / name).is_file()]


def variant_census(variant: Variant, *, full: bool = False, log: Log = lambda _m: None) -> dict:
    """The census of a variant's TensorFlow: per library and in total, what it requires."""
    tf_dir = tensorflow_dir(variant)
    if tf_dir is None:
        raise FileNotFoundError(f"variant '{variant.name}': no TensorFlow found to count")
    libs = libraries(tf_dir, full)
    if not libs:
        raise FileNotFoundError(f"variant '{variant.name}': no {FRAMEWORK} in {tf_dir}")
    files = {lib.name: census_file(lib, log) for lib in libs}
    total = isacensus.merge(files.values())
    return {
        "variant": variant.name,
        "tensorflow_dir": str(tf_dir),
        "full": full,
        "files": files,
        "total": total,
        "required": isacensus.required(total),
        "compiled_for": isacensus.compiled_for(total),
    }


def known_compiled_for(variant: Variant) -> str | None:
    """What a variant's binary is compiled for, when a census of it is in the cache
    (never starts objdump: for reports and listings)."""
    tf_dir = tensorflow_dir(variant)
    if tf_dir is None:
        return None
    censuses = [c for lib in libraries(tf_dir, True) if (c := cached_census(lib))]
    return isacensus.compiled_for(isacensus.merge(censuses)) if censuses else None


def run_code(
    python: str, code: str, env: dict[str, str], timeout_s: float
) -> subprocess.CompletedProcess[str]:
    """``python -c code`` in a fresh process, output captured, no stdin (a probe of a
    variant's interpreter); raises subprocess.TimeoutExpired past ``timeout_s``."""
    return subprocess.run(
        [python, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def _import_probe(python: str) -> tuple[int, str]:
    """Import TensorFlow in a fresh process of the variant: (exit code, last log lines)."""
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR") if k in os.environ}
    env["TF_CPP_MIN_LOG_LEVEL"] = "0"
    try:
        proc = run_code(python, "import tensorflow", env, 300)
    except subprocess.TimeoutExpired:
        return 0, "timeout"  # not an instruction problem: the cell will say what it is
    return proc.returncode, (proc.stderr + proc.stdout)[-4000:]


def died_of_sigill(code: int) -> bool:
    """A child killed by SIGILL (or a shell reporting it as 128 + 4)."""
    return code in (-signal.SIGILL, 128 + signal.SIGILL)


def lacking_reason(needs: list[str], flags: set[str], where: str, census: dict) -> str | None:
    lacks = isacensus.lacking(needs, flags)
    if not lacks:
        return None
    counts = ", ".join(f"{census.get('rest', {}).get(i, 0):,} {i}" for i in lacks)
    return (
        f"its TensorFlow is compiled for {' '.join(lacks)}, which this CPU lacks ({where}: "
        f"{counts} instructions outside run-time-dispatched kernels)"
    )


def judge(
    code: int,
    log_text: str,
    census: dict[str, Any] | None,
    flags: set[str],
    name: str,
) -> str | None:
    """Why a variant cannot run on this CPU, from its import probe (exit code and log)
    and, when given, its census; None when nothing says so."""
    if census is not None:
        reason = lacking_reason(isacensus.required(census), flags, FRAMEWORK, census)
        if reason:
            return reason
    guard = sorted(set(re.findall(_UNAVAILABLE, log_text)))
    if guard:
        return (
            f"its TensorFlow is compiled for {' '.join(guard)}, which this CPU lacks "
            "(TensorFlow's cpu_feature_guard)"
        )
    if died_of_sigill(code):
        return (
            "importing its TensorFlow dies of SIGILL: the binary uses an instruction this CPU "
            f"lacks (`tfvariants variants census {name} --full` counts them)"
        )
    return None


def gate(
    variant: Variant,
    *,
    flags: set[str] | None = None,
    probe: Callable[[str], tuple[int, str]] | None = None,
    log: Log = lambda _m: None,
) -> str | None:
    """Why this variant's binary cannot run on this CPU (it is then skipped), or None.
    Cached per (framework library content, CPU flags)."""
    if not gate_enabled():
        return None
    tf_dir = tensorflow_dir(variant)
    framework = tf_dir / FRAMEWORK if tf_dir else None
    if framework is None or not framework.is_file():
        return None
    flags = isacensus.cpu_flags() if flags is None else flags
    digest = file_hash(framework)
    flags_key = hashlib.sha256(" ".join(sorted(flags)).encode()).hexdigest()[:12]
    folder = cache_dir()
    verdict_path = (
        folder / f"gate-{digest[:32]}-{flags_key}-v{isacensus.VERSION}.json" if folder else None
    )
    # One probe per binary even when a listing checks its overlays in parallel threads.
    with _GATE_LOCK:
        return _gate_verdict(variant, framework, digest, verdict_path, flags, probe, log)


def _gate_verdict(
    variant: Variant,
    framework: Path,
    digest: str,
    verdict_path: Path | None,
    flags: set[str],
    probe: Callable[[str], tuple[int, str]] | None,
    log: Log,
) -> str | None:
    stored = cachefiles.read_entry(verdict_path, lambda v: verdict_problem(v, digest))
    if stored is not None and stored["reason"] is None:
        return None
    # A cached skip is taken only when what made it still says so (the census's needs
    # against these flags, or the import failing now): a cached file anyone can write
    # must never silently drop a variant that runs.
    census = cached_census(framework)
    reason = judge(0, "", census, flags, variant.name) if census else None
    if reason is None:
        code, text = (probe or _import_probe)(variant.interpreter())
        if code != 0:
            if stored is not None and judge(code, text, census, flags, variant.name):
                return stored["reason"]  # the import confirms it: no new census needed
            # Only now is a census worth a minute: it names what the CPU lacks.
            if died_of_sigill(code) and census is None:
                try:
                    census = census_file(framework, log)
                except (OSError, RuntimeError):
                    census = None
            reason = judge(code, text, census, flags, variant.name)
    if stored is not None:
        if reason is not None:
            return stored["reason"]  # the census confirms it
        cachefiles.warn_once(
            f"cache entry {verdict_path}: ignored (a skip neither the census nor the "
            "import confirms); found again"
        )
    cachefiles.write_entry(verdict_path, {"framework_sha256": digest, "reason": reason})
    return reason


# The sentences ``judge`` writes: a cached verdict saying anything else is not its own.
_VERDICT = re.compile(
    r"its TensorFlow is compiled for [A-Z0-9_. ]+, which this CPU lacks \([^\n]*\)"
    r"|importing its TensorFlow dies of SIGILL: [^\n]*"
)


def verdict_problem(record: dict[str, Any], digest: str) -> str | None:
    """Why a cached gate verdict cannot be used (a skip is only taken in judge's words,
    for this very binary)."""
    if record.get("framework_sha256") != digest:
        return "not the verdict of this binary"
    reason = record.get("reason", "")
    if reason is not None and not (
        isinstance(reason, str) and len(reason) < 2000 and _VERDICT.fullmatch(reason)
    ):
        return "its reason is not a verdict of the gate"
    return None
