"""The simulated machines and scenarios of benchmarks/decide.py: draws of cell times,
a machine that misbehaves in known ways, and each scenario's truth and settings."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

from tfvariants.analyze.statistics import stats

Draw = Callable[[random.Random], float]
COMPANION = 1.05  # C / B: on the band's edge, undecided for long
COMPILED = {"min_effect": 0.0, "band": 0.10}  # the compiled preset's decision settings


def lognormal(base: float, noise: float) -> Draw:
    return lambda rng: base * math.exp(rng.gauss(0.0, noise))


def student_t(base: float, noise: float, df: int = 3) -> Draw:
    """Log noise of a Student-t with ``df`` degrees of freedom, scaled to sd ``noise``."""
    scale = noise * math.sqrt((df - 2) / df)

    def draw(rng: random.Random) -> float:
        chi2 = sum(rng.gauss(0.0, 1.0) ** 2 for _ in range(df))
        return base * math.exp(scale * rng.gauss(0.0, 1.0) / math.sqrt(chi2 / df))

    return draw


def bimodal(base: float, slow: float = 1.85, p_slow: float = 0.4, noise: float = 0.03) -> Draw:
    return lambda rng: (
        base * (slow if rng.random() < p_slow else 1.0) * math.exp(rng.gauss(0.0, noise))
    )


def tail(base: float, noise: float, p: float = 0.1, factor: float = 2.0) -> Draw:
    return lambda rng: base * (factor if rng.random() < p else 1.0) * math.exp(rng.gauss(0, noise))


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
    truth: float  # the true typical (median) ratio A/B within a round
    machine: Machine = Machine()
    power: bool = False  # a power check of the done criteria
    min_effect: float = stats.MIN_EFFECT
    band: float = stats.EQUIVALENCE_BAND
    # Every configuration's AR(1) log noise over its own rounds: (phi, stationary sd)
    wander: tuple[float, float] = (0.0, 0.0)
    kind: str = "plain"  # "wander", "tail", "ranking": their own checks
    rivals: tuple[float, ...] = ()  # further configurations, each this many times B
    companion: float = COMPANION  # C / B
    later: bool = False  # A is a --later variant: it starts once C vs B is settled
    # The run's budget ends after this many rounds (before the planned last look); the
    # report's comparison over every stored round is scored
    cut: int | None = None

    @property
    def aa(self) -> bool:
        return self.truth == 1.0


def scenarios() -> list[Scenario]:
    drift, outliers = Machine(drift=0.01), Machine(outliers=0.05)
    bursts = Machine(disturbed=0.3)
    ln, t = lognormal, student_t
    # For a median ratio of exactly 1.2, a multiplicative 1.2 planted on log-normal noise.
    return [
        Scenario("A/A log-normal 10%", ln(10, 0.10), ln(10, 0.10), 1.0),
        Scenario("A/A Student-t 10%", t(10, 0.10), t(10, 0.10), 1.0),
        Scenario("A/A bimodal 1.85x", bimodal(10), bimodal(10), 1.0),
        # The audit's: Student-t 3 at scale 0.1 (its sd is sqrt(3) times that)
        Scenario(
            "A/A Student-t scale 0.1", t(10, 0.1 * math.sqrt(3)), t(10, 0.1 * math.sqrt(3)), 1.0
        ),
        Scenario("A/A log-normal 30%", ln(10, 0.30), ln(10, 0.30), 1.0),
        Scenario("A/A --min-effect 0", ln(10, 0.10), ln(10, 0.10), 1.0, min_effect=0.0),
        Scenario("A/A noise 2% vs 50%", ln(10, 0.02), ln(10, 0.50), 1.0),
        Scenario("A/A drift 1%/round", ln(10, 0.10), ln(10, 0.10), 1.0, drift),
        Scenario("A/A 5% outliers", ln(10, 0.10), ln(10, 0.10), 1.0, outliers),
        Scenario("A/A interference", ln(10, 0.10), ln(10, 0.10), 1.0, bursts),
        Scenario("A/A 4% (this host)", ln(10, 0.04), ln(10, 0.04), 1.0),
        *(
            Scenario(
                f"A/A wander AR(1) {phi}",
                ln(10, 0),
                ln(10, 0),
                1.0,
                wander=(phi, 0.10),
                kind="wander",
            )
            for phi in (0.5, 0.8)
        ),
        Scenario("A/A tail 2x in 10%", tail(10, 0.04), ln(10, 0.04), 1.0, kind="tail"),
        # On the band's edge: false "equivalent" at its most likely (bands.py)
        Scenario("1.05x 4%, band edge", ln(10.5, 0.04), ln(10, 0.04), 1.05),
        Scenario("1.1x, 4% noise", ln(11, 0.04), ln(10, 0.04), 1.1),
        Scenario("1.1x, 10% noise", ln(11, 0.10), ln(10, 0.10), 1.1),
        Scenario("1.1x, Student-t 4%", t(11, 0.04), t(10, 0.04), 1.1),
        Scenario("1.1x, noise 2% vs 20%", ln(11, 0.02), ln(10, 0.20), 1.1),
        Scenario("1.1x, --min-effect 0", ln(11, 0.04), ln(10, 0.04), 1.1, min_effect=0.0),
        # --preset compiled (no min effect, band 10 %); 1.07x: stranded by a 5 % min effect
        Scenario("A/A 4%, preset compiled", ln(10, 0.04), ln(10, 0.04), 1.0, **COMPILED),
        Scenario("1.07x 4%, preset compiled", ln(10.7, 0.04), ln(10, 0.04), 1.07, **COMPILED),
        Scenario("1.07x 4%, min effect 5%", ln(10.7, 0.04), ln(10, 0.04), 1.07, band=0.10),
        Scenario("1.1x 4%, compiled edge", ln(11, 0.04), ln(10, 0.04), 1.1, **COMPILED),
        Scenario("1.12x 4%, preset compiled", ln(11.2, 0.04), ln(10, 0.04), 1.12, **COMPILED),
        Scenario("1.2x, 10% noise", ln(12, 0.10), ln(10, 0.10), 1.2, power=True),
        Scenario("1.2x, drift", ln(12, 0.10), ln(10, 0.10), 1.2, drift, True),
        Scenario("1.2x, 5% outliers", ln(12, 0.10), ln(10, 0.10), 1.2, outliers, True),
        Scenario("1.2x, interference", ln(12, 0.10), ln(10, 0.10), 1.2, bursts),
        Scenario("1.3x, drift", ln(13, 0.10), ln(10, 0.10), 1.3, drift),
        Scenario("2x, bimodal", bimodal(20), bimodal(10), 2.0),
        # --later A: it starts once C vs B (the question asked, here as hard: 1.2x) is
        # settled, in the rounds left of the 20; "1.2x, 10% noise" is the same from the start
        Scenario("1.2x 10%, --later", ln(12, 0.1), ln(10, 0.1), 1.2, companion=1.2, later=True),
        # The budget ends after 12 rounds, between the looks at 10 and 15: the report's
        # last look is made at the rounds there are, at the planned looks' level
        Scenario("A/A 10%, budget cut at 12", ln(10, 0.1), ln(10, 0.1), 1.0, cut=12),
        Scenario("1.05x 4%, budget cut at 12", ln(10.5, 0.04), ln(10, 0.04), 1.05, cut=12),
        Scenario("1.2x 10%, budget cut at 12", ln(12, 0.1), ln(10, 0.1), 1.2, cut=12),
        # Five configurations: A clearly the fastest (0.8x B), the rest 1-1.15x B; the
        # ranking sentence "A was the fastest" (family.lead) is scored
        Scenario(
            "0.8x of 5, ranking", ln(8, 0.10), ln(10, 0.10), 0.8, kind="ranking", rivals=(1.1, 1.15)
        ),
        # Five identical configurations at 30 % noise: any "X was the fastest" is wrong
        Scenario(
            "A/A of 5, ranking", ln(10, 0.30), ln(10, 0.30), 1.0, kind="ranking", rivals=(1.0, 1.0)
        ),
    ]
