"""Today's catalogs, the spot/preemptible tier words, `prices import`, the dry-run bill
and the run.json host declarations (no Ray needed)."""

from __future__ import annotations

import json

import pytest

from tests.resultfactory import make_result, write_results
from tfvariants.analyze.cost.catalog import load_catalog
from tfvariants.analyze.cost.pricing import parse_pricing_option
from tfvariants.cli import main
from tfvariants.errors import UserError
from tfvariants.store.runhosts import declare_hosts, ray_node_entry

# The column header of SkyPilot's GCP catalog (vms.csv), split to stay within 100 columns.
GCP_HEADER = (
    "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,"
    "Region,AvailabilityZone,Price,SpotPrice\n"
)
SKY = (
    GCP_HEADER
    + """\
n2d-highcpu-64,64.0,64.0,,,,us-central1,us-central1-a,1.99603,0.41434
n2d-highcpu-64,64.0,64.0,,,,us-central1,us-central1-b,1.99603,0.41434
n2d-highcpu-64,64.0,64.0,,,,europe-west4,europe-west4-a,2.1975,0.42752
n4-standard-2,2.0,8.0,,,,us-central1,us-central1-a,0.09477,
p5.48xlarge,192.0,2048.0,H100,8,,us-central1,x,4.20076,7.60804
,,,H100,1,{},us-central1,us-central1-a,4.20076,2.253
"""
)
SIMPLE_HEAD = "instance,vcpus,gpu,on_demand,spot,region,date\n"


def test_builtin_catalogs_today_say_spot_and_validate():
    gce = load_catalog("gce-2026")
    assert gce.spot_word == "spot" and gce.default_tier == "preemptible"
    assert gce.tier_word("preemptible") == "spot"
    n2 = gce.instance("n2-highcpu-8")
    sel = gce.price(n2)
    assert (sel.per_hour, sel.tier) == (0.082, "preemptible")
    for inst in gce.instances:
        for p in inst.prices:
            assert p.preemptible is None or p.preemptible < p.on_demand
    assert gce.instance("a2-highgpu-1g").gpu_type == "A100"
    assert load_catalog("aws-2026").instance("c7i.2xlarge").prices[0].on_demand == 0.357
    assert load_catalog("gce-2017").tier_word("preemptible") == "preemptible"


def test_spot_and_preemptible_are_one_tier():
    a = parse_pricing_option("gce-2026", tier="spot")
    b = parse_pricing_option("gce-2026", tier="preemptible")
    assert a.tier == b.tier == "preemptible"
    # billed as the cheapest 8-vCPU instance at that tier: n2d-highcpu-8 spot
    assert a.cost("local", 8, 3600).instance == b.cost("local", 8, 3600).instance == "n2d-highcpu-8"
    assert a.cost("local", 8, 3600).cost == pytest.approx(0.05179)


def test_catalog_with_spot_and_preemptible_in_one_point_is_refused(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'name = "b"\nsource = "s"\n[billing]\nrule = "per_second"\n[[instance]]\nname = "x"\n'
        'vcpus = 1\nprices = [{ as_of = "2026-11", spot = 0.1, preemptible = 0.1 }]\n'
    )
    with pytest.raises(UserError, match="spot or preemptible, not both"):
        load_catalog(str(bad))


def test_import_skypilot_csv(tmp_path, capsys):
    src = tmp_path / "vms.csv"
    src.write_text(SKY)
    out = tmp_path / "mine.toml"
    assert main(["prices", "import", str(src), "-o", str(out), "--region", "us-central1",
                 "--as-of", "2026-11-22"]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert "p5.48xlarge: spot 7.60804 above on-demand 4.20076: spot dropped" in err
    assert "1 accelerator-only row(s) skipped" in err
    cat = load_catalog(str(out))
    assert cat.spot_word == "spot"
    n2d = cat.instance("n2d-highcpu-64").prices[0]
    assert (n2d.on_demand, n2d.preemptible, n2d.as_of) == (1.99603, 0.41434, "2026-11-22")
    p5 = cat.instance("p5.48xlarge")
    assert (p5.gpu_type, p5.gpu_count, p5.prices[0].preemptible) == ("H100", 8, None)
    assert cat.instance("n4-standard-2").prices[0].preemptible is None
    assert cat.billing.minimum_seconds == 60
    # --match picks instances; a SkyPilot file needs a region
    assert main(["prices", "import", str(src), "-o", str(out), "--region", "us-central1",
                 "--match", "n2d-*", "--force"]) == 0  # fmt: skip
    assert [i.name for i in load_catalog(str(out)).instances] == ["n2d-highcpu-64"]
    assert main(["prices", "import", str(src), "-o", str(tmp_path / "x.toml")]) == 2
    assert "choose one with --region" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("big,8,,nan,,r,2026-11", "a price must be finite and > 0"),
        ("big,8,,0,,r,2026-11", "a price must be finite and > 0"),
        ("big,8,,-1,,r,2026-11", "a price must be finite and > 0"),
        ("big,8,,inf,,r,2026-11", "a price must be finite and > 0"),
        ("big,2.5,,1,,r,2026-11", "whole number of vCPUs"),
        ("big,8,,1,,r,2026-13", "date: expected a real"),
        ("big,8,,1,,r,2026-02-30", "date: expected a real"),
        ("big,8,,,,r,2026-11", "needs on_demand and/or spot"),
        ("big,8,two L4,1,,r,2026-11", "gpu: expected"),
    ],
)
def test_import_simple_csv_rejects_bad_rows_in_one_line(tmp_path, capsys, row, message):
    src = tmp_path / "p.csv"
    src.write_text(SIMPLE_HEAD + "ok,4,,0.2,0.05,r,2026-11\n" + row + "\n")
    out = tmp_path / "p.toml"
    assert main(["prices", "import", str(src), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{src}:3" in err and message in err
    assert not out.exists()


def test_import_simple_csv(tmp_path):
    src = tmp_path / "p.csv"
    src.write_text(SIMPLE_HEAD + "c4-highcpu-8,8,,0.37,0.11,us-central1,2026-11-20\n"
                   "g2-standard-4,4,1x L4,0.71,0.28,us-central1,2026-11\n")  # fmt: skip
    out = tmp_path / "p.toml"
    assert main(["prices", "import", str(src), "-o", str(out)]) == 0
    cat = load_catalog(str(out))
    assert cat.default_as_of == "2026-11-20"  # the latest row: every row is selected
    pricing = parse_pricing_option(str(out))
    assert pricing.cost("gpu", 8, 10, device="gpu").instance == "g2-standard-4"
    assert pricing.cost("local", 8, 3600).per_hour == 0.11


def test_dry_run_prints_node_types_and_bill(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    code = main(["compare", "--executor", "ray", "--dry-run", "--threads", "8,16",
                 "--variants", "local,gpu", "--workloads", "cifar10_cnn", "--repeats", "2",
                 "--epochs", "1", "--pricing", "gce-2026", "--instance", "gpu=a2-highgpu-1g",
                 "--out", str(tmp_path / "r")])  # fmt: skip
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert code == 0, text
    # The GPU runs once per round at its instance's 12 vCPUs, not at 8 and 16.
    assert "6 cells on a Ray cluster 3 node type(s)" in text
    for name in ("n2d-highcpu-8", "n2d-highcpu-16", "a2-highgpu-1g", "gpu@12"):
        assert name in text
    assert "gpu@8" not in text and "gpu@16" not in text
    assert "times are ROUGH" in text and "estimated bill" in text
    # One epoch of cifar10_cnn: the study's 3151.5 s / 20 epochs (pip, 8 vCPUs) + 15 s per
    # cell, 2 cells = 346 s billed at 0.05179 $/h (n2d-highcpu-8 spot, the cheapest 8-vCPU)
    assert "$0.00498" in text
    # the GPU: the K80's 763.2 s / 20 + 15 s, 2 cells = 107 s at 1.44296 $/h
    assert "$0.0429" in text
    assert not (tmp_path / "r").exists()  # a dry run writes nothing


def test_dry_run_plans_the_gpu_once_per_workload(capsys):
    """Issue example: pip x 8/16/32/64 and a GPU, six workloads, 5 repeats: 30 GPU cells
    (one configuration per workload) + 30 x 4 pip cells = 150, not 240."""
    code = main(
        [
            "compare",
            "--executor",
            "ray",
            "--dry-run",
            "--threads",
            "8,16,32,64",
            "--variants",
            "pip,gpu",
            "--workloads",
            "all",
            "--pricing",
            "gce-2026",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "dry run: 150 cells on a Ray cluster" in captured.out
    rows = [line.split() for line in captured.out.splitlines()]
    gpu_rows = [r for r in rows if r and r[0] == "a2-highgpu-1g"]
    assert len(gpu_rows) == 1 and gpu_rows[0][4] == "30"  # node type, vCPUs, "1x A100", cells
    per_config = [r for r in rows if len(r) > 1 and r[1].startswith("gpu@")]
    assert {r[1] for r in per_config} == {"gpu@12"} and len(per_config) == 6


def test_one_instance_rule_for_dry_run_and_run(tmp_path, capsys):
    """2 threads on gce-2017 (no 2-vCPU instance): the dry run and a run's report both
    bill the smallest instance that holds them, and say so."""
    from tfvariants.analyze.cost.estimate import place_cells

    pricing = parse_pricing_option("gce-2017")
    placed = place_cells([("local", 2)], {"local": "cpu"}, pricing)
    inst, why = placed[("local", 2)]
    assert inst.name == pricing.cost("local", 2, 60).instance
    assert "smallest instance with at least 2 vCPUs" in why
    assert main(["compare", "--dry-run", "--threads", "2", "--variants", "local",
                 "--workloads", "mnist_cnn", "--quick", "--pricing", "gce-2017"]) == 0  # fmt: skip
    assert "smallest instance with at least 2 vCPUs" in capsys.readouterr().out


def test_explicit_gpu_threads_are_kept_and_labelled(capsys):
    code = main(
        [
            "compare",
            "--dry-run",
            "--threads",
            "8",
            "--variants",
            "pip,gpu@16",
            "--workloads",
            "mnist_cnn",
            "--repeats",
            "1",
            "--pricing",
            "gce-2026",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "gpu@16" in captured.out and "gpu@12" not in captured.out
    assert (
        main(
            [
                "compare",
                "--dry-run",
                "--threads",
                "8",
                "--variants",
                "pip,pip@4",
                "--workloads",
                "mnist_cnn",
                "--pricing",
                "gce-2026",
            ]
        )
        == 2
    )
    assert "named twice" in capsys.readouterr().err


def test_dry_run_estimates_from_an_earlier_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    runs = [make_result("local", t, "mnist_mlp", r, steady_epoch_s=10.0) for t in (8, 16)
            for r in range(2)]  # fmt: skip
    write_results(tmp_path / "before", runs)
    code = main(
        [
            "compare",
            "--dry-run",
            "--threads",
            "8,16",
            "--variants",
            "local",
            "--workloads",
            "mnist_mlp",
            "--repeats",
            "1",
            "--pricing",
            "gce-2026",
            "--price-tier",
            "on_demand",
            "--estimate-from",
            str(tmp_path / "before"),
        ]
    )
    captured = capsys.readouterr()
    err = captured.err + captured.out
    assert code == 0, err
    assert "times from" in err and "ROUGH" not in err
    assert "on-demand" in err
    # the stored cells took 10 * 1.5 + 10 + 3 = 28 s each (warm-up + steady + overhead)
    assert "28 s" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--threads", "999", "--executor", "ray"], "no priced instance with 999 or more vCPUs"),
        (["--threads", "8", "--ray-address", "127.0.0.1:1"], "need --executor ray"),
        (["--threads", "8", "--estimate-from", "x"], "is for --dry-run"),
        (["--threads", "8", "--dry-run", "--estimate-from", "nope"], "not a results folder"),
    ],
)
def test_cluster_option_errors_are_one_line(tmp_path, capsys, args, message):
    code = main(["compare", "--variants", "local", "--workloads", "mnist_mlp",
                 "--pricing", "gce-2026", "--out", str(tmp_path / "r"), *args])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "r").exists()


def test_declare_hosts_merges_ray_nodes(tmp_path):
    from tfvariants.plan.spec import MatrixSpec
    from tfvariants.store.runfile import new_run, write_run

    spec = MatrixSpec(("x",), (1,), ("mnist_mlp",), 1)
    write_run(tmp_path, new_run(spec, [{"host_id": "abc", "kind": "local", "label": "this host"}]))
    a = ray_node_entry(node_id="n1" * 10, hostname="h1", instance="n2-highcpu-8", simulated=False)
    b = ray_node_entry(node_id="n2" * 10, hostname="h1", instance="sim-1", simulated=True)
    assert declare_hosts(tmp_path, [a, b]) == 2
    assert declare_hosts(tmp_path, [a]) == 0
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["variants"] == ["x"]
    assert [h["kind"] for h in run["hosts"]] == ["local", "ray-node", "ray-node"]
    assert run["hosts"][1]["simulated"] is False and "real instance" in run["hosts"][1]["label"]
    assert run["hosts"][2]["host_id"] == run["hosts"][1]["host_id"]  # same machine


def test_2017_speeds_at_todays_prices(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(tmp_path)
    code = main(["compare", "--dry-run", "--estimate-from", "study-2017", "--threads", "8",
                 "--variants", "local,gpu", "--workloads", "cifar10_cnn", "--repeats", "1",
                 "--pricing", "gce-2026", "--instance", "8=n2-highcpu-8",
                 "--instance", "gpu=a2-highgpu-1g"])  # fmt: skip
    captured = capsys.readouterr()
    err = captured.err + captured.out
    assert code == 0, err
    assert "2017 speeds at today's prices" in err and "ROUGH" not in err
    # the study's cifar10_cnn: pip on 8 vCPUs 3151.5 s, K80 763.2 s; no overhead added
    assert "$0.0718" in err  # 3151.5 s x 0.082 $/h (n2-highcpu-8 spot)
    assert "$0.306" in err  # 763.2 s x 1.44296 $/h (a2-highgpu-1g spot)


def test_report_and_csv_show_the_catalogs_tier_word(tmp_path):
    from tfvariants.analyze.shared.settings import ReportSettings
    from tfvariants.commands.report import write_report

    runs = [make_result("local", 8, "mnist_mlp", r) for r in range(2)]
    write_results(tmp_path / "r", runs)
    report, csv_path = tmp_path / "rep.html", tmp_path / "cells.csv"
    settings = ReportSettings(pricing=parse_pricing_option("gce-2026"))
    write_report(tmp_path / "r", report, settings, csv_path=csv_path)
    html = report.read_text()
    assert "gce-2026 (spot, as of 2026-11)" in html
    assert "spot price as of 2026-11" in html
    assert ",spot," in csv_path.read_text()


# Rows copied verbatim from skypilot-org/skypilot-catalog catalogs/v7/gcp/vms.csv at
# commit 017e2502fb63c7a28757acd94002b2d6099d3e3d (read 2026-11-23): the file's current
# column layout, with GCE's GPUs as accelerator-only rows (empty InstanceType, GpuInfo
# a Python-literal dict) apart from their host VM rows.
SKY_2026 = (
    GCP_HEADER
    + """\
g2-standard-8,8.0,32.0,,,,us-central1,us-central1-a,0.29358,0.11747
g2-standard-8,8.0,32.0,,,,us-central1,us-central1-b,0.29358,0.11747
g2-standard-8,8.0,32.0,,,,us-west4,us-west4-a,0.33066,0.08645
n1-standard-4,4.0,15.0,,,,us-central1,us-central1-a,0.19,0.04815
n2d-standard-64,64.0,256.0,,,,us-central1,us-central1-a,2.70374,0.56102
n4-standard-32,32.0,128.0,,,,asia-northeast2,asia-northeast2-a,,0.77892
t2d-standard-8,8.0,32.0,,,,us-central1,us-central1-a,0.33797,0.03653
,,,L4,8,{'Gpus': [{'MemoryInfo': {'SizeInMiB': 24576}}]},us-central1,us-central1-a,4.48032,1.7848
,,,T4,1,{'Gpus': [{'MemoryInfo': {'SizeInMiB': 16384}}]},us-central1,us-central1-a,0.35,0.14
"""
)


def test_import_reads_skypilots_current_gcp_layout(tmp_path, capsys):
    src = tmp_path / "vms.csv"
    src.write_text(SKY_2026)
    out = tmp_path / "gce.toml"
    assert main(["prices", "import", str(src), "-o", str(out), "--region", "us-central1",
                 "--as-of", "2026-11-23"]) == 0  # fmt: skip
    assert "2 accelerator-only row(s) skipped" in capsys.readouterr().err
    cat = load_catalog(str(out))
    assert sorted(i.name for i in cat.instances) == [
        "g2-standard-8", "n1-standard-4", "n2d-standard-64", "t2d-standard-8"]  # fmt: skip
    g2 = cat.instance("g2-standard-8")
    # the host VM alone (other regions' rows ignored), no GPU: GCE lists the L4 apart
    assert (g2.vcpus, g2.gpu_type, g2.prices[0].on_demand, g2.prices[0].preemptible) == (
        8, None, 0.29358, 0.11747)  # fmt: skip
    # a row with an empty on-demand price in another region keeps the spot one
    assert main(["prices", "import", str(src), "-o", str(out), "--region", "asia-northeast2",
                 "--force"]) == 0  # fmt: skip
    n4 = load_catalog(str(out)).instance("n4-standard-32").prices[0]
    assert (n4.on_demand, n4.preemptible) == (None, 0.77892)


def test_builtin_gce_2026_has_l4_and_t4_with_their_source(capsys):
    assert main(["prices", "--catalog", "gce-2026"]) == 0
    out = capsys.readouterr().out
    l4 = next(line for line in out.splitlines() if line.startswith("g2-standard-8"))
    t4 = next(line for line in out.splitlines() if line.startswith("n1-standard-4+T4"))
    assert "1x L4" in l4 and "0.8536" in l4 and "L4 (8-GPU row / 8" in l4
    assert "1x T4" in t4 and "0.1882" in t4
    assert "commit 017e2502" in out


def test_instance_family_restricts_cpu_instances_the_same_for_every_caller():
    from tfvariants.analyze.cost.pricing import parse_families

    both = parse_pricing_option("gce-2026", tier="spot")
    n2 = parse_pricing_option("gce-2026", tier="spot", families=parse_families("n2"))
    # without a family the cheapest of equal size wins (n2d); with n2 only, n2
    assert both.instance_for("pip", 16)[0].name == "n2d-highcpu-16"
    assert n2.instance_for("pip", 16)[0].name == "n2-highcpu-16"
    assert n2.cost("pip", 16, 3600).instance == "n2-highcpu-16"
    # "n2" is not a prefix match for n2d; GPUs are not restricted
    assert n2.instance_for("pip", 12)[0].name == "n2-highcpu-16"
    assert n2.instance_for("gpu", 12, "gpu")[0].name == "a2-highgpu-1g"
    with pytest.raises(UserError, match="no CPU instance of that family"):
        parse_pricing_option("gce-2026", families=("c4",))
    # c3 has no 16 or 64: the smallest c3 that holds the threads
    c3 = parse_pricing_option("gce-2026", tier="spot", families=("c3",))
    assert [c3.instance_for("pip", t)[0].name for t in (8, 16, 64)] == [
        "c3-highcpu-8", "c3-highcpu-22", "c3-highcpu-88"]  # fmt: skip
    assert "smallest instance with at least 16 vCPUs" in c3.instance_for("pip", 16)[1]
    with pytest.raises(UserError, match="expected FAMILY"):
        parse_families("n2,,n2d")


def test_dry_run_bills_on_the_family_asked_for(capsys):
    argv = ["compare", "--executor", "ray", "--dry-run", "--threads", "8", "--variants", "pip",
            "--workloads", "mnist_cnn", "--pricing", "gce-2026"]  # fmt: skip
    assert main([*argv, "--instance-family", "n2"]) == 0
    out = capsys.readouterr().out
    assert "n2-highcpu-8" in out and "n2d-highcpu-8" not in out
    assert main([*argv, "--instance-family", "c4"]) == 2
    assert "--instance-family 'c4'" in capsys.readouterr().err


def _aws_gpu_info(name: str, mib: int) -> str:
    """The catalog's quoted GpuInfo cell for one NVIDIA GPU, as the rows below hold it (built
    here only to keep the lines within 100 columns)."""
    memory = f"{{'SizeInMiB': {mib}}}"
    gpu = f"{{'Name': '{name}', 'Manufacturer': 'NVIDIA', 'Count': 1, 'MemoryInfo': {memory}}}"
    return f"\"{{'Gpus': [{gpu}], 'TotalGpuMemoryInMiB': {mib}}}\""


# Rows copied verbatim from catalogs/v7/aws/vms.csv at commit
# 001367d22a0033fac286a8c71aeac7109e431bcb (read 2026-11-23): AWS's layout puts the
# accelerator before vCPUs and quotes a GpuInfo that holds commas.
A10G, L4, T4 = _aws_gpu_info("A10G", 22888), _aws_gpu_info("L4", 22888), _aws_gpu_info("T4", 16384)
AWS_2026 = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,"
    "Price,SpotPrice,Region,AvailabilityZone\n"
    f"g5.2xlarge,A10G,1.0,8.0,32.0,{A10G},1.212,0.560900,us-east-1,use1-az1\n"
    f"g5.2xlarge,A10G,1.0,8.0,32.0,{A10G},1.212,0.606700,us-east-1,use1-az2\n"
    f"g6.2xlarge,L4,1.0,8.0,32.0,{L4},0.9776,0.426500,us-east-1,use1-az1\n"
    f"g6.2xlarge,L4,1.0,8.0,32.0,{L4},0.9776,,us-west-2,usw2-az2\n"
    f"g4dn.xlarge,T4,1.0,4.0,16.0,{T4},0.71,0.231000,ap-northeast-1,apne1-az1\n"
    "c3.2xlarge,,,8.0,15.0,,0.42,0.230600,us-east-1,use1-az2\n"
)


def test_import_reads_skypilots_current_aws_layout(tmp_path, capsys):
    src = tmp_path / "aws.csv"
    src.write_text(AWS_2026)
    out = tmp_path / "aws.toml"
    assert main(["prices", "import", str(src), "-o", str(out), "--region", "us-east-1",
                 "--as-of", "2026-11-23"]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert "zones differ" not in err  # a note, not a warning
    cat = load_catalog(str(out))
    assert sorted(i.name for i in cat.instances) == ["c3.2xlarge", "g5.2xlarge", "g6.2xlarge"]
    g5 = cat.instance("g5.2xlarge")
    # GPU from the row itself; spot differs by zone: the highest is kept, and said
    assert (g5.vcpus, g5.gpu_type, g5.gpu_count) == (8, "A10G", 1)
    assert (g5.prices[0].on_demand, g5.prices[0].preemptible) == (1.212, 0.6067)
    assert "zones differ" in g5.prices[0].note
    # a zone without a spot price (us-west-2) leaves on-demand only
    assert main(["prices", "import", str(src), "-o", str(out), "--region", "us-west-2",
                 "--force"]) == 0  # fmt: skip
    g6 = load_catalog(str(out)).instance("g6.2xlarge").prices[0]
    assert (g6.on_demand, g6.preemptible) == (0.9776, None)


def test_study_preset_dry_run_plans_the_2017_study_on_todays_cloud(capsys):
    assert main(["compare", "--preset", "study-2017", "--executor", "ray", "--dry-run"]) == 0
    out = capsys.readouterr().out
    # six workloads x (the stock wheel and two compiled builds at 8/16/32/64 + the GPU
    # once) x 5 repeats
    assert "dry run: 390 cells" in out and "gce-2026" in out
    assert "2017 study's training times" in out  # --estimate-from study-2017 by default
    lines = out.splitlines()
    per_type: dict[str, list[str]] = {}  # the bill's rows (the node-build table follows)
    for ln in lines:
        if ln.startswith(("n2d-", "a2-")):
            per_type.setdefault(ln.split()[0], ln.split())
    assert set(per_type) == {"n2d-highcpu-8", "n2d-highcpu-16", "n2d-highcpu-32",
                             "n2d-highcpu-64", "a2-highgpu-1g"}  # fmt: skip
    assert per_type["a2-highgpu-1g"][4] == "30"  # one GPU configuration per workload
    assert all(per_type[t][3] == "90" for t in per_type if t.startswith("n2d-"))
    assert all("spot" in row for row in per_type.values())
    assert "estimated bill: $" in out
    # what the user gives wins
    assert main(["compare", "--preset", "study-2017", "--dry-run", "--workloads", "mnist_mlp",
                 "--threads", "8", "--pricing", "aws-2026"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "dry run: 15 cells" in out and "aws-2026" in out and "c7i.2xlarge" in out


def test_study_preset_on_ray_plans_the_compiled_builds_their_node_builds_and_preemptions(
    capsys,
):
    assert main(["compare", "--preset", "study-2017", "--executor", "ray", "--dry-run",
                 "--workloads", "mnist_mlp", "--threads", "8"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    configs = {ln.split()[1] for ln in out.splitlines() if ln.startswith("mnist_mlp ")}
    assert configs == {"tf-2.14@8", "intel-2.14@8", "intel-avx512-2.14@8", "gpu@12"}
    assert "on the nodes: intel-2.14, intel-avx512-2.14, tf-2.14 (requirement specs)" in out
    said = "image variant(s) gpu: the recipes load no images, so their 5 cell(s) will be SKIPPED"
    assert said in out
    # the bill still counts them, and says how much: the GPU row's cells (5 x 1.1 min)
    skipped = float(out.split("the bill above still counts them (about $")[1].split(")")[0])
    gpu_row = next(ln.split() for ln in out.splitlines() if ln.startswith("a2-highgpu-1g "))
    assert skipped == pytest.approx(float(gpu_row[-2].lstrip("$")), rel=0.05)
    # 30 min at $0.0518 an hour
    assert "  n2d-highcpu-8: builds tf-2.14, intel-2.14, intel-avx512-2.14 (30 min, $0.0259)" in out
    assert "  a2-highgpu-1g: builds nothing; expected preemptions" in out
    assert "expected preemptions at 0.004 per node-hour" in out and "5-15 %" in out
    total = out.split("estimated bill with the node builds and preemptions: ")[1].split()
    # no preemptions expected: the lost cost is nothing
    assert main(["compare", "--preset", "study-2017", "--executor", "ray", "--dry-run",
                 "--workloads", "mnist_mlp", "--threads", "8",
                 "--preempt-rate", "0"]) == 0  # fmt: skip
    none = capsys.readouterr().out.split("estimated bill with the node builds and preemptions: ")
    assert none[1].split()[4] == "$0" and total[4] != "$0"


def test_preempt_options_are_refused_where_they_mean_nothing(capsys):
    for argv, msg in (
        (["--preempt-retries", "2"], "--preempt-retries need --executor ray"),
        (
            ["--executor", "ray", "--preempt-rate", "0.1"],
            "--preempt-rate is for --executor ray --dry-run",
        ),
        (["--executor", "ray", "--dry-run", "--preempt-rate", "-1"], "--preempt-rate: expected"),
    ):
        assert main(["compare", "--preset", "study-2017", *argv]) == 2
        err = capsys.readouterr().err
        assert msg in err and len(err.strip().splitlines()) == 1, err


def test_instance_family_on_ec2_names():
    c7a = parse_pricing_option("aws-2026", families=("c7a",))
    assert [c7a.instance_for("pip", t)[0].name for t in (8, 16, 32, 64)] == [
        "c7a.2xlarge", "c7a.4xlarge", "c7a.8xlarge", "c7a.16xlarge"]  # fmt: skip
    # without a family the cheaper c7i of the same size is billed
    assert parse_pricing_option("aws-2026").instance_for("pip", 8)[0].name == "c7i.2xlarge"
    with pytest.raises(UserError, match=r"families: c7a, c7i\)"):
        parse_pricing_option("aws-2026", families=("m7",))


def test_import_as_json_reads_as_the_same_catalog(tmp_path, capsys):
    # A whole cloud (100k instances) reads in about 3 s as JSON against 7 s as TOML.
    src = tmp_path / "vms.csv"
    src.write_text(SKY)
    cats = []
    for suffix in ("toml", "json"):
        out = tmp_path / f"mine.{suffix}"
        assert main(["prices", "import", str(src), "-o", str(out), "--region", "us-central1",
                     "--as-of", "2026-11-22"]) == 0  # fmt: skip
        cats.append(load_catalog(str(out)))
    toml, json_ = cats
    assert json_.instances == toml.instances and json_.billing == toml.billing
    assert (json_.default_tier, json_.default_as_of, json_.default_gpu, json_.warnings) == (
        toml.default_tier, toml.default_as_of, toml.default_gpu, toml.warnings)  # fmt: skip
    capsys.readouterr()
    assert main(["prices", "--catalog", str(tmp_path / "mine.json")]) == 0
    assert "n2d-highcpu-64" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "message"),
    [("{", "invalid JSON"), ("[1]", "expected an object"), ('{"name": "x"}', "'source'")],
)
def test_a_broken_json_catalog_is_one_line(tmp_path, capsys, text, message):
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    assert main(["prices", "--catalog", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err and str(bad) in err, err


def test_a_big_toml_import_suggests_json(tmp_path, capsys, monkeypatch):
    from tfvariants.commands import prices

    monkeypatch.setattr(prices, "BIG_TOML_ROWS", 3)
    src = tmp_path / "p.csv"
    src.write_text(SIMPLE_HEAD + "".join(f"m{i},4,,0.2,0.05,r,2026-11\n" for i in range(3)))
    assert main(["prices", "import", str(src), "-o", str(tmp_path / "p.toml")]) == 0
    assert f"read about 3x faster as JSON: -o {tmp_path / 'p.json'}" in capsys.readouterr().err
    assert main(["prices", "import", str(src), "-o", str(tmp_path / "p.json")]) == 0
    assert "JSON" not in capsys.readouterr().err
