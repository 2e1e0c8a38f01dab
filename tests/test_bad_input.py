"""Hostile and mistaken input, as a table: every case is either one line on stderr with
exit code 2, or a named warning; none changes a byte of an existing file (the whole
folder the command runs in is hashed before and after; an error writes nothing at all,
a warning only the report it was asked for)."""

from __future__ import annotations

import errno
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
import resultfactory as rf

from tfvariants.cli import main
from tfvariants.commands import compare
from tfvariants.execute import runner
from tfvariants.store.runfile import RUN_SCHEMA_VERSION, local_host

CELL = "mnist_mlp__local__t1__r0"


def folder_hash(root: Path, skip: tuple[str, ...] = ()) -> str:
    """Every entry's relative path and content under root (a link by its target), but
    the paths in ``skip``."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if rel in skip:
            continue
        h.update(rel.encode() + b"\0")
        if p.is_symlink():
            h.update(b"<link>" + os.readlink(p).encode())
        else:
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


def run_options_with(**changes: object) -> Callable[[Path], None]:
    """run.json with these options changed (the others kept); json writes inf as
    Infinity, which Python's json reads back."""

    def put(root: Path) -> None:
        target = root / "R" / "run.json"
        run = json.loads(target.read_text())
        run["options"] = {**run["options"], **changes}
        target.write_text(json.dumps(run))

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
    assert old in GOOD_CATALOG, old  # a case that changes nothing tests nothing

    def put(root: Path) -> None:
        (root / "cat.toml").write_text(GOOD_CATALOG.replace(old, new))

    return put


def variants_env(entries: str) -> Callable[[Path], None]:
    """A variants file with the overlay 'bad' whose env table is ``entries`` (TOML)."""

    def put(root: Path) -> None:
        (root / "v.toml").write_text(f'[variants.bad]\nbase = "local"\nenv = {{ {entries} }}\n')

    return put


def variants_keras(entries: str) -> Callable[[Path], None]:
    """A variants file with the overlay 'bad' whose keras table is ``entries`` (TOML)."""

    def put(root: Path) -> None:
        (root / "v.toml").write_text(f'[variants.bad]\nbase = "local"\nkeras = {{ {entries} }}\n')

    return put


GOOD_CSV = {
    "instance": "c1",
    "vcpus": "1",
    "gpu": "",
    "on_demand": "0.05",
    "spot": "0.01",
    "region": "us",
    "date": "2017-07",
}


def simple_csv(**changes: str) -> Callable[[Path], None]:
    """A simple pricing CSV (prices import) with one row, these columns changed."""
    row = {**GOOD_CSV, **changes}

    def put(root: Path) -> None:
        text = ",".join(row) + "\n" + ",".join(row.values()) + "\n"
        (root / "s.csv").write_text(text, encoding="utf-8")

    return put


def fifo(rel: str) -> Callable[[Path], None]:
    """A FIFO at ``rel`` that no process writes or reads: reading or writing it waits
    forever unless the tool refuses it."""

    def put(root: Path) -> None:
        os.mkfifo(root / rel)

    return put


def symlink(rel: str, target: str) -> Callable[[Path], None]:
    def put(root: Path) -> None:
        (root / rel).symlink_to(target)

    return put


def link_loop(root: Path) -> None:
    (root / "loop1").symlink_to("loop2")
    (root / "loop2").symlink_to("loop1")


def sparse(rel: str, size: int) -> Callable[[Path], None]:
    """A file of ``size`` bytes that takes no disk space (a hole)."""

    def put(root: Path) -> None:
        with open(root / rel, "wb") as fh:
            fh.truncate(size)

    return put


def linked_report_slot(root: Path) -> None:
    (root / "elsewhere").mkdir()
    (root / "R" / "report").symlink_to(root / "elsewhere")


def received_link_in_slot(root: Path) -> None:
    (root / "R" / "report").mkdir()
    (root / "victim.txt").write_text("the user's file")
    (root / "R" / "report" / "x.html").symlink_to(root / "victim.txt")


def scratch_of_the_user(root: Path) -> None:
    (root / "proj" / ".scratch" / "n").mkdir(parents=True)
    (root / "proj" / ".scratch" / "n" / "t").write_text("mine")
    (root / "proj" / ".x__r1.abcdefgh").mkdir()


def simple_csv_text(text: str) -> Callable[[Path], None]:
    def put(root: Path) -> None:
        (root / "s.csv").write_text(text, encoding="utf-8")

    return put


def edited_copy(root: Path) -> None:
    """Cell r3, and a copy of it edited to say repeat 4 (renamed to match)."""
    times = {"timing__step_times_s": [0.012345, 0.0061234, 0.0060987, 0.0061001]}
    (root / "R/cells/mnist_mlp__local__t1__r3.json").write_text(ok_with(cell__repeat=3, **times))
    (root / "R/cells/mnist_mlp__local__t1__r4.json").write_text(ok_with(cell__repeat=4, **times))


def beside_run(content: str | None) -> Callable[[Path], None]:
    """A folder B named with --beside: its run.json ``content`` (None: no run.json)."""

    def put(root: Path) -> None:
        (root / "B").mkdir()
        if content is not None:
            (root / "B" / "run.json").write_text(content)

    return put


RESUMABLE = {"min_steady_s": 10.0, "min_steady_steps": 100, "quick": False}


def resumable(**changes: object) -> Callable[[Path], None]:
    """run.json with every option a resume compares (the fixture's lacks a few), plus
    ``changes`` at the top level."""

    def put(root: Path) -> None:
        run_options_with(**RESUMABLE)(root)
        run_json_with(**changes)(root)

    return put


def stamped(samples: int, version: str = "0.1.0", **run: object) -> Callable[[Path], None]:
    """A cell that says it was measured with --samples ``samples`` by tfvariants
    ``version`` (copied in from another run), in a run.json with ``run``'s fields."""
    stamp = {
        "tfvariants": version,
        "options": {"epochs": 2, "samples": samples, "data": "synthetic", "seed": 0},
    }

    def put(root: Path) -> None:
        run_json_with(**run)(root)
        cell("mnist_mlp__local__t1__r7.json", ok_with(cell__repeat=7, measured_by=stamp))(root)

    return put


R6 = "mnist_mlp__local__t1__r6.json"  # a third repeat, named as its cell


def local_redefined(root: Path) -> None:
    (root / "tfvariants.toml").write_text(
        '[variants.local]\nkind = "venv"\npython = "/usr/bin/python3"\n'
    )


def a_dir(root: Path) -> None:
    (root / "adir").mkdir()


PRICES_CSV = "instance,vcpus,gpu,on_demand,spot,region,date\nc1,1,,0.05,,r1,2026-01\n"


def prices_csv(root: Path) -> None:
    (root / "in.csv").write_text(PRICES_CSV)


def with_log(root: Path) -> None:
    prices_csv(root)
    (root / "R" / "logs").mkdir()
    (root / "R" / "logs" / f"{CELL}.log").write_text("the worker's log")


LONG = "n" * 300  # one path component longer than any file system's NAME_MAX
IMPORT = ["prices", "import", "in.csv", "-o"]


# (id, setup, argv, expect, fragment): expect "error" = exit 2 + one line on stderr;
# "warning" = exit 0 + a "warning:" line naming the file on stderr.
E, W = "error", "warning"
REPORT = ["report", "R", "-o", "out.html"]
COMPARE = ["compare", "--threads", "1", "--workloads", "mnist_mlp", "--out", "R2"]
RESUME = ["compare", "--resume", "--out", "R"]
PRICES = ["prices", "--catalog", "cat.toml"]
PRICED_REPORT = [*REPORT, "--pricing", "cat.toml", "--instance", "local=c1"]
IMPORT_S = ["prices", "import", "s.csv", "-o", "o.toml"]
BESIDE = [*REPORT, "--beside", "B"]
SERVE = [
    "serve",
    "--models",
    "noop",
    "--scenarios",
    "concurrency",
    "--concurrency",
    "1",
    "--path",
    "inprocess",
    "--repeats",
    "1",
    "--out",
    "R2",
]
CASES = [
    # numbers on the command line: the same parser, bounds and wording everywhere
    ("run-threads-huge", None, ["run", "mnist_mlp", "--threads", "99999"], E, "1 to 4096"),
    ("run-threads-underscore", None, ["run", "mnist_mlp", "--threads", "1_000"], E, "'1_000'"),
    ("run-threads-arabic-digit", None, ["run", "mnist_mlp", "--threads", "\u0663"], E, "--threads"),
    ("run-threads-empty", None, ["run", "mnist_mlp", "--threads", ""], E, "--threads"),
    (
        "run-seed-too-big",
        None,
        ["run", "mnist_mlp", "--threads", "1", "--seed", "4294967296"],
        E,
        "--seed",
    ),
    (
        "run-repeat-negative",
        None,
        ["run", "mnist_mlp", "--threads", "1", "--repeat", "-1"],
        E,
        "--repeat",
    ),
    ("compare-threads-huge", None, ["compare", "--threads", "1,99999"], E, "1 to 4096"),
    ("compare-threads-underscore", None, ["compare", "--threads", "1_0"], E, "'1_0'"),
    ("compare-repeats-zero", None, ["compare", "--repeats", "0"], E, "from 1 to 10000"),
    ("compare-repeats-fullwidth", None, ["compare", "--repeats", "\uff12"], E, "--repeats"),
    ("compare-seed-negative", None, ["compare", "--seed", "-1"], E, "--seed"),
    ("compare-seed-underscore", None, ["compare", "--seed", "1_0"], E, "--seed"),
    ("compare-timeout-nan", None, ["compare", "--timeout", "nan"], E, "--timeout"),
    ("compare-timeout-inf", None, ["compare", "--timeout", "inf"], E, "--timeout"),
    ("compare-epochs-zero", None, ["compare", "--epochs", "0"], E, "--epochs"),
    (
        "compare-quarantine-alone",
        None,
        ["compare", "--quarantine", "--out", "R"],
        E,
        "only applies to --resume",
    ),
    # output paths: checked before any work, results never overwritten
    ("report-into-cells", None, ["report", "R", "-o", f"R/cells/{CELL}.json"], E, "refused"),
    ("report-csv-onto-run-json", None, ["report", "R", "--csv", "R/run.json"], E, "refused"),
    ("report-o-equals-csv", None, ["report", "R", "-o", "x.out", "--csv", "x.out"], E, "same file"),
    ("report-o-is-a-folder", a_dir, ["report", "R", "-o", "adir"], E, "is a folder"),
    (
        "compare-report-into-run-json",
        None,
        ["compare", "--resume", "--out", "R", "-o", "R/run.json"],
        E,
        "refused",
    ),
    (
        "compare-fresh-into-a-run",
        None,
        ["compare", "--threads", "1", "--workloads", "mnist_mlp", "--out", "R"],
        E,
        "already holds a run",
    ),
    (
        "run-onto-an-existing-cell",
        None,
        ["run", "mnist_mlp", "--threads", "1", "--out", "R"],
        E,
        "already exists",
    ),
    ("report-missing-folder", None, ["report", "nope"], E, "no such results folder"),
    # ... nor over any other evidence of a run folder: logs, quarantine, artifacts, the lock
    ("report-into-logs", with_log, ["report", "R", "-o", f"R/logs/{CELL}.log"], E, "evidence"),
    ("report-csv-into-logs", None, ["report", "R", "--csv", "R/logs/cells.csv"], E, "evidence"),
    ("report-into-quarantine", None, ["report", "R", "-o", "R/quarantine/q.html"], E, "evidence"),
    (
        "report-into-artifacts",
        None,
        ["report", "R", "-o", f"R/artifacts/{CELL}/index.html"],
        E,
        "evidence",
    ),
    ("report-onto-the-lock", None, ["report", "R", "-o", "R/.lock"], E, "evidence"),
    (
        "compare-report-into-logs",
        None,
        ["compare", "--resume", "--out", "R", "-o", "R/logs/r.html"],
        E,
        "refused",
    ),
    (
        "serve-report-into-cells",
        None,
        ["serve", "--out", "S", "-o", f"R/cells/{CELL}.json"],
        E,
        "refused",
    ),
    (
        "serve-csv-into-logs",
        None,
        ["serve", "--out", "S", "--csv", "R/logs/serving.csv"],
        E,
        "refused",
    ),
    # prices import -o: the same guard, and never over its own input
    ("import-onto-run-json", prices_csv, [*IMPORT, "R/run.json"], E, "refused"),
    ("import-onto-a-cell", prices_csv, [*IMPORT, f"R/cells/{CELL}.json"], E, "refused"),
    ("import-onto-a-log", with_log, [*IMPORT, f"R/logs/{CELL}.log"], E, "refused"),
    ("import-onto-its-input", prices_csv, [*IMPORT, "in.csv"], E, "input CSV"),
    (  # issue 43: an existing catalog is not replaced without a word
        "import-over-a-catalog",
        lambda root: (prices_csv(root), (root / "cat.toml").write_text("mine")),
        [*IMPORT, "cat.toml"],
        E,
        "--force replaces it",
    ),
    # a path component longer than the file system allows: one line, not a traceback
    ("report-o-name-too-long", None, ["report", "R", "-o", f"{LONG}.html"], E, "longer than"),
    (
        "compare-out-name-too-long",
        None,
        ["compare", "--threads", "1", "--out", LONG],
        E,
        "longer than",
    ),
    ("import-o-name-too-long", prices_csv, [*IMPORT, f"{LONG}.toml"], E, "longer than"),
    # pricing options and catalogs
    ("pricing-month-13", None, [*REPORT, "--pricing", "gce-2017@2017-13"], E, "2017-13"),
    ("pricing-day-30-feb", None, [*REPORT, "--pricing", "gce-2017@2017-02-30"], E, "2017-02-30"),
    ("pricing-unknown", None, [*REPORT, "--pricing", "nope"], E, "no pricing catalog"),
    ("instance-no-equals", None, [*REPORT, "--instance", "local"], E, "VARIANT[@THREADS]=INSTANCE"),
    (
        "instance-unknown",
        None,
        [*REPORT, "--instance", "local=n9-huge"],
        E,
        "no instance 'n9-huge'",
    ),
    ("baseline-bad", None, [*REPORT, "--baseline", "local@x"], E, "--baseline"),
    ("catalog-nan", catalog("0.05", "nan"), ["prices", "--catalog", "cat.toml"], E, "finite"),
    ("catalog-inf", catalog("0.05", "inf"), ["prices", "--catalog", "cat.toml"], E, "finite"),
    ("catalog-1e400", catalog("0.05", "1e400"), ["prices", "--catalog", "cat.toml"], E, "finite"),
    (
        "catalog-zero",
        catalog("0.05", "0.0"),
        ["prices", "--catalog", "cat.toml"],
        E,
        "greater than 0",
    ),
    (
        "catalog-month-13",
        catalog('"2017-07"', '"2017-13"'),
        ["prices", "--catalog", "cat.toml"],
        E,
        "as_of",
    ),
    (
        "catalog-negative-minimum",
        catalog("= 60", "= -60"),
        ["prices", "--catalog", "cat.toml"],
        E,
        "minimum_seconds",
    ),
    (
        "catalog-binary",
        lambda root: (root / "cat.toml").write_bytes(b"\xff\xfe\x00"),
        ["prices", "--catalog", "cat.toml"],
        E,
        "cannot read",
    ),
    (
        "catalog-nested",
        lambda root: (root / "cat.toml").write_text("a = " + nested(5000)),
        ["prices", "--catalog", "cat.toml"],
        E,
        "nested too deeply",
    ),
    (
        "variants-file-binary",
        lambda root: (root / "v.toml").write_bytes(b"\xff\xfe\x00"),
        ["variants", "--variants-file", "v.toml"],
        E,
        "not UTF-8",
    ),
    (
        "variants-file-nested",
        lambda root: (root / "v.toml").write_text("a = " + nested(5000)),
        ["variants", "--variants-file", "v.toml"],
        E,
        "nested too deeply",
    ),
    ("catalog-in-report", catalog("0.05", "nan"), [*REPORT, "--pricing", "cat.toml"], E, "finite"),
    # run.json: the run's definition; unusable is an error naming file and field
    ("run-json-binary", run_json(b"\x89PNG\r\n\x1a\n\x00"), REPORT, E, "not UTF-8"),
    ("run-json-nested", run_json(nested()), REPORT, E, "nested too deeply"),
    (
        "run-json-truncated",
        run_json('{"kind": "tfvariants.run", "varia'),
        REPORT,
        E,
        "corrupt JSON",
    ),
    ("run-json-threads-abc", run_json_with(threads=["abc"]), REPORT, E, "'threads'"),
    (
        "run-json-newer",
        run_json_with(schema_version=RUN_SCHEMA_VERSION + 1),
        REPORT,
        E,
        "upgrade tfvariants",
    ),
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
    (
        "cell-threads-huge",
        cell("h.json", ok_with(cell__threads=99999)),
        REPORT,
        W,
        "'cell.threads'",
    ),
    ("cell-is-a-list", cell("l.json", ok_with(cell=["local", 1])), REPORT, W, "'cell'"),
    ("cell-repeat-negative", cell("r.json", ok_with(cell__repeat=-1)), REPORT, W, "'cell.repeat'"),
    ("timing-a-string", cell("s.json", ok_with(timing="fast")), REPORT, W, "'timing'"),
    (
        "epoch-time-string",
        cell("es.json", ok_with(timing__epoch_times_s=["1.0", 2.0])),
        REPORT,
        W,
        "epoch_times_s[0]",
    ),
    (
        "epoch-time-negative",
        cell("en.json", ok_with(timing__epoch_times_s=[-1.0, 2.0])),
        REPORT,
        W,
        "epoch_times_s[0]",
    ),
    (
        "epoch-time-nan",
        cell("nan.json", ok_with(timing__epoch_times_s=[float("nan"), 2.0])),
        REPORT,
        W,
        "epoch_times_s[0]",
    ),
    (
        "epoch-time-inf",
        cell("inf.json", ok_with(timing__epoch_times_s=[1.0, float("inf")])),
        REPORT,
        W,
        "epoch_times_s[1]",
    ),
    (
        "epoch-time-1e400",
        cell(
            "big.json",
            ok_with()[:0] + ok_with().replace('"epoch_times_s": [', '"epoch_times_s": [1e400, '),
        ),
        REPORT,
        W,
        "epoch_times_s[0]",
    ),
    (
        "epoch-time-absurd",
        cell("ab.json", ok_with(timing__epoch_times_s=[1e12, 2.0])),
        REPORT,
        W,
        "not a plausible time",
    ),
    (
        "epoch-times-empty",
        cell("ee.json", ok_with(timing__epoch_times_s=[])),
        REPORT,
        W,
        "non-empty list",
    ),
    (
        "steady-text",
        cell("st.json", ok_with(timing__steady_epoch_s="2s")),
        REPORT,
        W,
        "steady_epoch_s",
    ),
    (
        "projected-negative",
        cell("pn.json", ok_with(schedule__projected_full_s=-5)),
        REPORT,
        W,
        "projected_full_s",
    ),
    (
        "cell-schema-2",
        cell("v2.json", ok_with(schema_version=2)),
        REPORT,
        W,
        "newer than this tfvariants",
    ),
    ("cell-status-unknown", cell("su.json", ok_with(status="great")), REPORT, W, "unknown status"),
    (
        "cell-environment-nested-500",
        cell("en5.json", ok_with(environment=json.loads(nested(500)))),
        REPORT,
        W,
        "nested too deeply",
    ),
    (
        "cell-environment-list",
        cell("el.json", ok_with(environment=[1])),
        REPORT,
        W,
        "'environment'",
    ),
    (
        "cell-a-folder",
        lambda root: (root / "R/cells/d.json").mkdir(),
        REPORT,
        W,
        "cells/d.json: not a regular file",
    ),
    (
        "cell-copy",
        lambda root: (root / f"R/cells/{CELL} (copy).json").write_bytes(
            (root / f"R/cells/{CELL}.json").read_bytes()
        ),
        REPORT,
        W,
        f"a copy of cell {CELL}",
    ),
    # issue 28: outputs are never replaced when they are not regular files, never
    # written through links inside a run folder; paths that cannot be resolved are one line
    (
        "report-o-fifo-without-reader",
        fifo("f.fifo"),
        ["report", "R", "-o", "f.fifo"],
        E,
        "no process reads",
    ),
    (
        "import-o-fifo-without-reader",
        lambda root: (prices_csv(root), os.mkfifo(root / "o.fifo")),
        [*IMPORT, "o.fifo"],
        E,
        "no process reads",
    ),
    ("report-o-symlink-loop", link_loop, ["report", "R", "-o", "loop1/x.html"], E, "-o/--output"),
    (
        "report-o-longer-than-path-max",
        None,
        ["report", "R", "-o", "/".join(["d" * 200] * 25) + "/x.html"],
        E,
        "longer than this system's",
    ),
    (
        "report-o-dangling-link",
        symlink("gone.html", "nowhere/x.html"),
        ["report", "R", "-o", "gone.html"],
        E,
        "a symbolic link to nothing",
    ),
    (
        "report-into-a-linked-report-slot",
        linked_report_slot,
        ["report", "R", "-o", "R/report/x.html"],
        E,
        "symbolic link inside the results folder",
    ),
    (
        "report-onto-a-link-in-the-slot",
        received_link_in_slot,
        ["report", "R", "-o", "R/report/x.html"],
        E,
        "symbolic link inside the results folder",
    ),
    ("compare-out-inside-a-run", None, [*COMPARE[:-1], "R/sub"], E, "inside the results folder"),
    (
        "compare-out-inside-a-runs-scratch",
        None,
        [*COMPARE[:-1], "R/.scratch/new"],
        E,
        "inside the results folder",
    ),
    ("compare-out-empty", None, [*COMPARE[:-1], ""], E, "--out"),
    ("compare-budget-a-nanosecond", None, ["compare", "--budget", "1e-9s"], E, "at least 1s"),
    ("serve-budget-half-a-second", None, [*SERVE, "--budget", "0.5s"], E, "at least 1s"),
    (
        "compare-resume-dry-run-of-nothing",
        None,
        ["compare", "--resume", "--out", "nothere", "--dry-run"],
        E,
        "nothing to resume",
    ),
    (
        "serve-resume-dry-run-of-nothing",
        None,
        [*SERVE[:-1], "nothere", "--resume", "--dry-run"],
        E,
        "nothing to resume",
    ),
    # issue 43: a results folder through a loop of links is one line, as -o is
    ("compare-out-symlink-loop", link_loop, [*COMPARE[:-1], "loop1/run"], E, "loop of symbolic"),
    (
        "run-out-symlink-loop",
        link_loop,
        ["run", "mnist_mlp", "--threads", "1", "--out", "loop1/run"],
        E,
        "loop of",
    ),
    (
        "compare-logs-a-link",
        lambda root: (root / "R" / "logs").symlink_to(root),
        RESUME,
        E,
        "logs is a symbolic link",
    ),
    (
        "compare-keeps-the-users-scratch",
        scratch_of_the_user,
        ["compare", "--resume", "--out", "proj"],
        E,
        "not found",
    ),
    # issue 28: inputs are regular files of bounded size: never read forever, never a hang
    (
        "variants-file-dev-zero",
        None,
        ["variants", "--variants-file", "/dev/zero"],
        E,
        "a device, not a regular file",
    ),
    (
        "variants-file-fifo",
        fifo("v.toml"),
        ["variants", "--variants-file", "v.toml"],
        E,
        "a FIFO, not a regular file",
    ),
    (
        "variants-file-huge",
        sparse("v.toml", 9 << 20),
        ["variants", "--variants-file", "v.toml"],
        E,
        "larger than 8 MiB",
    ),
    (
        "import-dev-zero",
        None,
        ["prices", "import", "/dev/zero", "-o", "o.toml"],
        E,
        "a device, not a regular file",
    ),
    ("import-fifo", fifo("s.csv"), IMPORT_S, E, "a FIFO, not a regular file"),
    ("import-huge", sparse("s.csv", 300 << 20), IMPORT_S, E, "larger than 256 MiB"),
    (
        "import-field-over-128-KiB",
        simple_csv(instance="x" * 140_000),
        IMPORT_S,
        E,
        "unreadable CSV at line",
    ),
    (
        "import-line-separator-in-quoted-name",
        simple_csv_text(
            'instance,vcpus,gpu,on_demand,spot,region,date\n"c\u20281",1,,0.05,0.01,us,2017-07\n'
        ),
        IMPORT_S,
        E,
        "instance",
    ),
    ("catalog-huge", sparse("cat.toml", 65 << 20), PRICES, E, "larger than 64 MiB"),
    (
        "run-json-fifo",
        lambda root: ((root / "R" / "run.json").unlink(), os.mkfifo(root / "R" / "run.json")),
        REPORT,
        E,
        "a FIFO, not a regular file",
    ),
    # issue 43: a run named with --beside is an input like any other (report and compare)
    ("beside-missing", None, BESIDE, E, "--beside B: B: no such run folder"),
    ("beside-not-a-run", beside_run(None), BESIDE, E, "not a tfvariants run"),
    ("beside-a-file", lambda root: (root / "B").write_text("x"), BESIDE, E, "not a folder"),
    (
        "beside-run-json-fifo",
        lambda root: (beside_run(None)(root), os.mkfifo(root / "B" / "run.json")),
        BESIDE,
        E,
        "a FIFO, not a regular file",
    ),
    (
        "beside-run-json-dev-zero",
        lambda root: (beside_run(None)(root), symlink("B/run.json", "/dev/zero")(root)),
        BESIDE,
        E,
        "a device, not a regular file",
    ),
    ("beside-run-json-nested", beside_run(nested()), BESIDE, E, "nested too deeply"),
    (
        "beside-run-json-huge",
        lambda root: (beside_run(None)(root), sparse("B/run.json", 65 << 20)(root)),
        BESIDE,
        E,
        "larger than 64 MiB",
    ),
    ("beside-run-json-not-a-run", beside_run('{"kind": "x"}'), BESIDE, E, "not a tfvariants run"),
    ("compare-beside-missing", None, [*COMPARE, "--beside", "B"], E, "--beside B: B: no such"),
    (
        "compare-beside-nested",
        beside_run(nested()),
        [*COMPARE, "--beside", "B"],
        E,
        "nested too deeply",
    ),
    # issue 28: smaller findings
    (
        "report-instance-family-empty",
        None,
        [*REPORT, "--instance-family", ""],
        E,
        "--instance-family",
    ),
    (
        "variants-name-trailing-newline",
        lambda root: (root / "v.toml").write_text('[variants."ok\\n"]\nbase = "local"\n'),
        ["variants", "--variants-file", "v.toml"],
        E,
        "variant name",
    ),
    (
        "run-json-missing",
        lambda root: (root / "R" / "run.json").unlink(),
        REPORT,
        W,
        "run.json is missing",
    ),
    ("cell-edited-copy", edited_copy, REPORT, W, "an edited copy"),
    # issue 15: durations are finite, in ASCII digits, at most 30 days (a budget too)
    ("compare-budget-inf", None, [*COMPARE, "--budget", "inf"], E, "--budget"),
    ("compare-budget-1e309", None, [*COMPARE, "--budget", "1e309"], E, "--budget"),
    ("compare-budget-overflows-in-hours", None, [*COMPARE, "--budget", "1e308h"], E, "at most"),
    ("compare-budget-400-digits", None, [*COMPARE, "--budget", "9" * 400], E, "--budget"),
    ("compare-budget-nan", None, [*COMPARE, "--budget", "nan"], E, "--budget"),
    ("compare-budget-negative-zero", None, [*COMPARE, "--budget", "-0"], E, "greater than 0"),
    ("compare-budget-arabic-digits", None, [*COMPARE, "--budget", "\u0661\u0660m"], E, "--budget"),
    ("compare-budget-underscore", None, [*COMPARE, "--budget", "1_0m"], E, "--budget"),
    ("compare-budget-empty", None, [*COMPARE, "--budget", ""], E, "--budget"),
    ("compare-budget-a-year", None, [*COMPARE, "--budget", "9000h"], E, "at most"),
    ("compare-timeout-underscore", None, [*COMPARE, "--timeout", "1_0"], E, "--timeout"),
    ("compare-timeout-fullwidth-digit", None, [*COMPARE, "--timeout", "\uff13"], E, "--timeout"),
    (
        "compare-min-steady-s-1e309",
        None,
        [*COMPARE, "--min-steady-s", "1e309"],
        E,
        "--min-steady-s",
    ),
    ("compare-threads-5000-digits", None, ["compare", "--threads", "1" * 5000], E, "1 to 4096"),
    ("serve-server-qps-underscore", None, [*SERVE, "--server-qps", "1_0"], E, "--server-qps"),
    ("serve-server-qps-arabic-digit", None, [*SERVE, "--server-qps", "\u0663"], E, "--server-qps"),
    ("serve-server-qps-1e309", None, [*SERVE, "--server-qps", "1e309"], E, "--server-qps"),
    ("serve-threads-empty", None, [*SERVE, "--threads", ""], E, "--threads"),
    (
        "serve-min-duration-3000-chars",
        None,
        [*SERVE, "--min-duration", "x" * 3000],
        E,
        "--min-duration",
    ),
    ("report-baseline-10000-chars", None, [*REPORT, "--baseline", "x" * 10000], E, "--baseline"),
    # issue 15: decision settings the statistics can use
    (
        "compare-confidence-near-1",
        None,
        [*COMPARE, "--confidence", "0.9999999999999999"],
        E,
        "at most 0.9999",
    ),
    ("compare-confidence-100-percent", None, [*COMPARE, "--confidence", "100%"], E, "--confidence"),
    ("compare-confidence-half", None, [*COMPARE, "--confidence", "0.5"], E, "above 0.5"),
    ("compare-confidence-nan", None, [*COMPARE, "--confidence", "nan"], E, "--confidence"),
    ("compare-min-effect-100-percent", None, [*COMPARE, "--min-effect", "100%"], E, "--min-effect"),
    ("compare-min-effect-negative", None, [*COMPARE, "--min-effect", "-0.01"], E, "--min-effect"),
    (
        "report-confidence-near-1",
        None,
        [*REPORT, "--confidence", "0.99999999999999999"],
        E,
        "at most 0.9999",
    ),
    # issue 40: every stored option has a bound, refused the same way (a hand-edited
    # disturbed share was silently replaced by the default while a confidence was refused)
    (
        "run-json-disturbed-share-5",
        run_options_with(disturbed_share=5),
        REPORT,
        E,
        "options.disturbed_share",
    ),
    (
        "run-json-quiet-wait-negative",
        run_options_with(quiet_wait_s=-1),
        REPORT,
        E,
        "options.quiet_wait_s",
    ),
    ("run-json-priority-unknown", run_options_with(priority="fast"), RESUME, E, "options.priority"),
    (
        "run-json-disturbed-policy-unknown",
        run_options_with(disturbed_policy="x"),
        REPORT,
        E,
        "options.disturbed_policy",
    ),
    ("run-json-quick-text", run_options_with(quick="yes"), RESUME, E, "options.quick"),
    (
        "run-json-order-seed-negative",
        run_options_with(order_seed=-3),
        RESUME,
        E,
        "options.order_seed",
    ),
    # issue 15: run.json's decision settings are checked on load, before any cell runs
    ("run-json-confidence-1.5", run_options_with(confidence=1.5), REPORT, E, "options.confidence"),
    (
        "run-json-confidence-near-1-resume",
        run_options_with(confidence=0.99999999999999999),
        RESUME,
        E,
        "options.confidence",
    ),
    (
        "run-json-min-effect-negative-resume",
        run_options_with(min_effect=-1),
        RESUME,
        E,
        "options.min_effect",
    ),
    ("run-json-min-effect-5", run_options_with(min_effect=5), REPORT, E, "options.min_effect"),
    (
        "run-json-budget-infinity",
        run_options_with(budget_s=float("inf")),
        RESUME,
        E,
        "options.budget_s",
    ),
    ("run-json-budget-negative", run_options_with(budget_s=-5), RESUME, E, "options.budget_s"),
    (
        "run-json-max-repeats-zero",
        run_options_with(max_repeats=0),
        RESUME,
        E,
        "options.max_repeats",
    ),
    (
        "run-json-min-steady-s-text",
        run_options_with(min_steady_s="10"),
        RESUME,
        E,
        "options.min_steady_s",
    ),
    (
        "run-json-min-steady-steps-fraction",
        run_options_with(min_steady_steps=1.5),
        RESUME,
        E,
        "options.min_steady_steps",
    ),
    ("run-json-seed-2-64", run_options_with(seed=2**64), RESUME, E, "options.seed"),
    # issue 43: a resume changes nothing silently; cells pool only with their own run
    (
        "resume-kept-option-changed",
        resumable(),
        [*RESUME, "--no-peak", "--priority", "normal"],
        E,
        "--priority normal differs from the run's raised",
    ),
    (
        "resume-quiet-share-changed",
        resumable(),
        [*RESUME, "--no-peak", "--quiet-share", "0.5"],
        E,
        "--quiet-share 0.5 differs",
    ),
    (
        "resume-other-tfvariants-version",
        resumable(tfvariants_version="9.9.9"),
        [*RESUME, "--no-peak"],
        E,
        "started by tfvariants 9.9.9",
    ),
    (
        "run-json-version-a-number",
        run_json_with(tfvariants_version=1e308),
        REPORT,
        E,
        "tfvariants_version",
    ),
    ("cell-from-a-3000-sample-run", stamped(3000), REPORT, W, "--samples 3000"),
    (
        "cell-of-another-version",
        stamped(6000, "0.0.1", tfvariants_version="0.1.0"),
        REPORT,
        W,
        "measured by tfvariants 0.0.1",
    ),
    (
        "cell-stamp-not-an-object",
        cell("c.json", ok_with(measured_by=[1])),
        REPORT,
        W,
        "measured_by",
    ),
    (
        "run-json-samples-edited-after",
        lambda root: (stamped(6000)(root), run_options_with(samples=4000)(root)),
        REPORT,
        W,
        "run.json has 4000",
    ),
    *[
        (
            f"cell-others-share-{name}",
            cell(R6, ok_with(cell__repeat=6, cpu={"others_share": value})),
            REPORT,
            W,
            "cpu.others_share",
        )
        for name, value in (("nan", float("nan")), ("minus-1", -1), ("1e308", 1e308), ("2", 2.0))
    ],
    (
        "cell-steal-share-inf",
        cell(R6, ok_with(cell__repeat=6, cpu={"steal_share": float("inf")})),
        REPORT,
        W,
        "cpu.steal_share",
    ),
    (
        "toml-here-redefines-local",
        local_redefined,
        ["variants"],
        E,
        "redefines the built-in variant 'local'",
    ),
    ("run-json-epochs-huge", run_options_with(epochs=10**30), RESUME, E, "options.epochs"),
    (
        "run-json-confidence-true",
        run_options_with(confidence=True),
        REPORT,
        E,
        "options.confidence",
    ),
    # one line, always: a value with a newline or an escape sequence is shown escaped
    ("compare-baseline-newline", None, [*COMPARE, "--baseline", "a\nb"], E, "a\\nb"),
    ("report-baseline-escape-sequence", None, [*REPORT, "--baseline", "\x1b[2Jx"], E, "\\x1b[2Jx"),
    ("report-baseline-line-separator", None, [*REPORT, "--baseline", "a\u2028b"], E, "a\\u2028b"),
    ("report-pricing-long-name", None, [*REPORT, "--pricing", "x" * 300], E, "no pricing catalog"),
    ("report-pricing-nul", None, [*REPORT, "--pricing", "a\x00b"], E, "no pricing catalog"),
    # issue 15: a variant's environment is what execve and `docker run -e` can carry
    (
        "variants-env-key-equals",
        variants_env('"A=B" = "1"'),
        ["variants", "--variants-file", "v.toml"],
        E,
        "'A=B'",
    ),
    (
        "compare-env-key-equals",
        variants_env('"A=B" = "1"'),
        [*COMPARE, "--variants-file", "v.toml", "--variants", "bad"],
        E,
        "'A=B'",
    ),
    (
        "variants-env-key-empty",
        variants_env('"" = "1"'),
        ["variants", "--variants-file", "v.toml"],
        E,
        "field 'env'",
    ),
    (
        "variants-env-key-nul",
        variants_env('"A\\u0000" = "1"'),
        ["variants", "--variants-file", "v.toml"],
        E,
        "field 'env'",
    ),
    (
        "variants-env-value-nul",
        variants_env('"A" = "1\\u0000"'),
        ["variants", "--variants-file", "v.toml"],
        E,
        "NUL",
    ),
    (
        "variants-env-key-digit-first",
        variants_env('"1A" = "x"'),
        ["variants", "--variants-file", "v.toml"],
        E,
        "'1A'",
    ),
    (
        "variants-env-key-unicode",
        variants_env('"\u00c4" = "x"'),
        ["variants", "--variants-file", "v.toml"],
        E,
        "field 'env'",
    ),
    (
        "variants-env-value-200-KiB",
        variants_env('A = "' + "x" * 200_000 + '"'),
        ["variants", "--variants-file", "v.toml"],
        E,
        "env.A",
    ),
    (
        "variants-env-key-space",
        variants_env('"A B" = "x"'),
        ["variants", "--variants-file", "v.toml"],
        E,
        "'A B'",
    ),
    (
        "variants-keras-nan",
        variants_keras("jit_compile = nan"),
        ["variants", "--variants-file", "v.toml"],
        E,
        "keras.jit_compile",
    ),
    (
        "variants-keras-date",
        variants_keras("x = 1979-05-27"),
        ["variants", "--variants-file", "v.toml"],
        E,
        "keras.x",
    ),
    (
        "variants-keras-not-a-keyword",
        variants_keras('"a b" = 1'),
        ["variants", "--variants-file", "v.toml"],
        E,
        "'a b'",
    ),
    (
        "report-instance-threads-text",
        None,
        [*REPORT, "--instance", "local@x=n1-highcpu-8"],
        E,
        "--instance",
    ),
    (
        "report-instance-threads-underscore",
        None,
        [*REPORT, "--instance", "local@1_0=n1-highcpu-8"],
        E,
        "--instance",
    ),
    (
        "report-instance-threads-zero",
        None,
        [*REPORT, "--instance", "0=n1-highcpu-8"],
        E,
        "--instance",
    ),
    (
        "report-instance-threads-huge",
        None,
        [*REPORT, "--instance", "99999=n1-highcpu-8"],
        E,
        "--instance",
    ),
    # issue 15: prices import
    ("import-name-newline", simple_csv(), [*IMPORT_S, "--name", "a\nb"], E, "--name"),
    ("import-name-empty", simple_csv(), [*IMPORT_S, "--name", ""], E, "--name"),
    (
        "import-name-escape-sequence",
        simple_csv(),
        [*IMPORT_S, "--name", "\x1b]0;x\x07"],
        E,
        "--name",
    ),
    ("import-name-10000-chars", simple_csv(), [*IMPORT_S, "--name", "x" * 10000], E, "--name"),
    ("import-vcpus-arabic-digit", simple_csv(vcpus="\u0668"), IMPORT_S, E, "vcpus"),
    ("import-vcpus-huge", simple_csv(vcpus="1" * 400), IMPORT_S, E, "vcpus"),
    ("import-price-underscore", simple_csv(on_demand="0_05"), IMPORT_S, E, "on_demand"),
    ("import-price-inf", simple_csv(spot="inf"), IMPORT_S, E, "spot"),
    ("import-instance-escape-sequence", simple_csv(instance="c\x1b1"), IMPORT_S, E, "instance"),
    # issue 15: catalogs: unknown fields named, currency a code, spot in its own word
    (
        "catalog-unknown-top-level-field",
        catalog("[billing]", 'currncy = "EUR"\n[billing]'),
        PRICES,
        E,
        "unknown field 'currncy'",
    ),
    (
        "catalog-unknown-billing-field",
        catalog("minimum_seconds = 60", "minimum_seconds = 60\nminimum = 60"),
        PRICES,
        E,
        "unknown field 'minimum'",
    ),
    (
        "catalog-unknown-default-field",
        catalog("[[instance]]", '[default]\nteir = "spot"\n[[instance]]'),
        PRICES,
        E,
        "unknown field 'teir'",
    ),
    (
        "catalog-unknown-instance-field",
        catalog("vcpus = 1", "vcpus = 1\nvcpu = 1"),
        PRICES,
        E,
        "unknown field 'vcpu'",
    ),
    (
        "catalog-unknown-price-field",
        catalog("on_demand = 0.05", "on_demand = 0.05, spto = 0.01"),
        PRICES,
        E,
        "unknown field 'spto'",
    ),
    (
        "catalog-unknown-gpu-field",
        catalog("vcpus = 1", 'vcpus = 1\ngpu = { type = "K80", cnt = 1 }'),
        PRICES,
        E,
        "field 'gpu'",
    ),
    (
        "catalog-unknown-field-in-report",
        catalog("[billing]", 'currncy = "EUR"\n[billing]'),
        PRICED_REPORT,
        E,
        "unknown field 'currncy'",
    ),
    (
        "catalog-currency-word",
        catalog('source = "test"', 'source = "test"\ncurrency = "euro"'),
        PRICES,
        E,
        "currency",
    ),
    (
        "catalog-currency-empty",
        catalog('source = "test"', 'source = "test"\ncurrency = ""'),
        PRICES,
        E,
        "currency",
    ),
    (
        "catalog-currency-symbol",
        catalog('source = "test"', 'source = "test"\ncurrency = "$"'),
        PRICES,
        E,
        "currency",
    ),
    (
        "catalog-spot-above-on-demand",
        catalog("on_demand = 0.05", "on_demand = 0.05, spot = 0.5"),
        PRICES,
        W,
        "spot 0.5 above on-demand 0.05",
    ),
    (
        "catalog-spot-above-on-demand-in-report",
        catalog("on_demand = 0.05", "on_demand = 0.05, spot = 0.5"),
        PRICED_REPORT,
        W,
        "spot 0.5 above on-demand",
    ),
    (
        "catalog-spot-text-named-spot",
        catalog("on_demand = 0.05", 'on_demand = 0.05, spot = "x"'),
        PRICES,
        E,
        "]'.spot: expected a number",
    ),
    (
        "catalog-spot-nan-named-spot",
        catalog("on_demand = 0.05", "on_demand = 0.05, spot = nan"),
        PRICES,
        E,
        "]'.spot: expected a finite number",
    ),
    (
        "catalog-spot-and-preemptible",
        catalog("on_demand = 0.05", "on_demand = 0.05, spot = 0.01, preemptible = 0.01"),
        PRICES,
        E,
        "not both",
    ),
    (
        "catalog-gpu-count-true",
        catalog("vcpus = 1", 'vcpus = 1\ngpu = { type = "K80", count = true }'),
        PRICES,
        E,
        "field 'gpu'",
    ),
    (
        "catalog-gpu-type-empty",
        catalog("vcpus = 1", 'vcpus = 1\ngpu = { type = "", count = 1 }'),
        PRICES,
        E,
        "field 'gpu'",
    ),
    (
        "catalog-vcpus-2-63",
        catalog("vcpus = 1", "vcpus = 9223372036854775807"),
        PRICES,
        E,
        "field 'vcpus'",
    ),
    (
        "catalog-instance-name-escape",
        catalog('name = "c1"', 'name = "c\\u001b1"'),
        PRICES,
        E,
        "control characters",
    ),
    (
        "catalog-note-newline",
        catalog("on_demand = 0.05", 'on_demand = 0.05, note = "a\\nb"'),
        PRICES,
        E,
        "control characters",
    ),
    (
        "catalog-title-line-separator",
        catalog('source = "test"', 'source = "test"\ntitle = "a\\u2028b"'),
        PRICES,
        E,
        "control characters",
    ),
    (
        "catalog-two-points-one-date",
        catalog(
            'prices = [{ as_of = "2017-07", on_demand = 0.05 }]',
            'prices = [{ as_of = "2017-07", on_demand = 0.05 }, '
            '{ as_of = "2017-07", on_demand = 0.06 }]',
        ),
        PRICES,
        E,
        "second price point",
    ),
    (
        "catalog-default-gpu-absent",
        catalog("[[instance]]", '[default]\ngpu = "TPU"\n[[instance]]'),
        PRICES,
        E,
        "no instance has GPU 'TPU'",
    ),
    ("catalog-minimum-1e300", catalog("= 60", "= 1e300"), PRICES, E, "minimum_seconds"),
    ("catalog-price-negative-zero", catalog("0.05", "-0.0"), PRICES, E, "greater than 0"),
    # issue 15: a cell measured in 0 seconds is left out, named, like a negative one
    # huge integers: JSON and TOML read them, no float holds them, Python refuses > 4300 digits
    (
        "cell-rss-10-to-the-400",
        cell("i.json", ok_with(memory__peak_rss_bytes=10**400)),
        REPORT,
        W,
        "memory.peak_rss_bytes",
    ),
    (
        "cell-repeat-10-to-the-400",
        cell("rp.json", ok_with(cell__repeat=10**400)),
        REPORT,
        W,
        "'cell.repeat'",
    ),
    (
        "cell-5000-digit-integer",
        cell("d.json", ok_with()[:-1] + ', "huge": ' + "1" * 5000 + "}"),
        REPORT,
        W,
        "cells/d.json: corrupt JSON",
    ),
    (
        "run-json-5000-digit-integer",
        run_json('{"kind": "tfvariants.run", "repeats": ' + "1" * 5000 + "}"),
        REPORT,
        E,
        "corrupt JSON",
    ),
    (
        "run-json-confidence-10-to-the-400",
        run_options_with(confidence=10**400),
        REPORT,
        E,
        "options.confidence",
    ),
    (
        "catalog-price-10-to-the-400",
        catalog("on_demand = 0.05", "on_demand = 1" + "0" * 400),
        PRICES,
        E,
        "on_demand",
    ),
    (
        "catalog-minimum-10-to-the-400",
        catalog("= 60", "= 1" + "0" * 400),
        PRICES,
        E,
        "minimum_seconds",
    ),
    (
        "catalog-5000-digit-integer",
        catalog("vcpus = 1", "vcpus = " + "1" * 5000),
        PRICES,
        E,
        "invalid TOML",
    ),
    (
        "variants-file-5000-digit-integer",
        variants_env("A = " + "1" * 5000),
        ["variants", "--variants-file", "v.toml"],
        E,
        "invalid TOML",
    ),
    (
        "epoch-time-zero",
        cell("z.json", ok_with(timing__epoch_times_s=[0.0, 2.0])),
        REPORT,
        W,
        "epoch_times_s[0]",
    ),
    (
        "epoch-time-negative-zero",
        cell("nz.json", ok_with(timing__epoch_times_s=[2.0, -0.0])),
        REPORT,
        W,
        "epoch_times_s[1]",
    ),
    (
        "steady-epoch-zero",
        cell("sz.json", ok_with(timing__steady_epoch_s=0)),
        REPORT,
        W,
        "steady_epoch_s",
    ),
    (
        "projected-zero",
        cell("pz.json", ok_with(schedule__projected_full_s=0)),
        REPORT,
        W,
        "projected_full_s",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_table(case, tmp_path, monkeypatch, capsys):
    name, setup, argv, expect, fragment = case
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "run_cell", lambda *a, **k: pytest.fail("must not run a cell"))
    monkeypatch.setattr(compare, "probe_variants", lambda *a, **k: pytest.fail("must not probe"))
    make_run(tmp_path)
    if setup:
        setup(tmp_path)
    outputs = ("out.html",) if expect == W else ()  # what a warning case may write
    before = folder_hash(tmp_path, skip=outputs)
    capsys.readouterr()
    rc = main(argv)
    out, err = capsys.readouterr()
    assert folder_hash(tmp_path, skip=outputs) == before, "a file changed or appeared"
    assert len(err) < 1000, "a message quoting a huge value in full"
    if expect == E:
        assert rc == 2, err
        assert len(err.strip().splitlines()) == 1, err
        assert fragment in err, err
    else:
        assert rc == 0, err
        assert all(line.startswith("tfvariants: warning: ") for line in err.splitlines()), err
        named = [line for line in err.splitlines() if fragment in line]
        assert named, err
        file = named[0].removeprefix("tfvariants: warning: ").split(": ")[0]
        if file.startswith("cells/"):  # a left-out cell is named in the report too
            assert file in (tmp_path / "out.html").read_text()


def test_the_table_has_at_least_40_cases():
    assert len(CASES) >= 40 and len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("failure", [errno.ENOSPC, errno.EROFS])
def test_prices_import_on_a_full_or_read_only_disk(failure, tmp_path, monkeypatch, capsys):
    """One line, exit 2, the previous catalog intact and no temp file left."""
    monkeypatch.chdir(tmp_path)
    prices_csv(tmp_path)
    (tmp_path / "cat.toml").write_text("the previous catalog")

    def broken_fsync(fd: int) -> None:
        raise OSError(failure, os.strerror(failure))

    monkeypatch.setattr(os, "fsync", broken_fsync)
    before = sorted(os.listdir(tmp_path))
    assert main([*IMPORT, "cat.toml", "--force"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and os.strerror(failure) in err
    assert (tmp_path / "cat.toml").read_text() == "the previous catalog"
    assert sorted(os.listdir(tmp_path)) == before


def test_variants_lists_many_overlays_with_one_check(tmp_path, monkeypatch, capsys):
    """10,000 declared variants of one interpreter start it once, not 10,000 times; raw
    env values (escape sequences) never reach the terminal as themselves."""
    import sys

    from tfvariants.variants import kinds

    starts: list[str] = []
    real = kinds._find_in

    def counted(python: str, module: str) -> tuple[bool | None, str]:
        starts.append(python)
        return real(python, module)

    monkeypatch.setattr(kinds, "_find_in", counted)
    table = f'[variants.v0]\nkind = "venv"\npython = "{sys.executable}"\n'
    table += 'env = { A = "\\u001b[2Jgone" }\n'
    table += "".join(f'[variants.v{i}]\nbase = "v0"\n' for i in range(1, 10_000))
    (tmp_path / "v.toml").write_text(table)
    assert main(["variants", "--variants-file", str(tmp_path / "v.toml")]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b[2Jgone" in out
    assert out.count("\n") > 10_000 and len(starts) <= 2


def test_prices_import_reads_a_csv_with_a_byte_order_mark(tmp_path, monkeypatch, capsys):
    """Spreadsheets save CSV with a UTF-8 BOM: the header is still recognised."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.csv").write_bytes(b"\xef\xbb\xbf" + PRICES_CSV.encode())
    assert main([*IMPORT, "o.toml"]) == 0, capsys.readouterr().err
    assert 'name = "c1"' in (tmp_path / "o.toml").read_text()
