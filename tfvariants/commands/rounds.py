"""`compare --budget`: which cells the next adaptive round needs (the Matrix loop asks).

Stateless on purpose: everything is recomputed from the stored results, so a resumed
run continues exactly where it stopped. The data are judged only at the stopping
rule's planned looks (tfvariants.analyze.adaptive); between looks the configurations
that were undecided at the last look keep running.
"""

from __future__ import annotations

from typing import Any

from tfvariants.analyze import adaptive
from tfvariants.analyze.decide import choose_baseline
from tfvariants.analyze.fields import training_time_s
from tfvariants.plan.cell import Cell

QUICK_BUDGET_S = 600.0  # --quick without --budget: 10 minutes
QUICK_WINDOW = (5.0, 50)  # --quick steady window: seconds, steps


def make_next_round(
    spec: Any,
    rule: adaptive.StoppingRule,
    *,
    baseline: tuple[str, int | None] | None,
    min_effect: float,
    confidence: float,
) -> Any:
    devices = {v: (spec.variant_info.get(v) or {}).get("device", "cpu") for v in spec.variants}
    order = {
        (w, v, t): (spec.workloads.index(w), spec.variants.index(v), spec.threads.index(t))
        for w in spec.workloads
        for v in spec.variants
        for t in spec.threads
    }

    def next_round(stored: dict[str, dict]) -> tuple[list[Cell], str]:
        times: dict[adaptive.Config, dict[int, float]] = {}
        present: dict[adaptive.Config, set[int]] = {}
        rounds = 0
        for r in stored.values():
            c = r.get("cell") or {}
            key = (str(c.get("workload")), str(c.get("variant")), int(c.get("threads", 0)))
            if key not in order:
                continue
            rep = int(c.get("repeat", 0))
            present.setdefault(key, set()).add(rep)
            rounds = max(rounds, rep + 1)
            t = training_time_s(r) if r.get("status") == "ok" else None
            if t:
                times.setdefault(key, {})[rep] = t
        looks_done = [n for n in rule.looks if n <= rounds]
        if not looks_done:
            return [], f"only {rounds} round(s) stored, fewer than the first look"
        look = looks_done[-1]
        at_look = {k: [t for rep, t in v.items() if rep < look] for k, v in times.items()}
        base = baseline
        if base is None or base[1] is None:
            counts: dict[tuple[str, int], int] = {}
            for (_w, v, t), xs in at_look.items():
                if base is None or v == base[0]:
                    counts[(v, t)] = counts.get((v, t), 0) + len(xs)
            base = choose_baseline(counts, devices, list(spec.variants))
        pairs = adaptive.watched_pairs(order, base)  # type: ignore[arg-type]
        open_pairs = adaptive.undecided(
            at_look, pairs, looks=rule.k, min_effect=min_effect, confidence=confidence
        )
        if not open_pairs:
            return [], f"every comparison was decided by the look after {look} repeats"
        if rounds >= rule.max_repeats:
            return [], (
                f"{len(open_pairs)} comparison(s) still undecided after the maximum of "
                f"{rule.max_repeats} repeats"
            )
        active = sorted(adaptive.active_configs(open_pairs), key=order.__getitem__)
        # An interrupted round is completed before a new one starts.
        gaps = [(k, rep) for k in active for rep in range(rounds) if rep not in present.get(k, ())]
        todo = gaps or [(k, rounds) for k in active]
        cells = [Cell(variant=k[1], threads=k[2], workload=k[0], repeat=rep) for k, rep in todo]
        return cells, f"{len(open_pairs)} comparison(s) undecided at the look after {look} repeats"

    return next_round
