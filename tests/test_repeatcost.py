"""What a repeat cost and where its time went, per workload (analyze/training/repeatcost.py)."""

from __future__ import annotations

import resultfactory as rf

from tfvariants.analyze.training import repeatcost
from tfvariants.analyze.training.groups import Group


def _cell(repeat: int, wall: float, steady: float) -> dict:
    res = rf.make_result("local", 2, "mnist_cnn", repeat)
    res["runner"]["wall_s"] = wall
    res["timing"].update(
        import_tf_s=2.0, data_s=0.1, build_s=0.1, warmup_s=1.0, steady_s=steady, fit_s=steady + 2
    )
    return res


def test_a_repeats_mean_cost_and_its_parts_add_up_to_the_cell() -> None:
    cells = [(12.0, 6.0), (14.0, 8.0)]
    typed = rf.typed({f"c{r}": _cell(r, wall, steady) for r, (wall, steady) in enumerate(cells)})
    group = Group("mnist_cnn", "local", 2, results=list(typed.values()))
    said = repeatcost.sentence("mnist_cnn", [group])
    # import 2, data + model 0.2, warm-up 1, steady 7 (mean), between epochs 1,
    # the rest = wall - import - build - fit: 12 - 2 - 0.2 - 8 = 1.8 and 1.8.
    assert said == (
        "mnist_cnn: a repeat (one cell) took 13.0 s of wall time on average over 2 successful "
        "cells: import 2.0 s, data + model 0.2 s, warm-up 1.0 s, steady 7.0 s (54%), between "
        "epochs 1.0 s, the rest (process start, probes, writing) 1.8 s."
    )


def test_no_successful_cell_no_sentence() -> None:
    typed = rf.typed({"c": rf.make_result("local", 2, "mnist_cnn", 0, status="failed")})
    assert (
        repeatcost.sentence(
            "mnist_cnn", [Group("mnist_cnn", "local", 2, results=list(typed.values()))]
        )
        is None
    )
