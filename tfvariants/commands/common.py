"""Options and output shared by several commands, declared once so that every command
spells, documents and validates them the same way."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfvariants.commands.outdir import check_name_lengths, check_no_loop, check_writable
from tfvariants.errors import UserError, one_line
from tfvariants.render.output import output_target
from tfvariants.render.terminal import print_table as print_table  # where commands look
from tfvariants.store.runfolder import EVIDENCE, evidence_reason

if TYPE_CHECKING:
    from tfvariants.analyze.cost.catalog import Catalog
    from tfvariants.analyze.cost.pricing import Pricing

# ---- options ----


def add_engine(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--engine",
        choices=("docker", "podman"),
        default=None,
        help="container engine for image variants (default: detected)",
    )


def add_variants_file(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--variants-file",
        default=None,
        metavar="FILE",
        help="TOML file with more variants (default: $TFVARIANTS_CONFIG or ./tfvariants.toml)",
    )


def add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def add_pricing(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pricing",
        default="gce-2017",
        metavar="NAME|FILE[@YYYY-MM]",
        help="pricing catalog, optionally @YYYY-MM[-DD] for the price date "
        "(default gce-2017; 'none' for no costs)",
    )
    p.add_argument(
        "--price-tier",
        choices=("spot", "preemptible", "on_demand"),
        default=None,
        help="price tier (default: the catalog's); spot and preemptible are one tier, "
        "shown in the catalog's own word",
    )
    p.add_argument(
        "--instance",
        action="append",
        default=[],
        metavar="VARIANT[@THREADS]=INSTANCE",
        help="bill these cells as this catalog instance (repeatable)",
    )
    p.add_argument(
        "--instance-family",
        default=None,
        metavar="FAMILY[,FAMILY...]",
        help="bill CPU cells only on these instance families (e.g. n2d,n2): the "
        "smallest instance of them that fits, the cheapest among equal sizes",
    )


def pricing_from(args: argparse.Namespace) -> Pricing | None:
    """The Pricing the options ask for, or None for ``--pricing none``."""
    if args.pricing is None or args.pricing.strip().lower() == "none":
        return None
    from tfvariants.analyze.cost.pricing import parse_families, parse_pricing_option

    pricing = parse_pricing_option(
        args.pricing,
        tier=args.price_tier,
        instance_map=args.instance,
        families=parse_families(getattr(args, "instance_family", None)),
    )
    print_catalog_warnings(pricing.catalog)
    return pricing


def print_catalog_warnings(catalog: Catalog) -> None:
    """What a catalog was accepted with (e.g. a spot price above on-demand, dropped)."""
    for w in catalog.warnings:
        print(f"tfvariants: warning: {one_line(w)}", file=sys.stderr)


class _DeprecatedAlias(argparse.Action):
    def __init__(self, *a: Any, new: str = "", **kw: Any) -> None:
        self.new = new
        super().__init__(*a, **kw)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        ns: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option: str | None = None,
    ) -> None:
        print(f"tfvariants: warning: {option} is deprecated, use {self.new}", file=sys.stderr)
        setattr(ns, self.dest, values)


def add_report_outputs(p: argparse.ArgumentParser, *, old_flag: str | None = None) -> None:
    """-o/--output (the HTML report) and --csv, the same in `compare` and `report`."""
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        metavar="FILE.html",
        help="HTML report path (default reports/<run>/index.html)",
    )
    if old_flag:
        p.add_argument(
            old_flag,
            dest="output",
            type=Path,
            action=_DeprecatedAlias,
            new="-o/--output",
            help=argparse.SUPPRESS,
        )
    p.add_argument(
        "--csv",
        type=Path,
        default=None,
        metavar="FILE.csv",
        help="also write one row per cell to this CSV file",
    )
    add_verbose(p)


def add_verbose(p: argparse.ArgumentParser) -> None:
    """--verbose: the long paragraphs (each verdict in a sentence, the noise, the
    cautions) on the terminal too, before the answer table; the report has them always."""
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also print each verdict in a sentence, the noise and the cautions (the HTML "
        "report has them always); without it the summary ends with the answer table only",
    )


def add_allow_mixed_hosts(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--allow-mixed-hosts",
        action="store_true",
        help="use cells from hosts that run.json does not declare (they are "
        "otherwise kept apart, with a warning)",
    )


def add_beside(p: argparse.ArgumentParser) -> None:
    """--beside DIR ...: the run folders the report sets this run beside (`compare`,
    `report`); none named, no other run is read (analyze/report/otherruns.py)."""
    p.add_argument(
        "--beside",
        type=Path,
        nargs="+",
        action="extend",
        default=None,
        metavar="DIR",
        help='set this run beside these run folders in the report ("Beside other runs"): '
        "each comparison's verdict and interval in every named run of the same task, hosts "
        "and cell options (data, scale, seed, steady window); a run that differs is named "
        "with the option that differs. None named: no other run is read",
    )


# ---- output paths: checked before any work starts ----


def check_output_file(path: Path, option: str, *, results_dirs: Sequence[Path] = ()) -> None:
    """One line, nothing written, when ``path`` cannot take an output file: a folder,
    or anywhere in a run folder's evidence (tfvariants.store.runfolder.evidence_reason),
    including the folders of ``results_dirs`` that a run is about to create."""
    check_name_lengths(path)
    if path.is_dir():
        raise UserError(
            f"{option} {path}: is a folder; give a file path, e.g. {path / 'index.html'}"
        )
    why = evidence_reason(path)
    if why:
        raise UserError(f"{option} {path}: refused, {why} (results are never overwritten)")
    try:  # a loop of links, a link to nothing, a socket: one line (render.output's rule)
        target, straight = output_target(path)
    except UserError as exc:
        raise UserError(f"{option} {exc}") from None
    if straight:  # a device, a FIFO, /dev/stdout: written into, never replaced
        if not os.access(target, os.W_OK):
            raise UserError(f"{option} {path}: not writable")
        return
    resolved = target.resolve()
    for d in results_dirs:
        check_no_loop(Path(d))
        d = Path(d).resolve()
        if d in resolved.parents and resolved.relative_to(d).parts[0] in EVIDENCE:
            why = f"that is inside the results folder {d}'s evidence"
    if why:
        raise UserError(f"{option} {path}: refused, {why} (results are never overwritten)")
    check_writable(target.parent)


def check_report_outputs(
    html: Path, csv: Path | None, *, results_dirs: Sequence[Path] = ()
) -> None:
    check_output_file(html, "-o/--output", results_dirs=results_dirs)
    if csv is not None:
        check_output_file(csv, "--csv", results_dirs=results_dirs)
        same = csv.resolve() == html.resolve() and not output_target(csv)[1]
        if same:
            raise UserError(f"-o/--output and --csv are the same file ({csv}): give two paths")
