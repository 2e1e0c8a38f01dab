"""Fail unless TensorFlow in this interpreter was built for the requested instructions.

Runs inside the compiled image after the wheel is installed. TensorFlow's
cpu_feature_guard logs, on import, the instructions the CPU has but the binary was not
compiled for; any requested instruction still listed there means the build flags did
not take. (tf.sysconfig.get_build_info() has no compiler flags for CPU builds, so the
guard log is the only source of truth.) Standard library only; tested from tests/.

usage: python check_isa.py --expect "AVX2 FMA"     (or --expect ALL for -march=native)
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

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


def verdict(expected: list[str], log: str) -> tuple[bool, str]:
    """(ok, one-line explanation) for the requested instructions against a guard log."""
    lacking_cpu = unavailable_instructions(log)
    if lacking_cpu:
        return False, (
            "this CPU lacks " + " ".join(lacking_cpu) + " which the build uses: "
            "build and check on a machine that has them"
        )
    missing = missing_instructions(log)
    if expected == ["ALL"]:
        still = missing
    else:
        still = [name for name in expected if name in missing]
    if still:
        return False, "TensorFlow still reports missing: " + " ".join(still)
    return True, "no requested instruction reported missing" + (
        f" (not requested, missing: {' '.join(missing)})" if missing else ""
    )


def _import_log() -> tuple[int, str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="0")
    proc = subprocess.run(
        [sys.executable, "-c", "import tensorflow as tf; print(tf.__version__)"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    return proc.returncode, proc.stderr + proc.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--expect", required=True, help='e.g. "AVX2 FMA", or ALL')
    args = parser.parse_args(argv)
    expected = args.expect.split()
    code, log = _import_log()
    ok, why = verdict(expected, log)
    if code != 0 and ok:
        ok, why = False, f"importing TensorFlow failed (exit {code})"
    print(f"check_isa: {'ok' if ok else 'FAILED'}: {why}", file=sys.stderr)
    if not ok:
        print(log[-3000:], file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
