"""Variant kinds, requirement-spec variants and overlays: TOML checks and resolution."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfvariants.cli import main
from tfvariants.errors import UserError
from tfvariants.variants import envbuild, kinds
from tfvariants.variants import registry as variants
from workloads.protocol import WorkerRequest


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tfvariants.toml"
    path.write_text(text)
    return path


def test_kinds_registered_by_name() -> None:
    assert set(kinds.KIND_REGISTRY) == {"local", "venv", "requirements", "image"}
    assert variants.KINDS == tuple(kinds.KIND_REGISTRY)
    assert kinds.get_kind("image").pins_on_host is False
    with pytest.raises(UserError, match="unknown variant kind 'vm'"):
        kinds.get_kind("vm")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[variants.a]\nkind = "conda"\n', "field 'kind' must be one of local, venv, requirements"),
        ('[variants.a]\nkind = "requirements"\n', "field 'requirements' is required"),
        ('[variants.a]\nkind = "requirements"\nrequirements = []\n', "field 'requirements'"),
        (
            '[variants.a]\nkind = "requirements"\nrequirements = ["--index-url=http://x"]\n',
            "bad requirement spec '--index-url=http://x'",
        ),
        (
            '[variants.a]\nkind = "requirements"\nrequirements = ["tensorflow-cpu 2.18"]\n',
            "bad requirement spec 'tensorflow-cpu 2.18'",
        ),
        (
            '[variants.a]\nkind = "requirements"\nrequirements = ["x"]\nindex_urls = ["ftp://i"]\n',
            "field 'index_urls'",
        ),
        ('[variants.a]\nkind = "local"\nkeras_backend = "cntk"\n', "field 'keras_backend'"),
        ('[variants.a]\nbase = "nope"\n', "field 'base' names unknown variant 'nope'"),
        ('[variants.a]\nbase = "b"\n[variants.b]\nbase = "a"\n', "field 'base' is circular"),
        (
            '[variants.a]\nbase = "local"\nimage = "x"\n',
            "field 'image' cannot be set in an overlay",
        ),
        ('[variants."a+b"]\nkind = "local"\n', "variant name 'a+b'"),
    ],
)
def test_bad_tables_are_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(UserError) as info:
        variants.load_variants(path)
    assert message in str(info.value)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    "spec",
    ["tensorflow-cpu==2.18.*", "jax[cpu]==0.10.2", "keras>=3.6,<4", "six",
     "numpy~=2.0; python_version >= '3.10'", "pkg @ https://example.org/p-1.0-py3-none-any.whl"],
)  # fmt: skip
def test_good_specs(spec: str) -> None:
    assert envbuild.spec_problem(spec) is None


@pytest.mark.parametrize("spec", ["", " ", "-e .", "six; rm -rf /", "six==1 && x", 3])
def test_bad_specs(spec: object) -> None:
    assert envbuild.spec_problem(spec) is not None


def test_requirements_variant_from_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(envbuild.ENVS_VAR, str(tmp_path / "envs"))
    path = _write(
        tmp_path,
        '[variants.jax]\nkind = "requirements"\nrequirements = ["jax==0.10.2", "keras"]\n'
        'keras_backend = "jax"\nenv = { XLA_PYTHON_CLIENT_PREALLOCATE = "false" }\n',
    )
    jax = variants.load_variants(path)["jax"]
    assert jax.requirements == ("jax==0.10.2", "keras") and jax.backend == "jax"
    assert jax.build == "tfvariants variants build jax"
    assert jax.pins_on_host()
    folder = envbuild.env_dir(jax)
    assert folder.parent == tmp_path / "envs" and jax.where() == str(folder)
    assert jax.readiness() == (False, "not built: tfvariants variants build jax")
    # The key follows the specs and the Python, not the name.
    from dataclasses import replace

    assert envbuild.env_dir(replace(jax, name="other")) == folder
    assert envbuild.env_dir(replace(jax, requirements=("jax==0.10.1", "keras"))) != folder


def test_overlays_alone_and_composed(tmp_path: Path) -> None:
    builtins = variants.BUILTINS
    sse = builtins["isa-sse41"]
    assert sse.kind == "local" and sse.base == "local"
    assert sse.env == {"TF_ENABLE_ONEDNN_OPTS": "1", "ONEDNN_MAX_CPU_ISA": "SSE41"}
    assert sse.overlay_env == {"ONEDNN_MAX_CPU_ISA": "SSE41"}
    combo = variants.get_variant("tf-2.18+isa-sse41+onednn-off")
    assert combo.name == "tf-2.18+isa-sse41+onednn-off" and combo.kind == "requirements"
    assert combo.requirements == ("tensorflow-cpu==2.18.*",) and combo.base == "tf-2.18"
    assert combo.env == {"TF_ENABLE_ONEDNN_OPTS": "0", "ONEDNN_MAX_CPU_ISA": "SSE41"}
    assert variants.get_variant("local+xla").keras == {"jit_compile": True}
    path = _write(
        tmp_path,
        '[variants.nodnn]\nbase = "pip"\nenv = { TF_ENABLE_ONEDNN_OPTS = "0" }\n'
        '[variants.nodnn-sse]\nbase = "nodnn"\nenv = { ONEDNN_MAX_CPU_ISA = "SSE41" }\n',
    )
    loaded = variants.load_variants(path)
    assert loaded["nodnn"].kind == "image" and loaded["nodnn"].image == "tfvariants/pip:2.21.0"
    assert loaded["nodnn-sse"].base == "pip"
    assert loaded["nodnn-sse"].env == {"TF_ENABLE_ONEDNN_OPTS": "0", "ONEDNN_MAX_CPU_ISA": "SSE41"}
    assert variants.get_variant("keras-jax+nodnn", path).backend == "jax"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("nope+isa-sse41", "unknown variant 'nope'"),
        ("local+pip", "'pip' is not an overlay (overlays: isa-avx2, isa-avx512, isa-sse41"),
        ("local+isa-sse42", "'isa-sse42' is not an overlay"),
    ],
)
def test_bad_overlay_names(name: str, message: str) -> None:
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace("+", r"\+")):
        variants.get_variant(name)


def test_image_overlay_container_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tfvariants.variants import engine as engines

    monkeypatch.setattr(engines, "require_engine", lambda preferred=None: "podman")
    monkeypatch.setattr(engines, "image_exists", lambda engine, image: True)
    scratch = tmp_path / ".mnist_mlp__pip+onednn-off__t2__r0.abc"
    scratch.mkdir()
    cmd, _ = variants.get_variant("pip+onednn-off").launch(
        WorkerRequest.probe(str(scratch / "result.json")), {}, (0,), scratch
    )
    assert cmd[cmd.index("--name") + 1] == "tfvariants-mnist_mlp__pip-onednn-off__t2__r0.abc"


def test_worker_env_names_the_backend() -> None:
    from tfvariants.execute.runner import worker_env
    from tfvariants.plan.pinning import plan_pinning
    from tfvariants.plan.topology import read_topology

    plan = plan_pinning(1, read_topology())
    assert worker_env(variants.BUILTINS["keras-jax"], plan)["KERAS_BACKEND"] == "jax"
    assert worker_env(variants.BUILTINS["local"], plan)["KERAS_BACKEND"] == "tensorflow"


def test_build_command_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["variants", "build"]) == 2
    assert "name at least one variant" in capsys.readouterr().err
    assert main(["variants", "build", "nope"]) == 2
    assert "unknown variant 'nope'" in capsys.readouterr().err
    assert main(["variants", "list", "tf-2.18"]) == 2
    assert "did you mean `variants build`" in capsys.readouterr().err


def test_build_of_an_image_variant_names_its_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tfvariants.variants import engine as engines

    monkeypatch.setattr(engines, "detect_engine", lambda preferred=None: "podman")
    monkeypatch.setattr(engines, "image_exists", lambda engine, image: False)
    assert main(["variants", "build", "compiled"]) == 2
    err = capsys.readouterr().err
    assert "not built by tfvariants: run `make build-compiled`" in err


def test_pip_settings_reach_uv() -> None:
    env = {
        "PIP_INDEX_URL": "https://proxy/simple",
        "PIP_CERT": "/ca.pem",
        "PIP_EXTRA_INDEX_URL": "https://x/simple",
        "UV_INDEX": "https://mine/simple",
    }
    out = envbuild.uv_env(env)
    assert out["UV_DEFAULT_INDEX"] == "https://proxy/simple" and out["SSL_CERT_FILE"] == "/ca.pem"
    assert out["UV_INDEX"] == "https://mine/simple"  # uv's own setting wins
    assert envbuild.uv_env({}) == {}
