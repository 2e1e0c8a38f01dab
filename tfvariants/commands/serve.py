"""`tfvariants serve`: serving throughput and tail latency per variant and vCPU count,
then the report (a serving section) and the cost per million predictions.

A separate command rather than ``compare --task serve``: its matrix has other axes
(models, scenarios, concurrency, paths) and other options (durations, latency bound).
"""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path
from typing import Any

from tfvariants.commands import argtypes, common
from tfvariants.commands.matrix_args import checked, default_threads, parse_names, ready_variants
from tfvariants.commands.outdir import check_writable
from tfvariants.errors import UserError

DEFAULT_SCENARIOS = "single_stream,server,offline,concurrency"


def register(sub: Any) -> None:
    p = sub.add_parser(
        "serve",
        help="measure serving throughput and tail latency (LoadGen + closed loop) and cost per million predictions",
        description="Run serving cells (variant x threads x model x scenario [x concurrency] x path x "
        "repeat) in interleaved rounds, each whole inside its variant (model, HTTP server and "
        "load generator in one pinned worker), store one result per cell in OUT/cells/ and "
        "LoadGen's logs in OUT/artifacts/, then write the HTML report.",
    )  # fmt: skip
    p.add_argument("--models", default="mobilenet_v2",
                   help="comma list of built-in models (default mobilenet_v2; mobilenet_v2, resnet50, inception_v3, densenet121, "
                        "efficientnet_b0, nasnet_mobile, nasnet_large, noop) or .py / .keras files")  # fmt: skip
    p.add_argument("--scenarios", default=DEFAULT_SCENARIOS,
                   help="comma list of single_stream, offline, server, server_search, concurrency "
                        f"(default {DEFAULT_SCENARIOS})")  # fmt: skip
    p.add_argument("--concurrency", default="1,2,4,8,20,50",
                   help="requests in flight for the closed-loop sweep (default 1,2,4,8,20,50)")  # fmt: skip
    p.add_argument("--path", default="inprocess,http",
                   help="inprocess (client calls the model), http (TensorFlow Serving REST on 127.0.0.1), or both (default inprocess,http)")  # fmt: skip
    p.add_argument("--target", default=None, metavar="URL",
                   help="measure an external server speaking TensorFlow Serving's REST API instead (replaces --path)")  # fmt: skip
    p.add_argument(
        "--target-model", default=None, help="model name on --target (default: the --models name)"
    )
    p.add_argument("--threads", default=None, help="comma list, e.g. 8,16 (default: 1..CPUs)")
    p.add_argument("--variants", default="local", help="comma list (default local)")
    p.add_argument("--variants-file", default=None, help="TOML file with more variants")
    p.add_argument("--engine", choices=("docker", "podman"), default=None)
    p.add_argument("--repeats", default="3", help="repeats per configuration (default 3)")
    p.add_argument(
        "--min-duration",
        default="10s",
        help="LoadGen's and the closed loop's minimum duration (default 10s)",
    )
    p.add_argument("--max-duration", default="60s", help="hard cap per load run (default 60s)")
    p.add_argument(
        "--min-queries", default="100", help="minimum queries per load run (default 100)"
    )
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
    p.add_argument(
        "--max-batch-size",
        default="1",
        help="batch limit: server-side batching over HTTP; in-process LoadGen runs and Offline batch queued samples up to it (default 1)",
    )
    p.add_argument(
        "--batch-timeout",
        default="2ms",
        help="how long a batch waits for more requests (default 2ms)",
    )
    p.add_argument("--encoding", choices=("json", "b64"), default="json",
                   help="request body: instances as JSON numbers, or {\"b64\": PNG} (default json)")  # fmt: skip
    p.add_argument("--timeout", default="1800", help="seconds per cell (default 1800)")
    common.add_pricing(p)  # the same options, defaults and help as compare and report
    p.add_argument(
        "--baseline",
        default=None,
        help="VARIANT[@THREADS] for cost ratios (default: the GPU if one ran, else the first "
        "variant; at its most threads, in-process first)",
    )
    p.add_argument(
        "--out", type=Path, default=None, help="results folder (default results/serve-<time>)"
    )
    p.add_argument(
        "-o", "--output", "--report", dest="report", type=Path, default=None, metavar="FILE.html",
        help="HTML report path (default reports/<run>/index.html; -o/--output as in compare and report)",
    )  # fmt: skip
    p.add_argument(
        "--resume", action="store_true", help="continue the run in --out (same arguments)"
    )
    p.set_defaults(func=run)


def _duration(option: str, text: str) -> float:
    return checked(option, argtypes.duration_s, text)


def parse_positive(option: str, text: str, hi: int = argtypes.MAX_COUNT) -> int:
    return checked(option, lambda t: argtypes.whole_number(t, 1, hi), text)


def parse_rate(option: str, text: str) -> float:
    try:
        value = float(str(text).strip())
    except ValueError:
        value = float("nan")
    if not 0 < value <= 1e9:  # NaN fails too
        raise UserError(f"--{option}: expected a number greater than 0, got {text!r}")
    return value


def parse_concurrency(text: str) -> list[int]:
    from workloads.serving.request import MAX_CONCURRENCY

    # One client thread per request in flight: 10^6 would be a million threads.
    names = parse_names("concurrency", text)
    return list(dict.fromkeys(parse_positive("concurrency", v, MAX_CONCURRENCY) for v in names))


def build_serve_spec(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """ServeSpec + variant objects; every value checked before anything is written."""
    from tfvariants.plan.serve import ServeSpec
    from tfvariants.plan.spec import logical_cpus
    from tfvariants.variants import get_variant
    from workloads.serving import models
    from workloads.serving.request import SCENARIOS

    model_names = parse_names("models", args.models)
    for m in model_names:
        try:
            models.check_name(m)
        except ValueError as exc:
            raise UserError(f"--models: {exc}") from None
    scenarios = parse_names("scenarios", args.scenarios)
    for s in scenarios:
        if s not in SCENARIOS:
            raise UserError(f"--scenarios: unknown scenario {s!r} (known: {', '.join(SCENARIOS)})")
    concurrency = parse_concurrency(args.concurrency)
    if args.target:
        paths = ["target"]
        for m in model_names:
            if models.input_shape_of(m) is None:
                raise UserError(
                    f"--target: {m!r} is a file; name a built-in model (its input shape)"
                )
    else:
        paths = parse_names("path", args.path)
        for p in paths:
            if p not in ("inprocess", "http"):
                raise UserError(f"--path: unknown path {p!r} (inprocess, http; or --target URL)")
    threads = (checked("threads", argtypes.thread_list, args.threads) if args.threads
               else default_threads(logical_cpus()))  # fmt: skip
    variants = parse_names("variants", args.variants)
    min_d, max_d = (
        _duration("min-duration", args.min_duration),
        _duration("max-duration", args.max_duration),
    )
    if min_d > max_d:
        raise UserError(
            f"--min-duration {args.min_duration} is longer than --max-duration {args.max_duration}"
        )
    min_q, max_q = (
        parse_positive("min-queries", args.min_queries),
        parse_positive("max-queries", args.max_queries),
    )
    if min_q > max_q:
        raise UserError(f"--min-queries {min_q} is more than --max-queries {max_q}")
    options: dict[str, Any] = {
        "min_duration_s": min_d, "max_duration_s": max_d, "min_queries": min_q, "max_queries": max_q,
        "server_qps": parse_rate("server-qps", args.server_qps),
        "p99_bound_ms": _duration("p99", args.p99) * 1e3,
        "search_steps": parse_positive("search-steps", args.search_steps),
        "max_batch_size": parse_positive("max-batch-size", args.max_batch_size),
        "batch_timeout_ms": _duration("batch-timeout", args.batch_timeout) * 1e3,
        "encoding": args.encoding,
        "target_url": args.target, "target_model": args.target_model,
        "timeout_s": checked("timeout", argtypes.positive_float, args.timeout),
    }  # fmt: skip
    repeats = parse_positive("repeats", args.repeats)
    variant_objs = {v: get_variant(v, args.variants_file) for v in variants}
    info = {v: {"kind": o.kind, "device": o.device} for v, o in variant_objs.items()}
    spec = ServeSpec(tuple(variants), tuple(threads), tuple(model_names), tuple(scenarios),
                     tuple(concurrency), tuple(paths), repeats, options, info)  # type: ignore[arg-type]  # fmt: skip
    return spec, variant_objs


def _check_target(url: str, model: str) -> None:
    from workloads.serving.http_client import Endpoint, ServingError

    try:
        Endpoint(url, model).check(timeout_s=5)
    except (ValueError, ServingError) as exc:
        raise UserError(f"--target {url}: {exc}") from None


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


def _sigterm_as_interrupt() -> Any:
    """SIGTERM (e.g. from ``timeout``) ends the run like Ctrl-C: the cell in flight is
    stopped with its whole process group and the finished cells stay resumable. Returns
    the previous handler (None outside the main thread, where signals cannot be set)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, interrupt)


def run(args: argparse.Namespace) -> int:
    import signal

    previous = _sigterm_as_interrupt()
    try:
        return _run(args)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from tfvariants.execute.matrix import Matrix
    from tfvariants.execute.serve_runner import run_serve_cell
    from tfvariants.plan.serve import plan_serve_cells
    from tfvariants.render.html import write_report

    spec, variant_objs = build_serve_spec(args)
    pricing = common.pricing_from(args)
    if args.baseline:
        from tfvariants.analyze.analysis import parse_baseline

        base = parse_baseline(args.baseline)
        if base and base[0] not in spec.variants:
            raise UserError(f"--baseline {args.baseline}: {base[0]!r} is not one of --variants")
    if args.resume and args.out is None:
        raise UserError("--resume needs --out RESULTS_DIR (the run to continue)")
    if args.target:
        for m in spec.models:
            _check_target(args.target, args.target_model or m)
    variant_objs = ready_variants(variant_objs, args.engine)
    out = args.out or Path("results") / f"serve-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    report_path = args.report or Path("reports") / out.name / "index.html"
    if args.resume and not (out / "run.json").is_file():
        raise UserError(f"--resume: {out / 'run.json'} not found (nothing to resume)")
    check_writable(out)
    check_writable(report_path.parent)
    _check_loadgen(spec.scenarios, variant_objs)

    console = Console(stderr=True, soft_wrap=True)
    cells = plan_serve_cells(spec)
    console.print(f"[bold]serve[/]: {len(cells)} cells ({len(spec.variants)} variant(s) x "
                  f"{len(spec.threads)} thread count(s) x {len(spec.workloads)} model/scenario/path "
                  f"x {spec.repeats} repeat(s)) -> {out}", highlight=False)  # fmt: skip

    def run_one(cell: Any, cells_dir: Path) -> dict:
        return run_serve_cell(cell, variant_objs[cell.variant], spec.options, cells_dir)

    outcome = Matrix(spec, out, plan=plan_serve_cells).run(  # type: ignore[arg-type]
        run_cell=run_one, resume=args.resume, console=console
    )
    console.print(f"{outcome.count('ok')} ok, {outcome.count('failed')} failed, "
                  f"{outcome.count('timeout')} timed out, {outcome.count('skipped')} skipped of "
                  f"{outcome.planned} cells ({len(outcome.ran)} run now)", highlight=False)  # fmt: skip
    for cid in outcome.problems[:20]:
        console.print(f"  [red]{outcome.statuses[cid]}[/] {cid}: {outcome.reasons.get(cid, '')}",
                      highlight=False)  # fmt: skip
    if outcome.was_interrupted:
        console.print(f"interrupted: finished cells are saved in {out}/cells; continue with: "
                      f"tfvariants serve --resume --out {out} (same arguments)", highlight=False)  # fmt: skip
        return 130
    if len(outcome.statuses) == 0:
        return outcome.exit_code()
    write_report(out, report_path, pricing=pricing, baseline=args.baseline,
                 csv_path=report_path.with_name("serving.csv"),
                 p99_bound_ms=spec.options["p99_bound_ms"])  # fmt: skip
    console.print(
        f"report: {report_path} (CSV: {report_path.with_name('serving.csv')})", highlight=False
    )
    return outcome.exit_code()
