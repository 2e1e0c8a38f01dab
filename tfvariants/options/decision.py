"""The decision options every task shares (the smallest effect that matters, the
intervals' confidence, the adaptive rounds' limits), declared once, with their bounds
and a report's command-line override. The statistics read them
(analyze/statistics/decide.py ``Settings.from_options``)."""

from __future__ import annotations

from dataclasses import dataclass

from tfvariants.options import argtypes, bounds, interference, limits, shared
from tfvariants.options.declare import CHANGEABLE, REJUDGED, RunOptionsBase, option
from tfvariants.options.limits import MAX_REPEATS

# The defaults every statistic falls back to (analyze/statistics/stats.py takes them from here).
MIN_EFFECT = 0.05
CONFIDENCE = 0.95
EQUIVALENCE_BAND = 0.05  # "equivalent within +/-5 %" unless --equivalence-band says


@dataclass(frozen=True)
class DecisionOptions(RunOptionsBase):
    """How comparisons are decided, and how long the adaptive rounds may go on."""

    min_effect: float = option(
        MIN_EFFECT,
        "smallest difference that matters, e.g. 5%%: smaller ones are 'equivalent'",
        flag="--min-effect",
        resume=REJUDGED,
        parse=argtypes.min_effect,
        problem=limits.min_effect_problem,
        default_words="5%%",
    )
    confidence: float = option(
        CONFIDENCE,
        f"confidence of the intervals, above {limits.CONFIDENCE_MIN:g} and at most "
        f"{limits.CONFIDENCE_MAX:g}",
        flag="--confidence",
        resume=REJUDGED,
        parse=argtypes.confidence,
        problem=limits.confidence_problem,
        default_words=f"{CONFIDENCE:g}",
    )
    equivalence_band: float | None = option(
        None,
        "'equivalent' means the interval lies within +/- this",
        flag="--equivalence-band",
        resume=REJUDGED,
        parse=argtypes.equivalence_band,
        problem=limits.equivalence_band_problem,
        default_words="5%%, or --min-effect when larger",
        omit_none=True,  # run.json as before unless given
    )
    disturbed_policy: str = option(
        "auto",
        "disturbed cells in the verdicts: exclude, include, or auto (default: excluded "
        "unless most configuration-rounds of the run were disturbed: then the load is the "
        "machine's normal state, they are used, and the verdicts say 'under load')",
        flag="--disturbed",
        choices=interference.POLICIES,
        resume=REJUDGED,
    )
    max_repeats: int | None = option(
        None,
        "with --budget: at most this many repeats",
        flag="--max-repeats",
        parse=argtypes.repeats,
        problem=bounds.whole(1, MAX_REPEATS),
        resume=CHANGEABLE,
        default_words="20",
    )
    budget_s: float | None = shared.duration(
        None,
        "adaptive repeats: after --repeats rounds, keep running rounds of the "
        "undecided comparisons until decided, --max-repeats, or this much time for "
        "the whole run (e.g. 10m); off: exactly --repeats rounds",
        "--budget",
        resume=CHANGEABLE,
        parse=argtypes.budget,
        metavar="DURATION|off",
        off="off",
    )
    at_least_first_look: bool | None = option(
        None,
        "with --budget: run past the budget, if need be, until the first look (the "
        "repeats before it, all configurations) is stored; without it the run ends "
        "within 10%% of the budget, the first look or not",
        flag="--at-least-first-look",
        switch=True,
        problem=bounds.flag,
        resume=CHANGEABLE,
        omit_none=True,  # run.json as before unless given
    )


# The decision options on compare's and serve's command lines, in the order --help lists
# them: the adaptive rounds' limit (compare lists its steady window after it), then the
# settings a comparison is judged with. A new setting is declared above and named in
# JUDGED; both commands then take it (options/training.py, commands/serve.py).
ADAPTIVE = ("max_repeats", "at_least_first_look")
JUDGED = ("min_effect", "equivalence_band", "confidence")


@dataclass(frozen=True)
class Override:
    """Decision settings given on a report's command line (None: not given): they win
    over the run's stored ones. 0 is a value (--min-effect 0), not "not given"."""

    min_effect: float | None = None
    confidence: float | None = None
