"""The oneDNN probe's parsing and the no-op verdicts (fake probes); marker `tf` runs the
real probe inside this interpreter's TensorFlow."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfvariants.variants import noop
from workloads import onednn

ROOT = Path(__file__).resolve().parent.parent

VERBOSE = """\
onednn_verbose,v1,info,oneDNN v3.7.3 (commit N/A)
onednn_verbose,v1,info,cpu,runtime:threadpool,nthr:2
onednn_verbose,v1,info,cpu,isa:Intel AVX2
onednn_verbose,v1,primitive,exec,cpu,convolution,jit:avx2,forward_training,...,0.1
onednn_verbose,v1,primitive,exec,cpu,convolution,jit:avx2,forward_training,...,0.1
onednn_verbose,v1,primitive,exec,cpu,gemm_api,,undef,...,0.01
I0000 port.cc:153] oneDNN custom operations are on. You may see ...
TFV_BACKEND {"version": "2.21.0", "keras": "3.15.1"}
"""


def test_parse_verbose() -> None:
    out = onednn.parse_verbose(VERBOSE)
    assert out == {
        "isa": "Intel AVX2",
        "version": "v3.7.3",
        "primitives": {"convolution": 2, "gemm_api": 1},
        "custom_ops_on": True,
        "backend": {"version": "2.21.0", "keras": "3.15.1"},
    }
    assert onednn.parse_verbose("nothing")["isa"] is None


def _probe(isa: str, host_isa: str, ops: bool, host_ops: bool) -> dict:
    return {
        "applies": True,
        "variant": {"isa": isa, "custom_ops_on": ops, "version": "v3.7.3"},
        "host_default": {"isa": host_isa, "custom_ops_on": host_ops},
    }


AVX512 = "Intel AVX-512 with Intel DL Boost and bfloat16 support"


def test_cap_above_host_isa_and_default_opts_are_noops() -> None:
    verdict = noop.judge(
        {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_AMX", "TF_ENABLE_ONEDNN_OPTS": "1"},
        "tensorflow",
        _probe(AVX512, AVX512, True, True),
    )
    assert verdict["changes"] == [] and len(verdict["noop"]) == 2
    assert "ONEDNN_MAX_CPU_ISA=AVX512_CORE_AMX: no-op on this host" in verdict["noop"][0]
    assert "TensorFlow's default here is on" in verdict["noop"][1]
    assert verdict["isa"] == verdict["host_isa"] == AVX512


def test_cap_below_host_and_opts_off_change_something() -> None:
    verdict = noop.judge(
        {"ONEDNN_MAX_CPU_ISA": "SSE41", "TF_ENABLE_ONEDNN_OPTS": "0"},
        "tensorflow",
        _probe("Intel SSE4.1", AVX512, False, True),
    )
    assert verdict["noop"] == []
    assert verdict["changes"] == [
        f"ONEDNN_MAX_CPU_ISA=SSE41: oneDNN uses Intel SSE4.1 instead of {AVX512}",
        "TF_ENABLE_ONEDNN_OPTS=0: oneDNN custom ops off (default here: on)",
    ]
    assert verdict["custom_ops"] == "off" and verdict["host_custom_ops"] == "on"


def test_other_backends_and_failed_probes() -> None:
    jax = noop.judge({"ONEDNN_MAX_CPU_ISA": "SSE41"}, "jax", onednn.probe("jax"))
    assert jax["noop"] == [
        "ONEDNN_MAX_CPU_ISA=SSE41: no effect on jax (jax does not dispatch these ops to oneDNN)"
    ]
    torch = noop.judge(
        {"ONEDNN_MAX_CPU_ISA": "AVX2", "TF_ENABLE_ONEDNN_OPTS": "0"},
        "torch",
        _probe("Intel AVX2", AVX512, False, False),
    )
    assert torch["changes"] == [
        f"ONEDNN_MAX_CPU_ISA=AVX2: oneDNN uses Intel AVX2 instead of {AVX512}"
    ]
    assert torch["noop"] == ["TF_ENABLE_ONEDNN_OPTS=0: no effect on torch (a TensorFlow setting)"]
    assert torch["custom_ops"] is None  # TensorFlow's custom ops mean nothing to PyTorch
    failed = noop.judge({"ONEDNN_MAX_CPU_ISA": "SSE41"}, "tensorflow", {"error": "timed out"})
    assert failed["unknown"][0] == "oneDNN probe failed: timed out"
    silent = noop.judge({"ONEDNN_MAX_CPU_ISA": "SSE41"}, "tensorflow", _probe(None, None, 1, 1))
    assert "printed no ISA" in silent["unknown"][0]
    assert noop.judge({}, "tensorflow", None)["noop"] == []


@pytest.mark.tf
def test_real_probe_sees_the_sse41_cap(needs_tf: None) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), ONEDNN_MAX_CPU_ISA="SSE41",
               TF_ENABLE_ONEDNN_OPTS="1", KERAS_BACKEND="tensorflow")  # fmt: skip
    import json

    out = subprocess.run([sys.executable, "-m", "workloads.onednn"], env=env,
                         capture_output=True, text=True, timeout=300, check=True)  # fmt: skip
    probe = json.loads(out.stdout)
    assert probe["settings"]["ONEDNN_MAX_CPU_ISA"] == "SSE41"
    assert probe["variant"]["isa"] == "Intel SSE4.1"
    assert probe["host_default"]["isa"] and probe["host_default"]["isa"] != "Intel SSE4.1"
    assert probe["variant"]["primitives"].get("convolution", 0) >= 1
    verdict = noop.judge({"ONEDNN_MAX_CPU_ISA": "SSE41"}, "tensorflow", probe)
    assert verdict["changes"] and not verdict["noop"]


@pytest.mark.tf
def test_small_two_variant_compare_records_the_probe(
    tmp_path: Path, needs_tf: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CI's small version of the build-variant comparison: local against local+isa-sse41."""
    import json

    from tfvariants.cli import main

    monkeypatch.chdir(tmp_path)
    argv = ["compare", "--variants", "local,local+isa-sse41", "--threads", "1", "--workloads",
            "mnist_cnn", "--repeats", "1", "--epochs", "2", "--samples", "256", "--out", "res",
            "-o", "rep/index.html"]  # fmt: skip
    assert main(argv) == 0
    run = json.loads((tmp_path / "res/run.json").read_text())
    sse = run["variant_info"]["local+isa-sse41"]
    assert sse["base"] == "local" and sse["overlay_env"] == {"ONEDNN_MAX_CPU_ISA": "SSE41"}
    assert sse["onednn"]["isa"] == "Intel SSE4.1" and sse["onednn"]["changes"]
    assert run["variant_info"]["local"]["onednn"]["isa"] == sse["onednn"]["host_isa"]
    cells = sorted((tmp_path / "res/cells").glob("*.json"))
    assert [json.loads(c.read_text())["status"] for c in cells] == ["ok", "ok"]
    html = (tmp_path / "rep/index.html").read_text()
    assert "Variants on this host" in html and "Accuracy parity" in html
    assert "oneDNN uses Intel SSE4.1 instead of" in html
