"""Requirement-spec environments, built for real from the package index (marker `envs`).

A tiny pure-Python package (six) keeps each build to seconds: the same specs reuse the
environment, changed specs build another, and the lock records the installed version.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from tfvariants.cli import main
from tfvariants.variants import envbuild
from tfvariants.variants import registry as variants

pytestmark = pytest.mark.envs


@pytest.fixture
def envs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(envbuild.ENVS_VAR, str(tmp_path / "envs"))
    # These environments hold six, not a backend: the import check has its own test.
    monkeypatch.setattr(envbuild, "import_check", lambda python, backend, env: "not checked")
    return tmp_path / "envs"


def _variant(spec: str) -> variants.Variant:
    return variants.Variant(name="tiny", kind="requirements", requirements=(spec,))


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_same_spec_reuses_changed_spec_rebuilds(
    envs: Path, installer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if installer == "pip":
        monkeypatch.setattr(envbuild, "find_uv", lambda: None)
    elif envbuild.find_uv() is None:
        pytest.skip("uv is not installed")
    lines: list[str] = []
    old = _variant("six==1.16.0")
    assert old.readiness()[0] is False
    done = envbuild.build(old, lines.append)
    assert done.startswith("built ") and lines  # progress was reported
    info = json.loads((envbuild.env_dir(old) / envbuild.INFO_FILE).read_text())
    assert info["lock"]["six"] == "1.16.0" and info["installer"] == installer
    assert old.readiness()[0] is True
    python = old.interpreter()
    marker = Path(python).parent.parent / "marker"
    marker.write_text("kept")
    # Same specs: nothing rebuilt, the folder (with our marker) is kept.
    assert envbuild.build(replace(old, name="same-specs"), lines.append).startswith("reused ")
    assert marker.read_text() == "kept"
    # Changed specs: a new environment with the new version; the old one stays cached.
    new = replace(old, requirements=("six==1.17.0",))
    assert new.readiness()[0] is False
    assert envbuild.build(new, lines.append).startswith("built ")
    assert envbuild.env_dir(new) != envbuild.env_dir(old)
    out = subprocess.run([new.interpreter(), "-c", "import six; print(six.__version__)"],
                         capture_output=True, text=True, check=True)  # fmt: skip
    assert out.stdout.strip() == "1.17.0"
    assert marker.exists()


def test_unfinished_build_is_redone(envs: Path) -> None:
    variant = _variant("six==1.17.0")
    envbuild.build(variant, lambda line: None)
    (envbuild.env_dir(variant) / envbuild.INFO_FILE).unlink()  # as if killed before the end
    assert variant.readiness()[0] is False
    assert envbuild.build(variant, lambda line: None).startswith("built ")


def test_build_command_and_failure(
    envs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = tmp_path / "v.toml"
    toml.write_text(
        '[variants.tiny]\nkind = "requirements"\nrequirements = ["six==1.17.0"]\n'
        '[variants.broken]\nkind = "requirements"\n'
        'requirements = ["tfvariants-no-such-package-xyz==0.0.1"]\n'
    )
    assert main(["variants", "build", "tiny", "--variants-file", str(toml)]) == 0
    assert "tiny: built " in capsys.readouterr().err
    assert main(["variants", "build", "tiny", "--variants-file", str(toml)]) == 0
    assert "tiny: reused " in capsys.readouterr().err
    assert main(["variants", "build", "broken", "--variants-file", str(toml)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("tfvariants: error: variant 'broken': building its environment:")
    assert variants.get_variant("broken", toml).readiness()[0] is False


def test_import_check_fails_the_build_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A requirements variant whose specs lack its backend: the build fails with the
    # import's own message, and leaves no environment that looks built.
    monkeypatch.setenv(envbuild.ENVS_VAR, str(tmp_path / "envs"))
    variant = _variant("six==1.17.0")
    with pytest.raises(variants.UserError) as caught:
        envbuild.build(variant, lambda line: None)
    message = str(caught.value)
    assert "\n" not in message
    assert message.endswith(
        "importing tensorflow in the new environment failed: "
        "ModuleNotFoundError: No module named 'tensorflow'"
    )
    assert variant.readiness()[0] is False
