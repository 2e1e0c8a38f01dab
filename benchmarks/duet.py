"""Does duet measurement narrow the interval here? A real benchmark (issue 25, item 5).

    python benchmarks/duet.py [--a local] [--b twin] [--workload mnist_cnn] [--rounds 10]
                              [--hog none|bursts|nice] [--out DIR] [--dry-run]

Duet benchmarking (Bulej et al., 2020): two configurations at the same thread count run
at the same time on disjoint CPUs, so interference from the rest of the machine hits
both alike and their per-pair ratio cancels it. This script measures, with the
project's own runner (tfvariants.execute.runner.run_request, each worker pinned to its
plan's CPUs), whether that narrows the interval of the ratio B/A at 1 thread each:

* sequential (what compare does today): per round, cell A then cell B, one after the
  other, each pinned to the CPU a 1-thread cell gets (plan_pinning); the order
  alternates from round to round;
* duet: per round, A and B started together, one on each of two CPUs (on two different
  cores where the host has them); the CPUs swap every other round, so a faster CPU
  favours neither side.

The two modes are interleaved (one sequential round, then two duet rounds: the same
number of cell slots), so drift of the machine reaches both. Per round the ratio of
the two cells' steady-window step times (timing.steady_step_s) is formed; each mode's
rounds are compared by the project's paired comparison (analyze/statistics/pairing.py
compare_rounds, method "paired": Hodges-Lehmann with the Wilcoxon signed-rank interval).
Printed per mode: pairs, the wall time its cells took, the median per-pair ratio, the
interval and its width, the spread of the per-pair log ratios (median absolute
deviation), and the verdict; duet twice, at the same number of rounds as sequential and
at the same wall time (it runs two cells per slot, so it gets twice the pairs).

No wait for quiet, normal priority and every cell counted (none left out as disturbed)
in both modes: the duet's pair cannot wait out a burst on one CPU only, and the
comparison is of the measurement, not the gate.
``--hog bursts`` (or nice) runs benchmarks/noise.py's bounded CPU hog on every CPU the
cells use, so interference is present. Results: OUT/sequential and OUT/duet are run
folders (cells/, logs/), OUT/bench-duet.json the summary.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from itertools import groupby
from pathlib import Path
from typing import Any

from tfvariants.analyze.statistics import pairing
from tfvariants.errors import UserError
from tfvariants.execute.runner import RunOptions, WorkerJob, run_request, worker_request
from tfvariants.plan.cell import Cell
from tfvariants.plan.pinning import PinPlan, inter_op_threads, plan_pinning
from tfvariants.plan.topology import Topology, read_topology
from tfvariants.store.rawfields import finite_number, get_path
from tfvariants.store.runfolder import RunFolder

SIDES = ("a", "b")
MODES = ("sequential", "duet")
ROOT = Path(__file__).resolve().parents[1]  # the project: tfvariants and workloads
QUICK_WINDOW = (6.0, 50)  # compare --quick's steady window (commands/rounds.py)


@dataclass(frozen=True)
class Step:
    """One slot of the schedule: the cells of one round of one mode, in start order."""

    mode: str
    round: int
    runs: tuple[tuple[str, int], ...]  # (side, CPU)
    together: bool  # duet: started at the same time


def schedule(rounds: int, seq_cpu: int, duet_cpus: tuple[int, int]) -> list[Step]:
    """Sequential round i (A first in even rounds, B first in odd ones), then duet rounds
    2i and 2i+1 (A on the first CPU, then on the second): equal slots, interleaved."""
    steps = []
    for i in range(rounds):
        order = SIDES if i % 2 == 0 else SIDES[::-1]
        steps.append(Step("sequential", i, tuple((s, seq_cpu) for s in order), False))
        for r in (2 * i, 2 * i + 1):
            cpus = duet_cpus if r % 2 == 0 else duet_cpus[::-1]
            steps.append(Step("duet", r, tuple(zip(SIDES, cpus, strict=True)), True))
    return steps


def duet_pair(topology: Topology) -> tuple[int, int] | None:
    """Two CPUs for a duet: the first CPU of each of two different cores (siblings of one
    core share its execution units, so each side would slow the other), else two
    siblings; None on a host with one CPU."""
    ordered = sorted(topology.cpus, key=lambda c: (c.node, c.package, c.core, c.cpu))
    firsts = [next(g).cpu for _, g in groupby(ordered, key=lambda c: (c.node, c.package, c.core))]
    if len(firsts) >= 2:
        return firsts[0], firsts[1]
    if len(ordered) >= 2:
        return ordered[0].cpu, ordered[1].cpu
    return None


def one_cpu(cpu: int) -> PinPlan:
    """A 1-thread cell's plan on the given CPU (plan_pinning's pools, another CPU)."""
    return PinPlan(1, (cpu,), 1, inter_op_threads(1), False, 1.0)


@dataclass
class Bench:
    """What the steps run: the two variants, the cells' options, a run folder per mode.

    Each cell runs in a helper process of its own (``duet.py --cell``, which calls
    run_request): the runner sweeps every new child of its process as the cell's
    leftover (execute/process.py Ownership), so two cells run at once from one process,
    or beside the hog's processes, would kill each other's workers."""

    names: Mapping[str, str]  # side -> variant name (different names)
    variants_file: Path | None
    workload: str
    options: RunOptions
    out: Path
    walls: dict[str, float] = field(default_factory=lambda: dict.fromkeys(MODES, 0.0))
    # mode -> round -> side -> steady step time (None: the cell failed)
    values: dict[str, dict[int, dict[str, float | None]]] = field(
        default_factory=lambda: {m: {} for m in MODES}
    )

    def _start(self, step: Step, side: str, cpu: int) -> subprocess.Popen[bytes]:
        spec = {
            "variant": self.names[side],
            "variants_file": None if self.variants_file is None else str(self.variants_file),
            "workload": self.workload,
            "round": step.round,
            "cpu": cpu,
            "options": asdict(self.options),
            "folder": str(self.out / step.mode),
        }
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), env.get("PYTHONPATH"))))
        command = [sys.executable, str(Path(__file__).resolve()), "--cell", json.dumps(spec)]
        return subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL)

    def _value(self, step: Step, side: str) -> float | None:
        """The stored cell's steady step time (None: failed, or no result at all)."""
        cell = Cell(self.names[side], 1, self.workload, step.round)
        path = RunFolder(self.out / step.mode).cell_path(cell.cell_id)
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(result, dict) or result.get("status") != "ok":
            return None
        return finite_number(get_path(result, "timing", "steady_step_s"))

    def run(self, step: Step) -> dict[str, float | None]:
        """The step's cells (together: both helpers started at once); their values."""
        t0 = time.monotonic()
        if step.together:
            procs = [self._start(step, side, cpu) for side, cpu in step.runs]
            for proc in procs:
                proc.wait()
        else:
            for side, cpu in step.runs:
                self._start(step, side, cpu).wait()
        self.walls[step.mode] += time.monotonic() - t0
        self.values[step.mode][step.round] = {s: self._value(step, s) for s in SIDES}
        return self.values[step.mode][step.round]


def run_cell(spec: Mapping[str, Any]) -> int:
    """``--cell``: one cell of ``spec`` pinned to its CPU, stored in its mode's folder."""
    from tfvariants.variants import get_variant

    variant = get_variant(str(spec["variant"]), spec["variants_file"])
    options = RunOptions(**spec["options"])
    cell = Cell(str(spec["variant"]), 1, str(spec["workload"]), int(spec["round"]))
    plan = one_cpu(int(spec["cpu"]))
    job = WorkerJob(
        lambda path: worker_request(cell, plan, options, variant, path),
        config={**spec["options"], "keras_options": dict(variant.keras)},
        timeout_s=options.timeout_s,
    )
    run_request(cell, variant, plan, job, folder=RunFolder(spec["folder"]))
    return 0


@dataclass(frozen=True)
class ModeSummary:
    """One mode's pairs as the project's paired comparison judges them (ratio B/A)."""

    label: str
    pairs: int
    wall_s: float
    median_ratio: float | None
    lo: float | None
    hi: float | None
    spread: float | None  # MAD of the per-pair log ratios
    verdict: str

    @property
    def width(self) -> float | None:
        return None if self.lo is None or self.hi is None else self.hi - self.lo

    def line(self) -> str:
        def num(x: float | None, fmt: str = ".4f") -> str:
            return "n/a" if x is None else format(x, fmt)

        interval = f"{num(self.lo)}-{num(self.hi)}" if self.width is not None else "none"
        return (
            f"{self.label:<22} {self.pairs:>5} {self.wall_s:>7.0f} {num(self.median_ratio):>9} "
            f"{interval:>15} {num(self.width):>7} {num(self.spread):>7}  {self.verdict}"
        )


HEADER = (
    f"{'mode':<22} {'pairs':>5} {'wall s':>7} {'median':>9} {'interval':>15} "
    f"{'width':>7} {'spread':>7}  verdict"
)


def summarise(
    label: str,
    values: Mapping[int, Mapping[str, float | None]],
    rounds: Sequence[int],
    wall_s: float,
    confidence: float,
) -> ModeSummary:
    """The pairs of ``rounds`` where both cells measured: median ratio, paired interval
    (compare_rounds, "paired"), the log ratios' spread, the verdict."""
    a: dict[int, float] = {}
    b: dict[int, float] = {}
    for r in rounds:
        got = values.get(r) or {}
        va, vb = got.get("a"), got.get("b")
        if va is not None and vb is not None and va > 0 and vb > 0:
            a[r], b[r] = va, vb
    if not a:
        return ModeSummary(label, 0, wall_s, None, None, None, None, "no pair measured")
    logs = [math.log(b[r] / a[r]) for r in a]
    med = statistics.median(logs)
    spread = statistics.median(abs(x - med) for x in logs)
    c = pairing.compare_rounds(a, b, confidence=confidence, method="paired")
    lo, hi = (c.ratio.lo, c.ratio.hi) if c.ratio.has_interval else (None, None)
    return ModeSummary(label, len(a), wall_s, math.exp(med), lo, hi, spread, c.verdict)


def summaries(bench: Bench, rounds: int, confidence: float) -> list[ModeSummary]:
    """Sequential; duet at the same rounds; duet at the same wall time (all its rounds).
    The first is charged the sequential wall, the second half the duet's."""
    seq = bench.values["sequential"]
    duet = bench.values["duet"]
    half = bench.walls["duet"] * rounds / max(len(duet), 1)
    return [
        summarise("sequential", seq, range(rounds), bench.walls["sequential"], confidence),
        summarise("duet, same rounds", duet, range(rounds), half, confidence),
        summarise("duet, same wall", duet, range(2 * rounds), bench.walls["duet"], confidence),
    ]


def conclusion(rows: Sequence[ModeSummary]) -> str:
    """The widths side by side: what "keep it only if it narrows" is decided from."""
    seq, same_rounds, same_wall = rows
    if seq.width is None or same_wall.width is None:
        return "no interval in some mode (too few pairs): no conclusion; more --rounds"
    parts = [f"same wall {same_wall.width / seq.width:.2f}x"]
    if same_rounds.width is not None:
        parts.insert(0, f"same rounds {same_rounds.width / seq.width:.2f}x")
    return (
        "duet interval width against sequential: " + ", ".join(parts) + " (below 1: narrower; "
        "one run's widths are themselves noisy, repeat before deciding)"
    )


TWIN_TOML = """# An A/A twin: the local variant under another name (changes nothing).
[variants.twin]
base = "local"
description = "local, again: an A/A control"
"""


def cell_options(args: argparse.Namespace) -> RunOptions:
    """compare --quick's cell: the workload's quick scale and the quick steady window,
    unless given."""
    from tfvariants.commands.matrix_args import quick_scale

    return replace(
        RunOptions(),
        samples=args.samples or quick_scale(args.workload)["samples"],
        min_steady_s=args.min_steady_s,
        min_steady_steps=args.min_steady_steps,
        quick=True,
        timeout_s=args.timeout,
    )


def load_sides(args: argparse.Namespace) -> tuple[dict[str, str], Path | None]:
    """The two variants' names, checked ready to run (a requirement-spec one is built on
    first use), and the variants file the cells read them from; ``twin`` without
    --variants-file: `local` under another name."""
    from tfvariants.commands.matrix_args import ready_variants
    from tfvariants.variants import get_variants

    names = [args.a, args.b]
    variants_file = args.variants_file
    if variants_file is None and "twin" in names:
        variants_file = args.out.resolve() / "twin.toml"
        variants_file.write_text(TWIN_TOML, encoding="utf-8")
    ready_variants(get_variants(names, variants_file), None)
    return dict(zip(SIDES, names, strict=True)), variants_file


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--a", default="local", help="configuration A (1 thread)")
    p.add_argument("--b", default="twin", help="configuration B; twin: A/A with local")
    p.add_argument("--variants-file", type=Path, help="a variants TOML for --a/--b")
    p.add_argument("--workload", default="mnist_cnn")
    p.add_argument(
        "--rounds",
        type=int,
        default=10,
        help="sequential rounds (duet runs twice as many in the same slots)",
    )
    p.add_argument(
        "--hog",
        choices=("none", "bursts", "nice"),
        default="none",
        help="benchmarks/noise.py's CPU hog on the cells' CPUs meanwhile",
    )
    p.add_argument("--samples", type=int, help="training samples (default: the quick scale's)")
    p.add_argument("--min-steady-s", type=float, default=QUICK_WINDOW[0])
    p.add_argument("--min-steady-steps", type=int, default=QUICK_WINDOW[1])
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per cell")
    p.add_argument("--seed", type=int, default=1, help="the hog's bursts")
    p.add_argument("--out", type=Path, default=Path("results") / "bench-duet")
    p.add_argument("--dry-run", action="store_true", help="print the schedule; run nothing")
    return p.parse_args(argv)


def problem(args: argparse.Namespace, pair: tuple[int, int] | None) -> str | None:
    """Why the measurement cannot run as asked (one line), else None."""
    if args.rounds < 1:
        return "--rounds must be at least 1"
    if args.a == args.b:
        return "--a and --b must name different variants (B: twin for an A/A run)"
    if min(args.samples or 1, args.min_steady_steps) < 1 or not args.min_steady_s > 0:
        return "--samples, --min-steady-s and --min-steady-steps must be positive"
    if not 0 < args.confidence < 1:
        return "--confidence must be between 0 and 1"
    if pair is None:
        return "a duet needs two CPUs; this process may use one"
    if not args.dry_run and args.out.exists() and any(args.out.iterdir()):
        return f"{args.out} is not empty: choose another --out"
    return None


def measure(
    bench: Bench, steps: Sequence[Step], hog_kind: str, hog_cpus: list[int], seed: int
) -> dict[str, Any]:
    """Run the steps (under the hog, if any); what the hog did."""
    from noise import Hog  # benchmarks/noise.py, beside this file

    kind = "quiet" if hog_kind == "none" else hog_kind  # "quiet": a hog that does nothing
    with Hog(kind, hog_cpus, seed=seed, max_s=24 * 3600.0) as hog:
        for n, step in enumerate(steps, 1):
            got = bench.run(step)
            shown = ", ".join(f"{s}={v:.5f}" if v else f"{s}=failed" for s, v in got.items())
            print(
                f"[{n}/{len(steps)}] {step.mode} round {step.round} "
                f"{' '.join(f'{s}@cpu{c}' for s, c in step.runs)}: {shown}",
                flush=True,
            )
        return {"kind": hog_kind, "duty": round(hog.duty, 3), "bursts": hog.bursts}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--cell"] and len(argv) == 2:  # a helper: one cell (Bench._start)
        return run_cell(json.loads(argv[1]))
    args = parse(argv)
    topology = read_topology()
    pair = duet_pair(topology)
    why = problem(args, pair)
    if why is not None:
        print(f"duet.py: {why}", file=sys.stderr)
        return 2
    assert pair is not None
    seq_cpu = plan_pinning(1, topology).cpus[0]
    steps = schedule(args.rounds, seq_cpu, pair)
    if args.dry_run:
        for s in steps:
            together = "together" if s.together else "one after the other"
            print(
                f"{s.mode} round {s.round}: {', '.join(f'{x}@cpu{c}' for x, c in s.runs)} "
                f"({together})"
            )
        return 0
    made = not args.out.exists()
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        names, variants_file = load_sides(args)
    except UserError as exc:
        if made:  # nothing half-written: the folder held only the twin's file
            shutil.rmtree(args.out)
        print(f"duet.py: {exc}", file=sys.stderr)
        return 2
    options = cell_options(args)
    bench = Bench(names, variants_file, args.workload, options, args.out)
    print(
        f"duet: A={args.a} B={args.b} {args.workload} at 1 thread; sequential on CPU "
        f"{seq_cpu}, duet on CPUs {pair[0]},{pair[1]}; {len(steps)} slots",
        flush=True,
    )
    hog = measure(bench, steps, args.hog, sorted({seq_cpu, *pair}), args.seed)
    rows = summaries(bench, args.rounds, args.confidence)
    print(
        f"\nratio B/A ({args.b} / {args.a}), {args.confidence:.0%} paired interval; "
        f"hog {hog['kind']} on {hog['duty']:.0%}"
    )
    print(HEADER)
    for row in rows:
        print(row.line())
    print(conclusion(rows))
    report = {
        "a": args.a,
        "b": args.b,
        "workload": args.workload,
        "rounds": args.rounds,
        "confidence": args.confidence,
        "hog": hog,
        "sequential_cpu": seq_cpu,
        "duet_cpus": list(pair),
        "walls_s": bench.walls,
        "values": bench.values,
        "summaries": [{**asdict(r), "width": r.width} for r in rows],
    }
    (args.out / "bench-duet.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
