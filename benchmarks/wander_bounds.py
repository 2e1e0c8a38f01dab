"""What widening and warnings reach against a configuration that wanders on its own (issue 25)

    python benchmarks/wander_bounds.py [--trials 1000] [--seed 1] [--factors 1,1.1,1.2,1.3,1.5,2]

`make bench-decide` checks a wandering A (its log times an AR(1) series over its own
rounds, benchmarks/decide_scenarios.py) against "false 'different' <= 5 %, or a named
warning in >= 90 % of those runs", and the 1.2x power scenarios against ">= 90 % found
within 20 repeats" (outliers: "as before"). Today's rule meets the first at AR(1) 0.5,
the audit's wander, and not at 0.8, which bench-decide prints as a stress row (INFO).
This script measures two bounds a rule within the 20-repeat cap runs into, on the
same fake runner and the same draws as `make bench-decide`:

* **Widening** (what a rule must do wherever it cannot tell a wander from independent
  rounds): the project's own rule with every interval, at every look, widened around
  its estimate by at least a factor f (pairing.py's AR(1) widening, floored at f). For
  each f: false "different" under AR(1) 0.5 and 0.8, and the three power checks. At 5
  rounds, where the first look is made, a wander cannot be seen at all, so a rule that
  meets 5 % there has to widen clean runs too.
* **Warning**: the best a warning could do with knowledge the tool does not have. The
  *oracle* knows which side wanders and that the machine does not drift: it tests the
  lag-1 autocorrelation of that side's own log times (undiluted by the other side)
  against the quantile of independent series of the same length that gives ``--alarm``
  false alarms, at each run's real length (the rule's own stopping). The *realizable*
  detector knows neither: it tests both sides' own series at half that level each, and
  its false alarms are measured on the clean A/A and the drifting-machine scenarios,
  where the per-round ratio cancels what moves both sides and no warning is deserved.

Prints one table per bound; exits 0 (a measurement, not a check). docs/measurements.md,
"What widening and warnings can reach against the wander", records a run.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import random
import statistics
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import decide
from decide_scenarios import Scenario, scenarios

from tfvariants.analyze.statistics import adaptive, pairing, stats

WANDERS = ("A/A wander AR(1) 0.5", "A/A wander AR(1) 0.8")
POWER = ("1.2x, 10% noise", "1.2x, drift", "1.2x, 5% outliers")
LABELS = ("wander 0.5", "wander 0.8", "1.2x plain", "1.2x drift", "1.2x outliers")
ALARM_ON = ("A/A log-normal 10%", "A/A Student-t 10%", "A/A bimodal 1.85x", "A/A drift 1%/round")
NULL_DRAWS = 20000  # independent series per length for the detectors' thresholds


def floor_r(factor: float) -> float:
    """The lag-1 r whose AR(1) inflation sqrt((1 + r) / (1 - r)) equals ``factor``."""
    return (factor * factor - 1) / (factor * factor + 1)


@contextlib.contextmanager
def widened_at_least(factor: float) -> Iterator[None]:
    """Within the block, pairing.compare_rounds widens every interval by >= ``factor``.

    compare_rounds widens by the inflation of the dependence r of the per-round ratios
    (pairing.dependence) when r >= WANDER_R; here r is floored at floor_r(factor), WANDER_R
    lowered to that floor and the 7-round minimum lifted, so the widening applies at every
    look (where r is larger, from 7 rounds on, the rule's larger widening stands).
    The paired/unpaired choice (which reads the lag-1 of the round sums) is made first
    with the real lag1, so only the width changes."""
    if factor <= 1.0:
        yield
        return
    real_cr, real_dep, real_wander_r = pairing.compare_rounds, pairing.dependence, pairing.WANDER_R
    r_min = floor_r(factor)

    def floored(series: Sequence[Sequence[float]]) -> float | None:
        r = real_dep(series)
        return max(r_min, r) if r is not None else r_min

    def compare(base: Mapping[int, float], other: Mapping[int, float], **kw: Any) -> Any:
        rounds = sorted(set(base) & set(other))
        lo_o = stats.log_values([other[r] for r in rounds])
        lo_b = stats.log_values([base[r] for r in rounds])
        alpha = stats.check_settings(
            kw["min_effect"], kw["confidence"], kw["looks"], kw.get("equivalence_band")
        )
        method = kw.get("method", "auto")
        if method == "auto":
            method = pairing.choose_method(
                lo_o, lo_b, stats.smallest_decidable_n(alpha, paired=True)
            )
        # The rule widens from r >= WANDER_R on; the floor must count below it too.
        pairing.dependence, pairing.WANDER_R = floored, min(real_wander_r, r_min)
        given = kw.get("dependence_r")  # a workload's pooled dependence, floored alike
        dep = max(r_min, given) if given is not None else None
        try:
            return real_cr(base, other, **{**kw, "method": method, "dependence_r": dep})
        finally:
            pairing.dependence, pairing.WANDER_R = real_dep, real_wander_r

    pairing.compare_rounds = compare  # type: ignore[assignment]
    try:
        yield
    finally:
        pairing.compare_rounds = real_cr


def lag1(x: Sequence[float]) -> float:
    m = statistics.fmean(x)
    den = sum((v - m) ** 2 for v in x)
    return sum((x[i] - m) * (x[i + 1] - m) for i in range(len(x) - 1)) / den if den else 0.0


@functools.lru_cache(maxsize=8)
def null_lag1(lengths: tuple[int, ...], seed: int) -> dict[int, list[float]]:
    """Per series length, the sorted lag-1 of NULL_DRAWS independent normal series."""
    rng = random.Random(f"wander-bounds/null/{seed}")
    return {
        n: sorted(lag1([rng.gauss(0, 1) for _ in range(n)]) for _ in range(NULL_DRAWS))
        for n in lengths
    }


def thresholds(lengths: Sequence[int], level: float, seed: int) -> dict[int, float]:
    """Per series length, the lag-1 that independent normal series exceed with ``level``."""
    null = null_lag1(tuple(lengths), seed)
    return {n: xs[min(len(xs) - 1, int((1 - level) * len(xs)))] for n, xs in null.items()}


def flags(series: Mapping[int, float], thr: Mapping[int, float]) -> bool:
    xs = [math.log(series[r]) for r in sorted(series)]
    return len(xs) in thr and lag1(xs) > thr[len(xs)]


def warning_rates(
    scn: Scenario, trials: int, seed: int, rule: adaptive.StoppingRule, alarm: float
) -> tuple[float, float]:
    """(oracle, realizable) share of runs flagged; see the module."""
    one, each = thresholds(rule.looks, alarm, seed), thresholds(rule.looks, alarm / 2, seed)
    oracle = realizable = 0
    for i in range(trials):
        o = decide.run_adaptive(scn, "auto", f"{scn.name}/{seed}/{i}", rule)
        a, b = o.series["A"], o.series["B"]
        oracle += flags(a, one)
        realizable += flags(a, each) or flags(b, each)
    return oracle / trials, realizable / trials


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--trials", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--factors", default="1,1.1,1.2,1.3,1.5,2")
    p.add_argument("--alarm", type=float, default=0.10, help="the warning's false alarms")
    args = p.parse_args(argv)
    try:
        factors = [float(f) for f in args.factors.split(",") if f.strip()]
    except ValueError:
        factors = []
    if not factors or min(factors) < 1 or args.trials < 1 or not 0 < args.alarm < 1:
        print("wander_bounds.py: --factors >= 1, --trials >= 1, 0 < --alarm < 1", file=sys.stderr)
        return 2
    rule = adaptive.stopping_rule(stats.DEFAULT_REPEATS)
    by_name = {s.name: s for s in scenarios()}
    print(f"{args.trials} trials per scenario, looks at {list(rule.looks)}")
    print(f"\n{'widened >=':>10} " + " ".join(f"{n:>14}" for n in LABELS))
    for f in factors:
        cells = []
        with widened_at_least(f):
            for name in WANDERS + POWER:
                r = decide.score(by_name[name], "auto", args.trials, args.seed, rule)
                cells.append(r["false_different"] if name in WANDERS else r["found"])
        print(f"{f:>10.2f} " + " ".join(f"{v:>14.1%}" for v in cells), flush=True)
    print("(wander columns: false 'different'; 1.2x columns: found within 20 repeats)")
    print(f"\nwarning at {args.alarm:.0%} false alarms: share of runs flagged")
    for name in (WANDERS[-1], *ALARM_ON):
        oracle, real = warning_rates(by_name[name], args.trials, args.seed, rule, args.alarm)
        what = "warned" if name in WANDERS else "false alarm"
        print(f"  {name:24} {what:12} oracle {oracle:6.1%}   realizable {real:6.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
