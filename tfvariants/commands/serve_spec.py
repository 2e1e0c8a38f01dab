"""`tfvariants serve`'s matrix and options from its command line: the quick-scale
defaults and ``--preset study``, each value parsed and checked before anything is
written (one line, exit 2), into a ServeSpec with its frozen ServingOptions; and the
checks of what the sweep needs (the --target answers, LoadGen where it runs)."""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING, Any

from tfvariants.commands.matrix_args import checked, default_threads, parse_names
from tfvariants.errors import UserError
from tfvariants.options import argtypes, declare
from tfvariants.options.serving import ServingOptions

if TYPE_CHECKING:
    from tfvariants.variants.registry import Variant

# The quick scale (the defaults): one model at 1..CPUs threads decided within the
# budget on a 2-core machine. Only the closed loop over HTTP at 1 and 4 requests in
# flight, b64 bodies (a JSON image costs 10x the model), 3 s minimum runs: 20 cells
# of ~15 s for the first look. docs/serving.md says what each choice costs.
DEFAULTS: dict[str, str | None] = {
    "models": "mobilenet_v2",
    "scenarios": "concurrency",
    "concurrency": "1,4",
    "path": "http",
    "encoding": "b64",
    "repeats": "5",
    "budget_s": "10m",
    "min_duration_s": "3s",
    "max_duration_s": "60s",
    "min_queries": "auto",
    "max_batch_size": "1",
    "batch_timeout": "2ms",
}
# --preset study: the serving study's shape, GPU vs CPU at 20-50 concurrent clients over
# HTTP with b64 payloads, every Keras application from MobileNetV2 to NASNetLarge, on
# every --variants given; 10 s minimum runs; repeats without a budget.
PRESETS: dict[str, dict[str, str | None]] = {
    "study": {
        "models": "mobilenet_v2,efficientnet_b0,nasnet_mobile,densenet121,resnet50,"
        "inception_v3,nasnet_large",
        "scenarios": "concurrency",
        "concurrency": "1,8,20,50",
        "path": "http",
        "encoding": "b64",
        "repeats": "5",
        "budget_s": "off",
        "min_duration_s": "10s",
    },
}
DEFAULT_SCENARIOS = DEFAULTS["scenarios"]
# The declared options (options/serving.py) whose defaults a preset may change: their
# DEFAULTS/PRESETS keys are the declared names, their text parsed as declared.
PRESET_OPTIONS = ("min_duration_s", "max_duration_s", "min_queries", "encoding")


def resolved(args: argparse.Namespace) -> dict[str, Any]:
    """Each preset-able option: given, else the preset's, else the default."""
    preset = PRESETS.get(args.preset or "", {})
    out = {
        k: getattr(args, k) if getattr(args, k) is not None else preset.get(k, v)
        for k, v in DEFAULTS.items()
    }
    if args.repeats is not None and args.budget_s is None:  # --repeats N alone: exactly N
        out["budget_s"] = "off"
    return out


def _duration(option: str, text: str) -> float:
    return checked(option, argtypes.duration_s, text)


def parse_positive(option: str, text: str, hi: int = argtypes.MAX_COUNT) -> int:
    return checked(option, lambda t: argtypes.whole_number(t, 1, hi), text)


def parse_concurrency(text: str) -> list[int]:
    from workloads.serving.request import MAX_CONCURRENCY

    # One client thread per request in flight: 10^6 would be a million threads.
    names = parse_names("concurrency", text)
    return list(dict.fromkeys(parse_positive("concurrency", v, MAX_CONCURRENCY) for v in names))


def parse_batching(sizes: str, timeouts: str) -> tuple[tuple[int, float], ...]:
    """--max-batch-size x --batch-timeout, as (size, timeout ms); size 1 (no batching)
    once, whatever the timeouts."""
    size_list = [
        parse_positive("max-batch-size", v, 1 << 16) for v in parse_names("max-batch-size", sizes)
    ]
    waits = [_duration("batch-timeout", v) * 1e3 for v in parse_names("batch-timeout", timeouts)]
    out: list[tuple[int, float]] = []
    for b in dict.fromkeys(size_list):
        for w in waits if b > 1 else waits[:1]:
            if (b, w) not in out:
                out.append((b, w))
    return tuple(out)


def parse_shape(text: str) -> list[int]:
    try:
        dims = [int(d) for d in text.replace("x", ",").split(",")]
    except ValueError:
        dims = []
    if not dims or any(not 0 < d <= 1 << 16 for d in dims):
        raise UserError(
            f"--input-shape: expected positive whole numbers like 224,224,3, got {text!r}"
        )
    return dims


def build_serve_spec(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """ServeSpec + variant objects; every value checked before anything is written."""
    from tfvariants.plan.serve import ServeSpec
    from tfvariants.plan.spec import logical_cpus
    from tfvariants.variants import get_variants

    v = resolved(args)
    model_names, scenarios, paths, input_shape = _axes(args, v)
    concurrency = parse_concurrency(str(v["concurrency"]))
    threads = (
        checked("threads", argtypes.thread_list, args.threads)
        if args.threads is not None
        else default_threads(logical_cpus())
    )
    variants = parse_names("variants", args.variants)
    # The bound run.json's "repeats" is checked against (options/limits.py), before anything
    # is written.
    repeats = checked("repeats", argtypes.repeats, str(v["repeats"]))
    options = _serving_options(args, v, repeats, input_shape)
    batching = parse_batching(str(v["max_batch_size"]), str(v["batch_timeout"]))
    variant_objs = get_variants(variants, args.variants_file)
    info = {n: {"kind": o.kind, "device": o.device} for n, o in variant_objs.items()}
    spec = ServeSpec(
        tuple(variants),
        tuple(threads),
        tuple(model_names),
        tuple(scenarios),
        tuple(concurrency),
        tuple(paths),
        repeats,
        options,
        info,
        batching,
    )
    return spec, variant_objs


def _axes(
    args: argparse.Namespace, v: dict[str, Any]
) -> tuple[list[str], list[str], list[str], list[int] | None]:
    """The models, scenarios and paths (a --target replaces the paths), and the target's
    input shape, checked."""
    from workloads.serving import models
    from workloads.serving.request import SCENARIOS

    model_names = parse_names("models", str(v["models"]))
    for m in model_names:
        if args.target and not models.is_file(m):  # any name the server serves under
            if not re.fullmatch(r"[A-Za-z0-9_.-]+", m):
                raise UserError(f"--models: {m!r} is not a model name a URL can carry")
            continue
        try:
            models.check_name(m)
        except ValueError as exc:
            raise UserError(f"--models: {exc}") from None
    scenarios = parse_names("scenarios", str(v["scenarios"]))
    for s in scenarios:
        if s not in SCENARIOS:
            raise UserError(f"--scenarios: unknown scenario {s!r} (known: {', '.join(SCENARIOS)})")
    input_shape = parse_shape(args.input_shape) if args.input_shape else None
    if input_shape and not args.target:
        raise UserError("--input-shape is for --target (a served model's own shape is known)")
    if args.target:
        from workloads.serving.http_client import Endpoint, redact

        try:  # the URL's form, before anything (a dry run too) shows or records it
            Endpoint(args.target, "m")
        except ValueError as exc:
            raise UserError(f"--target {redact(args.target)}: {exc}") from None
        for m in model_names:
            if models.is_file(m):
                raise UserError(
                    f"--target: {m!r} is a file; name the model (a built-in name, or any name "
                    "with --target-model and --input-shape or a server that reports its metadata)"
                )
        return model_names, scenarios, ["target"], input_shape
    paths = parse_names("path", str(v["path"]))
    for p in paths:
        if p not in ("inprocess", "http"):
            raise UserError(f"--path: unknown path {p!r} (inprocess, http; or --target URL)")
    return model_names, scenarios, paths, input_shape


def _serving_options(
    args: argparse.Namespace, v: dict[str, Any], repeats: int, input_shape: list[int] | None
) -> ServingOptions:
    """What every cell of the run shares, each value checked: each declared option given,
    else the preset's, else as declared (options/serving.py, through declare.resolve)."""
    from tfvariants.analyze.statistics import adaptive

    given = {name: getattr(args, name, None) for name in declare.declared(ServingOptions)}
    # and the budget, whose quick-scale default (10m) is serve's own, not the declared one
    given.update({name: v[name] for name in (*PRESET_OPTIONS, "budget_s")})
    if str(v["encoding"]) not in ("json", "b64"):
        raise UserError(f"--encoding: expected json or b64, got {v['encoding']!r}")
    given.update(
        target_url=args.target,
        target_model=args.target_model,
        input_shape=input_shape,
        order_seed=None,  # drawn by serve (rounds/serving.py order_seed)
    )
    values = declare.resolve(ServingOptions, given, {}, {})
    if values["max_repeats"] is None and values["budget_s"] is None:
        # exactly --repeats: no look to plan; else the last look is planned from the
        # budget at the first look (rounds/serving.py)
        values["max_repeats"] = max(adaptive.DEFAULT_MAX_REPEATS, repeats)
    if values["max_repeats"] is not None and values["max_repeats"] < repeats:
        raise UserError(f"--max-repeats {values['max_repeats']} is below --repeats {repeats}")
    o = ServingOptions(**values)
    if o.min_duration_s > o.max_duration_s:
        raise UserError(
            f"--min-duration {o.min_duration_s:g}s is longer than "
            f"--max-duration {o.max_duration_s:g}s"
        )
    if o.min_queries is not None and o.min_queries > o.max_queries:
        raise UserError(f"--min-queries {o.min_queries} is more than --max-queries {o.max_queries}")
    return o


# ---- checks of the inputs before the sweep ----


def check_target(url: str, model: str, builtin: str, shape: list[int] | None) -> None:
    """The target answers for the model, and its input shape is known: given, a
    built-in model's, or from the server's metadata."""
    from workloads.serving import models
    from workloads.serving.http_client import Endpoint, ServingError, redact

    try:
        endpoint = Endpoint(url, model)
        endpoint.check()
        if shape is None and models.input_shape_of(builtin) is None:
            if endpoint.metadata_shape() is None:
                raise ServingError(
                    f"the model metadata (GET {endpoint.status_path}/metadata) gives no fully "
                    "defined input shape: name one with --input-shape H,W,C"
                )
    except (ValueError, ServingError) as exc:
        raise UserError(f"--target {redact(url)}: {exc}") from None


LOADGEN_SPEC = "mlcommons-loadgen>=6.0"  # as the serve extra (setup.cfg)


def with_loadgen(
    scenarios: tuple[str, ...], variant_objs: dict[str, Variant]
) -> dict[str, Variant]:
    """Requirement-spec variants get MLPerf LoadGen added to their specs when a LoadGen
    scenario runs and they do not name it: a separate cached environment, built on first
    use like any other."""
    import dataclasses
    import re as _re

    from workloads.serving.request import LOADGEN_SCENARIOS

    if not any(s in LOADGEN_SCENARIOS for s in scenarios):
        return variant_objs
    out = {}
    for name, v in variant_objs.items():
        named = any(
            _re.match(r"\s*mlcommons[-_.]loadgen\b", spec, _re.I) for spec in v.requirements
        )
        if v.kind_impl.buildable and not named:
            v = dataclasses.replace(v, requirements=(*v.requirements, LOADGEN_SPEC))
        out[name] = v
    return out


def check_loadgen(scenarios: tuple[str, ...], variant_objs: dict[str, Variant]) -> None:
    """LoadGen scenarios need mlcommons-loadgen where the worker runs: for this
    interpreter that is known now (stop before the sweep); for venvs and images each
    cell says so if it is missing."""
    import importlib.util

    from workloads.serving.request import LOADGEN_SCENARIOS

    needs = [s for s in scenarios if s in LOADGEN_SCENARIOS]
    local = [n for n, v in variant_objs.items() if v.kind_impl.this_interpreter]
    if needs and local and importlib.util.find_spec("mlperf_loadgen") is None:
        raise UserError(
            f"--scenarios {','.join(needs)} need MLPerf LoadGen, which is not installed in this "
            f"interpreter (variant {local[0]}): pip install 'tfvariants[serve]' "
            "(mlcommons-loadgen), or run only --scenarios concurrency"
        )
