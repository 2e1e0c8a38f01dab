"""The answer at a glance: the run's question, a heading counted from the verdicts, and
one table (configuration x workload or model: verdict word, ratio, interval, cost,
headroom), with ONE next step for the run when anything is undecided. The HTML report
opens with it and the commands' terminal summaries end with it.

Nothing here judges again: each word is the verdict object's own (the report's one
comparison per row, analyze/statistics), each number one the report already shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import ClassVar

from tfvariants.analyze.report.compiled import PRESET, next_step, round_seconds
from tfvariants.analyze.report.otherruns import OtherRuns
from tfvariants.analyze.serving.configs import Config, ModelReport, ServingAnalysis
from tfvariants.analyze.shared.format import money, ratio_interval, sig3, verdict_word
from tfvariants.analyze.shared.frame import RunFrame
from tfvariants.analyze.statistics import adaptive
from tfvariants.analyze.statistics.stats import Comparison
from tfvariants.analyze.statistics.verdict import COST_WORDS, TIME_WORDS, Verdict
from tfvariants.analyze.training.analysis import Analysis
from tfvariants.analyze.training.groups import Group, WorkloadReport
from tfvariants.analyze.training.roofline import Roofline as RooflineAnalysis
from tfvariants.options.training import TrainingOptions
from tfvariants.store.cellresult import ConfigKey
from tfvariants.store.record import PresetRecord, RunRecord

UNDER_LOAD = "*"  # marks a verdict resting partly on rounds from disturbed or busy cells


@dataclass(frozen=True)
class Row:
    """One configuration of one workload (or serving model), as table cells."""

    subject: str  # the workload or the serving model
    config: str
    verdict: str  # faster / slower / cheaper / dearer / equivalent / undecided / baseline
    ratio: str  # against the baseline: time (training) or cost (serving)
    interval: str
    cost: str
    headroom: str  # at most this much faster at the CPU's attainable peak ("" unknown)
    best: str  # fastest / cheapest / both, "?" when not decided against the next
    under_load: bool = False


@dataclass(frozen=True)
class Answer:
    """The report's first screen (a section: ``render/templates/sections/answer.html``)."""

    template: ClassVar[str] = "answer.html"
    question: str
    heading: str
    rows: tuple[Row, ...]
    next_step: str | None  # said once for the run, only when something is undecided
    next_command: str | None  # the step as a command to paste (a resume), if it is one
    legend: tuple[str, ...]  # what a mark beside a verdict or a "best" means
    caveats: tuple[str, ...]  # one line per kind of warning (the report has each in full)
    subject_header: str = "workload"
    ratio_header: str = "time vs baseline"
    cost_header: str = "cost per run"
    noise: str | None = None  # the noise decomposition's line (analyze/training/decomposition.py)

    @property
    def has_headroom(self) -> bool:
        return any(r.headroom for r in self.rows)


def heading(verdicts: Iterable[Verdict]) -> str:
    """What the verdicts add up to, in their own words: never "partly undecided" when
    none was decided."""
    said = [Verdict(v) for v in verdicts]
    n = len(said)
    decided = sum(v.decided for v in said)
    if n == 0:
        return "No verdict against the baseline"
    if n == 1:
        return f"The one comparison with the baseline: {said[0].word}"
    if all(v == Verdict.EQUIVALENT for v in said):
        return f"All {n} equivalent to the baseline"
    if decided == n:
        return f"All {n} comparisons decided"
    if decided == 0:
        return f"None of {n} comparisons decided yet"
    return f"{decided} of {n} comparisons decided"


def answer_of(
    frame: RunFrame,
    training: Analysis | None,
    serving: ServingAnalysis | None,
    roof: RooflineAnalysis | None = None,
    other: OtherRuns | None = None,
) -> Answer | None:
    """The run's answer from its analyses (None: nothing compared or priced to show);
    ``roof``: the report's one roofline (headroom); ``other``: this run beside the other
    runs of its comparisons, for a caveat."""
    pricing = frame.pricing or (serving.pricing if serving is not None else None)
    currency = pricing.catalog.currency if pricing is not None else "USD"
    rows: list[Row] = []
    cmps: list[Comparison] = []
    compiled = _preset(frame.run)
    workloads = training.workloads if training is not None else []
    room = _headroom(roof)
    for wr in workloads:
        base = wr.baseline
        for g in _groups(wr, compiled):
            rows.append(_training_row(wr, g, room, currency))
            if g.time_cmp is not None and not g.is_baseline and base is not None:
                cmps.append(g.time_cmp)
    for m in serving.models if serving is not None else []:
        for c in m.configs:
            rows.append(_serving_row(m, c, currency))
            if c.cost_cmp is not None and not c.is_baseline:
                cmps.append(c.cost_cmp)
    if not rows:
        return None
    command = "compare" if training is not None else "serve"
    step, paste = _step(cmps, workloads, frame, compiled, command)
    return Answer(
        question=_question(frame, workloads, serving, compiled),
        heading=heading(c.verdict for c in cmps),
        rows=tuple(rows),
        next_step=step,
        next_command=paste,
        legend=tuple(_legend(rows)),
        caveats=tuple(_caveats(frame, other)),
        subject_header="workload"
        if serving is None
        else ("model" if not workloads else "workload / model"),
        ratio_header=_ratio_header(workloads, serving),
        cost_header="cost per run" if serving is None else "cost",
        noise=_noise(training),
    )


def _preset(run: RunRecord) -> PresetRecord | None:
    preset = run.preset if isinstance(run.options, TrainingOptions) else None
    return preset if preset is not None and preset.name == PRESET else None


def _groups(wr: WorkloadReport, compiled: PresetRecord | None) -> list[Group]:
    """A compiled-preset run's rows: its builds and the stock wheel at the stock's
    threads (the preset's question); any other run: every configuration."""
    if compiled is None:
        return list(wr.groups)
    wanted = {str(compiled.stock), *compiled.builds}
    threads = wr.baseline.threads if wr.baseline is not None else None
    return [g for g in wr.groups if g.variant in wanted and g.threads == threads]


def _best(is_fastest: bool, fast_sure: bool, is_cheapest: bool, cheap_sure: bool) -> str:
    word = "both" if is_fastest and is_cheapest else "fastest" if is_fastest else ""
    word = word or ("cheapest" if is_cheapest else "")
    sure = (fast_sure or not is_fastest) and (cheap_sure or not is_cheapest)
    return word + ("" if sure or not word else "?")


def _against_baseline(
    is_baseline: bool,
    cmp: Comparison | None,
    missing: str,
    words: tuple[str, str] = TIME_WORDS,
) -> tuple[str, str, str]:
    """A row's verdict word, ratio and ratio interval against the baseline (Row's third
    to fifth fields; ``missing``: the word when there is no comparison; ``words``: lower
    and higher when decided)."""
    if is_baseline:
        return Verdict.BASELINE, "1x", ""
    if cmp is None:
        return missing, "", ratio_interval(cmp)
    return verdict_word(cmp, *words), f"{sig3(cmp.ratio.value)}x", ratio_interval(cmp)


def _training_row(
    wr: WorkloadReport, g: Group, room: Mapping[ConfigKey, float], currency: str
) -> Row:
    missing = "no verdict" if g.time is not None else "no result"
    cost = g.cost_iv.value if g.cost_iv is not None else (g.cost.cost if g.cost else None)
    headroom = room.get(g.key)
    return Row(
        wr.name,
        g.label,
        *_against_baseline(g.is_baseline, g.time_cmp, missing),
        cost=money(cost, currency) if cost is not None else "",
        headroom=f"{sig3(headroom)}x" if headroom else "",
        best=_best(g is wr.fastest, wr.fastest_decided, g is wr.cheapest, wr.cheapest_decided),
        under_load=bool(g.under_load and g.under_load[0]),
    )


def _serving_row(m: ModelReport, c: Config, currency: str) -> Row:
    """A serving configuration: the cost per million predictions within the p99 bound,
    against the baseline's."""
    words = COST_WORDS
    cost = c.cost_per_million
    return Row(
        m.model,
        c.label,
        *_against_baseline(c.is_baseline, c.cost_cmp, "no verdict", words),
        cost=f"{money(cost.value, currency)}/M" if cost is not None else "",
        headroom="",
        best=_best(False, False, c is m.cheapest, m.cheapest_decided),
    )


def _headroom(roof: RooflineAnalysis | None) -> dict[ConfigKey, float]:
    """At most how much faster each configuration could run each workload at this CPU's
    attainable peak (the roofline's own figure; none without stored peaks)."""
    if roof is None:
        return {}
    return {s.key: h for s in roof.shares if (h := s.headroom)}


def _question(
    frame: RunFrame,
    workloads: list[WorkloadReport],
    serving: ServingAnalysis | None,
    compiled: PresetRecord | None,
) -> str:
    """The question the run asks: the preset's own, else which build, thread count or
    GPU (what the run varied) trains or serves fastest and cheapest."""
    if compiled is not None:
        return f"Is TensorFlow compiled for this CPU faster than the stock wheel {compiled.stock}?"
    keys = [(g.variant, g.threads, g.device) for w in workloads for g in w.groups]
    if serving is not None:
        keys += [(c.variant, c.threads, c.device) for m in serving.models for c in m.configs]
    varied = [
        word for word, i in (("build", 0), ("thread count", 1)) if len({k[i] for k in keys}) > 1
    ]
    if any(k[2] == "gpu" for k in keys):
        varied.append("GPU")
    what = " / ".join(varied) or "configuration"
    names = ", ".join(w.name for w in workloads)
    if serving is not None and not workloads:
        models = ", ".join(m.model for m in serving.models)
        return f"Which {what} serves {models} cheapest within p99 {serving.p99_bound_ms:g} ms?"
    goal = "fastest and cheapest" if frame.pricing is not None else "fastest"
    return f"Which {what} trains {names} {goal}?"


def _step(
    cmps: list[Comparison],
    workloads: list[WorkloadReport],
    frame: RunFrame,
    compiled: PresetRecord | None,
    command: str,
) -> tuple[str | None, str | None]:
    """One next step for the whole run: the report's own (compiled.next_step) for the
    undecided comparison that needs the most repeats, as a command to paste."""
    undecided = [c for c in cmps if c.verdict == Verdict.UNDECIDED]
    if not undecided:
        return None, None
    cmp = max(undecided, key=lambda c: c.more_repeats or 0)
    names = sorted({g.variant for w in workloads for g in w.groups})
    if compiled is not None:
        names = [str(compiled.stock), *compiled.builds]
    last_look = adaptive.last_look_of(frame.run.adaptive)
    step = next_step(cmp, round_seconds(workloads, names) if workloads else None, last_look)
    if not step.startswith("--resume"):
        return step, None
    flags, _, why = step.partition(": ")  # "--resume --budget 4m: about 26 more repeats"
    extra = flags[len("--resume") :].strip()
    extra = extra if extra.startswith("--") else ""  # "with more --budget": no figure
    paste = f"tfvariants {command} --resume --out {frame.results_dir}"
    return why or step, f"{paste} {extra}".strip()


def _legend(rows: list[Row]) -> list[str]:
    """What the marks in the table mean (only those it uses)."""
    out = []
    if any(r.under_load for r in rows):
        out.append(f"{UNDER_LOAD} partly from rounds of disturbed or busy cells")
    unsure = {r.best for r in rows if r.best.endswith("?")}
    if unsure:
        what = {frozenset({"cheapest?"}): "cheapest", frozenset({"fastest?"}): "fastest"}
        word = what.get(frozenset(unsure), "fastest or cheapest")
        out.append(f"? not decided against the next {word}")
    return out


def _noise(training: Analysis | None) -> str | None:
    noise = training.noise if training is not None else None
    return noise.decomposition.sentence() if noise and noise.decomposition else None


def _caveats(frame: RunFrame, other: OtherRuns | None) -> list[str]:
    """One line per kind of warning: the first, and how many more of its kind; and
    whether other runs of the same comparisons disagree with this one."""
    out = []
    if other is not None and other.disagreements:
        out.append(
            f"other runs: {len(other.disagreements)} comparison(s) disagree with "
            f"{len(other.runs)} other run(s) beyond their intervals: not settled on this host"
        )
    kinds: dict[str, list[str]] = {}
    for w in frame.warnings:
        kinds.setdefault(w.kind, []).append(w.message)
    for kind, said in kinds.items():
        more = f" (+{len(said) - 1} more)" if len(said) > 1 else ""
        out.append(f"{kind}{more}: {said[0]}")
    return out


def notes_below(lines: list[str], run: RunRecord) -> list[str]:
    """A compiled-preset answer's sentences the table does not already say: not the head
    (the table's heading), nor a build's per-workload verdicts, nor the "Headroom:"
    sentences (a column): the builds not run or without a verdict, the band and why, the
    study's note."""
    preset = _preset(run)
    builds = list(preset.builds) if preset is not None else []
    said = ("Headroom:", *(f"{b}:" for b in builds), *(f"{b} (compiled for" for b in builds))
    # a build with no verdict keeps its line: why, and the medians (the table says only
    # "no verdict")
    return [line for line in lines[1:] if not line.startswith(said) or "no verdict (" in line]


def _ratio_header(workloads: list[WorkloadReport], serving: ServingAnalysis | None) -> str:
    if serving is None:
        return "time vs baseline"
    return "cost vs baseline" if not workloads else "vs baseline (serving: cost)"
