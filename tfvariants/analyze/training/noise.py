"""The machine's own noise: how much identical configurations vary from run to run (an
A/A estimate), which configurations switched between two speeds, what else ran on
the pinned CPUs, and so how big a difference this host can resolve in this run."""

from __future__ import annotations

import math
import random
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tfvariants.analyze.shared.cautions import StatWarning
from tfvariants.analyze.shared.fields import median_of
from tfvariants.analyze.statistics import bands, ranktests, stats
from tfvariants.analyze.statistics import looks as looks_mod
from tfvariants.analyze.statistics.decide import Settings
from tfvariants.analyze.statistics.looks import Looks
from tfvariants.analyze.training.decomposition import Decomposition, cells_of, decompose
from tfvariants.store.disturbance import worker_shielded

if TYPE_CHECKING:
    from tfvariants.analyze.training.groups import Group
    from tfvariants.store.training import CellResult

NOISY_SHARE = 0.10  # other processes or steal above this share of the pinned CPUs
# A multi-thread worker at raised priority still lost speed when other processes filled
# the idle time of its CPUs, and nothing it measures flags that (its run-queue wait stays
# low): cifar10_cnn at 2 threads stepped x1.11 (six `make bench-noise` runs, n = 49) and
# x1.24 (one run, n = 21) with others at 25-50 % of its CPUs, x1.02-1.09 at 10-25 %
# (docs/methods.md, "Interference"). From this share on the report says so.
SHIELDED_BUSY_SHARE = 0.25
# The median |Z| of a normal, 0.67, over a look's z of about 2.4: an equal pair's typical
# estimate as a share of its interval's half-width. With it, 4.3 % noise says about 13
# repeats per side; bench-decide's "A/A 4 %" scenario stopped "equivalent" after 16.5 on
# average (78 % within 20).
EQUAL_SHIFT = 0.28


@dataclass(frozen=True)
class HostNoise:
    spread: float | None  # typical run-to-run variation of one configuration (MAD of log)
    repeats: int  # typical successful repeats per configuration
    resolvable: float | None  # smallest ratio called "different" about half the time
    bimodal: list[str] = field(default_factory=list)  # "workload config: words"
    others_share: float | None = None  # median share of the pinned CPUs used by others
    steal_share: float | None = None
    # Within a process, between processes, over time: the report's and terminal's noise line
    decomposition: Decomposition | None = None
    window_plan: str | None = None  # the steady window the adaptive rounds chose
    later: str | None = None  # when the --later variants started, in words
    duet: str | None = None  # how a duet run (--duet) measured, in words
    design: str | None = None  # the design the first look chose (analyze/training/design.py)
    warnings: list[StatWarning] = field(default_factory=list)
    # About how many repeats per side would call an equal pair "equivalent" (None: unknown)
    equivalent_from: int | None = None
    band: float = stats.EQUIVALENCE_BAND
    # The same per workload, from its own configurations' noise, when workloads differ:
    # the pooled figure came from the quietest and the noisiest alike (a quiet 2-core
    # host: mnist_cnn about 12, cifar10_cnn at 2 threads 2.5x noisier, about 30).
    equivalent_by_workload: dict[str, int | None] = field(default_factory=dict)

    def sentence(self) -> str:
        if self.spread is None:
            return "Too few repeats to estimate this host's run-to-run noise."
        text = f"Identical configurations varied by about {self.spread:.1%} "
        d = self.decomposition  # where it comes from, when the cells tell (decomposition.py)
        if d is not None:
            text += f"(median), {d.spread:.1%} (standard deviation: {d.parts()}); {d.implication()}"
        else:
            text += (
                "from run to run (median absolute deviation of the log times, "
                f"{self.repeats} repeats each)"
            )
        if self.resolvable is not None:
            text += (
                f"; {self.repeats} repeats per side resolve differences of about "
                f"{self.resolvable - 1:.0%} or more"
            )
        by = self.equivalent_by_workload
        if len(set(by.values())) > 1:
            known = sorted((n, w) for w, n in by.items() if n is not None)
            beyond = sorted(w for w, n in by.items() if n is None)
            parts = [f"{n} for {w}" for n, w in known]
            parts += [f"more than {self.repeats + bands.MAX_MORE} for {w}" for w in beyond]
            text += (
                f"; equal ones would be called equivalent within "
                f"+/-{self.band:.0%} from about {', '.join(parts)} repeats per side (from "
                "each workload's own noise)"
            )
        elif self.equivalent_from is not None:
            text += (
                f"; equal ones would be called equivalent within "
                f"+/-{self.band:.0%} from about {self.equivalent_from} repeats per side"
            )
        return text + "."


def pooled_log_residuals(groups: Sequence[Sequence[float]]) -> list[float]:
    """Log values minus their group's median, pooled over groups of >= 2 repeats: the
    run-to-run noise of identical configurations."""
    out: list[float] = []
    for g in groups:
        if len(g) >= 2:
            logs = stats.log_values(g)
            med = statistics.median(logs)
            out += [x - med for x in logs]
    return out


def resolvable_ratio(
    residuals: Sequence[float],
    n: int,
    *,
    min_effect: float = stats.MIN_EFFECT,
    confidence: float = stats.CONFIDENCE,
    looks: Looks = 1,
    trials: int = 200,
    seed: int = 0,
) -> float | None:
    """A/A estimate: the smallest ratio this host's noise lets n vs n repeats call
    "different" about half the time. Two samples of identical configurations are drawn
    from the pooled residuals; the median interval half-width h gives (1+e)*exp(h)."""
    if len(residuals) < 4 or n < 2:
        return None
    alpha = looks_mod.per_look_alpha(confidence, looks)
    if stats.moses_rank(n, n, alpha) < 1:
        return None
    rng = random.Random(seed)
    k = stats.moses_rank(n, n, alpha)
    halves = []
    # The half-width's spread shrinks with n: fewer draws suffice for thousands of repeats.
    for _ in range(min(trials, max(20, 200_000 // n))):
        a = sorted(rng.choice(residuals) for _ in range(n))
        b = sorted(rng.choice(residuals) for _ in range(n))
        lo = ranktests.kth_difference(a, b, k)
        hi = ranktests.kth_difference(a, b, n * n - k + 1)
        halves.append((hi - lo) / 2)
    return (1 + min_effect) * stats.exp_or_inf(statistics.median(halves))


def equivalent_from(
    resolvable: float | None, n: int, effect: float, band: float, narrow: float = 1.0
) -> int | None:
    """Repeats per side at which the typical interval of an equal pair (its half-width h
    at n repeats, from :func:`resolvable_ratio` with min effect ``effect``, narrowing like
    1/sqrt(n)) fits inside +/-band; None without an estimate or beyond bands.MAX_MORE.
    ``narrow``: "equivalent"'s interval's width over "different"'s
    (bands.equivalence_narrowing)."""
    if resolvable is None or n < 1 or not math.isfinite(resolvable):
        return None
    half = (math.log(resolvable) - math.log1p(effect)) * narrow
    if half <= 0:
        return n
    # "Equivalent" needs |estimate| + half-width inside the band, and an equal pair's
    # typical |estimate| is about EQUAL_SHIFT of the half-width.
    need = math.ceil(n * ((1 + EQUAL_SHIFT) * half / math.log1p(band)) ** 2)
    return max(need, n) if need <= n + bands.MAX_MORE else None


def host_noise(groups: Sequence[Group], settings: Settings) -> HostNoise:
    times = [g.times for g in groups if len(g.times) >= 2]
    residuals = pooled_log_residuals(times)
    n = int(statistics.median(len(t) for t in times)) if times else 0
    spread = statistics.median(abs(r) for r in residuals) if residuals else None
    resolvable = (
        resolvable_ratio(
            residuals,
            n,
            min_effect=settings.min_effect,
            confidence=settings.confidence,
            looks=settings.looks,
        )
        if residuals
        else None
    )
    workloads = sorted({g.workload for g in groups})
    by_workload = (
        {
            w: _equivalent_from_groups([g for g in groups if g.workload == w], settings)
            for w in workloads
        }
        if len(workloads) > 1
        else {}
    )
    ok = [r for g in groups for r in g.ok]
    others_share = median_of(r.others_share for r in ok)
    steal_share = median_of(r.steal_share for r in ok)
    parts = []
    if others_share is not None and others_share >= NOISY_SHARE:
        parts.append(f"other processes used {others_share:.0%}")
    if steal_share is not None and steal_share >= NOISY_SHARE:
        parts.append(f"the hypervisor stole {steal_share:.0%}")
    warnings = []
    if parts:
        warnings.append(
            StatWarning(
                "noisy_host",
                "The machine was busy during the cells: "
                + " and ".join(parts)
                + " of the pinned CPUs' time (median over cells)",
                "close other programs, or run on a dedicated machine",
            )
        )
    busy = shielded_busy(groups)
    if busy is not None:
        warnings.append(busy)
    warnings += comparison_warnings(groups)
    return HostNoise(
        spread,
        n,
        resolvable,
        band=settings.band,
        equivalent_from=equivalent_from(
            resolvable, n, settings.min_effect, settings.band, settings.narrowing
        ),
        equivalent_by_workload=by_workload,
        bimodal=[f"{g.workload} {g.label}: {g.bimodal}" for g in groups if g.bimodal],
        decomposition=decompose(cells_of(groups)),
        others_share=others_share,
        steal_share=steal_share,
        warnings=warnings,
    )


def _equivalent_from_groups(groups: Sequence[Group], settings: Settings) -> int | None:
    """:func:`equivalent_from` from these groups' own run-to-run noise."""
    times = [g.times for g in groups if len(g.times) >= 2]
    residuals = pooled_log_residuals(times)
    if not residuals:
        return None
    n = int(statistics.median(len(t) for t in times))
    resolvable = resolvable_ratio(
        residuals,
        n,
        min_effect=settings.min_effect,
        confidence=settings.confidence,
        looks=settings.looks,
    )
    return equivalent_from(resolvable, n, settings.min_effect, settings.band, settings.narrowing)


HINTS = {
    "wandering": "run more rounds: the interval was widened, and 5 rounds cannot show a "
    "wander at all",
    "tail": "look at the slow repeats; for a bill, compare the mean times",
}


def _figures_only(words: str, before: str) -> str:
    """ "0.983 against 0.892" when ``words`` say what ``before`` said with other figures
    (the ratio of the means ... 0.983 against 0.892 ...); else the words themselves."""
    number = r"\d[\d.]*"
    if re.sub(number, "#", words) != re.sub(number, "#", before):
        return words
    return " against ".join(re.findall(number, words))


def comparison_warnings(groups: Sequence[Group]) -> list[StatWarning]:
    """The comparisons' named warnings (pairing.py: "wandering", "tail"), one per kind,
    naming every configuration and quantity it concerns."""
    hits: dict[str, list[tuple[str, str]]] = {}
    for g in groups:
        named: dict[str, str] = {}  # a configuration's cost after its time: named once
        for what, cmp in (("time", g.time_cmp), ("cost", g.cost_cmp)):
            for w in cmp.warnings if cmp is not None else ():
                kind, _, words = w.partition(": ")
                figures, _, why = words.rpartition(": ")  # "the ratio ... is 0.98: why"
                if kind in named:  # the same words as its time's: only the figures
                    said = f"({what}): {_figures_only(figures, named[kind]) or why}"
                else:
                    said = f"{g.workload} {g.label} ({what}): {figures or why}"
                named[kind] = figures
                hits.setdefault(kind, []).append((said, why if figures else ""))
    warnings = []
    for kind, found in hits.items():
        whys = {why for _, why in found}
        if len(whys) == 1 and "" not in whys:  # the same why for all: said once, at the end
            text = "; ".join(said for said, _ in found) + f": {whys.pop()}"
        else:
            text = "; ".join(f"{said}: {why}" if why else said for said, why in found)
        warnings.append(StatWarning(kind, text, HINTS.get(kind, "")))
    return warnings


def busy_at_raised_priority(r: CellResult) -> bool:
    """An undisturbed multi-thread cell at raised priority whose CPUs others filled to
    SHIELDED_BUSY_SHARE or more: not disturbed by the rule, yet measured up to 1.27x
    slow (see there). Its verdicts are labelled "under load" (analyze/training/loadlabel.py)."""
    return (
        r.threads >= 2
        and not r.disturbed
        and worker_shielded(r.raw)
        and r.others_share is not None
        and r.others_share >= SHIELDED_BUSY_SHARE
    )


def shielded_busy(groups: Sequence[Group]) -> StatWarning | None:
    """The undisturbed multi-thread cells at raised priority whose CPUs others filled to
    SHIELDED_BUSY_SHARE or more: their times may be high, unflagged (see there)."""
    hit = []
    for g in groups:
        if g.threads < 2:
            continue
        busy = [r for r in g.ok if busy_at_raised_priority(r)]
        if busy:
            hit.append(f"{g.workload} {g.label} ({len(busy)} of {len(g.ok)} cells)")
    if not hit:
        return None
    return StatWarning(
        "shielded_busy",
        f"Other processes filled {SHIELDED_BUSY_SHARE:.0%} or more of the CPUs of "
        f"multi-thread cells that ran at raised priority: {', '.join(hit)}. Such cells "
        "were measured up to 1.27x slower than on quiet CPUs without being flagged as "
        'disturbed (docs/methods.md, "Interference"), so their times may be high and '
        'the speed-up from more threads understated; verdicts on them say "under load"',
        "run again when the machine is quieter to confirm these configurations",
    )
