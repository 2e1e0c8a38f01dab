"""Does the verdict deserve belief? Simulated comparisons on a fake runner.

    python benchmarks/decide.py [--trials 2000] [--seed 1] [--methods paired,common,pooled]

A fake runner draws cell times from known distributions and a machine that misbehaves
in known ways, and the real stopping rule (tfvariants.analyze.adaptive) and statistics
(tfvariants.analyze.stats) decide, with adaptive stopping ON, in interleaved rounds.
Three configurations run: the baseline B, the configuration under test A, and a
companion C exactly 5 % slower than B (on the band's edge, so C vs B stays undecided
and keeps B running after A vs B is decided: the case where drift biased the ratio).
The report's final A vs B comparison (all stored repeats, K looks) is scored.

The machine: log-normal or bimodal noise per configuration; drift (every cell of round r
is (1 + drift)^r slower); outliers (a share of cells slowed 1.5-3x); intermittent
interference (a share of rounds in which every cell is slowed by its own 1-2x).

Methods (what decides at each look and in the report):

* paired: stats.compare_rounds, Hodges-Lehmann on the per-round log ratios with the
  Wilcoxon signed-rank interval (the default);
* common: stats.compare on the rounds both configurations ran (Mann-Whitney);
* pooled: stats.compare on all repeats of each side (what the report did before).

It prints per scenario and method: "different" (false when the truth is 1), "equivalent",
"undecided", how often the final interval missed the truth, and the repeats A ran. PASS
needs, for the first method: false "different" <= 5 % in every A/A scenario, a 20 %
slowdown at 10 % noise found (slower, decided) in >= 90 % of trials within 20 repeats
also with drift and with 5 % outliers, and the interval missing the truth no more often
than its label allows for the interval a run stops at (5 %: the level over all looks
together; each look's own 98.4 % does not hold for an interval chosen by stopping) in
every scenario. "ratio" is the median estimate: pooled repeats under drift are biased.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tfvariants.analyze import adaptive, stats
from tfvariants.analyze.looks import Looks, per_look_alpha

Draw = Callable[[random.Random], float]
METHODS = ("auto", "paired", "common", "pooled")
COMPANION = 1.05  # C / B: on the band's edge, undecided for long


def lognormal(base: float, noise: float) -> Draw:
    return lambda rng: base * math.exp(rng.gauss(0.0, noise))


def bimodal(base: float, slow: float = 1.85, p_slow: float = 0.4, noise: float = 0.03) -> Draw:
    return lambda rng: (
        base * (slow if rng.random() < p_slow else 1.0) * math.exp(rng.gauss(0.0, noise))
    )


@dataclass(frozen=True)
class Machine:
    drift: float = 0.0  # per round, every configuration alike
    outliers: float = 0.0  # share of cells slowed 1.5-3x
    disturbed: float = 0.0  # share of rounds in which every cell is slowed by its own 1-2x

    def cell(self, rng: random.Random, rnd: int, disturbed: bool) -> float:
        f = (1 + self.drift) ** rnd
        if self.outliers and rng.random() < self.outliers:
            f *= rng.uniform(1.5, 3.0)
        if disturbed:
            f *= rng.uniform(1.0, 2.0)
        return f


@dataclass(frozen=True)
class Scenario:
    name: str
    a: Draw
    b: Draw
    truth: float  # the true ratio A/B within a round
    machine: Machine = Machine()
    power: bool = False  # a power check of the done criteria

    @property
    def aa(self) -> bool:
        return self.truth == 1.0


@dataclass
class Outcome:
    verdict: str
    ratio: stats.Interval
    repeats: int


Rounds = dict[int, float]


def judge(method: str, a: Mapping[int, float], b: Mapping[int, float], looks: Looks,
          min_effect: float, confidence: float) -> stats.Comparison:  # fmt: skip
    """A versus B by one method."""
    kw = {"min_effect": min_effect, "confidence": confidence, "looks": looks}
    if method in ("auto", "paired"):
        return stats.compare_rounds(b, a, method=method, **kw)
    if method == "common":
        return stats.compare_rounds(b, a, method="unpaired", **kw)
    if method == "pooled":
        return stats.compare(list(a.values()), list(b.values()), **kw)
    raise ValueError(f"unknown method {method!r}")


def run_adaptive(
    scn: Scenario,
    method: str,
    rng: random.Random,
    rule: adaptive.StoppingRule,
    *,
    min_effect: float = stats.MIN_EFFECT,
    confidence: float = stats.CONFIDENCE,
) -> Outcome:
    """Interleaved rounds of A, B and C; after each planned look only the configurations
    of undecided pairs (A-B, C-B) run on; the report's A vs B comparison is returned."""
    companion = scn.b
    draws = {"A": scn.a, "B": scn.b, "C": lambda r: COMPANION * companion(r)}
    data: dict[str, Rounds] = {"A": {}, "B": {}, "C": {}}
    active = {"A", "B", "C"}
    for rnd in range(rule.max_repeats):
        disturbed = rng.random() < scn.machine.disturbed
        for c in sorted(active):
            data[c][rnd] = draws[c](rng) * scn.machine.cell(rng, rnd, disturbed)
        if rnd + 1 in rule.looks:
            open_pairs = [
                (x, y)
                for x, y in (("A", "B"), ("C", "B"))
                if judge(method, data[x], data[y], rule.looks, min_effect, confidence).verdict
                == "undecided"
            ]
            active = {c for pair in open_pairs for c in pair}
            if not active:
                break
    final = judge(method, data["A"], data["B"], rule.looks, min_effect, confidence)
    return Outcome(final.verdict, final.ratio, len(data["A"]))


def score(scn: Scenario, method: str, trials: int, seed: int,
          rule: adaptive.StoppingRule) -> dict:  # fmt: skip
    rng = random.Random(f"{scn.name}/{seed}")  # the same machine for every method
    outs = [run_adaptive(scn, method, rng, rule) for _ in range(trials)]
    different = sum(o.verdict == "different" for o in outs)
    right = sum(o.verdict == "different" and (o.ratio.value > 1) == (scn.truth > 1) for o in outs)
    equivalent = sum(o.verdict == "equivalent" for o in outs)
    with_iv = [o for o in outs if o.ratio.has_interval]
    missed = sum(not (o.ratio.lo <= scn.truth <= o.ratio.hi) for o in with_iv)
    return {
        "name": scn.name,
        "method": method,
        "aa": scn.aa,
        "power_check": scn.power,
        "trials": trials,
        "different": different / trials,
        "found": right / trials,
        "equivalent": equivalent / trials,
        "undecided": 1 - (different + equivalent) / trials,
        "interval_miss": missed / len(with_iv) if with_iv else 0.0,
        "with_interval": len(with_iv),
        "mean_repeats": sum(o.repeats for o in outs) / trials,
        "median_ratio": statistics.median(o.ratio.value for o in outs),
    }


def scenarios() -> list[Scenario]:
    drift, outliers = Machine(drift=0.01), Machine(outliers=0.05)
    bursts = Machine(disturbed=0.3)
    # For a median ratio of exactly 1.2, a multiplicative 1.2 planted on log-normal noise.
    return [
        Scenario("A/A log-normal 10%", lognormal(10, 0.10), lognormal(10, 0.10), 1.0),
        Scenario("A/A bimodal 1.85x", bimodal(10), bimodal(10), 1.0),
        Scenario("A/A log-normal 30%", lognormal(10, 0.30), lognormal(10, 0.30), 1.0),
        Scenario("A/A noise 2% vs 50%", lognormal(10, 0.02), lognormal(10, 0.50), 1.0),
        Scenario("A/A drift 1%/round", lognormal(10, 0.10), lognormal(10, 0.10), 1.0, drift),
        Scenario("A/A 5% outliers", lognormal(10, 0.10), lognormal(10, 0.10), 1.0, outliers),
        Scenario("A/A interference", lognormal(10, 0.10), lognormal(10, 0.10), 1.0, bursts),
        Scenario("1.2x, 10% noise", lognormal(12, 0.10), lognormal(10, 0.10), 1.2, power=True),
        Scenario("1.2x, drift", lognormal(12, 0.10), lognormal(10, 0.10), 1.2, drift, True),
        Scenario(
            "1.2x, 5% outliers", lognormal(12, 0.10), lognormal(10, 0.10), 1.2, outliers, True
        ),  # fmt: skip
        Scenario("1.2x, interference", lognormal(12, 0.10), lognormal(10, 0.10), 1.2, bursts),
        Scenario("1.3x, drift", lognormal(13, 0.10), lognormal(10, 0.10), 1.3, drift),
        Scenario("2x, bimodal", bimodal(20), bimodal(10), 2.0),
    ]


def run_all(trials: int, seed: int, methods: tuple[str, ...] = ("paired",),
            rule: adaptive.StoppingRule | None = None,
            only: tuple[str, ...] = ()) -> list[dict]:  # fmt: skip
    rule = rule or adaptive.stopping_rule(stats.DEFAULT_REPEATS)
    return [
        score(scn, m, trials, seed, rule)
        for scn in scenarios()
        if not only or scn.name in only
        for m in methods
    ]


def one_look(scn: Scenario, method: str, trials: int, seed: int, repeats: int,
             confidence: float = stats.CONFIDENCE) -> float:  # fmt: skip
    """How often one look after ``repeats`` rounds, at the full ``confidence``, finds the
    difference (decided, right direction). It spends no error rate on earlier looks, so
    it is what a stopping rule with this test could reach at best within that many
    repeats (a group-sequential rule with the same error rate over all its looks has at
    most the power of the fixed-size test in the normal approximation): the ceiling
    that any boundary choice for early decisions gives up part of."""
    rng = random.Random(f"{scn.name}/one-look/{seed}")
    found = 0
    for _ in range(trials):
        a: Rounds = {}
        b: Rounds = {}
        for rnd in range(repeats):
            disturbed = rng.random() < scn.machine.disturbed
            a[rnd] = scn.a(rng) * scn.machine.cell(rng, rnd, disturbed)
            b[rnd] = scn.b(rng) * scn.machine.cell(rng, rnd, disturbed)
        c = judge(method, a, b, 1, stats.MIN_EFFECT, confidence)
        found += c.verdict == "different" and (c.ratio.value > 1) == (scn.truth > 1)
    return found / trials


def together_miss(rule: adaptive.StoppingRule, confidence: float) -> float:
    """What the label guarantees for the one interval a run stops at: 1 - confidence over
    all K looks together (each look's own level does not hold for an interval chosen by
    stopping: an A/A run that stops "different" missed by definition)."""
    return 1 - confidence


def verdict(rows: list[dict], method: str, rule: adaptive.StoppingRule,
            confidence: float) -> tuple[bool, list[str]]:  # fmt: skip
    mine = [r for r in rows if r["method"] == method]
    fp = max(r["different"] for r in mine if r["aa"])
    power = min(r["found"] for r in mine if r["power_check"])
    miss = max(r["interval_miss"] for r in mine)
    limit = together_miss(rule, confidence)
    per_look = per_look_alpha(confidence, rule.looks)
    lines = [
        f"{method}: false 'different' (worst A/A scenario): {fp:.1%} (limit 5%)",
        f"{method}: 20% slower at 10% noise found within {rule.max_repeats} repeats (worst of "
        f"plain, drift, outliers): {power:.1%} (limit >= 90%)",
        f"{method}: interval missed the truth (worst scenario): {miss:.2%} (limit "
        f"{limit:.0%}, the label's level over all {rule.k} looks; each look's own is "
        f"{per_look:.2%})",
    ]
    return fp <= 0.05 and power >= 0.90 and miss <= limit, lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--trials", type=int, default=2000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--methods", default=",".join(METHODS),
                   help="comma-separated; PASS/FAIL is about the first")  # fmt: skip
    args = p.parse_args(argv)
    methods = tuple(m.strip() for m in args.methods.split(",") if m.strip())
    if not methods or any(m not in METHODS for m in methods) or args.trials < 1:
        print(f"decide.py: --methods from {', '.join(METHODS)}; --trials >= 1", file=sys.stderr)
        return 2
    rule = adaptive.stopping_rule(stats.DEFAULT_REPEATS)
    print(f"stopping rule: looks at {list(rule.looks)} repeats per configuration "
          f"(K={rule.k}, each a {stats.percent(1 - per_look_alpha(0.95, rule.looks))} interval: "
          "repeated confidence intervals, tfvariants.analyze.looks); min effect "
          f"{stats.MIN_EFFECT:.0%}; companion C = {COMPANION}x B; {args.trials} trials per "
          "scenario and method")  # fmt: skip
    rows = run_all(args.trials, args.seed, methods, rule)
    print(f"{'scenario':22} {'method':7} {'different':>9} {'found':>6} {'equiv':>6} "
          f"{'undecided':>9} {'miss':>6} {'repeats':>7} {'ratio':>6}")  # fmt: skip
    for r in rows:
        found = "" if r["aa"] else f"{r['found']:.1%}"
        print(f"{r['name']:22} {r['method']:7} {r['different']:9.1%} {found:>6} "
              f"{r['equivalent']:6.1%} {r['undecided']:9.1%} {r['interval_miss']:6.2%} "
              f"{r['mean_repeats']:7.1f} {r['median_ratio']:6.3f}")  # fmt: skip
    ok = True
    for i, m in enumerate(methods):
        passed, lines = verdict(rows, m, rule, stats.CONFIDENCE)
        for line in lines:
            print(line)
        if i == 0:
            ok = passed
        print(f"{m}: {'meets' if passed else 'does not meet'} the done criteria")
    first = methods[0]
    ceilings = [
        f"{scn.name.split(', ', 1)[-1]} "
        f"{one_look(scn, first, args.trials, args.seed, rule.max_repeats):.1%}"
        for scn in scenarios()
        if scn.power
    ]
    print(f"{first}: one look after {rule.max_repeats} repeats at {stats.CONFIDENCE:.0%} (no "
          f"early looks, the most a stopping rule with this test reaches): {', '.join(ceilings)}")  # fmt: skip
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
