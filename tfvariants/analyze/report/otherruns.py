"""This run beside other runs of the same comparisons (issue 25: "how sure are we?").

A run's interval covers that run only. On a noisy host a few-percent effect can move
between runs by more than one run's interval admits: ten compiled-preset runs of one day
called intel-avx512-2.14 on cifar10_cnn both 1.02x slower (1.002-1.19) and 1.05x faster
(1.01-1.11) (docs/measurements.md). A user who runs compare twice sees two reports that
disagree and cannot tell which to believe, so the report sets this run beside the other
runs the user names (``report --beside DIR ...``, also on ``compare``) and says when two
of them disagree. Nothing else is read: no folder is scanned for neighbours (issue 40,
issue 43: a neighbour nobody named could hang or crash the report).

*Named*: each folder is read through the store's bounded, validated loader
(store/runfile.py ``load_run``, store/rundir.py ``load_run_dir``). The command checks
every named folder before it writes anything (``check_beside``: one line, exit 2); a
folder that goes bad after that is said in the section, never a traceback.

*Comparable*: a named run of the same task, on this run's hosts, whose identity (the
options a resume must not change, ``RunOptionsBase.identity``: data, scale, seed, steady
window) is this run's. A named run that is not comparable is listed with the reason (the
option that differs, here and there), never dropped silently.

*The same comparison*: the same workload, configuration (variant and threads) and
baseline. Each run is read as its own report reads it (its own decision settings, this
run's baseline choice), with the same analysis.

*Disagree*: the two runs' intervals do not overlap. Two intervals of one truth miss each
other far less often than either misses the truth (at a 96.5 % interval each, about
0.3 % for equal widths), so a disagreement says the effect moved between runs, not that
one run was unlucky. With many runs and comparisons some disagreement can still be
chance; the section counts the pairs it looked at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from tfvariants.analyze.report.preset import with_preset_baseline
from tfvariants.analyze.shared.format import ratio_end, sig3
from tfvariants.analyze.shared.settings import ReportSettings
from tfvariants.analyze.statistics import stats
from tfvariants.analyze.statistics.decide import Settings, run_settings
from tfvariants.analyze.statistics.verdict import Verdict
from tfvariants.errors import UserError
from tfvariants.options.declare import RunOptionsBase, declared
from tfvariants.plan.tasks import task_of
from tfvariants.store.record import RunRecord
from tfvariants.store.rundir import RunContents, load_run_dir
from tfvariants.store.runfile import load_run
from tfvariants.store.runfolder import StoreError

MAX_BESIDE = 24  # run folders named at most: each is analysed, and a report stays quick

# What a run's task tells of its comparisons, the one record two runs are set side by side
# by: (subject, configuration, baseline) -> the report's comparison of the two.
Key = tuple[str, str, str]
Compared = Mapping[Key, stats.Comparison]
# How a task reads a named run: its comparisons, as that run's own report judges them.
ReadRun = Callable[[RunContents, ReportSettings, Settings], Compared]


@dataclass(frozen=True)
class Reading:
    """One run's reading of one comparison."""

    run: str  # the run folder's name
    started_at: str
    verdict: Verdict  # different | equivalent | undecided
    ratio: stats.Interval
    this: bool = False

    @property
    def word(self) -> str:
        """faster / slower (decided, by how much) or the verdict itself."""
        if self.verdict != Verdict.DIFFERENT:
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
        faster = self.verdict == Verdict.DIFFERENT and iv.value < 1
        if not iv.has_interval:
            return "" if faster else sig3(iv.value)
        if faster:
            return f"({ratio_end(1 / iv.hi)}-{ratio_end(1 / iv.lo)}x)"
        value = "" if self.verdict == Verdict.DIFFERENT else f"{sig3(iv.value)} "
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
class Apart:
    """A named run set apart: not comparable with this one, and why (one phrase)."""

    run: str  # the run folder's name
    reason: str


@dataclass(frozen=True)
class OtherRuns:
    """The report's section: this run's comparisons beside the named runs' of them, and
    the named runs that are not comparable, each with its reason."""

    template: ClassVar[str] = "otherruns.html"
    runs: tuple[str, ...]  # the named runs with a comparison in common, newest first
    comparisons: tuple[Across, ...]
    apart: tuple[Apart, ...] = ()  # the named runs not comparable, in the order named

    @property
    def pairs(self) -> int:
        return sum(len(c.readings) - 1 for c in self.comparisons)

    @property
    def disagreements(self) -> tuple[Across, ...]:
        return tuple(c for c in self.comparisons if c.disagreeing)

    def sentence(self) -> str:
        if not self.comparisons:
            return (
                f"None of the {len(self.apart)} run(s) named with --beside is comparable "
                f"with this one: {self._apart_words()}."
            )
        return self._beside() + (f" Not comparable: {self._apart_words()}." if self.apart else "")

    def _apart_words(self) -> str:
        return "; ".join(f"{a.run} ({a.reason})" for a in self.apart)

    def _beside(self) -> str:
        n = len(self.runs)
        head = (
            f"Beside {n} other run(s) named with --beside, of the same comparisons on this "
            f"host ({self.pairs} pair(s) of runs and comparison):"
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


def readings(compared: Compared, run: str, started_at: str, this: bool) -> dict[Key, Reading]:
    """A run's reading of each of its comparisons (the baselines' own left out)."""
    return {
        k: Reading(run, started_at, cmp.verdict, cmp.ratio, this)
        for k, cmp in compared.items()
        if cmp.verdict != Verdict.BASELINE
    }


def check_beside(folders: Sequence[Path]) -> None:
    """The folders named with --beside, checked before a command writes anything: each a
    run folder whose run.json the store's bounded, validated loader reads (a FIFO, a
    device, a file nested too deeply or too large, a missing folder or one that is not a
    run are refused in one line naming it: UserError, exit 2)."""
    if len(folders) > MAX_BESIDE:
        raise UserError(
            f"--beside: {len(folders)} run folders named, at most {MAX_BESIDE}: "
            "name the runs to set beside this one"
        )
    for folder in folders:
        try:
            _load_record(folder)
        except UserError as exc:
            raise UserError(f"--beside {folder}: {exc}") from None


def _load_record(folder: Path) -> Mapping[str, Any]:
    """run.json of a named folder (bounded, validated), or UserError naming the file."""
    if not folder.is_dir():
        raise UserError(f"{folder}: {'not a folder' if folder.exists() else 'no such run folder'}")
    run = load_run(folder)
    if not run:
        raise UserError(f"{folder}: no run.json: not a tfvariants run folder")
    return run


def _load(folder: Path) -> RunContents:
    """The named run folder, loaded (bounded, validated); UserError naming the file."""
    _load_record(folder)  # a missing run.json is refused, not read as an empty run
    try:
        return load_run_dir(folder)
    except (StoreError, OSError, ValueError) as exc:
        raise UserError(f"{folder}: {exc}") from None


def _options_class(run: RunRecord) -> type[RunOptionsBase]:
    return task_of({"task": run.task}).options


def _identity(run: RunRecord) -> dict[str, Any]:
    """The options a resume of ``run`` must not change, structured from its record."""
    return (run.options or _options_class(run)()).identity()


def _hosts(contents: RunContents) -> frozenset[str]:
    """The hosts a run's cells are counted for: run.json's, else the one they ran on."""
    return frozenset(contents.run_hosts)


def _shown(value: object) -> str:
    """An option's value as the command line spells it (a switch: true/false), short."""
    if value is None:
        return "unset"
    return (str(value).lower() if isinstance(value, bool) else str(value))[:40]


def difference(mine: RunContents, theirs: RunContents) -> str | None:
    """Why ``theirs`` is not comparable with ``mine`` (one phrase), or None."""
    if _options_class(theirs.run) is not _options_class(mine.run):
        return "another task: " + ("a serving run" if theirs.run.task else "a training run")
    here, there = _hosts(mine), _hosts(theirs)
    if not here or not there:
        return "no host recorded: cannot tell it ran on this run's host"
    if here != there:
        return f"ran on host(s) {', '.join(sorted(there))}, this run on {', '.join(sorted(here))}"
    a, b = _identity(mine.run), _identity(theirs.run)
    declared_here = declared(_options_class(mine.run))
    diffs = [
        f"{declared_here[k].flag or '--' + k.replace('_', '-')} {_shown(b[k])} there, "
        f"{_shown(a[k])} here"
        for k in a
        if a[k] != b.get(k)
    ]
    return ", ".join(diffs) or None


def _read(
    folder: Path, mine: RunContents, report: ReportSettings, read: ReadRun
) -> tuple[RunContents, Compared] | str:
    """A named run as its own report reads it (its decision settings), or why it is set
    apart. Checked when the command started: a folder gone bad since is said here, not
    a traceback that loses the report."""
    try:
        contents = _load(folder)
    except UserError as exc:
        return f"cannot be read: {exc}"
    why = difference(mine, contents)
    if why:
        return why
    report = with_preset_baseline(report, contents.run)
    try:
        settings = run_settings(contents.run, report.decision)
        return contents, read(contents, report, settings)
    except (StoreError, UserError, OSError, ValueError) as exc:
        return f"cannot be analysed: {exc}"


def _named(folders: Iterable[Path], here: Path) -> list[Path]:
    """The named folders, each once, this run's own left out (``--beside results/*``)."""
    out: dict[Path, Path] = {}
    for folder in folders:
        try:
            key = folder.resolve()
        except (OSError, RuntimeError):  # a loop of links: read (and refused) as named
            key = folder
        if key != here:
            out.setdefault(key, folder)
    return list(out.values())


def other_runs(
    mine: RunContents, compared: Compared, report: ReportSettings, read: ReadRun
) -> OtherRuns | None:
    """The section for this run (``mine``, its comparisons ``compared``) beside the runs
    named in ``report.beside``, each read by its task's ``read``, or None when none is
    named."""
    here = Path(mine.results_dir).resolve()
    folders = _named(report.beside, here)
    if not folders:
        return None
    this = readings(compared, here.name, str(mine.run.started_at or ""), True)
    # The other runs are read with this run's baseline choice and nothing else of its
    # report's (no pricing: time comparisons only).
    theirs = ReportSettings(baseline=report.baseline)
    by_key: dict[Key, list[Reading]] = {k: [] for k in this}
    found: list[tuple[str, str]] = []  # (started_at, name) of the runs in common
    apart: list[Apart] = []
    for folder in folders:
        got = _read(folder, mine, theirs, read)
        if isinstance(got, str):
            apart.append(Apart(folder.name, got))
            continue
        contents, other = got
        started = str(contents.run.started_at or "")
        theirs_of = readings(other, folder.name, started, False)
        common = [k for k in this if k in theirs_of]
        if not common:
            apart.append(Apart(folder.name, "no comparison in common with this run"))
        for k in common:
            by_key[k].append(theirs_of[k])
        if common:
            found.append((started, folder.name))
    newest = sorted(found, reverse=True)
    order = {name: i for i, (_, name) in enumerate(newest)}
    comparisons = tuple(
        Across(k[0], k[1], k[2], (this[k], *sorted(rs, key=lambda r: order[r.run])))
        for k, rs in by_key.items()
        if rs
    )
    return OtherRuns(tuple(n for _, n in newest), _disagreeing_first(comparisons), tuple(apart))


def _disagreeing_first(comparisons: Sequence[Across]) -> tuple[Across, ...]:
    return tuple(sorted(comparisons, key=lambda c: not c.disagreeing))
