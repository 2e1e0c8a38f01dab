"""The compiled-vs-stock answer for this CPU (`tfvariants compare --preset compiled`).

The report of such a run opens with it: each compiled build of the release against the
stock wheel of the same release, per workload, in the report's one comparison (ratio,
interval, verdict), then the builds this CPU could not run and why, next to the 2017
study's finding. Plain data (sentences) for the HTML report and the terminal.
"""

from __future__ import annotations

import statistics

from tfvariants.analyze.report.answer import next_step
from tfvariants.analyze.report.preset import compiled_preset
from tfvariants.analyze.shared.fields import get_path
from tfvariants.analyze.shared.format import sig3
from tfvariants.analyze.statistics import adaptive
from tfvariants.analyze.statistics.stats import Comparison
from tfvariants.analyze.statistics.verdict import Verdict
from tfvariants.analyze.training import loadlabel
from tfvariants.analyze.training.conclusions import interval_words
from tfvariants.analyze.training.groups import Group, WorkloadReport
from tfvariants.analyze.training.roofline import Roofline, headroom
from tfvariants.options.preset import PresetRecord
from tfvariants.store.record import RunRecord

STUDY = (
    "The 2017 study (TensorFlow 1.2, Keras 2, Google Compute Engine) found TensorFlow "
    "compiled for the CPU's instructions (SSE4.2/AVX/FMA) 30-40 % faster than the stock "
    "pip wheel."
)


def _cpu_words(workloads: list[WorkloadReport]) -> str:
    """The CPU the cells ran on and whether it has AVX-512, from the results."""
    for wr in workloads:
        for g in wr.groups:
            for r in g.ok:
                raw = getattr(r, "raw", r)  # a typed CellResult keeps its dict as ``raw``
                model = get_path(raw, "environment", "cpu", "model")
                flags = get_path(raw, "environment", "cpu", "isa_flags") or []
                if model:
                    has = "with" if "avx512f" in flags else "without"
                    return f"{model}, {has} AVX-512"
    return "this CPU"


def _no_verdict(g: Group, base: Group) -> str:
    """Why a compiled build has no verdict against the stock wheel, with the medians
    (descriptive only: no interval, no claim)."""
    ratio = ""
    if g.time is not None and base.time is not None and base.time.value > 0:
        ratio = f"; median time ratio {sig3(g.time.value / base.time.value)}, not a verdict"
    disturbed = (g.disturbed, len(g.ok), base.disturbed, len(base.ok))
    if disturbed[0] or disturbed[2]:
        why = (
            f"{disturbed[0]} of its {disturbed[1]} and {disturbed[2]} of the stock wheel's "
            f"{disturbed[3]} repeats were disturbed by other processes (others' share above "
            "25 % of the pinned CPUs), which verdicts leave out"
        )
    else:
        why = "too few repeats"
    return f"{g.label} vs {base.label}: no verdict ({why}{ratio})"


def round_seconds(workloads: list[WorkloadReport], names: list[str]) -> float | None:
    """One adaptive round of the comparisons the answer is about: the median cell wall
    time of each (workload, build or stock wheel), summed (None: no wall times)."""
    total = 0.0
    for wr in workloads:
        for g in wr.groups:
            walls = [w for r in g.ok if (w := getattr(r, "wall_s", None)) is not None and w > 0]
            if g.variant in names and walls:
                total += statistics.median(walls)
    return total or None


def _per_workload(
    g: Group, base: Group, cmp: Comparison, round_s: float | None, last_look: int | None
) -> str:
    """One workload's answer for a build: faster/slower by X, equivalent, or undecided
    with the next step."""
    r = cmp.ratio
    if cmp.verdict == Verdict.DIFFERENT:
        if r.value < 1:
            text = f"faster by {sig3(1 / r.value)}x ({interval_words(r, True)}"
        else:
            text = f"slower by {sig3(r.value)}x ({interval_words(r)}"
        band = cmp.equivalence_band
        # With no minimum effect (the preset's), a proven difference may still be small:
        # say so where the whole interval lies inside the band.
        if r.has_interval and 1 / (1 + band) <= r.lo and r.hi <= 1 + band:
            text += f"; within +/-{band:.0%}"
        text += ")"
    elif cmp.verdict == Verdict.EQUIVALENT:
        text = (
            f"equivalent within +/-{cmp.equivalence_band:.0%} (ratio {sig3(r.value)}, "
            f"{interval_words(r)}; typical runs)"
        )
    else:
        step = next_step(cmp, round_s, last_look)
        text = f"undecided: {step} (ratio {sig3(r.value)}, {interval_words(r)})"
    return loadlabel.qualify(text, g, base)


def answer(
    workloads: list[WorkloadReport],
    run: RunRecord,
    min_effect: float,
    roof: Roofline | None = None,
) -> list[str] | None:
    """The opening sentences of a compiled-preset run (None for any other run): a head,
    ONE line per compiled build (each workload: faster by X, equivalent within the band,
    or undecided with the next step), the band and why, the builds not run."""
    preset = compiled_preset(run)
    if preset is None:
        return None
    stock = str(preset.stock)
    builds = list(preset.builds)
    round_s = round_seconds(workloads, [stock, *builds])
    last_look = adaptive.last_look_of(run.adaptive)
    answers: dict[str, list[str]] = {b: [] for b in builds}
    verdicts: list[Verdict] = []
    bands: set[float] = set()
    lines: list[str] = []
    for wr in workloads:
        base = next((g for g in wr.groups if g.variant == stock and g.time is not None), None)
        if base is None:
            lines.append(f"{wr.name}: the stock wheel {stock} has no successful runs: no answer.")
            continue
        for g in wr.groups:
            if g.variant not in answers or g.threads != base.threads:
                continue
            if g.time_cmp is None or wr.baseline is not base:
                answers[g.variant].append(f"{wr.name} {_no_verdict(g, base)}")
                continue
            verdicts.append(g.time_cmp.verdict)
            bands.add(g.time_cmp.equivalence_band)
            one = _per_workload(g, base, g.time_cmp, round_s, last_look)
            answers[g.variant].append(f"{wr.name} {one}")
    for name, said in answers.items():
        info = run.variant_info.get(name)
        compiled_for = info.compiled_for if info is not None else None
        built = f" (compiled for {compiled_for})" if compiled_for else ""
        if said:
            lines.append(f"{name}{built}: {'; '.join(said)}.")
    for name, reason in preset.skipped.items():
        lines.append(f"{name} was not run: {reason}.")
    if preset.left_out is not None:  # the explanatory ones the budget left out
        lines.append(f"The run {preset.left_out}.")
    band = max(bands) if bands else None
    if band is not None:
        lines.append(_band_words(band, preset, min_effect))
    head = _head(_cpu_words(workloads), stock, verdicts, band if band is not None else min_effect)
    # each build's distance to the peak, from the report's one roofline
    return [head, *lines, *headroom(roof, [stock, *builds]), STUDY]


def _head(cpu: str, stock: str, verdicts: list[Verdict], band: float) -> str:
    if verdicts and all(v == Verdict.EQUIVALENT for v in verdicts):
        return (
            f"On {cpu}: no compiled build differed from the stock wheel {stock} by more "
            f"than {band:.0%} (equivalent on every workload)."
        )
    if Verdict.DIFFERENT in verdicts:
        return f"On {cpu}: a compiled build differed from the stock wheel {stock} (decided):"
    if verdicts and Verdict.EQUIVALENT not in verdicts:  # none decided: not "partly"
        return f"On {cpu}: compiled builds vs the stock wheel {stock} stayed undecided:"
    if verdicts:
        return f"On {cpu}: compiled builds vs the stock wheel {stock} stayed partly undecided:"
    return (
        f"On {cpu}: no verdict on compiled builds vs the stock wheel {stock} from this "
        "run (below: why, and the medians)."
    )


def _band_words(band: float, preset: PresetRecord, min_effect: float) -> str:
    """The band the answer uses, and why (the preset's own: +-10 %), and what "faster"
    and "slower" need: with no minimum effect (the preset's own), an interval that
    excludes 1. ``min_effect`` is the one the verdicts were judged at (a report's
    --min-effect, else the run's), not the preset's record, so the two never disagree."""
    if preset.band is not None and abs(preset.band - band) < 1e-12:
        words = (
            f"'Equivalent' means within +/-{band:.0%} of the stock wheel: the question is "
            "whether compiling is worth it (near the edge of +/-5 % none settles in "
            "practical time)."
        )
    else:
        words = f"'Equivalent' means within +/-{band:.0%} of the stock wheel (--equivalence-band)."
    if min_effect == 0:
        words += (
            " 'Faster' and 'slower' mean the interval excludes 1 (no minimum effect), so no "
            "true ratio is left undecidable."
        )
    return words
