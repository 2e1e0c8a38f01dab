"""What one training cell runs with (the runner's and the worker's side of the training
options): the data, its scale, the seed, the steady window and the timeout.

The worker request (workloads/protocol.py ``WorkerRequest``) takes every field of these
options that it declares under the same name (execute/runner.py ``worker_request``), so
an option the worker needs is declared here and in the request, nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

from tfvariants.options import argtypes, bounds, limits, shared
from tfvariants.options.declare import SAME, THIS_COMMAND, RunOptionsBase, option


def _data_problem(value: object) -> str | None:
    return None if value in ("synthetic", "real") else "synthetic or real"


_COUNT = bounds.whole(1, limits.MAX_COUNT, null=True)


@dataclass(frozen=True)
class CellOptions(RunOptionsBase):
    """A training cell's options (identity: what the cell measures; a resume keeps it)."""

    epochs: int | None = shared.count(
        None,
        "train whole epochs per cell instead of stopping after the steady window",
        "--epochs",
        _COUNT,
        resume=SAME,
    )
    samples: int | None = shared.count(
        None, "cap on training samples per cell", "--samples", _COUNT, resume=SAME
    )
    steps_per_epoch: int | None = shared.count(
        None, "cap on steps per epoch", "--steps-per-epoch", _COUNT, resume=SAME
    )
    data: str = option(
        "synthetic",
        "the training data",
        flag="--data",
        choices=("synthetic", "real"),
        problem=_data_problem,
        resume=SAME,
        default_words="synthetic",
    )
    # Where this host caches data: the resuming command's, never the stored run's.
    data_dir: str | None = option(
        None,
        "cache folder for real data sets",
        flag="--data-dir",
        problem=bounds.text,
        resume=THIS_COMMAND,
    )
    timeout_s: float = shared.timeout()
    seed: int = option(
        0,
        "the data's and the model's seed",
        flag="--seed",
        parse=argtypes.seed,
        problem=bounds.whole(0, limits.MAX_SEED),
        resume=SAME,
        default_words="0",
    )
    # The steady window (workloads.steady): without epochs, training stops once this
    # much time and this many steps followed the detected warm-up.
    min_steady_s: float = shared.seconds(
        10.0,
        "seconds of steady-state steps each cell measures after its warm-up",
        "--min-steady-s",
        resume=SAME,
        default_words="10",
    )
    min_steady_steps: int = shared.count(
        100,
        "steady-state steps each cell measures after its warm-up",
        "--min-steady-steps",
        bounds.whole(1, limits.MAX_COUNT),
        resume=SAME,
        default_words="100",
    )
    warmup_max_s: float | None = shared.duration(
        None,
        "the longest the worker may spend warming up before the steady window: steps "
        "after this much training time count as steady even where the warm-up rule (MSER-5) "
        "would cut more",
        "--warmup-max",
        resume=SAME,
        omit_none=True,
        default_words="none: the warm-up rule alone",
    )
    # The quick scale: each workload's quick_samples (compare's per_workload scale).
    quick: bool = option(False, "quick scale", problem=bounds.flag, resume=SAME)


# The cell options compare lists among its scale options (its steady window and timeout
# are listed with its decision options), in the order --help lists them.
SCALE = ("epochs", "samples", "steps_per_epoch", "data", "data_dir", "seed", "warmup_max_s")
# `tfvariants run`'s options: every cell option.
CELL = ("min_steady_s", "min_steady_steps", *SCALE, "timeout_s")
