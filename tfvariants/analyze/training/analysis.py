"""The analysis: stored results grouped by (workload, variant, threads), with statistics,
costs, comparisons to a baseline and conclusions, as plain data (no HTML).

It reads results/<run>/run.json (when present) and results/<run>/cells/*.json through
the run store and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from tfvariants.analyze.baseline import parse_baseline
from tfvariants.analyze.cost.pricing import CellCost, Pricing
from tfvariants.analyze.shared import cautions
from tfvariants.analyze.shared.coverage import cell_counts, folder_warnings, usable_results
from tfvariants.analyze.shared.frame import RunFrame, environments_of
from tfvariants.analyze.shared.header import header_of
from tfvariants.analyze.shared.parity import parity
from tfvariants.analyze.shared.settings import ReportSettings
from tfvariants.analyze.statistics import interference, windows
from tfvariants.analyze.statistics.decide import Settings, run_settings
from tfvariants.analyze.statistics.interference import Interference
from tfvariants.analyze.statistics.verdicts import (
    Requested,
    RoundValues,
    measured,
    pick_baseline,
    round_values,
    workload_verdicts,
)
from tfvariants.analyze.training import loadlabel, repeatcost
from tfvariants.analyze.training.conclusions import conclude
from tfvariants.analyze.training.design import design_of
from tfvariants.analyze.training.groups import Group, WorkloadReport
from tfvariants.analyze.training.noise import HostNoise, host_noise
from tfvariants.analyze.training.summary import apply_verdicts, summarise_group
from tfvariants.errors import UserError
from tfvariants.options.training import TrainingOptions
from tfvariants.store.adaptiveplans import DesignRecord
from tfvariants.store.record import RunRecord
from tfvariants.store.rundir import RunContents, load_run_dir
from tfvariants.store.training import CellResult, ConfigKey


@dataclass(frozen=True, kw_only=True)
class Analysis(RunFrame):
    """A run folder's training cells, analysed (its serving cells: ``serving``)."""

    workloads: list[WorkloadReport]
    cells: list[CellResult]
    settings: Settings = field(default_factory=lambda: Settings())
    noise: HostNoise | None = None
    devices: dict[str, str] = field(default_factory=dict)  # variant -> cpu|gpu (billing)
    interference: Interference | None = None  # disturbed cells and waits for quiet
    cell_costs: Mapping[str, CellCost] = field(default_factory=dict)  # by cell id (the CSV's)

    @property
    def rounds_compared(self) -> tuple[int, int] | None:
        """(fewest, most) common rounds behind the time ratios, None without ratios."""
        ns = [g.rounds_compared for w in self.workloads for g in w.groups if g.verdict]
        return (min(ns), max(ns)) if ns else None


# ---- analysis ----


def _order(values: Iterable[str], preferred: Sequence[str]) -> list[str]:
    seen = list(dict.fromkeys(values))
    pref = [v for v in preferred if v in seen]
    return pref + sorted((v for v in seen if v not in pref), key=str)


def analyze(
    results_dir: Path,
    report: ReportSettings | None = None,
    *,
    pricing: Pricing | None = None,
    baseline: str | None = None,
    disturbed: str | None = None,
) -> Analysis:
    """Load a run folder and analyse its training cells (:func:`analyze_contents`) with
    ``report``'s settings, or with just a pricing, baseline or disturbed policy (the
    usual question of a test or a script); a report is built by analyze/report/build.py."""
    if report is None:
        report = ReportSettings(pricing=pricing, baseline=baseline, disturbed=disturbed)
    contents = load_run_dir(Path(results_dir), allow_mixed_hosts=report.allow_mixed_hosts)
    return analyze_contents(contents, report, run_settings(contents.run, report.decision))


@dataclass(frozen=True)
class _Inputs:
    """What every workload's analysis shares: the run's configurations and settings."""

    groups: dict[ConfigKey, Group]
    variants: list[str]
    devices: dict[str, str]
    oversubscribed: set[tuple[str, int]]
    times: Mapping[ConfigKey, RoundValues]  # what the verdicts use
    ran: set[ConfigKey]
    settings: Settings
    requested: Requested | None
    pricing: Pricing | None
    cpus: int | None
    duet: bool = False  # cells ran two at a time (--duet)


# What starting late costs (benchmarks/decide.py, "1.2x 10%, --later" against "1.2x, 10%
# noise", 1,000 runs each; docs/methods.md): the rounds left, not the run's
LATER_COST = (
    "Fewer rounds mean less power: a 1.2x difference at 10 % noise, started once an "
    "equally hard comparison was settled, was found in 41 % of simulated runs, against 94 % "
    "from the start."
)


def later_sentence(later: object, cells: Sequence[CellResult]) -> str | None:
    """When each --later variant started and how many rounds it ran, or that it never
    ran (None: the run has none)."""
    if not isinstance(later, list) or not later:
        return None
    said = []
    for name in later:
        rounds = sorted({r.round for r in cells if r.variant == name})
        if not rounds:
            said.append(f"{name} never ran: the others were not settled before the run stopped")
        else:
            said.append(f"{name} from repeat {rounds[0] + 1} on ({len(rounds)} round(s))")
    return (
        "Later variants (--later) started once every other comparison was settled, and are "
        f"compared on the rounds both sides ran: {'; '.join(said)}. {LATER_COST}"
    )


def duet_sentence(duet: object) -> str | None:
    """What a duet run's numbers mean (None: not a duet run)."""
    if duet is not True:
        return None
    return (
        "Measured as a duet (--duet): each round's cells ran two at a time on disjoint "
        "CPUs, so interference from the rest of the machine reached both sides of a pair "
        "alike, and the per-round ratios cancel it; a side whose cell ended first ran "
        "unmeasured fillers until the other's ended. Each cell shared the caches and the "
        "memory bus with its neighbour, so the absolute times and costs may be longer than "
        "a lone run's: the ratios are this run's answer."
    )


def analyze_contents(contents: RunContents, report: ReportSettings, settings: Settings) -> Analysis:
    """Group a loaded folder's training cells, compute statistics, costs, comparisons and
    conclusions (serving cells have their own analysis: analyze/serving/), deciding with
    the run's decision ``settings`` (analyze/statistics/decide.py ``run_settings``, made once).

    Disturbed cells (analyze/statistics/interference.py) are used in the verdicts or not as the
    policy ``report.disturbed`` says (default: the run's, else "auto"), and counted in
    ``interference``."""
    run = contents.run
    usable_results(contents)  # one line when there is nothing to analyse
    cells = [r for _, r in sorted(contents.parsed.items()) if isinstance(r, CellResult)]
    cpus = run.logical_cpus
    if cpus is None:
        cpus = next((r.machine_cpus for r in cells if r.machine_cpus), None)
    training = run.options if isinstance(run.options, TrainingOptions) else None
    quiet = interference.summarise(
        cells, policy=interference.policy_of(training, report.disturbed), options=training
    )
    inputs = _inputs(
        cells,
        run,
        report.pricing,
        report.baseline,
        cpus,
        settings,
        round_values(cells, include_disturbed=quiet.included),
    )
    inputs, all_warnings = _summarise_groups(inputs, quiet.included)
    all_warnings[:0] = folder_warnings(contents)
    run_base = run_baseline(inputs)
    reports = [
        _workload_report(w, inputs, run_base, all_warnings)
        for w in _order((k.workload for k in inputs.groups), run.workloads)
    ]
    judged = {g.key: g for wr in reports for g in wr.groups}  # with their verdicts
    noise = replace(
        host_noise([judged[k] for k in inputs.groups], inputs.settings),
        window_plan=windows.plan_sentence(run.adaptive.window_plan if run.adaptive else None),
        later=later_sentence(training.later if training else None, cells),
        duet=duet_sentence(training.duet if training else None),
        design=_design_line(run.adaptive.design if run.adaptive else None),
    )
    all_warnings += noise.warnings
    if quiet.disturbed:
        all_warnings.append(
            cautions.StatWarning(
                "disturbed",
                quiet.sentence(),
                "run when the machine is quieter, "
                "or on a dedicated machine; the cells are listed in the report",
            )
        )
    envs, raw_envs = environments_of(cells, inputs.variants)
    return Analysis(
        results_dir=str(contents.results_dir),
        run=run,
        workloads=reports,
        baseline=run_base,
        pricing=report.pricing,
        environments=envs,
        raw_environments=raw_envs,
        warnings=all_warnings,
        counts=cell_counts(cells, contents),
        logical_cpus=cpus,
        cells=cells,
        variants=inputs.variants,
        settings=inputs.settings,
        noise=noise,
        devices=inputs.devices,
        store=contents,
        interference=quiet,
        cell_costs=cell_costs(cells, report.pricing),
        header=header_of(run),
    )


def cell_costs(cells: Iterable[CellResult], pricing: Pricing | None) -> dict[str, CellCost]:
    """Each timed cell's cost at its own training time (None: no prices)."""
    out: dict[str, CellCost] = {}
    if pricing is None:
        return out
    for r in cells:
        t = r.training_time_s
        if t and (cost := pricing.cost(r.variant, r.threads, t, r.device)) is not None:
            out[r.cell_id] = cost
    return out


def _inputs(
    cells: list[CellResult],
    run: RunRecord,
    pricing: Pricing | None,
    baseline: str | None,
    cpus: int | None,
    settings: Settings,
    times: Mapping[ConfigKey, RoundValues],
) -> _Inputs:
    by_key: dict[ConfigKey, list[CellResult]] = {}
    for r in cells:
        by_key.setdefault(r.key, []).append(r)
    groups = {k: Group(*k, device=rs[0].device, results=rs) for k, rs in by_key.items()}
    variants = _order((k.variant for k in groups), run.variants)
    requested = parse_baseline(baseline)
    if requested is not None and requested[0] not in variants:
        raise UserError(
            f"--baseline {baseline}: no results for variant {requested[0]!r} "
            f"(have: {', '.join(variants)})"
        )
    # Oversubscribed as the cells say (store/cellresult.py decides it, once).
    over = {
        (k.variant, k.threads)
        for k, g in groups.items()
        if any(r.oversubscribed for r in g.results)
    }
    devices = {r.variant: r.device for r in cells}
    duet = isinstance(run.options, TrainingOptions) and run.options.duet is True
    return _Inputs(groups, variants, devices, over, times, measured(cells), settings, requested,
                   pricing, cpus, duet)  # fmt: skip


def _summarise_groups(
    inputs: _Inputs, include_disturbed: bool
) -> tuple[_Inputs, list[cautions.StatWarning]]:
    """Every group's figures and cautions (the inputs with their groups summarised); one
    oversubscription line per thread count (not one per cell: the same fact repeated
    drowns the rest)."""
    groups = {
        k: summarise_group(
            g, inputs.pricing, inputs.cpus, inputs.settings, include_disturbed=include_disturbed
        )
        for k, g in inputs.groups.items()
    }
    out: list[cautions.StatWarning] = []
    over_threads: dict[int, list[str]] = {}
    for g in groups.values():
        out += [w for w in g.warnings if w.kind != "oversubscribed"]
        if g.oversubscribed:
            over_threads.setdefault(g.threads, []).append(g.label)
    for threads, labels in sorted(over_threads.items()):
        configs = ", ".join(dict.fromkeys(labels))
        out.insert(0, cautions.oversubscribed_warning(configs, threads, inputs.cpus or 0))
    return replace(inputs, groups=groups), out


def _design_line(recorded: DesignRecord | None) -> str | None:
    chosen = design_of(recorded)
    return chosen.line() if chosen is not None else None


def _workload_report(
    w: str, inputs: _Inputs, run_base: ConfigKey, warnings: list[cautions.StatWarning]
) -> WorkloadReport:
    """One workload: its baseline and verdicts (the one comparison), conclusions and
    accuracy parity; its cautions are appended to ``warnings`` (``run_base``: the run's
    baseline, :func:`run_baseline`)."""
    baseline_label = run_base.label
    variants = inputs.variants
    wgroups = sorted(
        (g for g in inputs.groups.values() if g.workload == w),
        key=lambda g: (variants.index(g.variant), g.threads),
    )
    found = workload_verdicts(
        [g.key for g in wgroups],
        inputs.times,
        inputs.settings,
        devices=inputs.devices,
        variant_order=variants,
        oversubscribed=inputs.oversubscribed,
        requested=inputs.requested,
        ran=inputs.ran,
    )
    base = inputs.groups.get(found.baseline) if found.baseline else None
    judged = apply_verdicts(wgroups, base, found.verdicts, inputs.settings)
    base = _same(wgroups, judged, base)
    marked = loadlabel.mark(judged, base)  # verdicts that rest on disturbed cells
    base = _same(judged, marked, base)
    if base is None or base.time is None:
        warnings.append(
            cautions.StatWarning(
                "no_baseline",
                f"{w}: the baseline {baseline_label} has no successful runs, so no ratios",
                "pick another --baseline (VARIANT@THREADS) or --resume the failed cells",
            )
        )
    wr = conclude(
        WorkloadReport(w, marked, base),
        baseline_label,
        inputs.cpus,
        inputs.pricing,
        inputs.settings,
    )
    cost = repeatcost.sentence(w, marked, duet=inputs.duet)  # what a repeat costs
    # The workload's own baseline, as its ratios use (the header's may not have run it).
    base_variant = (found.baseline or run_base).variant
    wr = replace(
        wr,
        conclusions=[*wr.conclusions, cost] if cost else wr.conclusions,
        parity_baseline=base_variant,
        parity=parity(marked, base_variant),
    )
    for row in wr.parity:
        if row.outlier:
            warnings.append(
                cautions.StatWarning(
                    "accuracy_parity",
                    f"{w}: {row.variant} trains to a different result than {base_variant}: "
                    + "; ".join(row.flags),
                    "a fast variant that learns something else is not a faster build "
                    "(see Accuracy parity)",
                )
            )
    return wr


def _same(old: list[Group], new: list[Group], group: Group | None) -> Group | None:
    """``group`` (one of ``old``, or None) as it is in ``new``, the same list remade."""
    return next((n for o, n in zip(old, new, strict=True) if o is group), None)


def run_baseline(inputs: _Inputs) -> ConfigKey:
    """The run's baseline (the header's; no workload): the one baseline rule
    (:func:`tfvariants.analyze.statistics.verdicts.pick_baseline`) on every workload's usable
    repeats pooled per (variant, threads). Each workload's own baseline (the same rule on
    its own repeats) is what its ratios and its accuracy parity use."""
    pooled: dict[ConfigKey, dict[int, float]] = {}
    for k in inputs.groups:
        values = pooled.setdefault(ConfigKey("", k.variant, k.threads), {})
        for v in (inputs.times.get(k) or {}).values():
            values[len(values)] = v  # only the count matters to the rule
    chosen = pick_baseline(
        list(pooled),
        pooled,
        devices=inputs.devices,
        variant_order=inputs.variants,
        oversubscribed=inputs.oversubscribed,
        requested=inputs.requested,
        ran={ConfigKey("", k.variant, k.threads) for k in inputs.ran},
    )
    if chosen is None:
        first = inputs.variants[0]
        return ConfigKey("", first, max(k.threads for k in inputs.groups if k.variant == first))
    return chosen
