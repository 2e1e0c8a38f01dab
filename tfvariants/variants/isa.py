"""Compiler flags for a TensorFlow source build, from a named instruction-set level.

The compiled variant is TensorFlow built with bazel for chosen CPU instructions. This
module turns what the user asks for (``ISA=x86-64-v3`` or ``ISA=-mavx512vnni`` in
``make build-compiled``) into
the ``--copt`` flags bazel gets and into the instruction names TensorFlow's
cpu_feature_guard uses, so the built image can check that none of them is still
reported missing. The Makefile calls it as ``python -m tfvariants.variants.isa copts avx2-fma``:
one tested table, no string pasting in make.

Standard library only: it runs on the host before any image exists.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from dataclasses import dataclass

from tfvariants.errors import UserError

# Named levels, lowest first. Each level's flags enable everything below it in the
# compiler (-mavx2 implies -mavx implies -msse4.2 ...), so only the new ones are listed.
LEVELS: dict[str, tuple[str, ...]] = {
    "sse4.2": ("-msse4.2",),
    "avx": ("-mavx",),
    "avx2-fma": ("-mavx2", "-mfma"),
    # Skylake-SP's AVX-512 subsets (what cloud "AVX-512" machines have at least), plus
    # AVX2/FMA which -mavx512f does not imply for FMA.
    "avx512": (
        "-mavx512f",
        "-mavx512cd",
        "-mavx512vl",
        "-mavx512bw",
        "-mavx512dq",
        "-mavx2",
        "-mfma",
    ),
    # The x86-64 micro-architecture levels: v3 = AVX2, FMA, F16C, BMI1/2, LZCNT, MOVBE
    # (Haswell and later, Zen 1+), which avx2-fma leaves out in part; v4 = v3 + AVX-512
    # F/BW/CD/DQ/VL (Skylake-SP and later, Zen 4+).
    "x86-64-v3": ("-march=x86-64-v3",),
    "x86-64-v4": ("-march=x86-64-v4",),
    "native": ("-march=native",),
}

# The name cpu_feature_guard prints for an instruction a compiler flag enables, and the
# names that flag implies. Only instructions the guard knows about are listed.
_GUARD_NAMES: dict[str, tuple[str, ...]] = {
    "-msse4.1": ("SSE4.1",),
    "-msse4.2": ("SSE4.1", "SSE4.2"),
    "-mavx": ("SSE4.1", "SSE4.2", "AVX"),
    "-mavx2": ("SSE4.1", "SSE4.2", "AVX", "AVX2"),
    "-mfma": ("SSE4.1", "SSE4.2", "AVX", "FMA"),
    "-mavx512f": ("SSE4.1", "SSE4.2", "AVX", "AVX2", "AVX512F"),
    "-mavx512vnni": ("AVX512F", "AVX512_VNNI"),
    "-mavx512bf16": ("AVX512F", "AVX512_BF16"),
    "-mavx512fp16": ("AVX512F", "AVX512_FP16"),
    "-mavxvnni": ("AVX", "AVX2", "AVX_VNNI"),
    "-mamx-tile": ("AMX_TILE",),
    "-mamx-int8": ("AMX_TILE", "AMX_INT8"),
    "-mamx-bf16": ("AMX_TILE", "AMX_BF16"),
    "-march=x86-64-v2": ("SSE4.1", "SSE4.2"),
    "-march=x86-64-v3": ("SSE4.1", "SSE4.2", "AVX", "AVX2", "FMA"),
    "-march=x86-64-v4": ("SSE4.1", "SSE4.2", "AVX", "AVX2", "FMA", "AVX512F"),
    "-march=haswell": ("SSE4.1", "SSE4.2", "AVX", "AVX2", "FMA"),
    "-march=skylake-avx512": ("SSE4.1", "SSE4.2", "AVX", "AVX2", "FMA", "AVX512F"),
    "-march=cascadelake": ("SSE4.1", "SSE4.2", "AVX", "AVX2", "FMA", "AVX512F", "AVX512_VNNI"),
    "-march=znver4": (
        "SSE4.1",
        "SSE4.2",
        "AVX",
        "AVX2",
        "FMA",
        "AVX512F",
        "AVX512_VNNI",
        "AVX512_BF16",
    ),
}

# "Every instruction the build machine has": -march=native cannot be checked against a
# fixed list, so the image check requires that nothing at all is reported missing.
ALL = "ALL"

# A compiler flag: a dash, then letters, digits and = . , _ + - (no shell metacharacters,
# since the flags travel through make, a build argument and a shell script).
_FLAG = re.compile(r"^-[A-Za-z0-9][A-Za-z0-9=.,_+-]*$")


@dataclass(frozen=True)
class IsaChoice:
    """What the compiled build is asked to target."""

    name: str  # a level name, or "custom" for explicit copts
    copts: tuple[str, ...]
    expected: tuple[str, ...]  # guard names that must not be missing, or (ALL,)

    @property
    def copts_string(self) -> str:
        return " ".join(self.copts)


def derive(spec: str) -> IsaChoice:
    """Resolve a level name (``avx2-fma``) or explicit copts (``"-mavx2 -mfma"``)."""
    text = spec.strip()
    if not text:
        raise UserError(f"empty ISA; choose one of {', '.join(LEVELS)} or give compiler flags")
    key = text.lower()
    if key in LEVELS:
        copts = LEVELS[key]
        return IsaChoice(name=key, copts=copts, expected=expected_instructions(copts))
    if not text.startswith("-"):
        raise UserError(
            f"unknown ISA level {spec!r}; choose one of {', '.join(LEVELS)} "
            "or give compiler flags such as '-mavx2 -mfma'"
        )
    try:
        flags = tuple(shlex.split(text))
    except ValueError as exc:
        raise UserError(f"cannot parse compiler flags {spec!r}: {exc}") from None
    for flag in flags:
        if not _FLAG.match(flag):
            raise UserError(f"not a compiler flag: {flag!r} (in ISA {spec!r})")
    return IsaChoice(name="custom", copts=flags, expected=expected_instructions(flags))


def expected_instructions(copts: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """cpu_feature_guard names the flags enable, in a stable order; (ALL,) for -march=native."""
    if any(flag in ("-march=native", "-mnative") for flag in copts):
        return (ALL,)
    names: list[str] = []
    for flag in copts:
        for name in _GUARD_NAMES.get(flag, ()):
            if name not in names:
                names.append(name)
    return tuple(names)


def bazel_copt_args(copts: tuple[str, ...] | list[str]) -> list[str]:
    """The bazel arguments for the flags: one ``--copt=`` each."""
    return [f"--copt={flag}" for flag in copts]


def main(argv: list[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    # One compiler flag as the ISA ("-march=x86-64-v3") looks like an option to argparse:
    # treat a trailing dash argument after the action as the ISA.
    if len(args_in) == 2 and args_in[1].startswith("-") and args_in[1] not in ("-h", "--help"):
        args_in.insert(1, "--")
    parser = argparse.ArgumentParser(
        prog="python -m tfvariants.variants.isa",
        description="Compiler flags for a TensorFlow source build targeting an ISA level.",
    )
    parser.add_argument(
        "what",
        choices=["copts", "expect", "bazel"],
        help="copts: the compiler flags; expect: the instruction names the built image "
        "must not report missing; bazel: the --copt arguments",
    )
    parser.add_argument("isa", help=f"one of {', '.join(LEVELS)}, or quoted compiler flags")
    args = parser.parse_args(args_in)
    try:
        choice = derive(args.isa)
    except UserError as exc:
        print(f"tfvariants: error: {exc}", file=sys.stderr)
        return exc.exit_code
    if args.what == "copts":
        print(choice.copts_string)
    elif args.what == "expect":
        print(" ".join(choice.expected))
    else:
        print(" ".join(bazel_copt_args(choice.copts)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
