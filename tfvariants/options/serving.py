"""The serving task's run options (``serve``): the settings every serving cell of a run
shares, typed and frozen.

``serve`` parses its own options (their defaults can come from a preset:
commands/serve.py ``DEFAULTS``/``PRESETS``) and builds these; the decision options are
the shared declarations (decision.py). The serving request (workloads/serving/request.py
``ServeRequest``) takes every field declared here under the same name
(execute/serve_runner.py ``serve_request``). A resume may change only the timeout and
the adaptive budget (``RESUMABLE``): every other option is part of the run's identity.
"""

from __future__ import annotations

from dataclasses import dataclass

from tfvariants.options.decision import DecisionOptions
from tfvariants.options.declare import option
from tfvariants.plan import limits

# What a serving resume may change (plan/serve.py ServeSpec.identity).
RESUMABLE = ("timeout_s", "budget_s", "max_repeats")


@dataclass(frozen=True)
class ServingOptions(DecisionOptions):
    """What every serving cell of a run is measured and judged with."""

    min_duration_s: float = option(3.0, "LoadGen's and the closed loop's minimum duration")
    max_duration_s: float = option(60.0, "hard cap per load run, seconds")
    min_queries: int | None = option(None, "minimum queries per load run (None: per scenario)")
    max_queries: int = option(100_000, "hard cap on queries per load run")
    server_qps: float = option(10.0, "LoadGen Server target QPS (and the search's start)")
    p99_bound_ms: float = option(100.0, "latency bound for Server, the search and the answer")
    search_steps: int = option(5, "Server QPS search: at most this many LoadGen runs")
    encoding: str = option("b64", "request body: json or b64", choices=("json", "b64"))
    target_url: str | None = option(None, "an external server to measure instead")
    target_model: str | None = option(None, "the model's name on the target")
    input_shape: list[int] | None = option(None, "with a target: one instance's shape")
    timeout_s: float = option(1800.0, "seconds per cell", problem=limits.seconds_problem)
    preset: str | None = option(None, "serve --preset")
    # Absent from runs stored before serving rounds were shuffled: kept absent.
    order_seed: int | None = option(None, "each round's order seed", omit_none=True)
