import subprocess
import sys

import pytest

from tfvariants.cli import main

ROOT_CMD = [sys.executable, "-m", "tfvariants"]


@pytest.mark.parametrize("threads", ["0", "-1", "abc", "", "1.5"])
def test_bad_threads(tmp_path, capsys, threads):
    out = tmp_path / "out"
    assert main(["run", "mnist_mlp", "--threads", threads, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--threads" in err
    assert not out.exists()


def test_unknown_workload(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", "resnet9000", "--threads", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tfvariants: error: unknown workload 'resnet9000'")
    assert len(err.splitlines()) == 1
    assert not out.exists()


def test_missing_workload_file(tmp_path, capsys):
    assert (
        main(["run", str(tmp_path / "mine.py"), "--threads", "1", "--out", str(tmp_path / "o")])
        == 2
    )
    assert "workload file not found" in capsys.readouterr().err


def test_unwritable_out(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["run", "mnist_mlp", "--threads", "1", "--out", str(blocker / "sub")]) == 2
    err = capsys.readouterr().err.strip()
    assert "cannot write to" in err and len(err.splitlines()) == 1


def test_unknown_variant(tmp_path, capsys):
    rc = main(
        ["run", "mnist_mlp", "--threads", "1", "--variant", "nope", "--out", str(tmp_path / "o")]
    )
    assert rc == 2
    assert "unknown variant 'nope'" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_help_does_not_import_tensorflow():
    code = (
        "import sys\nfrom tfvariants.cli import build_parser\n"
        "p = build_parser()\n"
        "for a in (['--help'], ['run', '--help'], ['env', '--help']):\n"
        "    try:\n        p.parse_args(a)\n    except SystemExit:\n        pass\n"
        "bad = [m for m in ('tensorflow', 'keras', 'numpy') if m in sys.modules]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_env_no_tf_json(capsys):
    import json

    assert main(["env", "--no-tf", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["host"]["topology"]["logical_cpus"] >= 1
    assert "1" in data["host"]["pinning_plans"]


def _no_tensorflow_here(monkeypatch, tmp_path):
    """This interpreter, as if TensorFlow were not installed (`pip install .` alone)."""
    import importlib.util

    real = importlib.util.find_spec

    def find_spec(name, *args):
        return None if name == "tensorflow" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    return []


def _venv_without_tensorflow(monkeypatch, tmp_path):
    """A venv variant whose interpreter exists but finds no TensorFlow."""
    fake = tmp_path / "bin" / "python"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    toml = tmp_path / "v.toml"
    toml.write_text(f'[variants.old]\nkind = "venv"\npython = "{fake}"\n')
    return ["--variant", "old", "--variants-file", str(toml)]


@pytest.mark.parametrize(
    ("setup", "name"), [(_no_tensorflow_here, "local"), (_venv_without_tensorflow, "old")]
)
def test_run_refuses_a_variant_that_is_not_ready_before_writing(
    tmp_path, monkeypatch, capsys, setup, name
):
    """Not a failed cell after the fact: one line, exit 2, no run folder at all."""
    argv = ["run", "mnist_mlp", "--threads", "1", *setup(monkeypatch, tmp_path)]
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # the default --out (results/run-...) lands here
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tfvariants: error: variant '{name}' is not ready: no TensorFlow in")
    assert err.count("\n") == 1
    assert list(work.iterdir()) == []


def test_every_command_is_one_declared_record():
    """A command module declares one Command (no loose ORDER/HELP/DESCRIPTION headers);
    its --help description is its docstring, and each is found and ordered by it."""
    from tfvariants.cli import build_parser, commands
    from tfvariants.commands.command import Command

    found = commands()
    names = [m.__name__.rsplit(".", 1)[1] for m in found]
    assert names == ["env", "run", "variants", "compare", "serve", "report", "prices"]
    for module in found:
        assert isinstance(module.COMMAND, Command)
        assert not {"ORDER", "HELP", "DESCRIPTION"} & set(vars(module))
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert sub.choices["env"].description == commands()[0].__doc__
    assert sub.choices["env"].description.startswith("Probe the host")
