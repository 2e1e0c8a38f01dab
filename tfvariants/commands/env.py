"""`tfvariants env`: what this host is, and what a variant's TensorFlow binary is."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from tfvariants.errors import UserError

PROBE_TIMEOUT_S = 300.0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "env",
        help="show this host's CPU/topology and a variant's TensorFlow build",
        description="Probe the host (CPU, ISA flags, topology, pinning plans) and, in a "
        "fresh process of the variant, its TensorFlow (version, compiler, CUDA, oneDNN, "
        "the instructions the binary was not compiled for).",
    )
    p.add_argument("--variant", default="local", help="variant whose TensorFlow to probe")
    p.add_argument("--variants-file", default=None)
    p.add_argument("--no-tf", action="store_true", help="host only: skip the TensorFlow probe")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(func=run)


def probe_variant(variant: Any, module: str = "workloads.envprobe") -> dict[str, Any]:
    """Run ``module`` (workloads.envprobe, workloads.onednn) inside the variant; the
    backend never loads in this process."""
    from tfvariants.execute.runner import worker_env
    from tfvariants.plan.pinning import plan_pinning
    from tfvariants.plan.topology import read_topology

    topo = read_topology()
    plan = plan_pinning(topo.logical_count, topo)
    scratch = Path(tempfile.mkdtemp(prefix="tfv-env-"))
    scratch.chmod(0o777)
    try:
        cmd, env = variant.launch(None, worker_env(variant, plan), plan.cpus, scratch,
                                  module=module)  # fmt: skip
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                  timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL)  # fmt: skip
        except OSError as exc:
            raise UserError(
                f"variant '{variant.name}': cannot start {cmd[0]}: {exc.strerror}"
            ) from exc
        except subprocess.TimeoutExpired:
            raise UserError(f"variant '{variant.name}': probe timed out") from None
        result = scratch / "result.json"
        if not result.exists():
            tail = (proc.stderr or "").strip().splitlines()[-1:] or ["no output"]
            raise UserError(
                f"variant '{variant.name}': probe failed ({proc.returncode}): {tail[0]}"
            )
        return json.loads(result.read_text())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def host_info() -> dict[str, Any]:
    from tfvariants.plan.pinning import plan_pinning
    from tfvariants.plan.topology import read_topology
    from workloads.envprobe import probe

    topo = read_topology()
    info = probe(None)
    info["topology"] = {
        "logical_cpus": topo.logical_count,
        "physical_cores": topo.physical_count,
        "numa_nodes": len({c.node for c in topo.cpus}),
        "packages": len({c.package for c in topo.cpus}),
    }
    plans = {}
    for n in sorted({1, 2, 4, 8, 16, 32, 64, topo.logical_count}):
        plan = plan_pinning(n, topo)
        plans[str(n)] = plan.to_dict()
    info["pinning_plans"] = plans
    return info


def run(args: argparse.Namespace) -> int:
    from tfvariants.variants import get_variant

    data: dict[str, Any] = {"host": host_info()}
    if not args.no_tf:
        variant = get_variant(args.variant, args.variants_file)
        probed = probe_variant(variant)
        data["variant"] = {"name": variant.name, "kind": variant.kind,
                           "tensorflow": probed.get("tensorflow"),
                           "python": probed.get("python"), "env": probed.get("env")}  # fmt: skip
    if args.json:
        print(json.dumps(data, indent=2, default=str))
    else:
        render(data)
    return 0


def render(data: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    from tfvariants.plan.topology import format_cpu_list

    console = Console()
    host = data["host"]
    cpu = host.get("cpu", {})
    table = Table(title="Host", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    topo = host["topology"]
    table.add_row("CPU", str(cpu.get("model", "?")))
    table.add_row("CPUs", f"{topo['logical_cpus']} logical, {topo['physical_cores']} physical, "
                  f"{topo['numa_nodes']} NUMA node(s)")  # fmt: skip
    table.add_row("ISA", " ".join(cpu.get("isa_flags", [])) or "?")
    if cpu.get("load_avg"):
        table.add_row("load average", " ".join(str(x) for x in cpu["load_avg"]))
    table.add_row("Python", f"{host['python'].get('version')} ({host['python'].get('executable')})")
    console.print(table)

    plans = Table(title="Emulating N vCPUs on this host", title_justify="left")
    for col in ("vCPUs", "CPUs pinned", "intra-op", "inter-op", "note"):
        plans.add_column(col)
    for n, plan in host["pinning_plans"].items():
        note = (f"oversubscribed x{plan['oversubscription_ratio']:g}: not representative"
                if plan["oversubscribed"] else "")  # fmt: skip
        plans.add_row(n, format_cpu_list(plan["cpus"]), str(plan["intra_op"]),
                      str(plan["inter_op"]), note)  # fmt: skip
    console.print(plans)

    variant = data.get("variant")
    if variant:
        tf = variant.get("tensorflow") or {}
        t = Table(title=f"TensorFlow in variant '{variant['name']}' ({variant['kind']})",
                  show_header=False, title_justify="left")  # fmt: skip
        t.add_column(style="bold")
        t.add_column()
        if tf.get("error") or not tf:
            t.add_row("TensorFlow", tf.get("error", "not installed"))
        else:
            t.add_row("version", f"{tf.get('version')} ({tf.get('git_version')})")
            t.add_row("Keras", str(tf.get("keras_version")))
            t.add_row("compiler", str(tf.get("compiler_version")))
            missing = tf.get("missing_instructions")
            t.add_row("not compiled for", " ".join(missing) if missing
                      else ("nothing this CPU has" if missing == [] else "unknown (no guard message)"))  # fmt: skip
            onednn = tf.get("onednn", {})
            t.add_row("oneDNN", f"{onednn.get('state')} (TF_ENABLE_ONEDNN_OPTS="
                      f"{onednn.get('TF_ENABLE_ONEDNN_OPTS')})")  # fmt: skip
            build = tf.get("build_info", {})
            cuda = build.get("cuda_version") if tf.get("cuda_build") else None
            t.add_row("CUDA build", f"yes ({cuda})" if cuda else "no")
            t.add_row("GPUs visible", ", ".join(tf.get("gpus") or []) or "none")
        t.add_row("Python", str((variant.get("python") or {}).get("executable")))
        console.print(t)
