"""`tfvariants compare --preset NAME`: one command for one question.

``compiled``: is TensorFlow compiled for this CPU's instructions faster than the stock
wheel? The stock wheel of one release and every published compiled build of it this
CPU can run (environments built on first use; a build the up-front ISA gate rejects is
left out, with its reason, and named in the report), plus ``local`` and the oneDNN ISA
caps (the cheap stand-in for an ISA build on today's TensorFlow), on the two
convolutional workloads of the 2017 study, at the quick scale, at this host's CPU count,
against the stock wheel. The report opens with the answer for this CPU
(tfvariants.analyze.training.compiled).

``study-2017``: the 2017 study (minimaxir's deep-learning-cpu-gpu-benchmark) planned on
today's cloud: its six workloads, the pip wheel, the compiled build and the GPU, CPU
cells at 8/16/32/64 vCPUs (the GPU once, at its instance's vCPUs), priced with
gce-2026's spot prices. With --dry-run it prints the plan and its bill (times from the
study's own logs unless --estimate-from says otherwise); with --executor ray it runs it.

Options given on the command line win.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from typing import TYPE_CHECKING, Any

from tfvariants.analyze.report.preset import PRESET
from tfvariants.options.preset import PresetRecord
from tfvariants.variants.recipes import COMPILED_BUILDS, COMPILED_STOCK

if TYPE_CHECKING:
    from tfvariants.variants.registry import Variant

STUDY = "study-2017"
PRESETS = (PRESET, STUDY)
# The study's matrix: its three configurations kinds, its thread counts, today's prices.
STUDY_VARIANTS = "pip,compiled,gpu"
# On a Ray cluster: the stock wheel and the compiled builds as requirement specs (each
# node builds them on first use and skips those its CPU cannot run: the ISA gate), and
# the GPU (an image: loaded by the recipes, else skipped, as the dry run says).
STUDY_VARIANTS_RAY = ",".join([COMPILED_STOCK, *COMPILED_BUILDS, "gpu"])
STUDY_THREADS = [8, 16, 32, 64]
STUDY_PRICING = "gce-2026"
DEFAULT_PRICING = "gce-2017"  # compare's --pricing default: the preset replaces only it
# Today's TensorFlow with oneDNN's kernels capped: what an ISA build changes in oneDNN.
ISA_CAPS = ("isa-sse41", "isa-avx2")
# They explain the answer (today's TensorFlow; oneDNN's kernels capped below what this
# CPU has) and are not what the answer box is about: they run only as far as the budget
# allows beside the compiled-vs-stock comparisons, and adaptive rounds run them only
# once those are settled (tfvariants/rounds/training.py).
EXPLANATORY = ("local", *ISA_CAPS)
WORKLOADS = "mnist_cnn,cifar10_cnn"
# "Is compiling worth it?" is answered within +-10 %: equal builds are called
# "equivalent" in practical time at these machines' noise, while a truth near the edge
# of +-5 % cannot be settled in practical time (docs/compare.md).
BAND = 0.10
# ... and "faster"/"slower" need only an interval that excludes 1 (no minimum effect):
# with a minimum effect e below the band B, a truth between e and B (e.g. 7 % slower)
# is neither "different" (its interval straddles 1+e) nor "equivalent" (it straddles
# 1+B) until the interval is narrower than B-e, which these machines do not reach in
# practical time. With e = 0 no true ratio is undecidable: an interval narrower than
# the band either excludes 1 or lies inside it. The error rate is the rule's own
# (bench-decide's `--min-effect 0` scenario: false "different" <= 5 %).
MIN_EFFECT = 0.0
# Equivalence within +-10 % at about 4 % noise needs 7-10 repeats per side: looks the
# quick compare's 10 minutes do not reach with three builds on two workloads.
BUDGET_S = 900.0


def add_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--preset",
        choices=PRESETS,
        default=None,
        help="compiled: the stock TensorFlow 2.14 wheel against every compiled build "
        "of it this CPU can run, plus local and the oneDNN ISA caps as far as the budget "
        "allows (default 15m), on mnist_cnn and cifar10_cnn at the quick scale, "
        "'equivalent' within +/-10%%, 'faster'/'slower' once the interval excludes 1 "
        "(--min-effect 0 unless given); the report opens with the answer (a dry run builds "
        "nothing: it says what it would build). "
        "study-2017: the 2017 study on today's cloud (six workloads, pip, compiled "
        "and gpu, 8-64 vCPUs, gce-2026 spot prices); with --dry-run its bill, with "
        "--executor ray the run",
    )


def apply(args: argparse.Namespace) -> dict[str, Any] | None:
    """The preset's layer of the run options (declare.resolve: given > stored > preset >
    default), with ``preset``, what the run records about it (None without one, or on a
    resume: the run keeps its stored options). Fills the matrix the user left out
    (workloads, threads, baseline, variants). Builds the recipes' environments first
    (the ISA gate needs them), except in a dry run, which builds and downloads nothing:
    it says what it would build."""
    if args.preset is None or args.resume:
        return None
    if args.preset == STUDY:
        return {"preset": _study(args)}
    from tfvariants.plan.spec import logical_cpus

    runnable, skipped = _builds(args)
    if args.workloads is None:
        args.workloads = WORKLOADS
    if args.threads is None:
        args.threads = [logical_cpus()]
    if args.baseline is None:
        args.baseline = COMPILED_STOCK
    layer: dict[str, Any] = {"equivalence_band": BAND, "min_effect": MIN_EFFECT}
    if args.epochs is None and args.samples is None:
        layer.update(quick=True, budget_s=BUDGET_S)
    explanatory: list[str] = []
    left_out = None
    if args.variants is None:
        explanatory, left_out = _explanatory_that_fit(args, len(runnable), layer)
        args.variants = ",".join([*runnable, *explanatory])
    # (its "band" and "min_effect": the values the run resolved, added by with_settings)
    layer["preset"] = PresetRecord(
        name=PRESET,
        stock=COMPILED_STOCK,
        builds=tuple(b for b in COMPILED_BUILDS if b not in skipped),
        skipped=skipped,
        explanatory=tuple(explanatory),
        left_out=left_out or None,
    )
    return layer


def with_settings(record: PresetRecord, band: float | None, min_effect: float) -> PresetRecord:
    """A new compiled-preset run's record with the band and minimum effect it resolved
    (given, else the preset's): what its answer box states."""
    if record.name != PRESET:
        return record
    return dataclasses.replace(record, band=band, min_effect=min_effect)


def _builds(args: argparse.Namespace) -> tuple[list[str], dict[str, str]]:
    """The stock wheel and the compiled builds this CPU can run (built first), and those
    it cannot, with why. A dry run builds nothing: a build not made yet is planned (its
    ISA gate is checked once it is built) and said."""
    from tfvariants.variants import ensure_built, get_variant, skip_reason

    skipped: dict[str, str] = {}
    runnable = []
    for name in (COMPILED_STOCK, *COMPILED_BUILDS):
        variant = get_variant(name, args.variants_file)
        if args.dry_run:
            ready, detail = variant.readiness()
            if not ready:
                print(f"{name}: {_would_build(variant)}", file=sys.stderr)
                runnable.append(name)
                continue
            print(f"{name}: ready ({detail})", file=sys.stderr)
        else:

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
    return runnable, skipped


def _would_build(variant: Variant) -> str:
    """What a run would build for this variant (a dry run builds nothing)."""
    if variant.kind != "requirements":
        return f"not ready, and not built by tfvariants: {variant.readiness()[1]}"
    from tfvariants.variants.envbuild import env_dir

    return (
        f"would build (not done in a dry run): pip install {' '.join(variant.requirements)} "
        f"into {env_dir(variant)} (the download size is known only once pip resolves "
        "them); whether this CPU can run it is checked after the build"
    )


def _explanatory_that_fit(
    args: argparse.Namespace, main: int, layer: dict[str, Any]
) -> tuple[list[str], str | None]:
    """The explanatory configurations whose first look still fits half the budget beside
    the main comparisons' (the answer box is about the main ones: they must not wait
    for the budget's end); what is left out, or a first look that cannot fit, is said in
    one line."""
    from tfvariants.analyze.statistics.stats import DEFAULT_REPEATS
    from tfvariants.commands.matrix_args import parse_names
    from tfvariants.commands.rounds import QUICK_BUDGET_S, QUICK_WINDOW
    from tfvariants.options import declare
    from tfvariants.options.training import TrainingOptions
    from tfvariants.rounds import firstlook

    quick = args.quick or layer.get("quick", False)
    if declare.says_off(declare.declared(TrainingOptions)["budget_s"], args.budget_s):
        return list(EXPLANATORY), None  # --budget off: as without a budget
    budget = args.budget_s or layer.get("budget_s") or (QUICK_BUDGET_S if quick else None)
    if budget is None:
        return list(EXPLANATORY), None  # no budget: every round runs whatever it takes
    if args.workloads == "all":
        from workloads import registry

        workloads = list(registry.available())
    else:
        workloads = parse_names("workloads", args.workloads)
    times = None
    if args.estimate_from is not None:
        times = firstlook.stored_times(workloads, firstlook.walls_of(args.estimate_from)[0])
    if times is None:
        steady = args.min_steady_s if args.min_steady_s is not None else QUICK_WINDOW[0]
        times = firstlook.default_times(workloads, steady)
    per_config = len(args.threads)
    rounds = args.repeats or DEFAULT_REPEATS
    kept = firstlook.most_that_fit(
        times, workloads, main * per_config, EXPLANATORY, rounds=rounds, budget_s=budget
    )
    # (A first look that cannot fit even without them is said by compare: firstlook.announce.)
    left = [n for n in EXPLANATORY if n not in kept]
    if left:
        configs = (main + len(EXPLANATORY)) * per_config
        whole = firstlook.first_look(times, workloads, configs, rounds=rounds, budget_s=budget)
        need_min = math.ceil(whole.seconds / firstlook.FIRST_LOOK_SHARE / 60)
        note = (
            f"left out the explanatory configuration(s) {', '.join(left)} so that "
            f"the first look of the compiled-vs-stock comparisons fits half the budget "
            f"(with them it would take about {whole.seconds / 60:.1f} min; they fit "
            f"--budget {need_min}m)"
        )
        print(f"{PRESET}: {note}", file=sys.stderr)
        return kept, note
    return kept, None


def _study(args: argparse.Namespace) -> PresetRecord:
    """The 2017 study's matrix on today's prices; what the user gave stays."""
    if args.variants is None:
        args.variants = STUDY_VARIANTS_RAY if args.executor == "ray" else STUDY_VARIANTS
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

        from tfvariants.analyze.training.dryrun import STUDY as FROM_STUDY

        args.estimate_from = Path(FROM_STUDY)
    return PresetRecord(
        name=STUDY, variants=args.variants, threads=tuple(args.threads), pricing=args.pricing
    )
