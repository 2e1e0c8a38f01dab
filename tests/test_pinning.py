from pathlib import Path

import pytest

from tfvariants.plan.pinning import plan_pinning
from tfvariants.plan.topology import (
    LogicalCpu,
    Topology,
    format_cpu_list,
    parse_cpu_list,
    read_topology,
)


def make_sysfs(root: Path, cpus: dict[int, tuple[int, int]], nodes: dict[int, str], online: str):
    """cpus: cpu -> (core_id, package); nodes: node -> cpulist."""
    cpu_dir = root / "devices/system/cpu"
    cpu_dir.mkdir(parents=True)
    (cpu_dir / "online").write_text(online + "\n")
    for cpu, (core, pkg) in cpus.items():
        topo = cpu_dir / f"cpu{cpu}" / "topology"
        topo.mkdir(parents=True)
        (topo / "core_id").write_text(f"{core}\n")
        (topo / "physical_package_id").write_text(f"{pkg}\n")
    for node, cpulist in nodes.items():
        d = root / f"devices/system/node/node{node}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(cpulist + "\n")
    return root


def two_socket_64(tmp_path: Path) -> Topology:
    # Linux numbering on a 2-socket, 16-core/socket, HT box: cpu i and i+32 are siblings;
    # socket 0 has cores on cpus 0-15 and 32-47.
    cpus = {}
    for i in range(64):
        physical = i % 32
        cpus[i] = (physical % 16, physical // 16)
    root = make_sysfs(tmp_path, cpus, {0: "0-15,32-47", 1: "16-31,48-63"}, "0-63")
    return read_topology(root, allowed=None)


def test_cpu_list_round_trip():
    assert parse_cpu_list("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert format_cpu_list([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11"
    assert parse_cpu_list("") == []


def test_one_socket_two_cores(tmp_path):
    root = make_sysfs(tmp_path, {0: (0, 0), 1: (1, 0)}, {0: "0-1"}, "0-1")
    topo = read_topology(root, allowed=None)
    assert topo.logical_count == 2 and topo.physical_count == 2
    one = plan_pinning(1, topo)
    assert one.cpus == (0,) and one.intra_op == 1 and not one.oversubscribed
    two = plan_pinning(2, topo)
    assert two.cpus == (0, 1) and two.intra_op == 2
    assert two.env() == {
        "TF_NUM_INTRAOP_THREADS": "2",
        "TF_NUM_INTEROP_THREADS": "1",
        "OMP_NUM_THREADS": "2",
    }


def test_oversubscribed_runs_on_all_cpus_and_says_so(tmp_path):
    root = make_sysfs(tmp_path, {0: (0, 0), 1: (1, 0)}, {0: "0-1"}, "0-1")
    plan = plan_pinning(8, read_topology(root, allowed=None))
    assert plan.cpus == (0, 1)
    assert plan.oversubscribed and plan.oversubscription_ratio == 4.0
    assert plan.intra_op == 8  # the requested pool size, honestly oversubscribed


def test_siblings_together_and_one_numa_node_first(tmp_path):
    topo = two_socket_64(tmp_path)
    assert topo.physical_count == 32
    eight = plan_pinning(8, topo)
    # 4 whole cores of socket 0: each core contributes both hyperthreads.
    assert eight.cpus == (0, 1, 2, 3, 32, 33, 34, 35)
    sixteen = plan_pinning(16, topo)
    assert set(sixteen.cpus) <= set(range(0, 16)) | set(range(32, 48))
    thirty_two = plan_pinning(32, topo)
    assert thirty_two.cpus == tuple(sorted(list(range(0, 16)) + list(range(32, 48))))
    forty = plan_pinning(40, topo)  # does not fit one node: spills to node 1
    assert len(forty.cpus) == 40 and not forty.oversubscribed
    assert plan_pinning(64, topo).cpus == tuple(range(64))
    assert eight.inter_op == 2


def test_offline_cpus_are_not_used(tmp_path):
    cpus = {i: (i % 4, 0) for i in range(8)}  # 4 cores x 2 threads: i and i+4 siblings
    root = make_sysfs(tmp_path, cpus, {0: "0-7"}, "0-2,4-6")  # cpu3 and cpu7 offline
    topo = read_topology(root, allowed=None)
    assert topo.cpu_ids() == [0, 1, 2, 4, 5, 6]
    plan = plan_pinning(4, topo)
    assert plan.cpus == (0, 1, 4, 5)  # two whole cores
    assert 3 not in plan_pinning(6, topo).cpus
    assert plan_pinning(7, topo).oversubscribed


def test_allowed_restricts_to_our_cpuset(tmp_path):
    root = make_sysfs(tmp_path, {i: (i, 0) for i in range(4)}, {0: "0-3"}, "0-3")
    topo = read_topology(root, allowed={2, 3})
    assert topo.cpu_ids() == [2, 3]
    assert plan_pinning(1, topo).cpus == (2,)


def test_missing_sysfs_details_fall_back(tmp_path):
    cpu_dir = tmp_path / "devices/system/cpu"
    cpu_dir.mkdir(parents=True)
    (cpu_dir / "online").write_text("0-3")
    topo = read_topology(tmp_path, allowed=None)
    assert topo.logical_count == 4 and topo.physical_count == 4
    assert plan_pinning(2, topo).cpus == (0, 1)


def test_bad_thread_count():
    topo = Topology(cpus=(LogicalCpu(0, 0, 0, 0),))
    with pytest.raises(ValueError):
        plan_pinning(0, topo)


def test_a_model_server_gets_one_inter_op_thread_per_vcpu(tmp_path):
    # Training keeps a small inter-op pool; a server runs requests at once, each on an
    # inter-op thread, as TF Serving's default pool (one per core) lets it.
    from tfvariants.plan.pinning import for_serving

    topo = two_socket_64(tmp_path)
    for n in (1, 2, 8, 64, 100):
        train = plan_pinning(n, topo)
        serve = for_serving(train)
        assert serve.inter_op == n and train.inter_op <= 2
        assert (serve.cpus, serve.intra_op, serve.oversubscribed) == (
            train.cpus,
            train.intra_op,
            train.oversubscribed,
        )
        assert serve.env()["TF_NUM_INTEROP_THREADS"] == str(n)
