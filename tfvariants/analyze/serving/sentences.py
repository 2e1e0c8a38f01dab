"""The serving report's sentences for one model: the cheapest configuration within the
p99 bound, the GPU against the fastest and the cheapest CPU configuration, most vs
fewest threads, disturbed cells and shared CPUs."""

from __future__ import annotations

from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.analyze.serving.configs import Config, Disturbed, ModelReport, compare_lower
from tfvariants.analyze.shared.format import money, sig3
from tfvariants.analyze.statistics import adaptive as adaptive_rule
from tfvariants.analyze.statistics.decide import Settings
from tfvariants.analyze.statistics.stats import Comparison
from tfvariants.analyze.statistics.verdict import Verdict
from tfvariants.analyze.training import loadlabel
from tfvariants.analyze.training.conclusions import phrase
from tfvariants.analyze.training.loadlabel import QUIET_MAY_DIFFER
from tfvariants.options.interference import DISTURBED_SHARE
from tfvariants.store.adaptiveplans import LookPlan
from tfvariants.store.record import AdaptiveRecord


def conclude_model(
    rep: ModelReport,
    bound: float,
    pricing: Pricing | None,
    settings: Settings,
    disturbed: Disturbed | None = None,
) -> list[str]:
    """Every sentence of one model's report, in reading order (``disturbed``: what the
    run's disturbed policy made of its cells)."""
    within = f"p99 within {bound:g} ms"
    lines: list[str] = []
    _cheapest_sentence(rep, within, pricing, lines)
    _gpu_sentences(rep, settings, within, lines)
    _thread_sentences(rep, settings, within, lines)
    _disturbed_sentence(rep, disturbed, lines)
    _shared_sentences(rep, lines)
    return lines


def _cheapest_sentence(
    rep: ModelReport, within: str, pricing: Pricing | None, lines: list[str]
) -> None:
    model, c = rep.model, rep.cheapest
    iv = c.cost_per_million if c is not None else None
    if c is None or iv is None:
        if pricing is None:
            lines.append(f"{model}: no prices given, so no cost per million predictions.")
        else:
            lines.append(
                f"{model}: no configuration kept {within} (or none could be priced): try fewer "
                "requests in flight, more threads, batching, a larger --p99, or (over HTTP) "
                "the b64 encoding."
            )
        return
    prices = ""
    if pricing is not None:
        prices = f"{pricing.catalog.name} prices, {pricing.effective_tier.replace('_', '-')}"
        prices += f" as of {pricing.effective_as_of}" if pricing.effective_as_of else ""
    currency = pricing.catalog.currency if pricing is not None else "USD"
    thr = c.throughput_under_bound
    span = (
        f"{money(iv.lo, currency)}-{money(iv.hi, currency)}: {iv.label}"
        if iv.has_interval
        else iv.label
    )
    facts = (
        f"{money(iv.value, currency)} per million predictions ({span}); "
        f"{sig3(thr.value if thr else None)} predictions/s ({c.operating}) on "
        f"{c.instance} at {money(c.per_hour, currency)}/h ({prices})"
    )
    nxt, cmp = rep.runner_up, rep.cheapest_cmp
    if nxt is None:
        lines.append(
            f"{model}: {c.label} is the only configuration that served it with {within}: {facts}."
        )
        return
    against = versus(rep, c, nxt, cmp, "cost") if cmp is not None else "no comparison"
    if rep.cheapest_decided:
        lead = f"{c.label} serves it cheapest with {within}"
    elif cmp is not None and cmp.verdict == Verdict.EQUIVALENT:
        lead = (
            f"{c.label} and {nxt.label} serve it about equally cheaply with {within} "
            f"({c.label} lowest)"
        )
    else:
        lead = (
            f"{c.label} had the lowest median cost with {within}, but it is not "
            f"decided against the next cheapest"
        )
    lines.append(f"{model}: {lead}: {facts}; against the next cheapest: {against}.")


def versus(rep: ModelReport, a: Config, b: Config, cmp: Comparison, what: str) -> str:
    """a versus b in words (training's phrase), said to be under load when the model's
    comparisons use disturbed repeats."""
    text = phrase(a, b, cmp, what)
    return loadlabel.inside(text, f"under load; {QUIET_MAY_DIFFER}") if rep.under_load else text


def _disturbed_sentence(rep: ModelReport, disturbed: Disturbed | None, lines: list[str]) -> None:
    ok = [r for c in rep.configs for row in c.rows for r in row.ok]
    hit = [r for r in ok if r.disturbed]
    if not hit:
        return
    shares = sorted(r.others_share for r in hit if r.others_share is not None)
    span = (
        "more than a quarter"
        if not shares
        else f"{shares[0]:.0%}"
        if f"{shares[0]:.0%}" == f"{shares[-1]:.0%}"
        else f"{shares[0]:.0%}-{shares[-1]:.0%}"
    )
    text = (
        f"{len(hit)} of {len(ok)} successful cells were disturbed (other processes "
        f"used {span} of their CPUs during the load; the limit is {DISTURBED_SHARE:.0%})"
    )
    if disturbed is None or not disturbed.used:
        text += ": they are in the tables and left out of every comparison, as in training"
    elif disturbed.policy == "auto":
        text += (
            f": in {disturbed.unclean} of {disturbed.rounds} configuration-rounds every repeat "
            "was, more than half, so the load was this machine's normal state and the "
            "comparisons use them, marked 'under load' (--disturbed exclude leaves them out)"
        )
    else:
        text += ": used in the comparisons (--disturbed include), marked 'under load'"
    lines.append(text + ".")


def _shared_sentences(rep: ModelReport, lines: list[str]) -> None:
    shared: dict[str, list[str]] = {}  # every such configuration, not only the first
    for c in rep.configs:
        if c.shared_cpus:
            shared.setdefault(c.shared_cpus, []).append(c.label)
    for where, labels in shared.items():
        lines.append(
            f"{', '.join(labels)}: {where}, so the client's work is counted against the model "
            "(on a machine this small, expect lower throughput than a separate client would see)."
        )


def _throughput(c: Config) -> float:
    return c.throughput_under_bound.value if c.throughput_under_bound is not None else 0.0


def _cost_value(c: Config) -> float:
    """The cost per million (no cost sorts last)."""
    return c.cost_per_million.value if c.cost_per_million is not None else float("inf")


def _gpu_sentences(rep: ModelReport, settings: Settings, within: str, lines: list[str]) -> None:
    """How much faster (and cheaper) the GPU serves, right after the cheapest: against
    the fastest and the cheapest CPU configuration, each at its own operating point."""
    gpus = [c for c in rep.configs if c.device == "gpu"]
    if not gpus:
        return
    gpu_ok = [c for c in gpus if c.operating_row is not None]
    cpus = [c for c in rep.configs if c.device != "gpu" and c.operating_row is not None]
    if not gpu_ok:
        ran = any(r.ok for c in gpus for row in c.rows for r in row.results)
        why = "none met the bound" if ran else "none ran (skipped: no GPU on this host?)"
        lines.append(f"GPU: {', '.join(c.label for c in gpus)}: {why}, so the GPU is not compared.")
        return
    if not cpus:
        return
    gpu = max(gpu_ok, key=_throughput)
    fastest = max(cpus, key=_throughput)
    parts = []
    t = compare_lower(gpu.operating_seconds(), fastest.operating_seconds(), settings)
    if t is not None:
        parts.append(f"throughput with {within}: " + versus(rep, gpu, fastest, t, "time"))
    costed = [c for c in cpus if c.costs]
    if gpu.costs and costed:
        cheap = min(costed, key=_cost_value)
        cc = compare_lower(gpu.costs, cheap.costs, settings)
        if cc is not None:
            parts.append(
                "cost per million against the cheapest CPU configuration: "
                + versus(rep, gpu, cheap, cc, "cost")
            )
    if parts:
        lines.insert(
            1, f"GPU vs the fastest CPU configuration ({fastest.label}): " + "; ".join(parts) + "."
        )


def _thread_sentences(rep: ModelReport, settings: Settings, within: str, lines: list[str]) -> None:
    """Most vs fewest threads per variant, path and batching, at each one's operating
    point (what a run at 1..CPUs threads answers)."""
    groups: dict[tuple, list[Config]] = {}
    for c in rep.configs:
        groups.setdefault((c.variant, c.path, c.max_batch_size, c.batch_timeout_ms), []).append(c)
    for cs in groups.values():
        if len(cs) < 2:
            continue
        lo, hi = min(cs, key=lambda c: c.threads), max(cs, key=lambda c: c.threads)
        cmp = compare_lower(hi.operating_seconds(), lo.operating_seconds(), settings)
        if cmp is not None:
            lines.append(f"Threads ({within}): {versus(rep, hi, lo, cmp, 'time')}.")
            continue
        # No operating point on one side: the throughput at the most requests in
        # flight both ran, said to be outside the bound.
        common = sorted({r.concurrency for r in hi.curve()} & {r.concurrency for r in lo.curve()})
        rows = [(hi.row("concurrency", n), lo.row("concurrency", n)) for n in common]
        cmps = [
            (n, compare_lower(a.seconds_per_prediction(), b.seconds_per_prediction(), settings))
            for n, (a, b) in zip(common, rows, strict=True)
            if a is not None and b is not None
        ]
        found = [(n, cm) for n, cm in cmps if cm is not None]
        missing = " and ".join(c.label for c in (hi, lo) if c.operating_row is None)
        if found:
            n, at_n = found[-1]
            lines.append(
                f"Threads (at {n} in flight; {missing} kept no point with "
                f"{within}): {versus(rep, hi, lo, at_n, 'time')}."
            )
        else:
            rows_ok = [r for c in (hi, lo) for r in c.rows if r.ok]
            if any(x.disturbed for r in rows_ok for x in r.ok):
                why = "no round with undisturbed repeats on both sides (below)"
            else:
                why = f"{missing} kept no point with {within}"
            lines.append(f"Threads: {hi.label} vs {lo.label} not compared: {why}.")


def look_plan_sentence(plan: LookPlan | None) -> str | None:
    """A serving run's look plan (run.json ``adaptive.look_plan``, rounds/serving.py) in
    words, for the report and the console (None when the run had none)."""
    if plan is None:
        return None
    return (
        f"the last look ({plan.last_look} repeats) was planned from the budget: "
        f"{plan.budget_s / 60:.3g} min at about {plan.round_s:.1f} s per round, measured on "
        f"the first {plan.first_look} rounds' wall times before any verdict was looked at"
    )


def last_look_sentence(lines: list[str], adaptive: AdaptiveRecord, needed: int | None) -> list[str]:
    """A model's sentences with one more after the last undecided one of a run that
    stopped at its planned last look: its "about N more repeats" needs a new run, not
    more budget. ``needed``: the most repeats the run's undecided comparisons need
    (adaptive.needed_more over every model's, as the answer counts it), so this says the
    answer's and the closing line's --max-repeats (adaptive.last_look_repeats)."""
    last = adaptive_rule.last_look_of(adaptive)  # the closing line's figure, read alike
    undecided = [i for i, line in enumerate(lines) if ": undecided (" in line]
    if last is None or not undecided:
        return lines
    at = undecided[-1] + 1
    said = (
        f"This run stopped at its planned last look ({last} repeats), which more budget "
        f"cannot pass; to decide: {adaptive_rule.last_look_next(needed, last)}."
    )
    return [*lines[:at], said, *lines[at:]]
