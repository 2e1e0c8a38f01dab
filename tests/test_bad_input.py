"""Hostile and mistaken input, as a table: every case is either one line on stderr with
exit code 2, or a named warning; none changes a byte of an existing results folder."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
import resultfactory as rf

from tfvariants.cli import main
from tfvariants.execute import runner
from tfvariants.store.runfile import RUN_SCHEMA_VERSION, local_host

CELL = "mnist_mlp__local__t1__r0"


def folder_hash(root: Path) -> str:
    """Every file's relative path and bytes under root."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        h.update(str(p.relative_to(root)).encode())
        h.update(p.read_bytes() if p.is_file() else b"<dir>")
    return h.hexdigest()


def make_run(root: Path) -> Path:
    """A finished run: local@1 x mnist_mlp x 2 repeats, run.json declaring this host."""
    results = [rf.make_result("local", 1, "mnist_mlp", r, noise=0.02) for r in range(2)]
    run = {
        "schema_version": 2,
        "kind": "tfvariants.run",
        "variants": ["local"],
        "threads": [1],
        "workloads": ["mnist_mlp"],
        "repeats": 2,
        "options": {"epochs": 2, "samples": 6000, "data": "synthetic", "seed": 0},
        "variant_info": {"local": {"kind": "local", "device": "cpu"}},
        "hosts": [local_host()],
        "logical_cpus": 2,
    }
    return rf.write_results(root / "R", results, run)


def ok_with(**changes: object) -> str:
    r = rf.make_result("local", 1, "mnist_mlp", 5)
    for path, value in changes.items():
        d = r
        *parents, last = path.split("__")
        for key in parents:
            d = d[key]
        d[last] = value
    return json.dumps(r)


def nested(depth: int = 100_000) -> str:
    return "[" * depth + "]" * depth


def cell(name: str, content: str | bytes) -> Callable[[Path], None]:
    def put(root: Path) -> None:
        target = root / "R" / "cells" / name
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)

    return put


def run_json(content: str | bytes) -> Callable[[Path], None]:
    def put(root: Path) -> None:
        target = root / "R" / "run.json"
        target.write_bytes(content if isinstance(content, bytes) else content.encode())

    return put


def run_json_with(**changes: object) -> Callable[[Path], None]:
    def put(root: Path) -> None:
        target = root / "R" / "run.json"
        target.write_text(json.dumps({**json.loads(target.read_text()), **changes}))

    return put


GOOD_CATALOG = """name = "t"
source = "test"
[billing]
rule = "per_second"
minimum_seconds = 60
[[instance]]
name = "c1"
vcpus = 1
prices = [{ as_of = "2017-07", on_demand = 0.05 }]
"""


def catalog(old: str, new: str) -> Callable[[Path], None]:
    def put(root: Path) -> None:
        (root / "cat.toml").write_text(GOOD_CATALOG.replace(old, new))

    return put


def a_dir(root: Path) -> None:
    (root / "adir").mkdir()


# (id, setup, argv, expect, fragment): expect "error" = exit 2 + one line on stderr;
# "warning" = exit 0 + a "warning:" line naming the file on stderr.
E, W = "error", "warning"
REPORT = ["report", "R", "-o", "out.html"]
CASES = [
    # numbers on the command line: the same parser, bounds and wording everywhere
    ("run-threads-huge", None, ["run", "mnist_mlp", "--threads", "99999"], E, "1 to 4096"),
    ("run-threads-underscore", None, ["run", "mnist_mlp", "--threads", "1_000"], E, "'1_000'"),
    ("run-threads-arabic-digit", None, ["run", "mnist_mlp", "--threads", "\u0663"], E, "--threads"),
    ("run-threads-empty", None, ["run", "mnist_mlp", "--threads", ""], E, "--threads"),
    ("run-seed-too-big", None, ["run", "mnist_mlp", "--threads", "1", "--seed", "4294967296"], E, "--seed"),
    ("run-repeat-negative", None, ["run", "mnist_mlp", "--threads", "1", "--repeat", "-1"], E, "--repeat"),
    ("compare-threads-huge", None, ["compare", "--threads", "1,99999"], E, "1 to 4096"),
    ("compare-threads-underscore", None, ["compare", "--threads", "1_0"], E, "'1_0'"),
    ("compare-repeats-zero", None, ["compare", "--repeats", "0"], E, "from 1 to 10000"),
    ("compare-repeats-fullwidth", None, ["compare", "--repeats", "\uff12"], E, "--repeats"),
    ("compare-seed-negative", None, ["compare", "--seed", "-1"], E, "--seed"),
    ("compare-seed-underscore", None, ["compare", "--seed", "1_0"], E, "--seed"),
    ("compare-timeout-nan", None, ["compare", "--timeout", "nan"], E, "--timeout"),
    ("compare-timeout-inf", None, ["compare", "--timeout", "inf"], E, "--timeout"),
    ("compare-epochs-zero", None, ["compare", "--epochs", "0"], E, "--epochs"),
    ("compare-quarantine-alone", None, ["compare", "--quarantine", "--out", "R"], E, "only applies to --resume"),
    # output paths: checked before any work, results never overwritten
    ("report-into-cells", None, ["report", "R", "-o", f"R/cells/{CELL}.json"], E, "refused"),
    ("report-csv-onto-run-json", None, ["report", "R", "--csv", "R/run.json"], E, "refused"),
    ("report-o-equals-csv", None, ["report", "R", "-o", "x.out", "--csv", "x.out"], E, "same file"),
    ("report-o-is-a-folder", a_dir, ["report", "R", "-o", "adir"], E, "is a folder"),
    ("compare-report-into-run-json", None, ["compare", "--resume", "--out", "R", "-o", "R/run.json"], E, "refused"),
    ("compare-fresh-into-a-run", None, ["compare", "--threads", "1", "--workloads", "mnist_mlp", "--out", "R"], E, "already holds a run"),
    ("run-onto-an-existing-cell", None, ["run", "mnist_mlp", "--threads", "1", "--out", "R"], E, "already exists"),
    ("report-missing-folder", None, ["report", "nope"], E, "no such results folder"),
    # pricing options and catalogs
    ("pricing-month-13", None, [*REPORT, "--pricing", "gce-2017@2017-13"], E, "2017-13"),
    ("pricing-day-30-feb", None, [*REPORT, "--pricing", "gce-2017@2017-02-30"], E, "2017-02-30"),
    ("pricing-unknown", None, [*REPORT, "--pricing", "nope"], E, "no pricing catalog"),
    ("instance-no-equals", None, [*REPORT, "--instance", "local"], E, "VARIANT[@THREADS]=INSTANCE"),
    ("instance-unknown", None, [*REPORT, "--instance", "local=n9-huge"], E, "no instance 'n9-huge'"),
    ("baseline-bad", None, [*REPORT, "--baseline", "local@x"], E, "--baseline"),
    ("catalog-nan", catalog("0.05", "nan"), ["prices", "--catalog", "cat.toml"], E, "finite"),
    ("catalog-inf", catalog("0.05", "inf"), ["prices", "--catalog", "cat.toml"], E, "finite"),
    ("catalog-1e400", catalog("0.05", "1e400"), ["prices", "--catalog", "cat.toml"], E, "finite"),
    ("catalog-zero", catalog("0.05", "0.0"), ["prices", "--catalog", "cat.toml"], E, "greater than 0"),
    ("catalog-month-13", catalog('"2017-07"', '"2017-13"'), ["prices", "--catalog", "cat.toml"], E, "as_of"),
    ("catalog-negative-minimum", catalog("= 60", "= -60"), ["prices", "--catalog", "cat.toml"], E, "minimum_seconds"),
    ("catalog-binary", lambda root: (root / "cat.toml").write_bytes(b"\xff\xfe\x00"), ["prices", "--catalog", "cat.toml"], E, "cannot read"),
    ("catalog-nested", lambda root: (root / "cat.toml").write_text("a = " + nested(5000)), ["prices", "--catalog", "cat.toml"], E, "nested too deeply"),
    ("variants-file-binary", lambda root: (root / "v.toml").write_bytes(b"\xff\xfe\x00"), ["variants", "--variants-file", "v.toml"], E, "not UTF-8"),
    ("variants-file-nested", lambda root: (root / "v.toml").write_text("a = " + nested(5000)), ["variants", "--variants-file", "v.toml"], E, "nested too deeply"),
    ("catalog-in-report", catalog("0.05", "nan"), [*REPORT, "--pricing", "cat.toml"], E, "finite"),
    # run.json: the run's definition; unusable is an error naming file and field
    ("run-json-binary", run_json(b"\x89PNG\r\n\x1a\n\x00"), REPORT, E, "not UTF-8"),
    ("run-json-nested", run_json(nested()), REPORT, E, "nested too deeply"),
    ("run-json-truncated", run_json('{"kind": "tfvariants.run", "varia'), REPORT, E, "corrupt JSON"),
    ("run-json-threads-abc", run_json_with(threads=["abc"]), REPORT, E, "'threads'"),
    ("run-json-newer", run_json_with(schema_version=RUN_SCHEMA_VERSION + 1), REPORT, E, "upgrade tfvariants"),
    ("run-json-repeats-negative", run_json_with(repeats=-1), REPORT, E, "'repeats'"),
    ("run-json-hosts-not-list", run_json_with(hosts="me"), REPORT, E, "'hosts'"),
    ("run-json-seed-text", run_json_with(options={"seed": "abc"}), REPORT, E, "options.seed"),
    ("run-json-foreign-kind", run_json('{"kind": "pyperf"}'), REPORT, E, "not a tfvariants run"),
    # cells: unreadable files are named warnings, never silently dropped
    ("cell-binary", cell("b.json", b"\x00\xff\xfe binary"), REPORT, W, "cells/b.json: not UTF-8"),
    ("cell-nested", cell("n.json", nested()), REPORT, W, "cells/n.json: JSON nested too deeply"),
    ("cell-truncated", cell("t.json", ok_with()[:200]), REPORT, W, "cells/t.json: corrupt JSON"),
    ("cell-empty", cell("e.json", ""), REPORT, W, "cells/e.json: corrupt JSON"),
    ("cell-threads-abc", cell("a.json", ok_with(cell__threads="abc")), REPORT, W, "'cell.threads'"),
    ("cell-threads-huge", cell("h.json", ok_with(cell__threads=99999)), REPORT, W, "'cell.threads'"),
    ("cell-is-a-list", cell("l.json", ok_with(cell=["local", 1])), REPORT, W, "'cell'"),
    ("cell-repeat-negative", cell("r.json", ok_with(cell__repeat=-1)), REPORT, W, "'cell.repeat'"),
    ("timing-a-string", cell("s.json", ok_with(timing="fast")), REPORT, W, "'timing'"),
    ("epoch-time-string", cell("es.json", ok_with(timing__epoch_times_s=["1.0", 2.0])), REPORT, W, "epoch_times_s[0]"),
    ("epoch-time-negative", cell("en.json", ok_with(timing__epoch_times_s=[-1.0, 2.0])), REPORT, W, "epoch_times_s[0]"),
    ("epoch-time-nan", cell("nan.json", ok_with(timing__epoch_times_s=[float("nan"), 2.0])), REPORT, W, "epoch_times_s[0]"),
    ("epoch-time-inf", cell("inf.json", ok_with(timing__epoch_times_s=[1.0, float("inf")])), REPORT, W, "epoch_times_s[1]"),
    ("epoch-time-1e400", cell("big.json", ok_with()[:0] + ok_with().replace('"epoch_times_s": [', '"epoch_times_s": [1e400, ')), REPORT, W, "epoch_times_s[0]"),
    ("epoch-time-absurd", cell("ab.json", ok_with(timing__epoch_times_s=[1e12, 2.0])), REPORT, W, "not a plausible time"),
    ("epoch-times-empty", cell("ee.json", ok_with(timing__epoch_times_s=[])), REPORT, W, "non-empty list"),
    ("steady-text", cell("st.json", ok_with(timing__steady_epoch_s="2s")), REPORT, W, "steady_epoch_s"),
    ("projected-negative", cell("pn.json", ok_with(schedule__projected_full_s=-5)), REPORT, W, "projected_full_s"),
    ("cell-schema-2", cell("v2.json", ok_with(schema_version=2)), REPORT, W, "newer than this tfvariants"),
    ("cell-status-unknown", cell("su.json", ok_with(status="great")), REPORT, W, "unknown status"),
    ("cell-environment-nested-500", cell("en5.json", ok_with(environment=json.loads(nested(500)))), REPORT, W, "nested too deeply"),
    ("cell-environment-list", cell("el.json", ok_with(environment=[1])), REPORT, W, "'environment'"),
    ("cell-a-folder", lambda root: (root / "R/cells/d.json").mkdir(), REPORT, W, "cells/d.json: not a regular file"),
    ("cell-copy", lambda root: (root / f"R/cells/{CELL} (copy).json").write_bytes((root / f"R/cells/{CELL}.json").read_bytes()), REPORT, W, f"a copy of cell {CELL}"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_table(case, tmp_path, monkeypatch, capsys):
    name, setup, argv, expect, fragment = case
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "run_cell", lambda *a, **k: pytest.fail("must not run a cell"))
    make_run(tmp_path)
    if setup:
        setup(tmp_path)
    before = folder_hash(tmp_path / "R")
    files_before = set(os.listdir(tmp_path))
    capsys.readouterr()
    rc = main(argv)
    out, err = capsys.readouterr()
    assert folder_hash(tmp_path / "R") == before, "the results folder changed"
    assert not list(tmp_path.rglob("*.tmp")), "a temp file was left behind"
    if expect == E:
        assert rc == 2, err
        assert len(err.strip().splitlines()) == 1, err
        assert fragment in err, err
        assert set(os.listdir(tmp_path)) == files_before, "an error wrote something"
    else:
        assert rc == 0, err
        warnings = [line for line in err.splitlines() if line.startswith("tfvariants: warning:")]
        named = [line for line in warnings if fragment in line]
        assert named, err
        file = named[0].removeprefix("tfvariants: warning: ").split(": ")[0]
        assert file.startswith("cells/") and file in (tmp_path / "out.html").read_text()


def test_the_table_has_at_least_40_cases():
    assert len(CASES) >= 40 and len({c[0] for c in CASES}) == len(CASES)
