"""This run beside the other runs of the same comparisons (issue 25: "how sure are we?").

A run's interval covers that run only. On a noisy host a few-percent effect can move
between runs by more than one run's interval admits: ten compiled-preset runs of one day
called intel-avx512-2.14 on cifar10_cnn both 1.02x slower (1.002-1.19) and 1.05x faster
(1.01-1.11) (docs/measurements.md). A user who runs compare twice sees two reports that
disagree and cannot tell which to believe, so the report sets this run beside the other
runs in its results folder that measured the same comparisons on the same host, and says
when two of them disagree.

*The same comparison*: the same workload, configuration (variant and threads) and
baseline, from a run folder beside this one (the same parent folder, as compare's default
``results/<name>-<time>``) whose hosts are this run's and whose workload scale (``quick``,
``data``) is this run's. Each run is read as its own report reads it (its own decision
settings, this run's baseline choice), with the same analysis.

*Disagree*: the two runs' intervals do not overlap. Two intervals of one truth miss each
other far less often than either misses the truth (at a 96.5 % interval each, about
0.3 % for equal widths), so a disagreement says the effect moved between runs, not that
one run was unlucky. With many runs and comparisons some disagreement can still be
chance; the section counts the pairs it looked at.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from tfvariants.analyze.report.compiled import with_preset_baseline
from tfvariants.analyze.shared.format import ratio_end, sig3
from tfvariants.analyze.shared.settings import ReportSettings
from tfvariants.analyze.statistics import stats
from tfvariants.analyze.statistics.decide import run_settings
from tfvariants.analyze.training.analysis import Analysis, analyze_contents
from tfvariants.errors import UserError
from tfvariants.store.rundir import load_run_dir
from tfvariants.store.runfolder import StoreError

MAX_READ = 12  # run folders analysed at most (the most recent first): a report stays quick
SCALE_KEYS = ("quick", "data")  # options that change what a cell measures


@dataclass(frozen=True)
class Reading:
    """One run's reading of one comparison."""

    run: str  # the run folder's name
    started_at: str
    verdict: str  # different | equivalent | undecided
    ratio: stats.Interval
    this: bool = False

    @property
    def word(self) -> str:
        """faster / slower (decided, by how much) or the verdict itself."""
        if self.verdict != "different":
            return self.verdict
        v = self.ratio.value
        return f"{sig3(1 / v)}x faster" if v < 1 else f"{sig3(v)}x slower"

    @property
    def raw(self) -> str:
        """The time ratio (this configuration / baseline) and its interval, unturned."""
        iv = self.ratio
        if not iv.has_interval:
            return sig3(iv.value)
        return f"{sig3(iv.value)} ({ratio_end(iv.lo)}-{ratio_end(iv.hi)}x)"

    @property
    def span(self) -> str:
        """The ratio and its interval; for "faster" both turned (1/x), as the word."""
        iv = self.ratio
        faster = self.verdict == "different" and iv.value < 1
        if not iv.has_interval:
            return "" if faster else sig3(iv.value)
        if faster:
            return f"({ratio_end(1 / iv.hi)}-{ratio_end(1 / iv.lo)}x)"
        value = "" if self.verdict == "different" else f"{sig3(iv.value)} "
        return f"{value}({ratio_end(iv.lo)}-{ratio_end(iv.hi)}x)"

    def overlaps(self, other: Reading) -> bool:
        a, b = self.ratio, other.ratio
        if not (a.has_interval and b.has_interval):
            return True  # no interval: nothing to disagree with
        return a.lo <= b.hi and b.lo <= a.hi


@dataclass(frozen=True)
class Across:
    """One comparison (configuration against baseline on a workload) across runs."""

    workload: str
    config: str  # variant@threads
    baseline: str
    readings: tuple[Reading, ...]  # this run's first, then the others, newest first

    @property
    def disagreeing(self) -> tuple[Reading, ...]:
        """The other runs whose interval does not overlap this run's."""
        this = self.readings[0]
        return tuple(r for r in self.readings[1:] if not this.overlaps(r))

    @property
    def estimates(self) -> tuple[float, float]:
        values = [r.ratio.value for r in self.readings]
        return min(values), max(values)


@dataclass(frozen=True)
class OtherRuns:
    """The report's section: this run's comparisons beside the other runs' of them."""

    template: ClassVar[str] = "otherruns.html"
    folder: str
    runs: tuple[str, ...]  # the other runs with a comparison in common, newest first
    comparisons: tuple[Across, ...]

    @property
    def pairs(self) -> int:
        return sum(len(c.readings) - 1 for c in self.comparisons)

    @property
    def disagreements(self) -> tuple[Across, ...]:
        return tuple(c for c in self.comparisons if c.disagreeing)

    def sentence(self) -> str:
        n = len(self.runs)
        head = (
            f"Beside {n} other run(s) in {self.folder} of the same comparisons on this host "
            f"({self.pairs} pair(s) of runs and comparison):"
        )
        if not self.disagreements:
            return (
                f"{head} every interval overlaps this run's, so the runs agree within "
                "their intervals."
            )
        worst = self.disagreements[0]
        other = worst.disagreeing[0]
        lo, hi = worst.estimates
        return (
            f"{head} {len(self.disagreements)} comparison(s) disagree between runs beyond "
            f"their intervals, e.g. {worst.config} against {worst.baseline} on "
            f"{worst.workload}: {describe(worst.readings[0])} here, {describe(other)} in "
            f"{other.run}; across the runs its estimates range {lo:.3g}-{hi:.3g}x. The "
            "effect moves between runs on this host by more than one run's interval "
            "admits: read a difference of that size as not settled."
        )


def describe(r: Reading) -> str:
    """A reading as the report's sentences say it: "1.05x faster (1.01-1.11x)" (the
    interval turned with the word), "equivalent 0.999 (0.921-1.08x)" (the time ratio)."""
    return f"{r.word} {r.span}".strip()


def readings(analysis: Analysis, run: str, started_at: str, this: bool) -> dict[tuple, Reading]:
    """(workload, config, baseline) -> the run's reading, for decided-or-not comparisons."""
    out = {}
    for w in analysis.workloads:
        if w.baseline is None:
            continue
        for g in w.groups:
            cmp = g.verdict.comparison if g.verdict is not None else None
            if g.is_baseline or cmp is None or cmp.verdict == "baseline":
                continue
            key = (w.name, g.label, w.baseline.label)
            out[key] = Reading(run, started_at, cmp.verdict, cmp.ratio, this)
    return out


def _run_json(folder: Path) -> Mapping[str, Any] | None:
    try:
        run = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return run if isinstance(run, dict) else None


def _hosts(run: Mapping[str, Any]) -> frozenset[str]:
    hosts = run.get("hosts")
    if not isinstance(hosts, list):
        return frozenset()
    return frozenset(str(h.get("host_id")) for h in hosts if isinstance(h, dict))


def _scale(run: Mapping[str, Any]) -> tuple[Any, ...]:
    options = run.get("options")
    return tuple(options.get(k) if isinstance(options, dict) else None for k in SCALE_KEYS)


def candidates(here: Path, run: Mapping[str, Any]) -> list[tuple[Path, Mapping[str, Any]]]:
    """Run folders beside ``here`` on this run's hosts and scale, newest first, at most
    MAX_READ (a folder that cannot be read is passed over: it is another run's problem)."""
    hosts, scale = _hosts(run), _scale(run)
    if not hosts:
        return []
    try:
        siblings = [p for p in here.parent.iterdir() if p.is_dir() and p.resolve() != here]
    except OSError:
        return []
    found = []
    for p in siblings:
        other = _run_json(p)
        if other is None or other.get("kind") != "tfvariants.run":
            continue
        if _hosts(other) == hosts and _scale(other) == scale:
            found.append((p, other))
    found.sort(key=lambda x: str(x[1].get("started_at") or ""), reverse=True)
    return found[:MAX_READ]


def _analyse(folder: Path, report: ReportSettings) -> Analysis | None:
    """The other run as its own report reads it (its decision settings), or None."""
    try:
        contents = load_run_dir(folder)
        report = with_preset_baseline(report, contents.run)
        return analyze_contents(contents, report, run_settings(contents.run, report.decision))
    except (StoreError, UserError, OSError, ValueError):
        return None  # another run's problem: its own report names it


def other_runs(analysis: Analysis, report: ReportSettings) -> OtherRuns | None:
    """The section for ``analysis`` (this run), or None when no other run beside it
    measured one of its comparisons."""
    here = Path(analysis.results_dir).resolve()
    mine = readings(analysis, here.name, str(analysis.run.started_at or ""), True)
    if not mine:
        return None
    # The other runs are read with this run's baseline choice and nothing else of its
    # report's (no pricing: time comparisons only).
    theirs = ReportSettings(baseline=report.baseline)
    by_key: dict[tuple, list[Reading]] = {k: [] for k in mine}
    runs: list[str] = []
    # run.json as written, for this run as for the others (the loaded run's hosts are
    # rebuilt from its cells)
    for folder, run in candidates(here, _run_json(here) or {}):
        other = _analyse(folder, theirs)
        if other is None:
            continue
        found = readings(other, folder.name, str(run.get("started_at") or ""), False)
        common = [k for k in mine if k in found]
        for k in common:
            by_key[k].append(found[k])
        if common:
            runs.append(folder.name)
    comparisons = tuple(
        Across(k[0], k[1], k[2], (mine[k], *others)) for k, others in by_key.items() if others
    )
    if not comparisons:
        return None
    return OtherRuns(str(here.parent), tuple(runs), _disagreeing_first(comparisons))


def _disagreeing_first(comparisons: Sequence[Across]) -> tuple[Across, ...]:
    return tuple(sorted(comparisons, key=lambda c: not c.disagreeing))
