"""`tfvariants serve`: serving throughput and tail latency per variant and vCPU count,
then the report (a serving section) and the cost per million predictions.

A separate command rather than ``compare --task serve``: its matrix has other axes
(models, scenarios, concurrency, paths) and other options (durations, latency bound).
"""

from __future__ import annotations

import argparse
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from tfvariants.commands import argtypes, common
from tfvariants.commands.matrix_args import checked, default_threads, parse_names, ready_variants
from tfvariants.commands.outdir import check_writable, out_dir
from tfvariants.errors import UserError

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
    "budget": "10m",
    "min_duration": "3s",
    "max_duration": "60s",
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
        "budget": "off",
        "min_duration": "10s",
    },
}
DEFAULT_SCENARIOS = DEFAULTS["scenarios"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "serve",
        help="measure serving throughput and tail latency (LoadGen + closed loop) and cost per million predictions",
        description="Run serving cells (variant x threads x model x scenario [x concurrency] [x batching] x "
        "path x repeat) in interleaved rounds, each whole inside its variant (model, HTTP server and "
        "load generator in one pinned worker), store one result per cell in OUT/cells/ and "
        "LoadGen's logs in OUT/artifacts/, then write the HTML report with a verdict per comparison.",
    )  # fmt: skip
    d = DEFAULTS
    p.add_argument("--preset", choices=sorted(PRESETS), default=None,
                   help="study: the serving study (Keras applications MobileNetV2..NASNetLarge at 1, 8, 20, 50 "
                        "requests in flight over HTTP with b64 bodies, on every --variants given); "
                        "options given explicitly win")  # fmt: skip
    p.add_argument("--models", default=None,
                   help=f"comma list of built-in models (default {d['models']}; mobilenet_v2, resnet50, inception_v3, "
                        "densenet121, efficientnet_b0, nasnet_mobile, nasnet_large, noop) or .py / .keras files")  # fmt: skip
    p.add_argument("--scenarios", default=None,
                   help="comma list of single_stream, offline, server, server_search, concurrency "
                        f"(default {d['scenarios']})")  # fmt: skip
    p.add_argument("--concurrency", default=None,
                   help=f"requests in flight for the closed-loop sweep (default {d['concurrency']})")  # fmt: skip
    p.add_argument("--path", default=None,
                   help="inprocess (client calls the model), http (TensorFlow Serving REST on 127.0.0.1), or both "
                        f"(default {d['path']})")  # fmt: skip
    p.add_argument("--target", default=None, metavar="URL",
                   help="measure an external server speaking TensorFlow Serving's REST API instead (replaces --path)")  # fmt: skip
    p.add_argument(
        "--target-model", default=None, help="model name on --target (default: the --models name)"
    )
    p.add_argument("--input-shape", default=None, metavar="H,W,C",
                   help="with --target: one instance's shape (default: a built-in model's, else read "
                        "from the server's model metadata, GET /v1/models/NAME/metadata)")  # fmt: skip
    p.add_argument("--threads", default=None, help="comma list, e.g. 8,16 (default: 1..CPUs)")
    p.add_argument("--variants", default="local", help="comma list (default local)")
    p.add_argument("--variants-file", default=None, help="TOML file with more variants")
    p.add_argument("--engine", choices=("docker", "podman"), default=None)
    p.add_argument("--repeats", default=None,
                   help=f"repeats per configuration (default {d['repeats']}; with --budget: before the first look)")  # fmt: skip
    p.add_argument("--budget", default=None, metavar="DURATION|off",
                   help="adaptive repeats as in compare: after --repeats rounds, more rounds of the "
                        "configurations whose comparisons are undecided, until decided, --max-repeats, "
                        f"or this much time for the whole run (default {d['budget']}, off when --repeats is given; off: exactly --repeats)")  # fmt: skip
    p.add_argument("--max-repeats", type=argtypes.repeats, default=None,
                   help="with --budget: at most this many repeats (default 20)")  # fmt: skip
    p.add_argument("--min-effect", type=argtypes.fraction, default=None,
                   help="smallest difference that matters, e.g. 5%% (default): smaller ones are 'equivalent'")  # fmt: skip
    p.add_argument("--confidence", type=argtypes.fraction, default=None,
                   help="confidence of the intervals (default 0.95)")  # fmt: skip
    p.add_argument("--min-duration", default=None,
                   help=f"LoadGen's and the closed loop's minimum duration (default {d['min_duration']})")  # fmt: skip
    p.add_argument("--max-duration", default=None,
                   help=f"hard cap per load run (default {d['max_duration']})")  # fmt: skip
    p.add_argument("--min-queries", default=None,
                   help="minimum queries per load run (default auto: per scenario, what LoadGen's early "
                        "stopping needs: single_stream 64, server 500, concurrency 100, offline 1)")  # fmt: skip
    p.add_argument(
        "--max-queries", default="100000", help="hard cap on queries per load run (default 100000)"
    )
    p.add_argument(
        "--server-qps",
        default="10",
        help="LoadGen Server target QPS (and the search's start; default 10)",
    )
    p.add_argument(
        "--p99",
        default="100ms",
        help="latency bound for Server, the QPS search and the cheapest answer (default 100ms)",
    )
    p.add_argument(
        "--search-steps",
        default="5",
        help="Server QPS search: at most this many LoadGen runs (default 5)",
    )
    p.add_argument("--max-batch-size", default=None,
                   help="batching, a swept axis: comma list of batch limits (server-side batching over HTTP, like "
                        "TensorFlow Serving's max_batch_size; in-process LoadGen runs and Offline batch queued "
                        f"samples up to it; default {d['max_batch_size']} = no batching)")  # fmt: skip
    p.add_argument("--batch-timeout", default=None,
                   help="comma list: how long a batch waits for more requests (TensorFlow Serving's "
                        f"batch_timeout_micros; default {d['batch_timeout']})")  # fmt: skip
    p.add_argument("--encoding", choices=("json", "b64"), default=None,
                   help="request body: instances as JSON numbers, or {\"b64\": PNG} "
                        f"(default {d['encoding']})")  # fmt: skip
    p.add_argument("--timeout", default="1800", help="seconds per cell (default 1800)")
    common.add_pricing(p)  # the same options, defaults and help as compare and report
    p.add_argument(
        "--baseline",
        default=None,
        help="VARIANT[@THREADS] for ratios (default: the GPU if one ran, else the first "
        "variant; at its most threads, in-process first)",
    )
    p.add_argument(
        "--out", type=out_dir, default=None, help="results folder (default results/serve-<time>)"
    )
    p.add_argument(
        "-o", "--output", "--report", dest="report", type=Path, default=None, metavar="FILE.html",
        help="HTML report path (default reports/<run>/index.html; -o/--output as in compare and report)",
    )  # fmt: skip
    p.add_argument("--csv", type=Path, default=None, metavar="FILE.csv",
                   help="also write one row per serving cell to this CSV file")  # fmt: skip
    p.add_argument(
        "--resume", action="store_true", help="continue the run in --out (same arguments)"
    )
    p.add_argument("--dry-run", action="store_true",
                   help="print the planned cells per node type and the estimated bill (needs --pricing "
                        "and a catalog instance per thread count); run nothing")  # fmt: skip
    p.add_argument("--estimate-from", type=Path, default=None, metavar="RUN",
                   help="with --dry-run: cell times from an earlier results folder (default: rough)")  # fmt: skip
    p.set_defaults(func=run)


def resolved(args: argparse.Namespace) -> dict[str, Any]:
    """Each preset-able option: given, else the preset's, else the default."""
    preset = PRESETS.get(args.preset or "", {})
    out = {k: getattr(args, k) if getattr(args, k) is not None else preset.get(k, v)
           for k, v in DEFAULTS.items()}  # fmt: skip
    if args.repeats is not None and args.budget is None:  # --repeats N alone: exactly N
        out["budget"] = "off"
    return out


def _duration(option: str, text: str) -> float:
    return checked(option, argtypes.duration_s, text)


def parse_positive(option: str, text: str, hi: int = argtypes.MAX_COUNT) -> int:
    return checked(option, lambda t: argtypes.whole_number(t, 1, hi), text)


def parse_rate(option: str, text: str) -> float:
    value = argtypes.decimal(text)  # finite, ASCII digits: no "nan", "1_0", "٣"
    if value is None or not 0 < value <= 1e9:
        raise UserError(
            f"--{option}: expected a number greater than 0 and at most 1e9, got {argtypes.shown(text)}"
        )
    return value


def parse_concurrency(text: str) -> list[int]:
    from workloads.serving.request import MAX_CONCURRENCY

    # One client thread per request in flight: 10^6 would be a million threads.
    names = parse_names("concurrency", text)
    return list(dict.fromkeys(parse_positive("concurrency", v, MAX_CONCURRENCY) for v in names))


def parse_batching(sizes: str, timeouts: str) -> tuple[tuple[int, float], ...]:
    """--max-batch-size x --batch-timeout, as (size, timeout ms); size 1 (no batching)
    once, whatever the timeouts."""
    size_list = [parse_positive("max-batch-size", v, 1 << 16)
                 for v in parse_names("max-batch-size", sizes)]  # fmt: skip
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
    from tfvariants.analyze import adaptive, stats
    from tfvariants.plan.serve import ServeSpec
    from tfvariants.plan.spec import logical_cpus
    from tfvariants.variants import get_variant
    from workloads.serving import models
    from workloads.serving.request import SCENARIOS

    v = resolved(args)
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
    concurrency = parse_concurrency(str(v["concurrency"]))
    input_shape = parse_shape(args.input_shape) if args.input_shape else None
    if input_shape and not args.target:
        raise UserError("--input-shape is for --target (a served model's own shape is known)")
    if args.target:
        paths = ["target"]
        for m in model_names:
            if models.is_file(m):
                raise UserError(
                    f"--target: {m!r} is a file; name the model (a built-in name, or any name "
                    "with --target-model and --input-shape or a server that reports its metadata)"
                )
    else:
        paths = parse_names("path", str(v["path"]))
        for p in paths:
            if p not in ("inprocess", "http"):
                raise UserError(f"--path: unknown path {p!r} (inprocess, http; or --target URL)")
    threads = (checked("threads", argtypes.thread_list, args.threads) if args.threads is not None
               else default_threads(logical_cpus()))  # fmt: skip
    variants = parse_names("variants", args.variants)
    min_d, max_d = (
        _duration("min-duration", str(v["min_duration"])),
        _duration("max-duration", str(v["max_duration"])),
    )
    if min_d > max_d:
        raise UserError(
            f"--min-duration {v['min_duration']} is longer than --max-duration {v['max_duration']}"
        )
    auto = str(v["min_queries"]).strip().lower() == "auto"
    min_q = None if auto else parse_positive("min-queries", str(v["min_queries"]))
    max_q = parse_positive("max-queries", args.max_queries)
    if min_q is not None and min_q > max_q:
        raise UserError(f"--min-queries {min_q} is more than --max-queries {max_q}")
    repeats = parse_positive("repeats", str(v["repeats"]))
    budget_text = str(v["budget"]).strip().lower()
    budget_s = None if budget_text in ("off", "none", "0") else checked(
        "budget", argtypes.duration, budget_text)  # fmt: skip
    if budget_s is not None and budget_s > 366 * 86400:
        raise UserError(f"--budget: at most a year, got {v['budget']}")
    max_repeats = args.max_repeats or max(adaptive.DEFAULT_MAX_REPEATS, repeats)
    if max_repeats < repeats:
        raise UserError(f"--max-repeats {max_repeats} is below --repeats {repeats}")
    confidence = args.confidence if args.confidence is not None else stats.CONFIDENCE
    if not 0.5 < confidence <= 0.999:
        raise UserError(f"--confidence: must be above 0.5 and at most 0.999, got {confidence}")
    options: dict[str, Any] = {
        "min_duration_s": min_d, "max_duration_s": max_d, "min_queries": min_q, "max_queries": max_q,
        "server_qps": parse_rate("server-qps", args.server_qps),
        "p99_bound_ms": _duration("p99", args.p99) * 1e3,
        "search_steps": parse_positive("search-steps", args.search_steps),
        "encoding": str(v["encoding"]),
        "target_url": args.target, "target_model": args.target_model,
        "input_shape": input_shape,
        "timeout_s": checked("timeout", argtypes.positive_float, args.timeout),
        "budget_s": budget_s, "max_repeats": max_repeats,
        "min_effect": args.min_effect if args.min_effect is not None else stats.MIN_EFFECT,
        "confidence": confidence, "preset": args.preset,
    }  # fmt: skip
    if options["encoding"] not in ("json", "b64"):
        raise UserError(f"--encoding: expected json or b64, got {options['encoding']!r}")
    batching = parse_batching(str(v["max_batch_size"]), str(v["batch_timeout"]))
    variant_objs = {name: get_variant(name, args.variants_file) for name in variants}
    info = {n: {"kind": o.kind, "device": o.device} for n, o in variant_objs.items()}
    spec = ServeSpec(tuple(variants), tuple(threads), tuple(model_names), tuple(scenarios),
                     tuple(concurrency), tuple(paths), repeats, options, info,
                     batching)  # fmt: skip
    return spec, variant_objs


def _check_target(url: str, model: str, builtin: str, shape: list[int] | None) -> None:
    """The target answers for the model, and its input shape is known: given, a
    built-in model's, or from the server's metadata."""
    from workloads.serving import models
    from workloads.serving.http_client import Endpoint, ServingError

    try:
        endpoint = Endpoint(url, model)
        endpoint.check(timeout_s=5)
        if shape is None and models.input_shape_of(builtin) is None:
            if endpoint.metadata_shape(timeout_s=5) is None:
                raise ServingError(
                    f"the model metadata (GET {endpoint.status_path}/metadata) gives no fully "
                    "defined input shape: name one with --input-shape H,W,C"
                )
    except (ValueError, ServingError) as exc:
        raise UserError(f"--target {url}: {exc}") from None


LOADGEN_SPEC = "mlcommons-loadgen>=6.0"  # as the serve extra (setup.cfg)


def with_loadgen(scenarios: tuple[str, ...], variant_objs: dict[str, Any]) -> dict[str, Any]:
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
        if v.kind == "requirements" and not named:
            v = dataclasses.replace(v, requirements=(*v.requirements, LOADGEN_SPEC))
        out[name] = v
    return out


def _check_loadgen(scenarios: tuple[str, ...], variant_objs: dict[str, Any]) -> None:
    """LoadGen scenarios need mlcommons-loadgen where the worker runs: for this
    interpreter that is known now (stop before the sweep); for venvs and images each
    cell says so if it is missing."""
    import importlib.util

    from workloads.serving.request import LOADGEN_SCENARIOS

    needs = [s for s in scenarios if s in LOADGEN_SCENARIOS]
    local = [n for n, v in variant_objs.items() if v.kind == "local"]
    if needs and local and importlib.util.find_spec("mlperf_loadgen") is None:
        raise UserError(
            f"--scenarios {','.join(needs)} need MLPerf LoadGen, which is not installed in this "
            f"interpreter (variant {local[0]}): pip install 'tfvariants[serve]' "
            "(mlcommons-loadgen), or run only --scenarios concurrency"
        )


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from tfvariants.execute.matrix import Matrix
    from tfvariants.execute.serve_runner import run_serve_cell
    from tfvariants.plan.serve import ServeCell
    from tfvariants.render.html import write_report

    spec, variant_objs = build_serve_spec(args)
    pricing = common.pricing_from(args)
    if args.baseline:
        from tfvariants.analyze.analysis import parse_baseline

        base = parse_baseline(args.baseline)
        if base and base[0] not in spec.variants:
            raise UserError(f"--baseline {args.baseline}: {base[0]!r} is not one of --variants")
    if args.estimate_from is not None and not args.dry_run:
        raise UserError("--estimate-from is for --dry-run")
    console = Console(stderr=True, soft_wrap=True)
    if args.dry_run:
        from tfvariants.commands.serve_plan import dry_run

        return dry_run(spec, pricing, console, estimate_from=args.estimate_from)
    if args.resume and args.out is None:
        raise UserError("--resume needs --out RESULTS_DIR (the run to continue)")
    if args.target:
        for m in spec.models:
            _check_target(args.target, args.target_model or m, m, spec.options.get("input_shape"))
    variant_objs = ready_variants(with_loadgen(spec.scenarios, variant_objs), args.engine)
    out = args.out or Path("results") / f"serve-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    report_path = args.report or Path("reports") / out.name / "index.html"
    if args.resume and not (out / "run.json").is_file():
        raise UserError(f"--resume: {out / 'run.json'} not found (nothing to resume)")
    check_writable(out)
    common.check_report_outputs(report_path, args.csv, results_dirs=[out])
    _check_loadgen(spec.scenarios, variant_objs)

    from tfvariants.commands.serve_rounds import order_seed

    seed = order_seed(out, args.resume)
    if seed is not None:  # absent from a run stored before rounds were shuffled
        spec.options["order_seed"] = seed
    cells = spec.cells()
    console.print(f"[bold]serve[/]: {len(cells)} cells ({len(spec.variants)} variant(s) x "
                  f"{len(spec.threads)} thread count(s) x {len(spec.workloads)} model/scenario/path "
                  f"x {spec.repeats} repeat(s)) -> {out}", highlight=False)  # fmt: skip

    def run_one(cell: ServeCell, cells_dir: Path) -> dict[str, Any]:
        return run_serve_cell(cell, variant_objs[cell.variant], spec.options, cells_dir)

    matrix = Matrix(spec, out)
    before: dict[str, Any] = {}
    if args.resume:
        from tfvariants.store.rundir import load_run_dir

        before = load_run_dir(out).run.get("adaptive") or {}
    next_round, rule = None, None
    if spec.options.get("budget_s"):
        from tfvariants.analyze import adaptive
        from tfvariants.commands.serve_rounds import make_next_round

        rule = adaptive.stopping_rule(
            spec.repeats, int(spec.options["max_repeats"]),
            confidence=float(spec.options["confidence"]),
        )  # fmt: skip
        next_round = make_next_round(spec, rule, pricing=pricing, baseline=args.baseline)
        console.print(
            f"adaptive: looks after {', '.join(map(str, rule.looks))} repeats; more rounds only "
            f"while a comparison is undecided, within a budget of "
            f"{spec.options['budget_s'] / 60:.3g} min", highlight=False,
        )  # fmt: skip
    outcome = matrix.run(
        run_cell=run_one, resume=args.resume, console=console, next_round=next_round,
        budget_s=spec.options.get("budget_s"), spent_before=float(before.get("spent_s") or 0.0),
        budget_covers_plan=True,  # the default run's promise: an answer within the budget
    )  # fmt: skip
    if rule is not None:
        from tfvariants.commands import rounds

        rounds.record(out, rule, spec, before, outcome, console)
    console.print(f"{outcome.count('ok')} ok, {outcome.count('failed')} failed, "
                  f"{outcome.count('timeout')} timed out, {outcome.count('skipped')} skipped of "
                  f"{outcome.planned} cells ({len(outcome.ran)} run now)", highlight=False)  # fmt: skip
    for cid in outcome.problems[:20]:
        console.print(f"  [red]{outcome.statuses[cid]}[/] {cid}: {outcome.reasons.get(cid, '')}",
                      highlight=False)  # fmt: skip
    if outcome.missing and outcome.stopped.startswith("budget"):
        more = (outcome.spent_s + 600) / 60
        console.print(f"the budget ran out with {outcome.missing} planned cell(s) not run: the "
                      "report says what the cells that ran decide; continue with: tfvariants "
                      f"serve --resume --out {out} --budget {more:.0f}m (same arguments; the "
                      "budget counts the time already spent)", highlight=False)  # fmt: skip
    if outcome.was_interrupted:
        console.print(f"interrupted: finished cells are saved in {out}/cells; continue with: "
                      f"tfvariants serve --resume --out {out} (same arguments)", highlight=False)  # fmt: skip
        return 130
    if len(outcome.statuses) == 0:
        return outcome.exit_code()
    analysis = write_report(
        out, report_path, pricing=pricing, baseline=args.baseline, csv_path=args.csv,
        p99_bound_ms=spec.options["p99_bound_ms"], min_effect=spec.options["min_effect"],
        confidence=spec.options["confidence"],
    )  # fmt: skip
    serving = getattr(analysis, "serving", None)
    for m in serving.models if serving is not None else []:
        for line in m.conclusions[:3]:
            console.print(f"  {line}", highlight=False, markup=False)
    console.print(f"report: {report_path}", highlight=False, markup=False)
    if args.csv:
        console.print(f"csv: {args.csv}", highlight=False, markup=False)
    return outcome.exit_code()
