"""`serve --budget`: which serving cells the next adaptive round needs (the Matrix asks).

The same stopping rule as ``compare --budget`` (:mod:`tfvariants.analyze.statistics.adaptive`: K
planned looks, each interval at the per-look level of tfvariants.analyze.statistics.looks) and the
same comparisons as the report: the serving analysis
(:func:`tfvariants.analyze.serving.model_reports`) is run on the repeats stored before the
last look, and a configuration runs another round while one of its watched comparisons
(:func:`tfvariants.analyze.serving.watched`) is undecided. Stateless: everything is
recomputed from the stored results, so a resumed run continues where it stopped.

Without ``--max-repeats`` the last look follows the budget (issue 25: a fixed last look of
20 stopped a 1 in flight comparison near the 5 % band undecided after 4.6 min of a 10 min
budget): once the first look's rounds are stored, and before any of their verdicts is
computed, the round cost those rounds measured (the median wall time of each cell of a
round, summed) says how many rounds the budget holds, and the looks are fixed up to that
count. Only wall times go into it, never a verdict, so the stated confidence holds; the
same stored cells give the same looks on a resume.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.analyze.serving.sentences import look_plan_sentence
from tfvariants.analyze.statistics import adaptive
from tfvariants.analyze.statistics.decide import Settings
from tfvariants.analyze.statistics.verdict import Verdict
from tfvariants.options.serving import ServingOptions
from tfvariants.plan.serve import ServeCell, ServeKey, ServeSpec, plan_serve_cells
from tfvariants.rounds.decide import Judged, next_round, same_basis
from tfvariants.store.adaptiveplans import LookPlan
from tfvariants.store.cellresult import AnyResult
from tfvariants.store.record import RunRecord
from tfvariants.store.serving import ServeResult, serving

if TYPE_CHECKING:
    from tfvariants.analyze.serving.configs import Config
    from tfvariants.analyze.statistics.stats import Comparison

    Watched = tuple[Config, Config, Comparison]  # a watched comparison: its sides, as judged

# A round takes a little more than its cells' wall times (starting each worker, writing
# its result, the wait for quiet): 13.0-14.2 s per round of two 6.6-7.3 s cells on a quiet
# 2-core host (issue 25). 10 % more keeps the last look inside the budget.
ROUND_MARGIN = 1.10
# The planned last look at most: four looks evenly spaced up to it put the second at
# repeats + (last - repeats) / 3, and a far second look delays effects the default 20
# would decide (at 50: the looks after 5, 20, 35, 50).
MAX_PLANNED_LAST = 50


def round_cost(cells: Sequence[ServeResult], first_look: int) -> float | None:
    """One round's cost: the median wall time of each cell of a round (configuration,
    scenario, concurrency) over the rounds before the first look, summed. A failed cell
    took its time too; a cell with no wall time anywhere adds nothing (the margin covers
    it). None when nothing was timed."""
    walls: dict[tuple[ServeKey, str, int], list[float]] = {}
    for r in cells:
        wall = r.wall_s
        if r.round < first_look and wall is not None and wall > 0:
            walls.setdefault((r.serving_key, r.scenario, r.concurrency), []).append(wall)
    if not walls:
        return None
    return sum(statistics.median(w) for w in walls.values())


def plan_last_look(first_look: int, budget_s: float, round_s: float) -> LookPlan:
    """The last look the budget holds at ``round_s`` per round (with the margin), between
    the first look and :data:`MAX_PLANNED_LAST`."""
    per_round = round_s * ROUND_MARGIN
    fit = int(budget_s // per_round) if per_round > 0 else first_look
    last = max(first_look, min(MAX_PLANNED_LAST, fit))
    return LookPlan(per_round, budget_s, last, first_look, ROUND_MARGIN, MAX_PLANNED_LAST)


def config_key(cell: ServeCell) -> ServeKey:
    """What one configuration is (plan/serve.py ``ServeKey``)."""
    return cell.key


class NextServeRound:
    """The Matrix's next-round hook. ``rule``: the stopping rule, or None to plan its
    last look from the budget at the first look (``plan``/``rule`` then say what was
    chosen; ``say`` is told once)."""

    def __init__(
        self,
        spec: ServeSpec,
        rule: adaptive.StoppingRule | None,
        *,
        pricing: Pricing | None,
        baseline: str | None,
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.spec, self.rule = spec, rule
        self.plan: LookPlan | None = None
        self.pricing, self.baseline, self.say = pricing, baseline, say
        self.options = spec.options
        self.planned = plan_serve_cells(spec, range(1))
        # The last look's basis (the look, its rule's looks, every result before it) and
        # the watched comparisons judged on it.
        self.judged: tuple[tuple[Any, ...], list[Watched]] = ((), [])

    def _rule_at(self, cells: Sequence[ServeResult], rounds: int) -> adaptive.StoppingRule | None:
        """The rule, planned now if it is not yet and the first look's rounds are stored."""
        if self.rule is not None or rounds < self.spec.repeats:
            return self.rule
        o = self.options
        round_s = round_cost(cells, self.spec.repeats)
        if round_s is None or not o.budget_s:
            # nothing timed it (a run stored without wall times): the default last look
            last = max(adaptive.DEFAULT_MAX_REPEATS, self.spec.repeats)
        else:
            self.plan = plan_last_look(self.spec.repeats, o.budget_s, round_s)
            last = self.plan.last_look
        self.rule = adaptive.stopping_rule(self.spec.repeats, last, confidence=o.confidence)
        if self.say is not None:
            why = f": {look_plan_sentence(self.plan)}" if self.plan is not None else ""
            self.say(f"adaptive: looks after {', '.join(map(str, self.rule.looks))} repeats{why}")
        return self.rule

    def __call__(self, stored: Mapping[str, AnyResult]) -> tuple[list[ServeCell], str]:
        from tfvariants.analyze.serving.analysis import disturbed_of, model_reports
        from tfvariants.analyze.serving.configs import watched

        cells = serving(stored.values())
        present: dict[tuple, set[int]] = {}
        for r in cells:
            present.setdefault((r.serving_key, r.scenario, r.concurrency), set()).add(r.round)
        rounds = 1 + max((rep for reps in present.values() for rep in reps), default=-1)
        rule = self._rule_at(cells, rounds)
        looks_done = [n for n in rule.looks if n <= rounds] if rule is not None else []
        look = looks_done[-1] if looks_done else None
        pairs: list[Watched] = []
        if look is not None and rule is not None:
            basis = (look, rule.looks, *(r for r in cells if r.round < look))
            if not same_basis(basis, self.judged[0]):
                # Judged at the looks only: until the next look (or a change before this
                # one), the comparisons are the ones made at this look.
                judged_cells = [r for r in cells if r.round < look]
                reports = model_reports(
                    judged_cells,
                    RunRecord(variants=tuple(self.spec.variants)),
                    pricing=self.pricing,
                    baseline=self.baseline,
                    bound_ms=self.options.p99_bound_ms,
                    # the run's decision settings by the one reader the report uses
                    settings=Settings.from_options(self.spec.options, rule.looks),
                    disturbed=disturbed_of(judged_cells, self.options.disturbed_policy),
                )
                self.judged = basis, [(a, b, c) for rep in reports for a, b, c in watched(rep)]
            pairs = self.judged[1]
        undecided = [(a, b) for a, b, cmp in pairs if cmp.verdict == Verdict.UNDECIDED]
        keys = {cfg.key for pair in undecided for cfg in pair}
        # A configuration's cells (each scenario and concurrency), in the planned order.
        judged = Judged(
            rounds,
            look,
            len(pairs),
            len(undecided),
            [c for c in self.planned if config_key(c) in keys],
            {
                c: present.get((config_key(c), c.scenario, c.concurrency), set())
                for c in self.planned
            },
        )
        return next_round(
            judged,
            # before the first look next_round stops on ``look`` alone
            rule or adaptive.stopping_rule(self.spec.repeats, self.spec.repeats),
            lambda todo: [dataclasses.replace(c, repeat=rep) for c, rep in todo],
            self.options.order_seed,
            nothing_to_judge=f"nothing to compare at the look after {look} repeats",
        )


def order_seed(out: Path, resume: bool) -> int | None:
    """Each round's order seed: a resumed run keeps its own (its cells and their order
    must not change; None for runs stored before serving rounds were shuffled), a new
    run draws one (stored in run.json)."""
    from tfvariants.plan.spec import new_order_seed

    if resume:
        from tfvariants.store.runfile import read_run

        # run.json alone: the matrix loads the cells (once) when it resumes
        options = read_run(out).options
        stored = options.order_seed if isinstance(options, ServingOptions) else None
        return stored if isinstance(stored, int) and not isinstance(stored, bool) else None
    return new_order_seed()


def stored_max_repeats(out: Path, resume: bool) -> int | None:
    """A resumed run's last look as its run fixed it: --max-repeats as stored, else the
    last look its budget planned (a resume with another --budget must not move the looks
    the data were already judged at). None: a new run, or one stopped before its first
    look, whose look the same stored cells plan again."""
    if not resume:
        return None
    from tfvariants.store.runfile import read_run

    run = read_run(out)
    plan = run.adaptive.look_plan if run.adaptive is not None else None
    planned = plan.last_look if plan is not None else None
    options = run.options if isinstance(run.options, ServingOptions) else None
    for stored in (options.max_repeats if options is not None else None, planned):
        if isinstance(stored, int) and not isinstance(stored, bool):
            return stored
    return None
