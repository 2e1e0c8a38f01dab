"""List the built-in variants and those in the variants file, with where each runs and
whether it is ready (backend installed, environment or image built, GPU present); a variant
that is not ready shows the command that makes it. `variants build NAME...` builds
requirement-spec variants (e.g. tf-2.18, keras-jax) into cached environments: the same specs
reuse the cache. A variant whose TensorFlow needs instructions this CPU lacks is listed as
skipped, with the reason. `variants census NAME...` counts the instructions in a variant's
TensorFlow (libtensorflow_framework, under a minute; --full: every TensorFlow library, ~11
minutes for 2.14), cached by the files' content."""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from tfvariants.commands import common
from tfvariants.commands.command import Command
from tfvariants.errors import one_line

if TYPE_CHECKING:
    from tfvariants.variants.registry import Variant


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "action",
        nargs="?",
        choices=("list", "build", "census"),
        default="list",
        help="list (default), build or census",
    )
    p.add_argument("names", nargs="*", metavar="NAME", help="build, census: the variants")
    p.add_argument(
        "--full",
        action="store_true",
        help="census: every TensorFlow shared object, not only the framework library",
    )
    common.add_variants_file(p)
    common.add_engine(p)
    common.add_json(p)


def describe(variants_file: str | None = None, engine: str | None = None) -> list[dict[str, Any]]:
    """One dict per variant: its definition plus readiness (checked in parallel, since
    each check may start an interpreter or the engine)."""

    from tfvariants.variants import load_variants

    variants = list(load_variants(variants_file).values())
    variants = [v.with_engine(engine) for v in variants]
    from tfvariants.variants import skip_reason

    def check(variant: Variant) -> tuple[bool, str, str | None]:
        ready, detail = variant.readiness()
        return ready, detail, skip_reason(variant) if ready else None

    # Checked once per place a variant runs (10,000 overlays of one interpreter start
    # it once): readiness depends on the kind, interpreter or image, backend and device.
    def where(v: Variant) -> tuple[Any, ...]:
        return (v.kind, v.where(), v.backend, v.device, v.engine, v.image)

    unique = {where(v): v for v in variants}
    with ThreadPoolExecutor(max_workers=4) as pool:
        found = dict(zip(unique, pool.map(check, unique.values()), strict=True))
    readiness = [found[where(v)] for v in variants]
    rows = []
    for variant, (ready, detail, skipped) in zip(variants, readiness, strict=True):
        rows.append(
            {
                "name": variant.name,
                "kind": variant.kind,
                "device": variant.device,
                "where": variant.where(),
                "engine": variant.engine,
                "env": dict(variant.env),
                "keras": dict(variant.keras),
                "backend": variant.backend,
                "description": variant.description,
                "build": variant.build,
                "ready": ready and not skipped,
                "detail": f"skipped: {skipped}" if skipped else detail,
                "skipped": skipped,
            }
        )
    return rows


def build(names: list[str], variants_file: str | None = None) -> int:
    """Build each named variant (progress on stderr); one line per variant at the end."""
    import sys

    from rich.console import Console
    from rich.markup import escape

    from tfvariants.errors import UserError
    from tfvariants.variants import get_variants

    if not names:
        raise UserError("variants build: name at least one variant (e.g. tf-2.18)")
    console = Console(stderr=True, soft_wrap=True, highlight=False)
    variants = list(get_variants(names, variants_file).values())  # all checked first
    for variant in variants:
        console.print(f"[bold]{escape(variant.name)}[/]: building ({variant.kind})")

        def log(line: str, name: str = variant.name) -> None:
            console.print(f"  [dim]{escape(name)}: {escape(line)}[/]")

        done = variant.kind_impl.build(variant, log)
        print(f"{variant.name}: {done}", file=sys.stderr)
    return 0


def census(names: list[str], variants_file: str | None, full: bool, as_json: bool) -> int:
    """The instruction census of each named variant's TensorFlow (progress on stderr)."""
    import sys

    from tfvariants.errors import UserError
    from tfvariants.variants import get_variants
    from tfvariants.variants.census import variant_census
    from workloads import isacensus

    if not names:
        raise UserError("variants census: name at least one variant (e.g. intel-avx512-2.14)")
    variants = list(get_variants(names, variants_file).values())  # all checked first
    results = []
    for variant in variants:
        try:
            results.append(
                variant_census(variant, full=full, log=lambda m: print(m, file=sys.stderr))
            )
        except (FileNotFoundError, RuntimeError) as exc:
            raise UserError(str(exc)) from None
    if as_json:
        print(json.dumps(results, indent=2))
        return 0
    rows = []
    for one in results:
        for name, counts in [*one["files"].items(), ("total", one["total"])]:
            raw, rest, disp = counts["raw"], counts["rest"], counts["dispatched"]
            rows.append(
                [one["variant"], name, f"{raw['ymm']:,}", f"{raw['zmm']:,}", f"{raw['vfmadd']:,}"]
                + [f"{rest[i]:,} / {disp[i]:,}" for i in isacensus.ISAS]
                + [isacensus.compiled_for(counts) if name == "total" else ""]
            )
    common.print_table(
        "instruction census (per extension: outside / inside run-time-dispatched kernels)",
        ["variant", "library", "ymm", "zmm", "vfmadd", *isacensus.ISAS, "compiled for"],
        rows,
    )
    return 0


def run(args: argparse.Namespace) -> int:
    if args.action == "build":
        return build(args.names, args.variants_file)
    if args.action == "census":
        return census(args.names, args.variants_file, args.full, args.json)
    if args.names:
        from tfvariants.errors import UserError

        raise UserError(
            f"variants: unexpected argument(s) {' '.join(args.names)} (did you mean `variants "
            "build`?)"
        )
    rows = describe(args.variants_file, args.engine)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0

    common.print_table(
        "tfvariants variants",
        ["name", "kind", "backend", "device", "image / python", "env", "keras", "status"],
        [
            [
                row["name"],
                row["kind"],
                row["backend"],
                row["device"],
                one_line(row["where"]),
                " ".join(f"{k}={one_line(v)}" for k, v in row["env"].items()),  # raw: escapes
                json.dumps(row["keras"]) if row["keras"] else "",
                "ready" if row["ready"] else one_line(row["detail"]),
            ]
            for row in rows
        ],
        style=lambda col, v: ("green" if v == "ready" else "yellow") if col == "status" else None,
    )
    return 0


COMMAND = Command(
    3, "list the configured variants and whether each is ready; build one", add_options, run
)
