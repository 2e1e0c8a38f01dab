"""Does duet measurement narrow the interval here? A real benchmark (issue 25, item 5).

    python benchmarks/duet.py [--a local] [--b twin] [--workload mnist_cnn] [--rounds 10]
                              [--hog none|bursts|nice] [--out DIR] [--dry-run]

Duet benchmarking (Bulej et al., 2020): two configurations at the same thread count run
at the same time on disjoint CPUs, so interference from the rest of the machine hits
both alike and their per-pair ratio cancels it. This script measures, with the
product's own code, whether that narrows the interval of the ratio B/A at 1 thread each:

* sequential (what compare does without --duet): per round, cell A then cell B, one
  after the other, each run by the product's runner (tfvariants.execute.runner.run_cell)
  on the plan a lone 1-thread cell gets; the order alternates from round to round;
* duet (what ``compare --duet`` does): per round, A and B run by the product's duet
  executor (tfvariants.execute.duet ``Duet``, a slot of two cells) on the two plans
  plan/duet.py gives 1-thread cells on this host (two different cores where it has
  them): started together, the CPU sets swapped with the round's parity, the side that
  ends first kept busy with fillers until the other ends.

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
cells use, so interference is present; each slot then runs in a helper process of its
own (see ``Bench``). Results: OUT/sequential and OUT/duet are run
folders (cells/, logs/), OUT/bench-duet.json the summary.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from duet_summary import HEADER, ModeSummary, conclusion, summarise

from tfvariants.errors import UserError
from tfvariants.execute.duet import Duet
from tfvariants.execute.quiet import QuietWait
from tfvariants.execute.record import StoredCell
from tfvariants.execute.runner import Conditions, RunOptions, run_cell
from tfvariants.plan.cell import Cell
from tfvariants.plan.duet import DuetPlans, duet_plans
from tfvariants.plan.pinning import PinPlan
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
    runs: tuple[tuple[str, int], ...]  # (side, first CPU of its plan)
    together: bool  # duet: one slot of the duet executor


def cell_of(names: Mapping[str, str], workload: str, side: str, rnd: int) -> Cell:
    return Cell(names[side], 1, workload, rnd)


def duet_sides(
    plans: DuetPlans, names: Mapping[str, str], workload: str, rnd: int
) -> tuple[tuple[str, int], ...]:
    """(side, CPU) of a duet round as the duet executor places them (Duet.sides)."""
    by_id = {cell_of(names, workload, s, rnd).cell_id: s for s in SIDES}
    placed = Duet(plans, _no_runner).sides(*(cell_of(names, workload, s, rnd) for s in SIDES))
    return tuple((by_id[side.cell.cell_id], side.plan.cpus[0]) for side in placed if side.cell)


def _no_runner(*_: Any) -> StoredCell:
    raise AssertionError("only the placement is asked")


def schedule(rounds: int, plans: DuetPlans, names: Mapping[str, str], workload: str) -> list[Step]:
    """Sequential round i (A first in even rounds, B first in odd ones) on the plan a
    lone cell gets, then duet rounds 2i and 2i+1: equal slots, interleaved."""
    seq_cpu = plans.first.cpus[0]
    steps = []
    for i in range(rounds):
        order = SIDES if i % 2 == 0 else SIDES[::-1]
        steps.append(Step("sequential", i, tuple((s, seq_cpu) for s in order), False))
        for r in (2 * i, 2 * i + 1):
            steps.append(Step("duet", r, duet_sides(plans, names, workload, r), True))
    return steps


def host_plans(topology: Topology) -> DuetPlans | None:
    """The two 1-thread plans ``compare --duet`` would use on this host (plan/duet.py),
    or None where a duet does not fit (one CPU)."""
    plans = duet_plans(1, topology)
    return None if isinstance(plans, str) else plans


@dataclass
class Bench:
    """What the steps run: the two variants, the cells' options, a run folder per mode.

    With a hog, each slot runs in a helper process of its own (``duet.py --step``): the
    runner sweeps every new child of its process as the cell's leftover
    (execute/process.py Ownership), so a cell run from the process that started the
    hog's bursts would kill them. Without one, the slots run here."""

    names: Mapping[str, str]  # side -> variant name (different names)
    variants_file: Path | None
    workload: str
    options: RunOptions
    out: Path
    isolated: bool = False  # each slot in a helper process
    walls: dict[str, float] = field(default_factory=lambda: dict.fromkeys(MODES, 0.0))
    # mode -> round -> side -> steady step time (None: the cell failed)
    values: dict[str, dict[int, dict[str, float | None]]] = field(
        default_factory=lambda: {m: {} for m in MODES}
    )

    def _spec(self, step: Step) -> dict[str, Any]:
        return {
            "variants": dict(self.names),
            "variants_file": None if self.variants_file is None else str(self.variants_file),
            "workload": self.workload,
            "mode": step.mode,
            "round": step.round,
            "order": [side for side, _ in step.runs],
            "options": asdict(self.options),
            "folder": str(self.out / step.mode),
        }

    def _helper(self, step: Step) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), env.get("PYTHONPATH"))))
        spec = json.dumps(self._spec(step))
        command = [sys.executable, str(Path(__file__).resolve()), "--step", spec]
        subprocess.run(command, env=env, stdin=subprocess.DEVNULL, check=False)

    def _value(self, step: Step, side: str) -> float | None:
        """The stored cell's steady step time (None: failed, or no result at all)."""
        cell = cell_of(self.names, self.workload, side, step.round)
        path = RunFolder(self.out / step.mode).cell_path(cell.cell_id)
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(result, dict) or result.get("status") != "ok":
            return None
        return finite_number(get_path(result, "timing", "steady_step_s"))

    def run(self, step: Step) -> dict[str, float | None]:
        """The step's cells (a duet: one slot of the duet executor); their values."""
        t0 = time.monotonic()
        if self.isolated:
            self._helper(step)
        else:
            run_step(self._spec(step))
        self.walls[step.mode] += time.monotonic() - t0
        self.values[step.mode][step.round] = {s: self._value(step, s) for s in SIDES}
        return self.values[step.mode][step.round]


def run_step(spec: Mapping[str, Any]) -> int:
    """One slot of ``spec`` stored in its mode's folder: sequential, the cells one after
    the other by the product's runner on the plan a lone cell gets; duet, both in one
    slot of the product's duet executor on the host's duet plans."""
    from tfvariants.variants import get_variant

    names = spec["variants"]
    variants = {s: get_variant(str(names[s]), spec["variants_file"]) for s in SIDES}
    by_name = {names[s]: variants[s] for s in SIDES}
    options = RunOptions(**spec["options"])
    cells = [cell_of(names, str(spec["workload"]), s, int(spec["round"])) for s in spec["order"]]
    folder = RunFolder(spec["folder"])
    plans = host_plans(read_topology())
    assert plans is not None  # main() checked the host

    def run_on(
        cell: Cell,
        where: RunFolder,
        plan: PinPlan,
        quiet: Callable[[Sequence[int]], QuietWait] | None,
        stop: threading.Event | None,
    ) -> StoredCell:
        at = Conditions(quiet=quiet, stop=stop)
        return run_cell(cell, by_name[cell.variant], options, where, at=at, plan=plan)

    if spec["mode"] == "duet":
        Duet(plans, run_on).run(cells[0], cells[1], folder)
    else:
        for cell in cells:
            run_on(cell, folder, plans.first, None, None)
    return 0


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


def problem(args: argparse.Namespace, plans: DuetPlans | None) -> str | None:
    """Why the measurement cannot run as asked (one line), else None."""
    if args.rounds < 1:
        return "--rounds must be at least 1"
    if args.a == args.b:
        return "--a and --b must name different variants (B: twin for an A/A run)"
    if min(args.samples or 1, args.min_steady_steps) < 1 or not args.min_steady_s > 0:
        return "--samples, --min-steady-s and --min-steady-steps must be positive"
    if not 0 < args.confidence < 1:
        return "--confidence must be between 0 and 1"
    if plans is None:
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
    if argv[:1] == ["--step"] and len(argv) == 2:  # a helper: one slot (Bench._helper)
        return run_step(json.loads(argv[1]))
    args = parse(argv)
    plans = host_plans(read_topology())
    why = problem(args, plans)
    if why is not None:
        print(f"duet.py: {why}", file=sys.stderr)
        return 2
    assert plans is not None
    seq_cpu, pair = plans.first.cpus[0], (plans.first.cpus[0], plans.second.cpus[0])
    steps = schedule(args.rounds, plans, dict(zip(SIDES, (args.a, args.b), strict=True)),
                     args.workload)  # fmt: skip
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
    bench = Bench(names, variants_file, args.workload, options, args.out, args.hog != "none")
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
