"""Variant registry: built-ins, the user TOML file, readiness, and image launches."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tfvariants.cli import main
from tfvariants.errors import UserError
from tfvariants.variants import engine as engines
from tfvariants.variants import kinds
from tfvariants.variants import registry as variants
from workloads.protocol import WorkerRequest


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tfvariants.toml"
    path.write_text(text)
    return path


def test_builtins_pin_onednn_and_name_their_build() -> None:
    builtins = variants.load_variants(None)
    assert {"local", "pip", "compiled", "gpu", "xla"} <= set(builtins)
    for variant in builtins.values():
        if variant.backend == "tensorflow":
            assert variant.env.get("TF_ENABLE_ONEDNN_OPTS") in ("0", "1"), variant.name
        assert variant.build, variant.name
    assert builtins["pip"].image == "tfvariants/pip:2.21.0"
    assert builtins["compiled"].build == "make build-compiled"
    assert builtins["gpu"].device == "gpu"
    assert builtins["xla"].keras == {"jit_compile": True}


def test_user_file_adds_and_overrides(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """
[variants.tf220]
kind = "venv"
python = "/opt/tf220/bin/python"
env = { TF_ENABLE_ONEDNN_OPTS = "0", KERAS_BACKEND = "tensorflow" }
description = "TensorFlow 2.20 in a venv"

[variants.pip-xla]
kind = "image"
image = "tfvariants/pip:2.21.0"
engine = "podman"
keras = { jit_compile = true }
build = "make build-pip"

[variants.pip]
kind = "image"
image = "registry.example/tf:2.21"
""",
    )
    loaded = variants.load_variants(path)
    assert loaded["tf220"].python == "/opt/tf220/bin/python"
    assert loaded["tf220"].env == {"TF_ENABLE_ONEDNN_OPTS": "0", "KERAS_BACKEND": "tensorflow"}
    assert loaded["pip-xla"].keras == {"jit_compile": True}
    assert loaded["pip-xla"].engine == "podman"
    assert loaded["pip"].image == "registry.example/tf:2.21"
    assert "local" in loaded


def test_config_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, '[variants.mine]\nkind = "local"\n')
    monkeypatch.setenv("TFVARIANTS_CONFIG", str(path))
    assert "mine" in variants.load_variants(None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[variants.a]\nkind = "vm"\n', "variant 'a': field 'kind'"),
        ('[variants.a]\nkind = "venv"\n', "variant 'a': field 'python'"),
        ('[variants.a]\nkind = "image"\n', "variant 'a': field 'image'"),
        ('[variants.a]\nkind = "local"\ndevice = "tpu"\n', "variant 'a': field 'device'"),
        ('[variants.a]\nkind = "local"\nenv = ["X=1"]\n', "variant 'a': field 'env'"),
        ('[variants.a]\nkind = "local"\nkeras = "xla"\n', "variant 'a': field 'keras'"),
        ('[variants.a]\nkind = "image"\nimage = "x"\nengine = "lxc"\n', "field 'engine'"),
        ('[variants.a]\nkind = "local"\nimgae = "x"\n', "variant 'a': field 'imgae'"),
        ('[variants.a]\nkind = "local"\nbuild = 3\n', "variant 'a': field 'build'"),
        ("[variants.a\nkind = 1\n", "invalid TOML"),
        ('variants = "pip"\n', "[variants]"),
    ],
)
def test_malformed_file_names_file_variant_and_field(
    tmp_path: Path, text: str, message: str
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(UserError) as info:
        variants.load_variants(path)
    assert str(path) in str(info.value)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read variants file"):
        variants.load_variants(tmp_path / "nope.toml")


def test_readiness_local(monkeypatch: pytest.MonkeyPatch) -> None:
    local = variants.BUILTINS["local"]
    monkeypatch.setattr(variants.importlib.util, "find_spec", lambda name: None)
    ready, detail = local.readiness()
    assert not ready and "no TensorFlow" in detail


def test_readiness_venv(tmp_path: Path) -> None:
    missing = variants.Variant(name="v", kind="venv", python=str(tmp_path / "python"))
    assert missing.readiness() == (False, f"interpreter not found: {tmp_path / 'python'}")
    # A real interpreter: ready exactly when it can find TensorFlow.
    here = variants.Variant(name="v", kind="venv", python=sys.executable)
    import importlib.util

    assert here.readiness()[0] == (importlib.util.find_spec("tensorflow") is not None)


def test_readiness_venv_without_tensorflow(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    ready, detail = variants.Variant(name="v", kind="venv", python=str(fake)).readiness()
    assert not ready and detail.startswith("no TensorFlow in")


def test_readiness_image(monkeypatch: pytest.MonkeyPatch) -> None:
    present: set[str] = set()
    monkeypatch.setattr(engines, "detect_engine", lambda preferred=None: "podman")
    monkeypatch.setattr(engines.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(engines, "image_exists", lambda engine, image: image in present)
    monkeypatch.setattr(variants, "_host_has_gpu", lambda: False)
    pip, gpu = variants.BUILTINS["pip"], variants.BUILTINS["gpu"]
    assert pip.readiness() == (False, "not built: make build-pip")
    assert gpu.readiness() == (False, "not built: make build-gpu")
    present.update({pip.image, gpu.image})
    assert pip.readiness()[0] is True
    assert gpu.readiness() == (False, "no GPU visible on this host")
    assert variants.skip_reason(gpu) == "no GPU visible on this host"
    assert variants.skip_reason(pip) is None


def test_readiness_without_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engines, "detect_engine", lambda preferred=None: None)
    assert variants.BUILTINS["pip"].readiness() == (
        False,
        "no container engine (install docker or podman)",
    )


def test_image_launch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engines, "require_engine", lambda preferred=None: "podman")
    monkeypatch.setattr(engines, "image_exists", lambda engine, image: True)
    scratch = tmp_path / ".mnist_mlp__pip__t2__r0.abc"
    scratch.mkdir()
    request = WorkerRequest(workload="mnist_mlp", cell={}, result=str(scratch / "result.json"),
                            intra_op=2, cpus=(0, 1))  # fmt: skip
    cmd, client_env = variants.BUILTINS["pip"].launch(
        request,
        {"TF_NUM_INTRAOP_THREADS": "2", "PATH": "/usr/bin", "TF_ENABLE_ONEDNN_OPTS": "1"},
        (0, 1),
        scratch,
    )
    assert cmd[:3] == ["podman", "run", "--rm"]
    assert "--cpuset-cpus" in cmd and cmd[cmd.index("--cpuset-cpus") + 1] == "0,1"
    assert cmd[cmd.index("--name") + 1] == "tfvariants-mnist_mlp__pip__t2__r0.abc"
    assert cmd[-2] == "--request"
    assert WorkerRequest.from_json(cmd[-1]).result == "/out/result.json"
    workloads_mount = f"{Path(kinds.WORKLOADS_PARENT) / 'workloads'}:/opt/tfvariants/workloads:ro"
    assert workloads_mount in cmd
    assert "-e" in cmd and "TF_ENABLE_ONEDNN_OPTS=1" in cmd
    assert "TF_NUM_INTRAOP_THREADS" not in client_env  # the worker's env goes in via -e
    assert not variants.BUILTINS["pip"].pins_on_host()


def test_image_launch_missing_image(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engines, "require_engine", lambda preferred=None: "podman")
    monkeypatch.setattr(engines, "image_exists", lambda engine, image: False)
    with pytest.raises(UserError) as info:
        variants.BUILTINS["pip"].launch(
            WorkerRequest.probe(str(tmp_path / "r.json")), {}, (0,), tmp_path
        )
    assert str(info.value) == (
        "variant 'pip' needs image tfvariants/pip:2.21.0: run `make build-pip`"
    )


def test_variants_command_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(engines, "detect_engine", lambda preferred=None: "podman")
    monkeypatch.setattr(engines.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(engines, "image_exists", lambda engine, image: image.startswith("tfv/pip"))
    path = _write(
        tmp_path,
        '[variants.pip]\nkind = "image"\nimage = "tfv/pip:1"\nbuild = "make build-pip"\n'
        '[variants.broken]\nkind = "venv"\npython = "/nonexistent/python"\n',
    )
    assert main(["variants", "--json", "--variants-file", str(path)]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["pip"]["ready"] is True and rows["pip"]["where"] == "tfv/pip:1"
    assert rows["compiled"]["ready"] is False
    assert rows["compiled"]["detail"] == "not built: make build-compiled"
    assert rows["broken"]["detail"] == "interpreter not found: /nonexistent/python"
    assert rows["local"]["env"] == {"TF_ENABLE_ONEDNN_OPTS": "1"}


def test_variants_command_table(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(engines, "detect_engine", lambda preferred=None: "podman")
    monkeypatch.setattr(engines.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(engines, "image_exists", lambda engine, image: False)
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["variants"]) == 0
    out = capsys.readouterr().out
    assert "not built: make build-compiled" in out
    assert "tfvariants/gpu:2.21.0" in out


def test_variants_command_bad_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, '[variants.a]\nkind = "vm"\n')
    assert main(["variants", "--variants-file", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tfvariants: error: ") and "field 'kind'" in err


def test_dry_run_over_thousands_of_variants_reads_their_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`compare --dry-run` naming 2,000 declared overlays: the variants file is read and
    resolved once (it was once per name: quadratic, more than 15 minutes for 10,000), and
    a workload's shape is worked out once, not once per cell."""
    from tfvariants.commands import matrix_args

    count = 2_000
    calls = {"read": 0, "resolve": 0, "spec": 0}

    def counted(name: str, real: Any, limit: int) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            # Fail at once rather than after minutes of quadratic work on a regression.
            assert calls[name] <= limit, f"{name} called more than {limit} times"
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(variants, "_read_tables", counted("read", variants._read_tables, 1))
    monkeypatch.setattr(variants, "_resolve", counted("resolve", variants._resolve, 1))
    spec = counted("spec", matrix_args.workload_spec, 5)
    monkeypatch.setattr(matrix_args, "workload_spec", spec)
    table = "".join(
        f'[variants.o{i}]\nbase = "local"\nenv = {{ X = "{i}" }}\n' for i in range(count)
    )
    path = _write(tmp_path, table)
    names = ",".join(f"o{i}" for i in range(count))
    argv = ["compare", "--dry-run", "--variants-file", str(path), "--variants", names]
    argv += ["--threads", "1", "--workloads", "mnist_cnn", "--repeats", "2", "--quick"]
    assert main(argv) == 0, capsys.readouterr().err
    assert f"dry run: {2 * count} cells" in capsys.readouterr().out
    assert calls["read"] == 1 and calls["resolve"] == 1


def test_get_variants_resolves_overlay_chains_like_get_variant(tmp_path: Path) -> None:
    path = _write(tmp_path, '[variants.a]\nbase = "local"\nenv = { A = "1" }\n')
    many = variants.get_variants(["a", "local+a", "local+onednn-off+a"], path)
    assert list(many) == ["a", "local+a", "local+onednn-off+a"]
    for name, variant in many.items():
        assert variant == variants.get_variant(name, path)
    assert many["local+onednn-off+a"].env["TF_ENABLE_ONEDNN_OPTS"] == "0"
    with pytest.raises(UserError, match="'b' is not an overlay"):
        variants.get_variants(["a", "local+b"], path)
