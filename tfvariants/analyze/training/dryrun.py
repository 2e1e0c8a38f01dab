"""compare's dry run: its planned cells and a time per cell (an earlier run's, the 2017
study's, or rough ones from the workload's shape); placement, billing and the printout
are every task's (analyze/cost/dryrun.py, render/dryrun.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tfvariants.analyze.cost import estimate as est
from tfvariants.analyze.cost.dryrun import DryRun, Layout, Placement, devices, priced
from tfvariants.analyze.cost.pricing import Pricing

if TYPE_CHECKING:
    from tfvariants.plan.spec import MatrixSpec

STUDY = "study-2017"  # --estimate-from study-2017: the 2017 study's own training times

LAYOUT = Layout(
    "planned cells per node type",
    f"times are ROUGH: the step times implied by {est.STUDY_2017_SOURCE}, times the "
    f"steps a cell trains (its steady window, or --epochs), +{est.CELL_OVERHEAD_S:g} s "
    "per cell. Measure once, then use --estimate-from RUN.",
    per_configuration=True,
)


def training_dry_run(
    spec: MatrixSpec,
    pricing: Pricing | None,
    estimate_from: Path | None,
    shape_for: Callable[[str], est.CellShape],
) -> DryRun:
    """compare's cells: times from an earlier run, the 2017 study's (``study-2017``, when
    no folder of that name exists) or rough ones from ``shape_for(workload)``."""
    from tfvariants.plan.spec import plan_cells

    cells = plan_cells(spec)
    study = estimate_from == Path(STUDY) and not Path(STUDY).exists()
    from_run = estimate_from if estimate_from and not study else None

    def estimate(placed: Placement) -> list[est.CellEstimate]:
        # Read after the placement (as before): a placement refusal comes first.
        run_times = est.times_from_run(from_run) if from_run is not None else None
        return est.estimate_cells(
            cells,
            dict(placed),
            devices(spec),
            run_times=run_times,
            shape_for=shape_for,
            study=study,
        )

    return priced(
        "train", LAYOUT, spec, pricing, len(cells), estimate, study=study, estimate_from=from_run
    )
