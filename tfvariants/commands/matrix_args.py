"""Helpers shared by the commands that run a matrix (compare, serve, the cluster
executor): value parsing at run time, workload scales, run options, readiness."""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from tfvariants.errors import UserError
from tfvariants.options import declare
from tfvariants.options.cell import CellOptions
from tfvariants.plan.cell import Cell

if TYPE_CHECKING:
    from tfvariants.execute.runner import RunOptions
    from tfvariants.store.adaptiveplans import WindowPlan

QUICK_SAMPLES = 2000  # fallback when a workload's SPEC has no quick_samples


def checked(option: str, parse: Any, text: str) -> Any:
    """Run a shared argtypes parser at run time (values may come from run.json on
    --resume), turning its error into the one-line UserError."""
    try:
        return parse(str(text))
    except argparse.ArgumentTypeError as exc:
        raise UserError(f"--{option}: {exc}") from None


def parse_names(name: str, text: str) -> list[str]:
    names = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not n for n in names):
        raise UserError(f"--{name}: expected a comma list of names, got {text!r}")
    return list(dict.fromkeys(names))


def default_threads(cpus: int) -> list[int]:
    """1..cpus; above 8 CPUs, powers of two plus cpus (64 thread counts help nobody)."""
    if cpus <= 8:
        return list(range(1, cpus + 1))
    out, t = [], 1
    while t < cpus:
        out.append(t)
        t *= 2
    return [*out, cpus]


def workload_spec(name: str) -> dict:
    """The workload's SPEC without importing TensorFlow (workload modules don't)."""
    try:
        from workloads import registry

        spec = getattr(registry.load(name), "SPEC", None)
        return dict(spec) if isinstance(spec, dict) else {}
    except Exception:  # a workload that can't load fails in its cells, with a reason
        return {}


def quick_scale(name: str) -> dict[str, int]:
    """A quick cell trains on a sample of the data and stops after the (shorter) steady
    window; the full schedule is projected from it."""
    spec = workload_spec(name)
    return {"samples": int(spec.get("quick_samples") or QUICK_SAMPLES)}


def run_options_for(
    spec: Any, workload: str, repeat: int = 0, window_plan: WindowPlan | None = None
) -> RunOptions:
    """RunOptions for a workload's cells: explicit --epochs/--samples beat quick scale;
    repeats from the window plan's round on measure the planned steady window."""
    o = spec.options
    scale = (o.per_workload or {}).get(workload, {})
    steady_s, steps, warmup_max = o.min_steady_s, o.min_steady_steps, o.warmup_max_s
    if window_plan is not None and repeat >= window_plan.from_repeat:
        steady_s = window_plan.min_steady_s
        # the more-processes design's cheaper cells (analyze/training/processcells.py)
        steps = window_plan.min_steady_steps or steps
        cap = (window_plan.warmup_max_s or {}).get(workload)
        if cap is not None:
            warmup_max = min(cap, warmup_max or math.inf)
        back = (window_plan.back or {}).get(workload)  # the plan did not pay here
        if back is not None and repeat >= back.from_repeat:
            steady_s, steps = back.min_steady_s, o.min_steady_steps
            warmup_max = o.warmup_max_s
    # Every cell option as the run declares it; the scale and the window of this cell.
    run_options = CellOptions(**{k: getattr(o, k) for k in declare.declared(CellOptions)})
    return dataclasses.replace(
        run_options,
        epochs=o.epochs or scale.get("epochs"),
        samples=o.samples or scale.get("samples"),
        min_steady_s=steady_s,
        min_steady_steps=steps,
        warmup_max_s=warmup_max,
    )


def cell_options(
    spec: Any, window_plan: Callable[[], WindowPlan | None]
) -> Callable[[Cell], RunOptions]:
    """What each training cell runs with, local or on Ray alike: the run's options, and
    the steady window planned at the first look (``window_plan``, asked per cell: the
    plan is made while the run goes on) for the rounds after it."""
    return lambda cell: run_options_for(spec, cell.workload, cell.repeat, window_plan())


def ready_variants(variant_objs: dict[str, Any], engine: str | None) -> dict[str, Any]:
    """Stop before the sweep, not in the middle of it, when a variant cannot run here.
    GPU variants on a host without a GPU are exempt: their cells are recorded as
    skipped with that reason."""
    from tfvariants.variants import ensure_built, skip_reason

    ready_objs = {}
    problems = []
    for name, variant in variant_objs.items():
        variant = variant.with_engine(engine)
        ready_objs[name] = variant
        if skip_reason(variant):
            continue
        # A requirement-spec variant is built on first use (cached by its specs).
        done = ensure_built(variant, partial(_build_line, name))
        if done:
            print(f"{name}: {done}", file=sys.stderr)
        ready, detail = variant.readiness()
        if not ready:
            problems.append(f"{name}: {detail}")
    if problems:
        raise UserError("variant(s) not ready: " + "; ".join(problems))
    return ready_objs


def _build_line(name: str, line: str) -> None:
    print(f"  {name}: {line}", file=sys.stderr)


def check_fits_host(
    command: str,
    configurations: list[tuple[str, int]],
    variant_info: Mapping[str, Mapping[str, Any]],
    threads: tuple[int, ...],
) -> None:
    """Thread counts above this host's CPUs on the local executor: stop (UserError, one
    line) before any probe or cell, naming the ways on (plan/fit.py). The caller skips
    this for a dry run, a cluster executor and the --oversubscribe opt-in."""
    from tfvariants.plan.fit import beyond_host, refusal
    from tfvariants.plan.spec import logical_cpus

    cpus = logical_cpus()
    gpus = {v for v, info in variant_info.items() if info.get("device") == "gpu"}
    counts = beyond_host(configurations, cpus, gpus)
    if counts:
        fitting = [t for t in threads if t <= cpus] or default_threads(cpus)
        raise UserError(refusal(command, counts, cpus, fitting))
