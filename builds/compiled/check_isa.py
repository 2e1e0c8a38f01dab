"""Check that a TensorFlow build uses the requested instructions; count them in its code.

Two checks, standard library only (tested from tests/):

1. ``--expect "AVX2 FMA"`` (or ``ALL`` for -march=native) imports TensorFlow in this
   interpreter with INFO logging on. Its cpu_feature_guard logs the instructions the CPU
   has but the binary was not compiled for; a requested instruction still listed there
   means the build flags did not take. No guard line at all is a failure too (logging
   off, or a TensorFlow that no longer logs it), unless the machine-code counts below
   confirm every requested instruction. (tf.sysconfig.get_build_info() has no compiler
   flags for CPU builds: the guard log and the code itself are the sources of truth.)
2. ``--objdump PATH`` counts, with ``objdump -d``, the instructions that use ymm (AVX)
   and zmm (AVX-512) registers and the FMA instructions (vfmadd*) in the shared objects of
   a wheel, folder or .so; ``--reference PATH`` does the same for the stock wheel, side
   by side. The stock wheel already holds run-time-dispatched AVX-512 code (its
   libtensorflow_cc.so.2 alone: ~46,000 zmm), so counts compare builds; they do not prove
   a flag on their own. objdump on libtensorflow_cc.so.2 takes about 1.5 minutes.

usage: python check_isa.py --expect "AVX2 FMA" [--objdump /wheels/x.whl --reference stock.whl]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# Every wording TensorFlow has used (newest first). Each captures a list of names.
_MISSING_PATTERNS = [
    # 2.9+: "To enable the following instructions: AVX2 FMA, in other operations, rebuild ..."
    re.compile(r"To enable the following instructions:\s*([A-Z0-9_. ]+?),? in other operations"),
    # 2.4-2.8: "... (oneDNN) to use the following CPU instructions in performance-critical
    # operations:  AVX2 FMA\nTo enable them in other operations, rebuild ..."
    re.compile(
        r"to use the following CPU instructions in performance[- ]critical operations:"
        r"\s*([A-Z0-9_. ]+?)\s*\n\s*To enable them in other operations"
    ),
    # 1.6-2.3: "Your CPU supports instructions that this TensorFlow binary was not compiled
    # to use: AVX2 FMA"
    re.compile(r"was not compiled to use:\s*([A-Z0-9_. ]+)"),
    # 1.0-1.5: one line per instruction.
    re.compile(r"wasn't compiled to use ([A-Z0-9_.]+) instructions, but these are available"),
]
# The reverse problem: the binary uses instructions this CPU lacks (TF aborts).
_UNAVAILABLE = re.compile(r"compiled to use ([A-Z0-9_.]+) instructions, but these aren't available")

# What objdump (AT&T syntax) shows for each counted kind of instruction.
_COUNTED = {
    "ymm": re.compile(r"%ymm\d"),
    "zmm": re.compile(r"%zmm\d"),
    "vfmadd": re.compile(r"\svfn?madd\w*"),
}
# A requested instruction the counts can confirm, and the count that must be non-zero.
_CONFIRMS = {"AVX": "ymm", "AVX2": "ymm", "FMA": "vfmadd", "AVX512F": "zmm"}


def missing_instructions(log: str) -> list[str]:
    """Instruction names the guard log says the binary was not compiled for."""
    names: list[str] = []
    for pattern in _MISSING_PATTERNS:
        for match in pattern.finditer(log):
            for name in match.group(1).split():
                if name not in names:
                    names.append(name)
    return names


def unavailable_instructions(log: str) -> list[str]:
    """Instructions the binary needs but this CPU does not have."""
    return sorted(set(_UNAVAILABLE.findall(log)))


def has_guard_line(log: str) -> bool:
    return "cpu_feature_guard" in log or bool(missing_instructions(log))


def confirmed_by_counts(expected: list[str], counts: dict | None) -> list[str] | None:
    """The requested instructions the machine-code counts confirm, or None when some
    requested instruction is not confirmable or not found."""
    if not counts or expected == ["ALL"]:
        return None
    total = counts.get("total", {})
    if not all(name in _CONFIRMS and total.get(_CONFIRMS[name], 0) > 0 for name in expected):
        return None
    return expected


def verdict(expected: list[str], log: str, counts: dict | None = None) -> tuple[bool, str]:
    """(ok, one-line explanation) for the requested instructions against a guard log
    and, optionally, the built code's instruction counts."""
    lacking_cpu = unavailable_instructions(log)
    if lacking_cpu:
        return False, (
            "this CPU lacks " + " ".join(lacking_cpu) + " which the build uses: "
            "build and check on a machine that has them"
        )
    if not has_guard_line(log):
        confirmed = confirmed_by_counts(expected, counts)
        if confirmed:
            total = counts["total"] if counts else {}
            return True, (
                "no cpu_feature_guard line (nothing missing); the code confirms "
                + " ".join(confirmed)
                + f" ({_fmt(total)})"
            )
        return False, (
            "no cpu_feature_guard line in TensorFlow's start-up log: cannot confirm the "
            "build's instructions (INFO logging off? pass --objdump to count them)"
        )
    missing = missing_instructions(log)
    still = missing if expected == ["ALL"] else [name for name in expected if name in missing]
    if still:
        return False, "TensorFlow still reports missing: " + " ".join(still)
    for name in expected:
        kind = _CONFIRMS.get(name)
        if counts and kind and counts.get("total", {}).get(kind, 0) == 0:
            return False, f"{name} requested but the built code has no {kind} instructions"
    return True, "no requested instruction reported missing" + (
        f" (not requested, missing: {' '.join(missing)})" if missing else ""
    )


def _fmt(total: dict) -> str:
    return ", ".join(f"{total.get(k, 0):,} {k}" for k in _COUNTED)


def shared_objects(path: Path, scratch: Path) -> list[Path]:
    """The .so files of a wheel (extracted into ``scratch``), a folder, or one .so."""
    if path.is_file() and path.suffix == ".whl":
        with zipfile.ZipFile(path) as whl:
            names = [n for n in whl.namelist() if re.search(r"\.so(\.\d+)*$", n)]
            whl.extractall(scratch, names)
        return sorted(scratch / n for n in names)
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if re.search(r"\.so(\.\d+)*$", p.name))
    return [path]


def count_file(path: Path, objdump: str = "objdump") -> dict[str, int]:
    """ymm/zmm/vfmadd instruction counts in one shared object (objdump -d, streamed)."""
    counts = dict.fromkeys(_COUNTED, 0)
    proc = subprocess.Popen([objdump, "-d", "--no-show-raw-insn", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            errors="replace")  # fmt: skip
    assert proc.stdout
    for line in proc.stdout:
        for kind, pattern in _COUNTED.items():
            if pattern.search(line):
                counts[kind] += 1
    if proc.wait() != 0:
        raise RuntimeError(f"objdump failed on {path}")
    return counts


def count(paths: list[str], log=print) -> dict:
    """Counts per shared object and in total over wheels, folders or .so files."""
    objdump = shutil.which("objdump")
    if objdump is None:
        raise RuntimeError("objdump not found (install binutils)")
    files: dict[str, dict[str, int]] = {}
    total = dict.fromkeys(_COUNTED, 0)
    with tempfile.TemporaryDirectory() as scratch:
        for given in paths:
            for so in shared_objects(Path(given), Path(scratch)):
                log(f"check_isa: objdump {so.name} ({so.stat().st_size / 1e6:.0f} MB)")
                files[so.name] = count_file(so, objdump)
                for k, v in files[so.name].items():
                    total[k] += v
    return {"paths": paths, "files": files, "total": total}


def _import_log() -> tuple[int, str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="0")
    proc = subprocess.run(
        [sys.executable, "-c", "import tensorflow as tf; tf.constant(1) + 1; "
         "print('compiler:', tf.version.COMPILER_VERSION)"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    return proc.returncode, proc.stderr + proc.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--expect", help='e.g. "AVX2 FMA", or ALL (imports TensorFlow)')
    parser.add_argument("--objdump", action="append", default=[], metavar="PATH",
                        help="wheel, folder or .so of the build to count instructions in")  # fmt: skip
    parser.add_argument("--reference", action="append", default=[], metavar="PATH",
                        help="the same for the stock wheel, reported side by side")  # fmt: skip
    parser.add_argument("--counts", help="read counts (JSON from --json) instead of objdump")
    parser.add_argument("--json", help="write the counts (and verdict) here")
    args = parser.parse_args(argv)
    if not args.expect and not args.objdump and not args.counts:
        parser.error("give --expect and/or --objdump")
    report: dict = {}
    try:
        if args.counts:
            report = json.loads(Path(args.counts).read_text())
        if args.objdump:
            report["built"] = count(args.objdump, lambda m: print(m, file=sys.stderr))
        if args.reference:
            report["stock"] = count(args.reference, lambda m: print(m, file=sys.stderr))
    except (OSError, ValueError, RuntimeError, zipfile.BadZipFile) as exc:
        print(f"check_isa: FAILED: {exc}", file=sys.stderr)
        return 1
    for name in ("built", "stock"):
        if name in report:
            print(f"check_isa: {name:5}: {_fmt(report[name]['total'])}", file=sys.stderr)
    ok = True
    if args.expect:
        expected = args.expect.split()
        code, log = _import_log()
        ok, why = verdict(expected, log, report.get("built"))
        if code != 0 and ok:
            ok, why = False, f"importing TensorFlow failed (exit {code})"
        compiler = re.search(r"^compiler: (.*)$", log, re.MULTILINE)
        report["verdict"] = {"ok": ok, "why": why, "expected": expected,
                             "compiler": compiler.group(1) if compiler else None}  # fmt: skip
        print(f"check_isa: {'ok' if ok else 'FAILED'}: {why}", file=sys.stderr)
        if not ok:
            print(log[-3000:], file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
