"""`compare`'s matrix from its arguments: the variants (with their fixed thread counts),
threads, workloads and repeats, each given or taken from the stored run on a resume,
checked before anything is written (UserError, one line)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from tfvariants.analyze.statistics.stats import DEFAULT_REPEATS
from tfvariants.commands import rounds
from tfvariants.commands.matrix_args import checked, default_threads, parse_names, quick_scale
from tfvariants.errors import UserError
from tfvariants.options import argtypes
from tfvariants.options.training import TrainingOptions
from tfvariants.plan.duet import DuetPlans
from tfvariants.plan.spec import MatrixSpec
from tfvariants.store.record import EMPTY_RUN, RunRecord

if TYPE_CHECKING:
    from tfvariants.analyze.cost.pricing import Pricing
    from tfvariants.variants.registry import Variant

T = TypeVar("T")


def parse_threads(text: str) -> list[int]:
    return checked("threads", argtypes.thread_list, text)


def _parsed(option: str, parse: Callable[[str], T], value: str | T) -> T:
    """Command-line text through the shared parser; values already parsed pass."""
    return checked(option, parse, value) if isinstance(value, str) else value


def _available_workloads() -> list[str]:
    from workloads import registry

    return list(registry.available())


def _given_or_stored(
    resume: bool, name: str, value: str | T | None, parse: Callable[[str], T], stored: T, default: T
) -> T:
    """The value on the command line, else (``resume``: a run.json was read) the stored
    one, else ``default``."""
    if value is not None:
        return _parsed(name.replace("_", "-"), parse, value)
    return stored if resume and stored is not None else default


def build_spec(
    args: argparse.Namespace,
    stored: RunRecord | None = None,
    pricing: Pricing | None = None,
    preset: Mapping[str, Any] | None = None,
) -> tuple[MatrixSpec, dict[str, Variant]]:
    """MatrixSpec + the variant objects, from args (missing args taken from a stored run
    when resuming); ``pricing`` gives a GPU variant its instance's vCPU count; ``preset``:
    a preset's layer of the options (commands/presets.py ``apply``)."""
    from tfvariants.plan.spec import logical_cpus
    from tfvariants.variants import get_variants

    stored = stored or EMPTY_RUN
    given_or_stored = partial(_given_or_stored, stored.present)
    names = partial(parse_names, "variants")
    variants = given_or_stored("variants", args.variants, names, list(stored.variants), ["local"])
    explicit = split_fixed_threads(variants)
    variants = list(dict.fromkeys(n for n, _ in explicit))
    if len(variants) != len(explicit):
        raise UserError("--variants: a variant is named twice (with different @THREADS?)")
    default = default_threads(logical_cpus())
    threads = given_or_stored("threads", args.threads, parse_threads, list(stored.threads), default)
    known = _available_workloads()
    if args.workloads is None and stored.workloads:
        workloads = list(stored.workloads)
    elif args.workloads in (None, "all"):
        workloads = known
    else:
        workloads = parse_names("workloads", args.workloads)
        for w in workloads:
            if w not in known and not (w.endswith(".py") and os.path.isfile(w)):
                raise UserError(
                    f"unknown workload {w!r} (known: {', '.join(known)}; or a path to a .py file)"
                )
    if not workloads:
        raise UserError("no workloads available")

    repeats = given_or_stored(
        "repeats", args.repeats, argtypes.repeats, stored.repeats, DEFAULT_REPEATS
    )
    stored_quick = isinstance(stored.options, TrainingOptions) and stored.options.quick
    quick = bool(args.quick or stored_quick or (preset or {}).get("quick"))
    per_workload = {w: quick_scale(w) for w in workloads} if quick else None
    options = rounds.training_options(
        args, stored, repeats=repeats, per_workload=per_workload, preset=preset
    )
    variant_objs = get_variants(variants, args.variants_file)
    info = {v: {"kind": o.kind, "device": o.device} for v, o in variant_objs.items()}
    # A resume keeps the stored thread counts of fixed-thread variants.
    fixed = dict(stored.fixed_threads) if args.variants is None else {}
    fixed.update({n: t for n, t in explicit if t is not None})
    for v, o in variant_objs.items():
        if v not in fixed and o.device == "gpu":
            # A GPU configuration is one per GPU instance: its vCPUs are the instance's
            # (or, with no catalog instance, this host's), never the --threads axis.
            fixed[v] = gpu_threads(v, pricing)
    spec = MatrixSpec(
        tuple(variants), tuple(threads), tuple(workloads), repeats, options, info, fixed
    )
    return spec, variant_objs


def split_fixed_threads(names: list[str]) -> list[tuple[str, int | None]]:
    """``gpu@16`` -> ("gpu", 16): that variant runs at 16 threads only; ``pip`` -> ("pip",
    None): the --threads axis."""
    out: list[tuple[str, int | None]] = []
    for name in names:
        base, at, count = name.rpartition("@")
        if at and base:
            out.append((base, checked("variants", argtypes.threads, count)))
        else:
            out.append((name, None))
    return out


def gpu_threads(variant: str, pricing: Pricing | None) -> int:
    """A GPU variant's vCPU count: its catalog instance's (the instance a cloud run rents
    and bills), capped at nothing; without a catalog, this host's logical CPUs."""
    from tfvariants.plan.spec import logical_cpus

    found = pricing.instance_for(variant, 0, "gpu") if pricing is not None else None
    return found[0].vcpus if found else logical_cpus()


def check_later(baseline: str | None, spec: MatrixSpec) -> None:
    """--later names variants of the matrix other than the baseline's, leaves some to
    run first, and has a budget's adaptive rounds to run in (one line otherwise)."""
    from tfvariants.analyze.baseline import parse_baseline

    o = spec.options
    later = list(o.later or ())
    if not later:
        return
    flag = f"--later {','.join(later)}"
    unknown = [n for n in later if n not in spec.variants]
    if unknown:
        raise UserError(
            f"{flag}: {', '.join(unknown)} not one of --variants ({', '.join(spec.variants)})"
        )
    if all(v in later for v in spec.variants):
        raise UserError(f"{flag}: every variant would wait; nothing would run first")
    if not o.budget_s:
        raise UserError(
            f"{flag} needs a budget (--budget, or --quick): the later variants run in the "
            "adaptive rounds after the first look"
        )
    parsed = parse_baseline(baseline)
    if parsed is None:
        raise UserError(
            f"{flag} needs --baseline (the configuration the later variants are compared with)"
        )
    if parsed[0] in later:
        raise UserError(f"{flag}: the baseline {parsed[0]} cannot wait: every comparison needs it")


def check_baseline(baseline: str | None, spec: MatrixSpec) -> None:
    """--baseline names a configuration the matrix runs (one line otherwise)."""
    from tfvariants.analyze.baseline import parse_baseline

    parsed = parse_baseline(baseline)
    if parsed is None:
        return
    if parsed[0] not in spec.variants:
        raise UserError(
            f"--baseline {baseline}: {parsed[0]!r} is not one of --variants "
            f"({', '.join(spec.variants)})"
        )
    counts = [t for v, t in spec.configurations() if v == parsed[0]]
    if parsed[1] is not None and parsed[1] not in counts:
        if parsed[0] in spec.fixed_threads:
            raise UserError(f"--baseline {baseline}: {parsed[0]} runs at {counts[0]} threads only")
        raise UserError(f"--baseline {baseline}: {parsed[1]} is not one of --threads")


def check_duet(
    spec: MatrixSpec, variants: Mapping[str, Variant], executor: str
) -> DuetPlans | None:
    """--duet fits this plan on this host (one line otherwise, before anything is built
    or written): one thread count, host-pinned variants, twice the CPUs on separate cores.
    The two sides' plans (None: not a duet run), worked out once for the run."""
    from tfvariants.plan.duet import duet_fit
    from tfvariants.plan.topology import read_topology

    if not spec.options.duet:
        return None
    configs = spec.configurations()
    fit = duet_fit(
        [t for _, t in configs],
        len(configs),
        {name: v.pins_on_host() for name, v in variants.items()},
        read_topology(),
        executor=executor,
    )
    if isinstance(fit, str):
        raise UserError(fit)
    return fit


def duet_line(plans: DuetPlans) -> str:
    """The one line that says how a duet run will measure (its dry run's too)."""
    from tfvariants.plan.topology import format_cpu_list

    a, b = (format_cpu_list(p.cpus) for p in plans.both())
    return (
        f"duet: two cells of a round at once, on CPUs {a} and {b} (swapped every other "
        "round); a side whose cell ends first runs fillers until the other's ends"
    )
