"""A GPU that is not here: the GPU image's command line, the skip with its reason, and the
probe fields of a CUDA build (a fake TensorFlow object stands in for one)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from tfvariants.analyze.shared.fields import environment_summary
from tfvariants.execute.runner import RunOptions, run_cell
from tfvariants.plan.cell import Cell
from tfvariants.store.runfolder import RunFolder
from tfvariants.variants import engine as engines
from tfvariants.variants import registry as variants
from workloads import envprobe
from workloads.protocol import WorkerRequest


class _Device:
    def __init__(self, name: str) -> None:
        self.name = name


def _fake_cuda_tf() -> SimpleNamespace:
    gpus = [_Device("/physical_device:GPU:0")]
    return SimpleNamespace(
        __version__="2.21.0",
        version=SimpleNamespace(GIT_VERSION="v2.21.0-rc-1", COMPILER_VERSION="Clang 18.1.8"),
        sysconfig=SimpleNamespace(
            get_build_info=lambda: {
                "is_cuda_build": True,
                "cuda_version": "12.5.1",
                "cudnn_version": "9",
                "cuda_compute_capabilities": ["sm_80"],
            }
        ),  # fmt: skip
        test=SimpleNamespace(is_built_with_cuda=lambda: True, is_built_with_rocm=lambda: False),
        config=SimpleNamespace(
            list_physical_devices=lambda kind=None: (
                gpus if kind == "GPU" else [_Device("/physical_device:CPU:0"), *gpus]
            ),
            experimental=SimpleNamespace(
                get_device_details=lambda g: {
                    "device_name": "NVIDIA L4",
                    "compute_capability": (8, 9),
                }
            ),  # fmt: skip
        ),
    )


def test_cuda_build_probe_fields() -> None:
    tf = _fake_cuda_tf()
    env = envprobe.probe(tf, "")
    t = env["tensorflow"]
    assert t["cuda_build"] is True and t["rocm_build"] is False
    assert t["gpus"] == ["/physical_device:GPU:0"]
    assert t["gpu_details"] == [{"device_name": "NVIDIA L4", "compute_capability": "(8, 9)"}]
    assert t["build_info"]["cuda_version"] == "12.5.1"
    backend = envprobe.probe_backend("tensorflow", tf)
    assert backend["build"]["cuda"] is True and backend["build"]["compiler"] == "Clang 18.1.8"
    assert backend["devices"] == ["/physical_device:CPU:0", "/physical_device:GPU:0"]
    env["backend"] = backend
    summary = environment_summary(env)
    assert summary["GPU"] == "/physical_device:GPU:0" and summary["Backend"] == "tensorflow 2.21.0"


def test_gpu_image_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engines, "require_engine", lambda preferred=None: "podman")
    monkeypatch.setattr(engines, "image_exists", lambda engine, image: True)
    scratch = tmp_path / ".mnist_cnn__gpu__t2__r0.x"
    scratch.mkdir()
    request = WorkerRequest(workload="mnist_cnn", cell={}, result=str(scratch / "result.json"),
                            intra_op=2, cpus=(0, 1))  # fmt: skip
    cmd, _ = variants.BUILTINS["gpu"].launch(request, {}, (0, 1), scratch)
    image = cmd.index("tfvariants/gpu:2.21.0")
    assert cmd[:3] == ["podman", "run", "--rm"]
    assert "--device" in cmd[:image] and "nvidia.com/gpu=all" in cmd[:image]
    assert cmd[image + 1 : image + 4] == ["python", "-m", "workloads.worker"]
    monkeypatch.setattr(engines, "require_engine", lambda preferred=None: "docker")
    cmd, _ = variants.BUILTINS["gpu"].launch(request, {}, (0, 1), scratch)
    assert cmd[cmd.index("--gpus") + 1] == "all"


def test_gpu_cell_is_skipped_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(variants, "_host_has_gpu", lambda: False)
    cell = Cell(variant="gpu", threads=1, workload="mnist_cnn")
    result = run_cell(cell, variants.BUILTINS["gpu"], RunOptions(), RunFolder(tmp_path)).raw
    assert result["status"] == "skipped" and result["reason"] == "no GPU visible on this host"
    assert (tmp_path / "cells" / f"{cell.cell_id}.json").exists()
