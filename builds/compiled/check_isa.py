"""Check that a TensorFlow build uses the requested instructions; count them in its code.

Two checks, standard library only (tested from tests/):

1. ``--expect "AVX2 FMA"`` (or ``ALL`` for -march=native) imports TensorFlow in this
   interpreter with INFO logging on. Its cpu_feature_guard logs the instructions the CPU
   has but the binary was not compiled for; a requested instruction still listed there
   means the build flags did not take. No guard line at all is a failure too (logging
   off, or a TensorFlow that no longer logs it), unless the machine-code counts below
   confirm every requested instruction. (tf.sysconfig.get_build_info() has no compiler
   flags for CPU builds: the guard log and the code itself are the sources of truth.)
2. ``--objdump PATH`` takes the instruction census of the shared objects of a wheel,
   folder or .so (workloads/isacensus.py: the one implementation, shared with
   ``tfvariants variants census``; copied next to this file in an image build): the
   ymm/zmm/vfmadd counts, and per extension (SSE4/AVX/AVX2/FMA/AVX-512) the instructions
   inside kernels dispatched at run time (function names carrying an ISA) and in the
   rest, which is what the binary requires. ``--reference PATH`` does the same for the
   stock wheel, side by side; ``--only NAME`` keeps the shared objects whose name
   contains NAME (``libtensorflow_framework``: ~45 MB, under a minute; the whole
   TensorFlow 2.14 wheel: ~11 minutes on 2 cores).

``--expect`` fails when this CPU lacks a requested instruction (the guard never lists
what the CPU itself lacks, so it cannot confirm it) and when the import dies (SIGILL is
named as such).

usage: python check_isa.py --expect "AVX2 FMA" [--objdump /wheels/x.whl --reference stock.whl]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

try:  # in the repository: workloads/ is two folders up
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from workloads import isacensus
except ImportError:  # in an image build: copied next to this file
    sys.path[0] = str(Path(__file__).resolve().parent)
    import isacensus  # type: ignore[no-redef]

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

_COUNTED = isacensus.RAW
# A requested instruction the census can confirm: the extension the built code must
# use outside run-time-dispatched kernels.
_CONFIRMS = {"AVX": "AVX", "AVX2": "AVX2", "FMA": "FMA", "AVX512F": "AVX512"}
# The same, from the raw counts of an older counts file (no census in it).
# The guard's names for each census extension (what --expect counted asks for).
_GUARD_NAMES = {"SSE4": ["SSE4.1", "SSE4.2"], "AVX": ["AVX"], "AVX2": ["AVX2"],
                "FMA": ["FMA"], "AVX512": ["AVX512F"]}  # fmt: skip
_CONFIRMS_RAW = {"AVX": "ymm", "AVX2": "ymm", "FMA": "vfmadd", "AVX512F": "zmm"}


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


def _uses(counts: dict | None, name: str) -> bool:
    """Whether counted code uses a requested instruction (the census' required set,
    else the raw count of an older counts file)."""
    if not counts or name not in _CONFIRMS:
        return False
    census = counts.get("isa")
    if census is not None:
        return _CONFIRMS[name] in census.get("required", [])
    return counts.get("total", {}).get(_CONFIRMS_RAW[name], 0) > 0


def confirmed_by_counts(expected: list[str], counts: dict | None) -> list[str] | None:
    """The requested instructions the machine-code counts confirm, or None when some
    requested instruction is not confirmable or not found."""
    if not counts or expected == ["ALL"]:
        return None
    if not all(_uses(counts, name) for name in expected):
        return None
    return expected


def cpu_lacks(expected: list[str], flags: set[str]) -> list[str]:
    """Requested instructions this CPU does not have (/proc/cpuinfo flag names)."""
    if not flags:
        return []
    return [n for n in expected if n != "ALL" and n.lower().replace(".", "_") not in flags]


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
        if counts and name in _CONFIRMS and not _uses(counts, name):
            what = _CONFIRMS[name] if counts.get("isa") else _CONFIRMS_RAW[name]
            return False, f"{name} requested but the built code has no {what} instructions"
    return True, "no requested instruction reported missing" + (
        f" (not requested, missing: {' '.join(missing)})" if missing else ""
    )


def _fmt(total: dict) -> str:
    return ", ".join(f"{total.get(k, 0):,} {k}" for k in _COUNTED)


def count_file(path: Path) -> dict[str, int]:
    """ymm/zmm/vfmadd instruction counts in one shared object."""
    return isacensus.census_file(path)["raw"]


def count(paths: list[str], log=print, only: str | None = None) -> dict:
    """The census per shared object and in total over wheels, folders or .so files:
    ``total`` holds the raw counts, ``isa`` the per-extension census."""
    census = isacensus.census_paths(paths, log, (lambda n: only in n) if only else None)
    total = census["total"]
    return {
        "paths": paths,
        "files": census["files"],
        "total": total["raw"],
        "isa": {"rest": total["rest"], "dispatched": total["dispatched"],
                "required": census["required"], "compiled_for": census["compiled_for"]},
    }  # fmt: skip


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
    parser.add_argument("--expect", help='e.g. "AVX2 FMA", ALL, or counted: what the census '
                        "says the code requires (imports TensorFlow)")
    parser.add_argument("--objdump", action="append", default=[], metavar="PATH",
                        help="wheel, folder or .so of the build to count instructions in")  # fmt: skip
    parser.add_argument("--reference", action="append", default=[], metavar="PATH",
                        help="the same for the stock wheel, reported side by side")  # fmt: skip
    parser.add_argument("--only", metavar="NAME",
                        help="count only the shared objects whose name contains NAME")  # fmt: skip
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
            report["built"] = count(args.objdump, lambda m: print(m, file=sys.stderr), args.only)
        if args.reference:
            report["stock"] = count(args.reference, lambda m: print(m, file=sys.stderr), args.only)
    except (OSError, ValueError, RuntimeError, zipfile.BadZipFile) as exc:
        print(f"check_isa: FAILED: {exc}", file=sys.stderr)
        return 1
    for name in ("built", "stock"):
        if name in report:
            print(f"check_isa: {name:5}: {_fmt(report[name]['total'])}", file=sys.stderr)
            if "isa" in report[name]:
                line = isacensus.summary(report[name]["isa"])
                print(f"check_isa: {name:5}: {line}", file=sys.stderr)
    ok = True
    if args.expect:
        expected = args.expect.split()
        if expected == ["counted"]:  # what the census says the code requires
            required = (report.get("built") or {}).get("isa", {}).get("required")
            if not required:
                print("check_isa: FAILED: --expect counted needs --objdump or --counts "
                      "with a census", file=sys.stderr)  # fmt: skip
                return 1
            expected = [n for isa in required for n in _GUARD_NAMES[isa]]
        lacks = cpu_lacks(expected, isacensus.cpu_flags())
        code, log = (0, "") if lacks else _import_log()
        if lacks:
            ok, why = False, (
                "this CPU lacks " + " ".join(lacks) + ": a build that uses it cannot be "
                "checked (or run) here; check on a machine that has it"
            )
        elif code in (-signal.SIGILL, 128 + signal.SIGILL):
            ok, why = False, (
                "importing TensorFlow died of SIGILL: the build uses an instruction this "
                "CPU lacks"
            )
        elif code != 0:
            ok, why = False, f"importing TensorFlow failed (exit {code})"
        else:
            ok, why = verdict(expected, log, report.get("built"))
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
