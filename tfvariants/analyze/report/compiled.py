"""The compiled-vs-stock answer for this CPU (`tfvariants compare --preset compiled`).

The report of such a run opens with it: each compiled build of the release against the
stock wheel of the same release, per workload, in the report's one comparison (ratio,
interval, verdict), then the builds this CPU could not run and why, next to the 2017
study's finding. Plain data (sentences) for the HTML report and the terminal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tfvariants.analyze.report.conclusions import phrase
from tfvariants.analyze.report.fields import get_path
from tfvariants.analyze.report.format import sig3
from tfvariants.analyze.training.groups import Group, WorkloadReport

PRESET = "compiled"
STUDY = (
    "The 2017 study (TensorFlow 1.2, Keras 2, Google Compute Engine) found TensorFlow "
    "compiled for the CPU's instructions (SSE4.2/AVX/FMA) 30-40 % faster than the stock "
    "pip wheel."
)


def preset_stock(run: Mapping[str, Any]) -> str | None:
    """The stock wheel a ``--preset compiled`` run compares against: its report's
    baseline unless --baseline says otherwise."""
    options = run.get("options")
    preset = options.get("preset") if isinstance(options, dict) else None
    return str(preset["stock"]) if isinstance(preset, dict) and preset.get("stock") else None


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


def answer(
    workloads: list[WorkloadReport], run: dict[str, Any], min_effect: float
) -> list[str] | None:
    """The opening sentences of a compiled-preset run; None for any other run."""
    options = run.get("options") if isinstance(run.get("options"), dict) else {}
    preset = (options or {}).get("preset")
    if not isinstance(preset, dict) or preset.get("name") != PRESET:
        return None
    stock = str(preset.get("stock"))
    builds = [str(b) for b in preset.get("builds") or []]
    info = run.get("variant_info") if isinstance(run.get("variant_info"), dict) else {}

    def built_for(name: str) -> str:
        value = (info or {}).get(name, {}).get("compiled_for")
        return f" (compiled for {value})" if value else ""

    lines: list[str] = []
    verdicts: list[str] = []
    for wr in workloads:
        base = next((g for g in wr.groups if g.variant == stock and g.time is not None), None)
        if base is None:
            lines.append(f"{wr.name}: the stock wheel {stock} has no successful runs: no answer.")
            continue
        for g in wr.groups:
            if g.variant not in builds or g.threads != base.threads:
                continue
            if g.time_cmp is None or wr.baseline is not base:
                lines.append(f"{wr.name}: {_no_verdict(g, base)}{built_for(g.variant)}.")
                continue
            verdicts.append(g.time_cmp.verdict)
            lines.append(f"{wr.name}: {phrase(g, base, g.time_cmp)}{built_for(g.variant)}.")
    for name, reason in (preset.get("skipped") or {}).items():
        lines.append(f"{name} was not run: {reason}.")
    cpu = _cpu_words(workloads)
    if verdicts and all(v == "equivalent" for v in verdicts):
        head = (
            f"On {cpu}: no compiled build differed from the stock wheel {stock} by more "
            f"than {min_effect:.0%} (equivalent on every workload)."
        )
    elif "different" in verdicts:
        head = f"On {cpu}: a compiled build differed from the stock wheel {stock} (decided):"
    elif verdicts:
        head = f"On {cpu}: compiled builds vs the stock wheel {stock} stayed partly undecided:"
    else:
        head = (
            f"On {cpu}: no verdict on compiled builds vs the stock wheel {stock} from this "
            "run (below: why, and the medians)."
        )
    from tfvariants.analyze.training.roofline import headroom  # each build's distance to the peak

    return [head, *lines, *headroom(workloads, run, [stock, *builds]), STUDY]
