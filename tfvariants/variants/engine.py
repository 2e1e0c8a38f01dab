"""Container engines (docker or podman): detection, image checks, and the run command.

A cell in an ``image`` variant runs as ``<engine> run ... IMAGE python -m workloads.worker``.
The command is built here as a plain list so it can be tested without an engine and
recorded in the result (``runner.command``). What it guarantees, whatever the caller:

- CPU pinning with ``--cpuset-cpus`` (never ``--cpus``: a CFS quota throttles the
  process but does not resize TensorFlow's thread pools, so it would not emulate an
  N-vCPU machine);
- no network, no capabilities, no privilege escalation, a read-only root file system;
- ``workloads/`` (and a workload file or data folder given by path) mounted read-only;
  the cell's scratch folder is the only writable mount, at ``/out``.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tfvariants.errors import UserError
from workloads.protocol import WorkerRequest

ENGINES = ("docker", "podman")
ENGINE_ENV = "TFVARIANTS_ENGINE"

# Where things live inside an image (see builds/*/Dockerfile).
CONTAINER_ROOT = "/opt/tfvariants"  # PYTHONPATH: holds the workloads/ package
CONTAINER_WORKLOADS = f"{CONTAINER_ROOT}/workloads"
CONTAINER_OUT = "/out"  # the cell's scratch folder, the only writable mount
CONTAINER_USER_WORKLOADS = "/opt/tfvariants-user"  # workload files given by path
CONTAINER_DATA = "/data"  # --data-dir

# Host variables that describe the host's file system and must not leak into the image.
_HOST_ONLY_ENV = ("PATH", "HOME", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")
_CONTAINER_ENV = {"PYTHONPATH": CONTAINER_ROOT, "HOME": "/tmp", "TMPDIR": "/tmp"}


def detect_engine(preferred: str | None = None) -> str | None:
    """The engine to use: ``preferred`` (``--engine``), else $TFVARIANTS_ENGINE, else
    docker if its daemon socket is there, else podman, else docker; None if neither exists.

    A docker CLI without a daemon is common (podman-docker, a client-only install), so
    the mere presence of ``docker`` does not win over a working podman.
    """
    choice = preferred or os.environ.get(ENGINE_ENV) or None
    if choice:
        if choice not in ENGINES:
            raise UserError(f"unknown container engine {choice!r}; choose docker or podman")
        return choice
    have_docker = shutil.which("docker") is not None
    have_podman = shutil.which("podman") is not None
    if have_docker and (os.environ.get("DOCKER_HOST") or Path("/var/run/docker.sock").exists()):
        return "docker"
    if have_podman:
        return "podman"
    return "docker" if have_docker else None


def require_engine(preferred: str | None = None) -> str:
    """Like detect_engine, but a missing engine is a UserError."""
    engine = detect_engine(preferred)
    if engine is None or shutil.which(engine) is None:
        raise UserError(
            f"no container engine found ({engine or 'docker or podman'} is not installed); "
            "install docker or podman, or use a local/venv variant"
        )
    return engine


def image_exists(engine: str, image: str, *, timeout_s: float = 30.0) -> bool:
    """Whether ``image`` is present locally (never pulls)."""
    if shutil.which(engine) is None:
        return False
    if engine == "podman":
        cmd = ["podman", "image", "exists", image]
    else:
        cmd = [engine, "image", "inspect", "--format", "{{.Id}}", image]
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def missing_image_message(variant: str, image: str, build_hint: str | None) -> str:
    """One line naming the image and the command that builds it."""
    hint = build_hint or "build it, or set `image` for this variant in tfvariants.toml"
    return f"variant {variant!r} needs image {image}: run `{hint}`"


def gpu_visible() -> bool:
    """Whether an NVIDIA GPU is visible on this host (device node or nvidia-smi)."""
    if Path("/dev/nvidia0").exists():
        return True
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    try:
        proc = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0 and "GPU " in proc.stdout


def gpu_flags(engine: str) -> list[str]:
    """The engine's flag that exposes every NVIDIA GPU to a container."""
    if engine == "podman":
        return ["--device", "nvidia.com/gpu=all"]  # CDI (nvidia-ctk cdi generate)
    return ["--gpus", "all"]


def user_flags(engine: str) -> list[str]:
    """Run as the invoking user so files in /out belong to them.

    Rootless podman maps the invoking user to root in the container; ``keep-id`` maps it
    to the same uid instead. (When the host user is root, the container process is a
    root without any capability, see container_command.)
    """
    if engine == "podman" and os.geteuid() != 0:
        return ["--userns", "keep-id"]
    return ["--user", f"{os.getuid()}:{os.getgid()}"]


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
    except ValueError:
        return False
    return True


def container_request(
    request: WorkerRequest, scratch_dir: Path
) -> tuple[WorkerRequest, list[tuple[str, str]]]:
    """The request with host paths replaced by container paths, plus the read-only mounts
    they need. The result file must be inside the scratch folder (mounted at /out)."""
    scratch = Path(scratch_dir).resolve()
    result = Path(request.result).resolve()
    if not _inside(result, scratch):
        raise ValueError(f"result {request.result} is not inside the scratch dir {scratch}")
    workload, data_dir = request.workload, request.data_dir
    mounts: list[tuple[str, str]] = []
    if request.workload and (request.workload.endswith(".py") or os.sep in request.workload):
        # A workload given as a file, not a registered name.
        source = Path(request.workload).resolve()
        workload = f"{CONTAINER_USER_WORKLOADS}/{source.name}"
        mounts.append((str(source), workload))
    if request.data_dir:
        mounts.append((str(Path(request.data_dir).resolve()), CONTAINER_DATA))
        data_dir = CONTAINER_DATA
    inner = dataclasses.replace(
        request,
        result=f"{CONTAINER_OUT}/{result.relative_to(scratch).as_posix()}",
        workload=workload,
        data_dir=data_dir,
    )
    return inner, mounts


@dataclasses.dataclass(frozen=True)
class Container:
    """The container a worker process runs in, whatever cell it runs: the engine and
    image, the workloads folder mounted into it, what runs (``module``: the worker, or
    workloads.envprobe), the device it may use, its name (so a container left behind by a
    killed client can be found) and ``extra_mounts``, (host, container) pairs mounted
    read-only."""

    engine: str
    image: str
    workloads_dir: str | os.PathLike[str]
    module: str = "workloads.worker"
    device: str = "cpu"
    name: str | None = None
    extra_mounts: Sequence[tuple[str, str]] = ()


def container_command(
    box: Container,
    request: WorkerRequest,
    env: Mapping[str, str],
    cpus: Sequence[int],
    scratch_dir: str | os.PathLike[str],
) -> list[str]:
    """The full ``<engine> run`` command for one worker process in ``box``.

    ``request`` is the worker's request with host paths: its result (inside
    ``scratch_dir``), and optionally a workload file and a data folder, which are mounted
    read-only and rewritten to their container paths (a probe's is its result alone:
    ``module --result /out/result.json``). ``env`` is the worker's environment; host-only
    variables (PATH, HOME, ...) are replaced by the image's own.
    """
    engine = box.engine
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}")
    if not cpus:
        raise ValueError("a container cell needs at least one CPU to pin to")
    scratch = Path(scratch_dir).resolve()
    inner, mounts = container_request(request, scratch)
    argv = inner.to_argv()
    mounts = [(str(Path(box.workloads_dir).resolve()), CONTAINER_WORKLOADS), *mounts]
    mounts += [(str(Path(host).resolve()), target) for host, target in box.extra_mounts]

    cmd = [engine, "run", "--rm"]
    if box.name:
        cmd += ["--name", box.name]
    cmd += ["--network", "none", "--cpuset-cpus", ",".join(str(cpu) for cpu in cpus)]
    cmd += ["--security-opt", "no-new-privileges", "--cap-drop", "all", "--read-only"]
    cmd += ["--tmpfs", "/tmp", *user_flags(engine), "--workdir", CONTAINER_ROOT]
    for host, target in mounts:
        cmd += ["-v", f"{host}:{target}:ro"]
    cmd += ["-v", f"{scratch}:{CONTAINER_OUT}:rw"]
    if box.device == "gpu":
        cmd += gpu_flags(engine)
    container_env = {k: v for k, v in env.items() if k not in _HOST_ONLY_ENV}
    container_env.update(_CONTAINER_ENV)
    for key in sorted(container_env):
        cmd += ["-e", f"{key}={container_env[key]}"]
    cmd += [box.image, "python", "-m", box.module, *argv]
    return cmd


def main(argv: list[str] | None = None) -> int:
    """``python -m tfvariants.variants.engine``: print the detected engine (used by
    builds/builds.mk)."""
    args = argv or sys.argv[1:]
    engine = detect_engine(args[0] if args else None)
    if engine is None:
        print("tfvariants: error: neither docker nor podman is installed", file=sys.stderr)
        return 1
    print(engine)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
