"""Probe the host (CPU, ISA flags, topology, pinning plans) and, in a fresh process of the
variant, its TensorFlow (version, compiler, CUDA, oneDNN, the instructions the binary was
not compiled for)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from tfvariants.commands import common
from tfvariants.commands.command import Command

if TYPE_CHECKING:
    from tfvariants.variants import Variant


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--variant", default="local", help="variant whose TensorFlow to probe")
    common.add_variants_file(p)
    common.add_engine(p)
    p.add_argument("--no-tf", action="store_true", help="host only: skip the TensorFlow probe")
    common.add_json(p)


def probe_variant(variant: Variant, module: str = "workloads.envprobe") -> dict[str, Any]:
    """Run ``module`` (workloads.envprobe, workloads.onednn) inside the variant, through
    the runner (tfvariants.execute.probe); the backend never loads in this process."""
    from tfvariants.execute.probe import run_probe

    return run_probe(variant, module)


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
        variant = variant.with_engine(args.engine)
        probed = probe_variant(variant)
        data["variant"] = {
            "name": variant.name,
            "kind": variant.kind,
            "tensorflow": probed.get("tensorflow"),
            "python": probed.get("python"),
            "env": probed.get("env"),
        }
    if args.json:
        print(json.dumps(data, indent=2, default=str))
    else:
        render(data)
    return 0


def render(data: dict[str, Any]) -> None:
    from tfvariants.commands.common import print_table
    from tfvariants.plan.topology import format_cpu_list

    host = data["host"]
    cpu = host.get("cpu", {})
    topo = host["topology"]
    rows = [
        ["CPU", str(cpu.get("model", "?"))],
        [
            "CPUs",
            f"{topo['logical_cpus']} logical, {topo['physical_cores']} physical, "
            f"{topo['numa_nodes']} NUMA node(s)",
        ],
        ["ISA", " ".join(cpu.get("isa_flags", [])) or "?"],
    ]
    if cpu.get("load_avg"):
        rows.append(["load average", " ".join(str(x) for x in cpu["load_avg"])])
    rows.append(["Python", f"{host['python'].get('version')} ({host['python'].get('executable')})"])
    print_table("Host", ["field", "value"], rows, show_header=False)

    plans = []
    for n, plan in host["pinning_plans"].items():
        note = (
            f"oversubscribed x{plan['oversubscription_ratio']:g}: not representative"
            if plan["oversubscribed"]
            else ""
        )
        plans.append(
            [n, format_cpu_list(plan["cpus"]), str(plan["intra_op"]), str(plan["inter_op"]), note]
        )
    print_table(
        "Emulating N vCPUs on this host",
        ["vCPUs", "CPUs pinned", "intra-op", "inter-op", "note"],
        plans,
    )

    variant = data.get("variant")
    if not variant:
        return
    tf = variant.get("tensorflow") or {}
    rows = []
    if tf.get("error") or not tf:
        rows.append(["TensorFlow", tf.get("error", "not installed")])
    else:
        rows.append(["version", f"{tf.get('version')} ({tf.get('git_version')})"])
        rows.append(["Keras", str(tf.get("keras_version"))])
        rows.append(["compiler", str(tf.get("compiler_version"))])
        missing = tf.get("missing_instructions")
        rows.append(
            [
                "not compiled for",
                " ".join(missing)
                if missing
                else ("nothing this CPU has" if missing == [] else "unknown (no guard message)"),
            ]
        )
        onednn = tf.get("onednn", {})
        rows.append(
            [
                "oneDNN",
                f"{onednn.get('state')} (TF_ENABLE_ONEDNN_OPTS="
                f"{onednn.get('TF_ENABLE_ONEDNN_OPTS')})",
            ]
        )
        build = tf.get("build_info", {})
        cuda = build.get("cuda_version") if tf.get("cuda_build") else None
        rows.append(["CUDA build", f"yes ({cuda})" if cuda else "no"])
        rows.append(["GPUs visible", ", ".join(tf.get("gpus") or []) or "none"])
    rows.append(["Python", str((variant.get("python") or {}).get("executable"))])
    print_table(
        f"TensorFlow in variant '{variant['name']}' ({variant['kind']})",
        ["field", "value"],
        rows,
        show_header=False,
    )


COMMAND = Command(
    1, "show this host's CPU/topology and a variant's TensorFlow build", add_options, run
)
