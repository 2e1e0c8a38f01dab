"""`tfvariants compare --preset NAME`: one command for one question.

``compiled``: is TensorFlow compiled for this CPU's instructions faster than the stock
wheel? The stock wheel of one release and every published compiled build of it this
CPU can run (environments built on first use; a build the up-front ISA gate rejects is
left out, with its reason, and named in the report), plus ``local`` and the oneDNN ISA
caps (the cheap stand-in for an ISA build on today's TensorFlow), on the two
convolutional workloads of the 2017 study, at the quick scale, at this host's CPU count,
against the stock wheel. The report opens with the answer for this CPU
(tfvariants.analyze.report.compiled).

``study-2017``: the 2017 study (minimaxir's deep-learning-cpu-gpu-benchmark) planned on
today's cloud: its six workloads, the pip wheel, the compiled build and the GPU, CPU
cells at 8/16/32/64 vCPUs (the GPU once, at its instance's vCPUs), priced with
gce-2026's spot prices. With --dry-run it prints the plan and its bill (times from the
study's own logs unless --estimate-from says otherwise); with --executor ray it runs it.

Options given on the command line win.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tfvariants.analyze.report.compiled import PRESET
from tfvariants.variants.recipes import COMPILED_BUILDS, COMPILED_STOCK

STUDY = "study-2017"
PRESETS = (PRESET, STUDY)
# The study's matrix: its three configurations kinds, its thread counts, today's prices.
STUDY_VARIANTS = "pip,compiled,gpu"
STUDY_THREADS = [8, 16, 32, 64]
STUDY_PRICING = "gce-2026"
DEFAULT_PRICING = "gce-2017"  # compare's --pricing default: the preset replaces only it
# Today's TensorFlow with oneDNN's kernels capped: what an ISA build changes in oneDNN.
ISA_CAPS = ("isa-sse41", "isa-avx2")
WORKLOADS = "mnist_cnn,cifar10_cnn"


def add_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--preset",
        choices=PRESETS,
        default=None,
        help="compiled: the stock TensorFlow 2.14 wheel against every compiled build "
        "of it this CPU can run, plus local and the oneDNN ISA caps, on mnist_cnn "
        "and cifar10_cnn at the quick scale; the report opens with the answer. "
        "study-2017: the 2017 study on today's cloud (six workloads, pip, compiled "
        "and gpu, 8-64 vCPUs, gce-2026 spot prices); with --dry-run its bill, with "
        "--executor ray the run",
    )


def apply(args: argparse.Namespace) -> dict[str, Any] | None:
    """Fill the options the user left out; return what the run records about the preset
    (None without one). Builds the recipes' environments first: the ISA gate needs them."""
    if args.preset is None or args.resume:
        return None
    if args.preset == STUDY:
        return _study(args)
    from tfvariants.plan.spec import logical_cpus
    from tfvariants.variants import ensure_built, get_variant, skip_reason

    skipped: dict[str, str] = {}
    runnable = []
    for name in (COMPILED_STOCK, *COMPILED_BUILDS):
        variant = get_variant(name, args.variants_file)

        def log(line: str, n: str = name) -> None:
            print(f"  {n}: {line}", file=sys.stderr)

        done = ensure_built(variant, log)
        if done:
            print(f"{name}: {done}", file=sys.stderr)
        reason = skip_reason(variant)
        if reason and name != COMPILED_STOCK:
            print(f"{name}: left out on this host: {reason}", file=sys.stderr)
            skipped[name] = reason
        else:
            runnable.append(name)
    if args.variants is None:
        args.variants = ",".join([*runnable, "local", *ISA_CAPS])
    if args.workloads is None:
        args.workloads = WORKLOADS
    if args.threads is None:
        args.threads = [logical_cpus()]
    if args.baseline is None:
        args.baseline = COMPILED_STOCK
    if args.epochs is None and args.samples is None:
        args.quick = True
    return {
        "name": PRESET,
        "stock": COMPILED_STOCK,
        "builds": [b for b in COMPILED_BUILDS if b not in skipped],
        "skipped": skipped,
    }


def _study(args: argparse.Namespace) -> dict[str, Any]:
    """The 2017 study's matrix on today's prices; what the user gave stays."""
    if args.variants is None:
        args.variants = STUDY_VARIANTS
    if args.workloads is None:
        args.workloads = "all"
    if args.threads is None:
        args.threads = list(STUDY_THREADS)
    if args.pricing == DEFAULT_PRICING:
        args.pricing = STUDY_PRICING
        if args.price_tier is None:
            args.price_tier = "spot"
    if args.dry_run and args.estimate_from is None:
        from pathlib import Path

        from tfvariants.commands.compare_cluster import STUDY as FROM_STUDY

        args.estimate_from = Path(FROM_STUDY)
    return {
        "name": STUDY,
        "variants": args.variants,
        "threads": list(args.threads),
        "pricing": args.pricing,
    }
