"""Probing a variant goes through the runner's process handling: a stub interpreter
stands in for the variant's Python (no TensorFlow)."""

from __future__ import annotations

import sys
from pathlib import Path

import psutil
import pytest

from tfvariants.errors import UserError
from tfvariants.execute.probe import run_probe
from tfvariants.variants import Variant

STUB = f"""#!{sys.executable}
import json, subprocess, sys, time
args = sys.argv[1:]
assert args[:2] == ["-m", "workloads.envprobe"] and args[2] == "--result", args
daemon = subprocess.Popen(["/bin/sleep", "599"], start_new_session=True)
print("probing", flush=True)
{{end}}
with open(args[3], "w") as fh:
    json.dump({{{{"daemon": daemon.pid}}}}, fh)
"""


def stub(tmp_path: Path, end: str = "") -> Variant:
    script = tmp_path / "python"
    script.write_text(STUB.format(end=end))
    script.chmod(0o755)
    return Variant(name="stub", kind="venv", python=str(script))


@pytest.fixture(autouse=True)
def _real_probe(monkeypatch):
    monkeypatch.delenv("TFV_NO_REAL_WORKERS")  # the stub is no TensorFlow


def test_a_probe_leaves_nothing_running_and_says_what_it_killed(tmp_path, capsys):
    data = run_probe(stub(tmp_path))
    with pytest.raises(psutil.NoSuchProcess):
        psutil.Process(data["daemon"]).status()
    assert "probe of stub left 1 process(es) running after its worker" in capsys.readouterr().err


def test_a_probe_that_times_out_is_one_line(tmp_path):
    with pytest.raises(UserError, match="^variant 'stub': probe timed out$"):
        run_probe(stub(tmp_path, end="time.sleep(60)"), timeout_s=1.0)


def test_a_probe_without_result_names_its_last_output(tmp_path):
    with pytest.raises(UserError, match=r"probe failed \(3\): probing$"):
        run_probe(stub(tmp_path, end="sys.exit(3)"))


def test_a_probe_result_that_is_not_an_object_is_refused(tmp_path):
    variant = stub(tmp_path, end="open(args[3], 'w').write('[1]'); sys.exit(0)")
    with pytest.raises(UserError, match="unreadable result"):
        run_probe(variant)
