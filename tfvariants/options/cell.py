"""What one training cell runs with (the runner's and the worker's side of the training
options): the data, its scale, the seed, the steady window and the timeout.

The worker request (workloads/protocol.py ``WorkerRequest``) takes every field of these
options that it declares under the same name (execute/runner.py ``worker_request``), so
an option the worker needs is declared here and in the request, nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tfvariants.options import argtypes, limits
from tfvariants.options.declare import RunOptionsBase, option


def _whole(lo: int, hi: int, null: bool = True) -> Callable[[object], str | None]:
    def problem(value: object) -> str | None:
        ok = isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi
        return None if ok else f"a whole number {lo}..{hi}" + (" or null" if null else "")

    return problem


def _data_problem(value: object) -> str | None:
    return None if value in ("synthetic", "real") else "synthetic or real"


_COUNT = _whole(1, limits.MAX_COUNT)


@dataclass(frozen=True)
class CellOptions(RunOptionsBase):
    """A training cell's options (identity: what the cell measures; a resume keeps it)."""

    epochs: int | None = option(
        None,
        "train whole epochs per cell instead of stopping after the steady window",
        flag="--epochs",
        parse=argtypes.positive_int,
        problem=_COUNT,
        identity=True,
    )
    samples: int | None = option(
        None,
        "cap on training samples per cell",
        flag="--samples",
        parse=argtypes.positive_int,
        problem=_COUNT,
        identity=True,
    )
    steps_per_epoch: int | None = option(
        None,
        "cap on steps per epoch",
        flag="--steps-per-epoch",
        parse=argtypes.positive_int,
        problem=_COUNT,
        identity=True,
    )
    data: str = option(
        "synthetic",
        "the training data",
        flag="--data",
        choices=("synthetic", "real"),
        problem=_data_problem,
        identity=True,
        default_words="synthetic",
    )
    data_dir: str | None = option(None, "cache folder for real data sets", flag="--data-dir")
    timeout_s: float = option(
        1800.0,
        "seconds per cell",
        flag="--timeout",
        metavar="SECONDS",
        parse=argtypes.positive_float,
        problem=limits.seconds_problem,
        default_words="1800",
    )
    seed: int = option(
        0,
        "the data's and the model's seed",
        flag="--seed",
        parse=argtypes.seed,
        problem=_whole(0, limits.MAX_SEED, null=False),
        identity=True,
        default_words="0",
    )
    # The steady window (workloads.steady): without epochs, training stops once this
    # much time and this many steps followed the detected warm-up.
    min_steady_s: float = option(
        10.0,
        "seconds of steady-state steps each cell measures after its warm-up",
        flag="--min-steady-s",
        parse=argtypes.positive_float,
        problem=limits.seconds_problem,
        identity=True,
        default_words="10",
    )
    min_steady_steps: int = option(
        100,
        "steady-state steps each cell measures after its warm-up",
        flag="--min-steady-steps",
        parse=argtypes.positive_int,
        problem=_whole(1, limits.MAX_COUNT, null=False),
        identity=True,
        default_words="100",
    )
    warmup_max_s: float | None = option(
        None,
        "the longest the worker may spend warming up before the steady window: steps "
        "after this much training time count as steady even where the warm-up rule (MSER-5) "
        "would cut more",
        flag="--warmup-max",
        parse=argtypes.duration,
        problem=limits.seconds_problem,
        identity=True,
        omit_none=True,
        metavar="DURATION",
        default_words="none: the warm-up rule alone",
    )
    # The quick scale: each workload's quick_samples (compare's per_workload scale).
    quick: bool = option(False, "quick scale", identity=True)


# The cell options compare lists among its scale options (its steady window and timeout
# are listed with its decision options), in the order --help lists them.
SCALE = ("epochs", "samples", "steps_per_epoch", "data", "data_dir", "seed", "warmup_max_s")
# `tfvariants run`'s options: every cell option.
CELL = ("min_steady_s", "min_steady_steps", *SCALE, "timeout_s")
