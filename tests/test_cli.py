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
