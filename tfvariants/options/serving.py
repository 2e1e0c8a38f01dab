"""The serving task's run options (``serve``): the settings every serving cell of a run
shares, typed and frozen.

Each option is declared here once (flag, parser, help); ``serve``'s command-line options
and the values it resolves come from these declarations (commands/serve.py,
commands/serve_spec.py), a few defaults from ``--preset`` (commands/serve_spec.py
``DEFAULTS``/``PRESETS``); the decision options are the shared declarations
(decision.py). The serving request (workloads/serving/request.py
``ServeRequest``) takes every field declared here under the same name
(plan/serve.py ``serve_request``). A resume may change only the options
declared changeable or the command's own (``RESUMABLE``: the timeout and the adaptive
budget and last look); it takes the same arguments, so every other option is part of
the run's identity.
"""

from __future__ import annotations

from dataclasses import dataclass

from tfvariants.options import argtypes, bounds, limits, shared
from tfvariants.options.decision import DecisionOptions
from tfvariants.options.declare import CHANGEABLE, THIS_COMMAND, declared, option
from tfvariants.options.preset import PresetRecord

_DURATION = bounds.number(0, limits.MAX_SECONDS, above_lo=True)  # argtypes.duration_s's range
_COUNT = bounds.whole(1, limits.MAX_COUNT)


def _duration(default: float, help: str, flag: str) -> float:
    """A load run's duration bound (``--flag DURATION``, e.g. 3s, 1m)."""
    return option(
        default, help, flag=flag, parse=argtypes.duration_s, problem=_DURATION, metavar="DURATION"
    )


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
    "oversubscribe",
)


@dataclass(frozen=True)
class ServingOptions(DecisionOptions):
    """What every serving cell of a run is measured and judged with."""

    min_duration_s: float = _duration(
        3.0, "LoadGen's and the closed loop's minimum duration", "--min-duration"
    )
    max_duration_s: float = _duration(60.0, "hard cap per load run", "--max-duration")
    min_queries: int | None = shared.count(
        None,
        "minimum queries per load run",
        "--min-queries",
        _COUNT,
        parse=argtypes.count_or_auto,
        metavar="N|auto",
        default_words="auto: per scenario, what LoadGen's early stopping needs: "
        "single_stream 64, server 500, concurrency 100, offline 1",
    )
    max_queries: int = shared.count(
        100_000,
        "hard cap on queries per load run",
        "--max-queries",
        _COUNT,
        metavar="N",
        default_words="100000",
    )
    server_qps: float = option(
        10.0,
        "LoadGen Server target QPS (and the search's start)",
        flag="--server-qps",
        parse=argtypes.rate,
        problem=bounds.number(0, 1e9, above_lo=True),
        metavar="QPS",
        default_words="10",
    )
    p99_bound_ms: float = option(
        100.0,
        "latency bound for Server, the QPS search and the cheapest answer",
        flag="--p99",
        parse=argtypes.milliseconds,
        problem=bounds.number(0, limits.MAX_SECONDS * 1e3, above_lo=True),
        metavar="DURATION",
        default_words="100ms",
    )
    search_steps: int = shared.count(
        5,
        "Server QPS search: at most this many LoadGen runs",
        "--search-steps",
        _COUNT,
        metavar="N",
        default_words="5",
    )
    encoding: str = option(
        "b64",
        'request body: instances as JSON numbers, or {"b64": PNG}',
        flag="--encoding",
        choices=("json", "b64"),
    )
    target_url: str | None = option(
        None, "an external server to measure instead", problem=bounds.text
    )
    target_model: str | None = option(None, "the model's name on the target", problem=bounds.text)
    input_shape: list[int] | None = option(
        None, "with a target: one instance's shape", problem=bounds.shape
    )
    timeout_s: float = shared.timeout()
    preset: PresetRecord | None = shared.preset(omit_none=False)
    order_seed: int | None = shared.order_seed()
    oversubscribe: bool | None = shared.oversubscribe()


# What a serving resume may change (plan/serve.py ServeSpec.identity), as declared.
RESUMABLE = tuple(
    n for n, o in declared(ServingOptions).items() if o.resume in (CHANGEABLE, THIS_COMMAND)
)
