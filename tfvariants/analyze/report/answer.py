"""The answer at a glance: the run's question, a heading counted from the verdicts, and
one table (configuration x workload or model: verdict word, ratio, interval, cost,
headroom), with ONE next step for the run when anything is undecided. The HTML report
opens with it and the commands' terminal summaries end with it.

Nothing here judges again: each word is the verdict object's own (the report's one
comparison per row, analyze/statistics), each number one the report already shows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from tfvariants.analyze.report.otherruns import OtherRuns
from tfvariants.analyze.report.part import AnswerPart, Row, TaskPart, lead
from tfvariants.analyze.report.preset import compiled_preset
from tfvariants.analyze.shared.format import ratio_interval, sig3, verdict_word
from tfvariants.analyze.shared.frame import RunFrame
from tfvariants.analyze.statistics import adaptive
from tfvariants.analyze.statistics.stats import Comparison
from tfvariants.analyze.statistics.verdict import TIME_WORDS, Verdict
from tfvariants.options.preset import PresetRecord
from tfvariants.store.record import RunRecord

UNDER_LOAD = "*"  # marks a verdict resting partly on rounds from disturbed or busy cells


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
    beyond: tuple[str, ...] = ()  # what the rows cannot show (AnswerPart.beyond), a line each
    # The most repeats an undecided comparison needs (adaptive.needed_more: None, none is
    # undecided; 0, none gave a figure): the next step's, for the command's closing line.
    needed_more: int | None = None

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
    frame: RunFrame, parts: Sequence[TaskPart], other: OtherRuns | None = None
) -> Answer | None:
    """The run's answer from its tasks' parts (None: nothing compared or priced to show);
    ``other``: this run beside the other runs of its comparisons, for a caveat."""
    pricing = frame.pricing or next((p.pricing for p in parts if p.pricing), None)
    currency = pricing.catalog.currency if pricing is not None else "USD"
    compiled = compiled_preset(frame.run)
    given = [(p, p.answer(currency, compiled)) for p in parts]
    rows = [r for _, a in given for r in a.rows]
    if not rows:
        return None
    cmps = [c for _, a in given for c in a.compared]
    showing = [p for p in parts if p.subjects()] or list(parts[:1])
    first = showing[0].words
    ratio = f"{first.ratio} vs baseline"
    if len(showing) > 1:
        ratio = "vs baseline (" + ", ".join(f"{p.name}: {p.words.ratio}" for p in showing[1:]) + ")"
    step, paste = _step(cmps, given, frame, compiled, parts[0].words.command)
    return Answer(
        question=_question(frame, parts, [k for _, a in given for k in a.keys], compiled),
        heading=_heading([a for _, a in given], cmps),
        rows=tuple(rows),
        next_step=step,
        next_command=paste,
        legend=tuple(_legend(rows)),
        caveats=tuple(_caveats(frame, other)),
        subject_header=" / ".join(p.words.subject for p in showing),
        ratio_header=ratio,
        cost_header=parts[0].words.cost if len(parts) == 1 else "cost",
        noise=next((a.noise for _, a in given if a.noise), None),
        beyond=tuple(line for _, a in given for line in a.beyond),
        needed_more=adaptive.needed_more(cmps),
    )


def _heading(given: Sequence[AnswerPart], cmps: Sequence[Comparison]) -> str:
    """A part's own heading where it is the table's only part (beside training's verdicts
    serving's "No configuration kept p99 within ..." would hide them), else the count."""
    shown = [a for a in given if a.rows]
    if len(shown) == 1 and shown[0].heading:
        return shown[0].heading
    return heading(c.verdict for c in cmps)


def best(is_fastest: bool, fast_sure: bool, is_cheapest: bool, cheap_sure: bool) -> str:
    word = "both" if is_fastest and is_cheapest else "fastest" if is_fastest else ""
    word = word or ("cheapest" if is_cheapest else "")
    sure = (fast_sure or not is_fastest) and (cheap_sure or not is_cheapest)
    return word + ("" if sure or not word else "?")


def against_baseline(
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


def _question(
    frame: RunFrame,
    parts: Sequence[TaskPart],
    keys: list[tuple[str, int, str]],
    compiled: PresetRecord | None,
) -> str:
    """The question the run asks: the preset's own, else which build, thread count or
    GPU (what the run varied) trains or serves fastest and cheapest (the leading part's)."""
    if compiled is not None:
        return f"Is TensorFlow compiled for this CPU faster than the stock wheel {compiled.stock}?"
    varied = [
        word for word, i in (("build", 0), ("thread count", 1)) if len({k[i] for k in keys}) > 1
    ]
    if any(k[2] == "gpu" for k in keys):
        varied.append("GPU")
    return lead(parts).asks(" / ".join(varied) or "configuration", frame)


def _step(
    cmps: list[Comparison],
    given: list[tuple[TaskPart, AnswerPart]],
    frame: RunFrame,
    compiled: PresetRecord | None,
    command: str,
) -> tuple[str | None, str | None]:
    """One next step for the whole run: the report's own (:func:`next_step`) for the
    undecided comparison that needs the most repeats, as a command to paste."""
    undecided = [c for c in cmps if c.verdict == Verdict.UNDECIDED]
    if not undecided:
        return None, None
    cmp = max(undecided, key=lambda c: c.more_repeats or 0)
    seconds = next((a.round_seconds for _, a in given if a.round_seconds is not None), None)
    last_look = adaptive.last_look_of(frame.run.adaptive)
    step = next_step(cmp, seconds, last_look)
    if not step.startswith("--resume"):
        return step, None
    flags, _, why = step.partition(": ")  # "--resume --budget 4m: about 26 more repeats"
    extra = flags[len("--resume") :].strip()
    extra = extra if extra.startswith("--") else ""  # "with more --budget": no figure
    paste = f"tfvariants {command} --resume --out {frame.results_dir}"
    return why or step, f"{paste} {extra}".strip()


def next_step(cmp: Comparison, round_s: float | None, last_look: int | None = None) -> str:
    """The single most useful next step of an undecided comparison (``last_look``: the
    run stopped at its planned last look, which more budget cannot pass)."""
    more = cmp.more_repeats
    if last_look is not None and more:
        # the one rule the closing line and the serving report's sentence use too
        repeats = adaptive.last_look_repeats(more, last_look)
        return (
            f"a new run with --max-repeats {repeats} planned from the start: about {more} "
            "more repeats than this run's last look"
        )
    if not more:
        return f"{adaptive.QUIETER_NEXT} (the ratio sits near {_edges(cmp)})"
    if round_s is None:
        return f"--resume with more --budget: about {more} more repeats"
    minutes = max(1, math.ceil(more * round_s / 60))
    return f"--resume --budget {minutes}m: about {more} more repeats"


def _edges(cmp: Comparison) -> str:
    """Where a verdict changes: "different" beyond +-min effect (1 itself when there is
    none), "equivalent" inside the band."""
    different = "1" if cmp.min_effect == 0 else f"the {cmp.min_effect:.0%} threshold"
    return f"{different} or the +/-{cmp.equivalence_band:.0%} band's edge"


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
    preset = compiled_preset(run)
    builds = list(preset.builds) if preset is not None else []
    said = ("Headroom:", *(f"{b}:" for b in builds), *(f"{b} (compiled for" for b in builds))
    # a build with no verdict keeps its line: why, and the medians (the table says only
    # "no verdict")
    return [line for line in lines[1:] if not line.startswith(said) or "no verdict (" in line]
