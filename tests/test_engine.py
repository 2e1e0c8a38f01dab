"""Container engine detection and the `run` command for image variants."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tfvariants.errors import UserError
from tfvariants.variants import engine
from workloads.protocol import WorkerRequest


def _request(result: Path, **changes) -> WorkerRequest:
    base = dict(workload="mnist_mlp", cell={"variant": "pip", "threads": 2}, result=str(result),
                intra_op=2, cpus=(0, 1))  # fmt: skip
    base.update(changes)
    return WorkerRequest(**base)


def _command(tmp_path: Path, **overrides):
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    kwargs = dict(
        engine="podman",
        image="tfvariants/pip:2.21.0",
        request=_request(scratch / "result.json"),
        env={
            "PATH": "/usr/bin", "HOME": "/root", "PYTHONPATH": "/repo", "TMPDIR": "/var/tmp",
            "TF_NUM_INTRAOP_THREADS": "2", "TF_ENABLE_ONEDNN_OPTS": "1",
        },
        cpus=[0, 1],
        scratch_dir=scratch,
        workloads_dir=tmp_path / "workloads",
    )  # fmt: skip
    kwargs.update(overrides)
    box = {k: kwargs.pop(k) for k in [*kwargs] if k in engine.Container.__dataclass_fields__}
    return engine.container_command(engine.Container(**box), **kwargs)


def _pairs(cmd: list[str], flag: str) -> list[str]:
    return [cmd[i + 1] for i, token in enumerate(cmd[:-1]) if token == flag]


@pytest.mark.parametrize("name", ["podman", "docker"])
def test_command_isolation(tmp_path: Path, name: str) -> None:
    cmd = _command(tmp_path, engine=name)
    assert cmd[:3] == [name, "run", "--rm"]
    # Engine options only: the worker's own --cpus (its affinity list) follows the image.
    options = cmd[: cmd.index("tfvariants/pip:2.21.0")]
    assert "--cpus" not in options  # a CFS quota does not resize TensorFlow's pools
    assert not any(token.startswith("--cpus=") for token in options)
    assert _pairs(cmd, "--cpuset-cpus") == ["0,1"]
    assert _pairs(cmd, "--network") == ["none"]
    assert _pairs(cmd, "--security-opt") == ["no-new-privileges"]
    assert _pairs(cmd, "--cap-drop") == ["all"]
    assert "--read-only" in cmd
    volumes = _pairs(cmd, "-v")
    workloads = f"{(tmp_path / 'workloads').resolve()}:/opt/tfvariants/workloads:ro"
    assert workloads in volumes
    writable = [v for v in volumes if not v.endswith(":ro")]
    assert writable == [f"{(tmp_path / 'scratch').resolve()}:/out:rw"]
    assert "--gpus" not in cmd and "nvidia.com/gpu=all" not in cmd


def test_command_runs_the_worker_with_container_paths(tmp_path: Path) -> None:
    cmd = _command(tmp_path)
    i = cmd.index("tfvariants/pip:2.21.0")
    assert cmd[i + 1 : i + 4] == ["python", "-m", "workloads.worker"]
    assert cmd[i + 4] == "--request" and len(cmd) == i + 6
    inner = WorkerRequest.from_json(cmd[i + 5])
    assert inner.result == "/out/result.json"
    assert inner.workload == "mnist_mlp"  # a name: unchanged
    assert inner.cpus == (0, 1)
    assert inner.cell == {"variant": "pip", "threads": 2}


def test_request_round_trip_and_bad_requests() -> None:
    from workloads.protocol import RequestError

    req = WorkerRequest(
        workload="w.py",
        cell={"variant": "local"},
        result="/r.json",
        intra_op=4,
        inter_op=2,
        cpus=(0, 2),
        epochs=3,
        keras_options={"a": 1},
    )
    assert WorkerRequest.from_json(req.to_json()) == req
    for bad in ("not json", "[]", '{"kind": "other"}',
                req.to_json().replace('"intra_op": 4', '"intra_op": "4"'),
                req.to_json().replace('"cpus": [0, 2]', '"cpus": [-1]'),
                req.to_json().replace('"epochs": 3', '"epochs": 3, "threads": 4')):  # fmt: skip
        with pytest.raises(RequestError):
            WorkerRequest.from_json(bad)


def test_command_env_replaces_host_paths(tmp_path: Path) -> None:
    env = dict(pair.split("=", 1) for pair in _pairs(_command(tmp_path), "-e"))
    assert env["PYTHONPATH"] == "/opt/tfvariants"
    assert env["HOME"] == "/tmp" and env["TMPDIR"] == "/tmp"
    assert "PATH" not in env  # the image's own PATH (its venv) applies
    assert env["TF_NUM_INTRAOP_THREADS"] == "2"
    assert env["TF_ENABLE_ONEDNN_OPTS"] == "1"


def test_workload_file_and_data_dir_are_mounted_read_only(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    workload = tmp_path / "my_model.py"
    workload.write_text("SPEC = {}\n")
    data = tmp_path / "data"
    data.mkdir()
    cmd = _command(
        tmp_path,
        request=_request(scratch / "cell" / "result.json", workload=str(workload), data="real",
                         data_dir=str(data)),
        extra_mounts=[(str(tmp_path / "extra"), "/extra")],
    )  # fmt: skip
    volumes = _pairs(cmd, "-v")
    assert f"{workload.resolve()}:/opt/tfvariants-user/my_model.py:ro" in volumes
    assert f"{data.resolve()}:/data:ro" in volumes
    assert f"{(tmp_path / 'extra').resolve()}:/extra:ro" in volumes
    worker = cmd[cmd.index("workloads.worker") + 1 :]
    assert worker[0] == "--request" and len(worker) == 2
    inner = WorkerRequest.from_json(worker[1])
    assert inner.result == "/out/cell/result.json"
    assert inner.workload == "/opt/tfvariants-user/my_model.py"
    assert (inner.data, inner.data_dir) == ("real", "/data")
    assert inner.cpus == (0, 1)  # everything but the paths is unchanged


def test_result_outside_scratch_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="scratch"):
        _command(tmp_path, request=_request(Path("/etc/result.json")))


def test_no_cpus_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        _command(tmp_path, cpus=[])


@pytest.mark.parametrize(
    ("name", "flags"),
    [("docker", ["--gpus", "all"]), ("podman", ["--device", "nvidia.com/gpu=all"])],
)
def test_gpu_flags(tmp_path: Path, name: str, flags: list[str]) -> None:
    cmd = _command(tmp_path, engine=name, device="gpu")
    i = cmd.index(flags[0])
    assert cmd[i : i + 2] == flags


def test_user_mapping(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(os, "getuid", lambda: 1000)
    monkeypatch.setattr(os, "getgid", lambda: 1000)
    assert engine.user_flags("podman") == ["--userns", "keep-id"]  # rootless
    assert engine.user_flags("docker") == ["--user", "1000:1000"]
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(os, "getuid", lambda: 0)
    monkeypatch.setattr(os, "getgid", lambda: 0)
    assert engine.user_flags("podman") == ["--user", "0:0"]


def test_detect_engine_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TFVARIANTS_ENGINE", "podman")
    assert engine.detect_engine() == "podman"
    assert engine.detect_engine("docker") == "docker"  # --engine beats the environment
    monkeypatch.setenv("TFVARIANTS_ENGINE", "lxc")
    with pytest.raises(UserError, match="lxc"):
        engine.detect_engine()


def test_detect_engine_prefers_a_working_docker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TFVARIANTS_ENGINE", raising=False)
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    present = {"docker", "podman"}
    monkeypatch.setattr(engine.shutil, "which", lambda n: f"/usr/bin/{n}" if n in present else None)
    monkeypatch.setattr(engine.Path, "exists", lambda self: False)  # no docker socket
    assert engine.detect_engine() == "podman"
    monkeypatch.setenv("DOCKER_HOST", "tcp://builder:2375")
    assert engine.detect_engine() == "docker"
    monkeypatch.delenv("DOCKER_HOST")
    present.discard("podman")
    assert engine.detect_engine() == "docker"
    present.clear()
    assert engine.detect_engine() is None
    with pytest.raises(UserError, match="no container engine"):
        engine.require_engine()


def test_missing_image_message() -> None:
    assert (
        engine.missing_image_message("pip", "tfvariants/pip:2.21.0", "make build-pip")
        == "variant 'pip' needs image tfvariants/pip:2.21.0: run `make build-pip`"
    )


def test_image_exists_without_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine.shutil, "which", lambda n: None)
    assert engine.image_exists("podman", "tfvariants/pip:2.21.0") is False


def test_a_probe_in_a_container_gets_only_its_result_path(tmp_path: Path) -> None:
    """A probe is a request kind of its own: `module --result /out/result.json`, no
    workload mounted."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    probe = WorkerRequest.probe(str(scratch / "result.json"))
    cmd = _command(tmp_path, request=probe, module="workloads.envprobe")
    assert cmd[-5:] == ["python", "-m", "workloads.envprobe", "--result", "/out/result.json"]
    assert [v for v in _pairs(cmd, "-v") if "/opt/tfvariants-user" in v] == []


def test_the_serving_envelope_is_the_training_one(tmp_path: Path) -> None:
    """One envelope for every worker: a serving request is a WorkerRequest of task
    serve, its model path rewritten and mounted like a workload file."""
    from workloads.serving.request import serve_request_of

    model = tmp_path / "m.keras"
    model.write_bytes(b"")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    serve = {"scenario": "offline", "model": "ignored"}
    request = _request(scratch / "result.json", task="serve", workload=str(model), payload=serve)
    cmd = _command(tmp_path, request=request, module="workloads.serving.worker")
    inner = WorkerRequest.from_json(cmd[-1], task="serve")
    assert inner.workload == "/opt/tfvariants-user/m.keras" and inner.result == "/out/result.json"
    assert serve_request_of(inner).model == "/opt/tfvariants-user/m.keras"
    with pytest.raises(ValueError, match="task 'serve', this worker runs 'train'"):
        WorkerRequest.from_json(cmd[-1])
