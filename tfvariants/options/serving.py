"""The serving task's run options (``serve``): the settings every serving cell of a run
shares, typed and frozen.

Each option is declared here once (flag, parser, help); ``serve``'s command-line options
and the values it resolves come from these declarations (commands/serve.py,
commands/serve_spec.py), a few defaults from ``--preset`` (commands/serve_spec.py
``DEFAULTS``/``PRESETS``); the decision options are the shared declarations
(decision.py). The serving request (workloads/serving/request.py
``ServeRequest``) takes every field declared here under the same name
(execute/serve_runner.py ``serve_request``). A resume may change only the timeout and
the adaptive budget (``RESUMABLE``): every other option is part of the run's identity.
"""

from __future__ import annotations

from dataclasses import dataclass

from tfvariants.options import argtypes, limits
from tfvariants.options.decision import DecisionOptions
from tfvariants.options.declare import option

# What a serving resume may change (plan/serve.py ServeSpec.identity).
RESUMABLE = ("timeout_s", "budget_s", "max_repeats")
# serve's command-line options declared here, in the order --help lists them
COMMAND_LINE = (
    "min_duration_s",
    "max_duration_s",
    "min_queries",
    "max_queries",
    "server_qps",
    "p99_bound_ms",
    "search_steps",
    "encoding",
    "timeout_s",
)


@dataclass(frozen=True)
class ServingOptions(DecisionOptions):
    """What every serving cell of a run is measured and judged with."""

    min_duration_s: float = option(
        3.0,
        "LoadGen's and the closed loop's minimum duration",
        flag="--min-duration",
        parse=argtypes.duration_s,
        metavar="DURATION",
    )
    max_duration_s: float = option(
        60.0,
        "hard cap per load run",
        flag="--max-duration",
        parse=argtypes.duration_s,
        metavar="DURATION",
    )
    min_queries: int | None = option(
        None,
        "minimum queries per load run",
        flag="--min-queries",
        parse=argtypes.count_or_auto,
        metavar="N|auto",
        default_words="auto: per scenario, what LoadGen's early stopping needs: "
        "single_stream 64, server 500, concurrency 100, offline 1",
    )
    max_queries: int = option(
        100_000,
        "hard cap on queries per load run",
        flag="--max-queries",
        parse=argtypes.positive_int,
        metavar="N",
        default_words="100000",
    )
    server_qps: float = option(
        10.0,
        "LoadGen Server target QPS (and the search's start)",
        flag="--server-qps",
        parse=argtypes.rate,
        metavar="QPS",
        default_words="10",
    )
    p99_bound_ms: float = option(
        100.0,
        "latency bound for Server, the QPS search and the cheapest answer",
        flag="--p99",
        parse=argtypes.milliseconds,
        metavar="DURATION",
        default_words="100ms",
    )
    search_steps: int = option(
        5,
        "Server QPS search: at most this many LoadGen runs",
        flag="--search-steps",
        parse=argtypes.positive_int,
        metavar="N",
        default_words="5",
    )
    encoding: str = option(
        "b64",
        'request body: instances as JSON numbers, or {"b64": PNG}',
        flag="--encoding",
        choices=("json", "b64"),
    )
    target_url: str | None = option(None, "an external server to measure instead")
    target_model: str | None = option(None, "the model's name on the target")
    input_shape: list[int] | None = option(None, "with a target: one instance's shape")
    timeout_s: float = option(
        1800.0,
        "seconds per cell",
        flag="--timeout",
        parse=argtypes.positive_float,
        problem=limits.seconds_problem,
        metavar="SECONDS",
        default_words="1800",
    )
    preset: str | None = option(None, "serve --preset")
    # Absent from runs stored before serving rounds were shuffled: kept absent.
    order_seed: int | None = option(None, "each round's order seed", omit_none=True)
