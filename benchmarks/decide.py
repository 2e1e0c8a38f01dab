"""Does the verdict deserve belief? Simulated comparisons on a fake runner.

    python benchmarks/decide.py [--trials 2000] [--seed 1]

A fake runner draws cell times from known distributions (log-normal with 10 % noise; a
bimodal machine that is either fast or 1.85x slower from run to run) and the real
stopping rule (tfvariants.analyze.adaptive) and statistic (tfvariants.analyze.stats)
decide, with adaptive stopping ON. It prints:

* the false-positive rate: identical configurations called "different" (must be <= 5 %);
* the miss rate of the final interval (it should hold the true ratio >= 95 % of trials);
* the power: a planted 20 % slowdown at 10 % noise called "different" (slower) within
  the default budget, which for the fake runner is the default maximum of 20 repeats
  per configuration (must be >= 90 %);
* the mean repeats used per configuration.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass

from tfvariants.analyze import adaptive, stats

Draw = Callable[[random.Random], float]


def lognormal(base: float, noise: float) -> Draw:
    return lambda rng: base * math.exp(rng.gauss(0.0, noise))


def bimodal(base: float, slow: float = 1.85, p_slow: float = 0.4, noise: float = 0.03) -> Draw:
    return lambda rng: (
        base * (slow if rng.random() < p_slow else 1.0) * math.exp(rng.gauss(0.0, noise))
    )


@dataclass
class Outcome:
    verdict: str
    ratio: stats.Interval
    repeats: int


def run_adaptive(
    draw_a: Draw,
    draw_b: Draw,
    rng: random.Random,
    rule: adaptive.StoppingRule,
    *,
    min_effect: float = stats.MIN_EFFECT,
    confidence: float = stats.CONFIDENCE,
) -> Outcome:
    """Interleaved rounds of a and b, looking only at the rule's planned repeat counts."""
    a: list[float] = []
    b: list[float] = []
    cmp = None
    for n in range(1, rule.max_repeats + 1):
        a.append(draw_a(rng))
        b.append(draw_b(rng))
        if n in rule.looks:
            cmp = stats.compare(a, b, min_effect=min_effect, confidence=confidence, looks=rule.k)
            if cmp.verdict != "undecided":
                break
    assert cmp is not None
    return Outcome(cmp.verdict, cmp.ratio, len(a))


def scenario(
    name: str, draw_a: Draw, draw_b: Draw, true_ratio: float, trials: int, seed: int,
    rule: adaptive.StoppingRule,
) -> dict:  # fmt: skip
    rng = random.Random(f"{name}/{seed}")
    outs = [run_adaptive(draw_a, draw_b, rng, rule) for _ in range(trials)]
    different = sum(o.verdict == "different" for o in outs)
    slower = sum(o.verdict == "different" and o.ratio.value > 1 for o in outs)
    equivalent = sum(o.verdict == "equivalent" for o in outs)
    with_iv = [o for o in outs if o.ratio.has_interval]
    missed = sum(not (o.ratio.lo <= true_ratio <= o.ratio.hi) for o in with_iv)
    return {
        "name": name,
        "trials": trials,
        "different": different / trials,
        "slower": slower / trials,
        "equivalent": equivalent / trials,
        "undecided": 1 - (different + equivalent) / trials,
        "interval_miss": missed / len(with_iv) if with_iv else 0.0,
        "mean_repeats": sum(o.repeats for o in outs) / trials,
    }


def run_all(trials: int, seed: int, rule: adaptive.StoppingRule | None = None) -> list[dict]:
    rule = rule or adaptive.stopping_rule(stats.DEFAULT_REPEATS)
    # For a median ratio of exactly 1.2, a multiplicative 1.2 planted on log-normal noise.
    return [
        scenario("A/A log-normal 10%", lognormal(10, 0.10), lognormal(10, 0.10), 1.0, trials, seed, rule),
        scenario("A/A bimodal 1.85x", bimodal(10), bimodal(10), 1.0, trials, seed, rule),
        scenario("A/A log-normal 30%", lognormal(10, 0.30), lognormal(10, 0.30), 1.0, trials, seed, rule),
        scenario("20% slower, 10% noise", lognormal(12, 0.10), lognormal(10, 0.10), 1.2, trials, seed, rule),
        scenario("2x slower, bimodal", bimodal(20), bimodal(10), 2.0, trials, seed, rule),
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=2000)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    rule = adaptive.stopping_rule(stats.DEFAULT_REPEATS)
    print(f"stopping rule: looks at {list(rule.looks)} repeats per configuration "
          f"(K={rule.k}, each a {1 - 0.05 / rule.k:.2%} interval); min effect "
          f"{stats.MIN_EFFECT:.0%}; {args.trials} trials per scenario")  # fmt: skip
    rows = run_all(args.trials, args.seed, rule)
    print(
        f"{'scenario':24} {'different':>9} {'equiv':>7} {'undecided':>9} {'miss':>6} {'repeats':>7}"
    )
    for r in rows:
        print(f"{r['name']:24} {r['different']:9.1%} {r['equivalent']:7.1%} {r['undecided']:9.1%} "
              f"{r['interval_miss']:6.1%} {r['mean_repeats']:7.1f}")  # fmt: skip
    fp = max(r["different"] for r in rows if r["name"].startswith("A/A"))
    miss = max(r["interval_miss"] for r in rows)
    power = next(r["slower"] for r in rows if r["name"].startswith("20%"))
    ok = fp <= 0.05 and miss <= 0.05 and power >= 0.90
    print(f"false-positive rate of 'different' (worst A/A): {fp:.1%} (limit 5%)")
    print(f"interval miss rate (worst scenario): {miss:.1%} (limit 5%)")
    print(
        f"power, 20% slower at 10% noise within {rule.max_repeats} repeats: {power:.1%} (limit >= 90%)"
    )
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
