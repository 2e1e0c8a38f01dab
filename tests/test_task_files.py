"""docs/ARCHITECTURE.md lists the files a new task type and a new decision setting touch:
each file it names exists (a task's own new files by serving's, the example in brackets),
a new task edits no shared file (it registers itself: the shared modules find it by
discovery and name none; a toy task defined only here reaches the store, the command line
and every output), and a decision setting stays at 3 files."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
import resultfactory as rf

from tfvariants.analyze.report.build import assemble, build_report, parts
from tfvariants.analyze.report.part import AnswerPart, CsvTable, Placed, Row, Shared, Words
from tfvariants.analyze.report.provenance import WhereRan
from tfvariants.analyze.shared.frame import RunFrame
from tfvariants.analyze.training import TrainingPart
from tfvariants.commands.report import print_long
from tfvariants.options.serving import ServingOptions
from tfvariants.options.training import TrainingOptions
from tfvariants.plan.tasks import task_of, tasks
from tfvariants.plan.topology import LogicalCpu, Topology
from tfvariants.render.answertext import answer_of_report
from tfvariants.render.csvout import write_report_csv
from tfvariants.render.html import render_html
from tfvariants.store.record import PresetRecord
from workloads.protocol import RESULT_KIND
from workloads.serving.request import SERVE_RESULT_KIND

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
FOLDERS = ("options", "plan", "store", "analyze", "render", "execute", "rounds", "commands")


def _section(title: str) -> str:
    start = DOC.index(f"### {title}\n")
    return DOC[start : DOC.index("\n#", start + 4)]


def _table_rows(text: str) -> list[str]:
    return [
        line for line in text.splitlines() if line.startswith("| `") or line.startswith("| the")
    ]


def _path(name: str) -> Path:
    """A path as the tables write it: under tfvariants/ unless it is workloads/ or cli.py."""
    top = name.split("/")[0]
    return ROOT / ("tfvariants" if top in FOLDERS or name == "cli.py" else "") / name


def _named(row: str) -> list[str]:
    """The paths a row names: the files of its first column, and serving's (the example,
    in brackets) for a file of the task's own."""
    first, _, rest = row.partition(" | ")
    out = [n for n in re.findall(r"`([^`]+)`", first) if "<" not in n]
    for example in re.findall(r"\[([^\]]+)\]", rest):
        out += [n for n in re.findall(r"`([^`]+)`", example) if "/" in n]
    return out


def test_a_new_task_types_files_exist():
    rows = _table_rows(_section("A new task type"))
    assert len(rows) >= 8
    named = [n for row in rows for n in _named(row)]
    assert "plan/serve.py" in named and "store/serving.py" in named
    # every file is the task's own and new: no shared file is edited to add a task
    edited = [row for row in rows if not row.split(" | ")[1].startswith("new")]
    assert not edited, edited
    missing = [n for n in named if not _path(n).exists()]
    assert not missing, missing
    # the count the section states is the table's (each file of a first column)
    files = [n for row in rows for n in re.findall(r"`([^`]+)`", row.partition(" | ")[0])]
    stated = re.search(r"That is (\d+) files", _section("A new task type"))
    assert stated is not None and int(stated.group(1)) == len(files) == len(set(files))
    assert len(files) <= 8


def test_a_new_decision_setting_touches_three_files():
    rows = _table_rows(_section("A new decision setting"))
    assert len(rows) == 3
    named = [n for row in rows for n in _named(row)]
    assert named[:2] == ["options/decision.py", "analyze/statistics/decide.py"]
    assert all(_path(n).exists() for n in named)


def test_the_store_looks_a_task_up_by_name():
    assert task_of({}).options is TrainingOptions  # training's records name no task
    assert task_of({"task": "serve"}).options is ServingOptions
    assert task_of({"task": "serve"}).result_kind == SERVE_RESULT_KIND
    assert task_of({"task": "train"}).result_kind == RESULT_KIND
    assert set(tasks()) == {"train", "serve"}
    branches = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in sorted((ROOT / "tfvariants" / "store").rglob("*.py"))
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"""[=!]= ["']serve["']""", line)
    ]
    assert not branches, branches


# The report's and the outputs' own modules (every module of analyze/report/: the
# compiled preset's record, other runs and where cells ran too): they iterate over the
# tasks' parts (analyze/report/part.py) and import no task's module; build.py finds each
# task's builder by the task's stem.
GENERIC = (
    *(
        f"analyze/report/{p.name}"
        for p in sorted((ROOT / "tfvariants/analyze/report").glob("*.py"))
    ),
    "render/html.py",
    "render/csvout.py",
    "render/answertext.py",
    "commands/report.py",
)
TASK_MODULES = re.compile(
    r"^(workloads\.serving|tfvariants\.(options|rounds|analyze)\.(training|serving)"
    r"|tfvariants\.plan\.serve)\b"
)


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
    return out


def _names_a_task(path: Path) -> list[str]:
    """What a module says of a particular task: its modules imported, a task's name as a
    string, an attribute named after a task (``report.serving``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    said = [m for m, _ in _imports(path) if TASK_MODULES.match(m)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in set(tasks()) | {"training", "serving"}:
            said.append(repr(node.value))
        elif isinstance(node, ast.Attribute) and node.attr in {"training", "serving"}:
            said.append(f".{node.attr}")
    return said


def test_the_report_and_its_outputs_name_no_task():
    assert [b.__name__ for b in parts()] == ["build_training", "build_serving"]  # found
    said = {f: s for f in GENERIC if (s := _names_a_task(_path(f)))}
    assert not said, said
    # the scan sees what it looks for
    assert _names_a_task(_path("analyze/serving/part.py"))


@dataclass(frozen=True)
class _ToySection:
    template: ClassVar[str] = "compiled.html"  # an existing template: lines, the last small
    lines: tuple[str, ...]


@dataclass(frozen=True)
class _ToyPart:
    """A task no module names: its part alone carries it to every output."""

    name: ClassVar[str] = "toy"
    words: ClassVar[Words] = Words("toy", "noise", "cost", "toy", "Which toy?")
    frame: RunFrame
    pricing: None = None
    shared: Shared = Shared()

    def subjects(self) -> tuple[str, ...]:
        return ("toybox",)

    def title(self) -> str:
        return "toy toybox"

    def asks(self, what: str, frame: RunFrame) -> str:
        return f"Which {what} plays toybox?"

    def baselines(self, frame: RunFrame) -> tuple[tuple[str, str], ...]:
        return (("toybox", "toy@1"),)

    def sections(self, shared: Shared) -> Placed:
        return Placed(late=(_ToySection(("a toy's section", "its note")),))

    def where_ran(self) -> tuple[WhereRan, ...]:
        return ()

    def answer(self, currency: str, compiled: PresetRecord | None) -> AnswerPart:
        row = Row("toybox", "toy@1", "baseline", "1x", "", "", "", "")
        return AnswerPart((row,), (), (("toy", 1, "cpu"),))

    def csv(self) -> CsvTable:
        return CsvTable(("cell_id", "squeak"), ({"cell_id": "toy-1", "squeak": 3},))

    def said(self, shared: Shared) -> tuple[tuple[str, tuple[str, ...]], ...]:
        return (("toy toybox", ("the toy squeaked",)),)

    def notes(self, shared: Shared) -> tuple[str, ...]:
        return ("a toy's note",)


def test_a_toy_tasks_part_reaches_every_output(tmp_path, capsys):
    """A task's part is all the report, the HTML, the CSV and the terminal need of it."""
    rf.write_results(tmp_path / "res", [rf.make_result("pip", 2, "mnist_mlp", r) for r in range(2)])
    training = build_report(tmp_path / "res").part(TrainingPart)
    assert training is not None
    report = assemble(training, _ToyPart(training.frame))
    answer = answer_of_report(report)
    assert answer is not None and answer.rows[-1].subject == "toybox"
    assert answer.subject_header == "workload / toy"
    assert answer.ratio_header == "vs baseline (toy: noise)"
    html = render_html(report)
    assert "tfvariants report: mnist_mlp, toy toybox</title>" in html
    assert "a toy&#39;s section" in html and "toybox: toy@1" in html
    csv = tmp_path / "out" / "cells.csv"
    assert write_report_csv(report, csv) == 2
    assert (tmp_path / "out" / "cells-toy.csv").read_text().splitlines() == [
        "cell_id,squeak",
        "toy-1,3",
    ]
    print_long(report)
    out = capsys.readouterr().out
    assert "toy toybox:\n  the toy squeaked\na toy's note\n" in out
    assert out.index("mnist_mlp:") < out.index("toy toybox:")


# Every module a new task must not edit: the store (but each task's own store/<stem>.py),
# the task table, the matrix loop, the runner, the command line and the worker envelope.
SHARED = (
    *(
        str(p.relative_to(ROOT / "tfvariants"))
        for p in sorted((ROOT / "tfvariants" / "store").glob("*.py"))
        if p.stem not in ("training", "serving")
    ),
    "plan/tasks.py",
    "execute/matrix.py",
    "execute/runner.py",
    "execute/policy.py",
    "execute/executors.py",
    "cli.py",
)


def test_no_shared_module_names_a_task():
    said = {f: s for f in SHARED if (s := _names_a_task(_path(f)))}
    assert not said, said
    # the envelope: training, the first task, is its default (its requests predate the
    # field); it names no other task
    protocol = _names_a_task(ROOT / "workloads" / "protocol.py")
    assert protocol and set(protocol) == {"'train'"}
    # the scan sees what it looks for
    assert _names_a_task(_path("store/serving.py"))


TOY = {
    "plan": """
from tfvariants.options.training import TrainingOptions
from tfvariants.plan.tasks import Task, WorkerOrder

TASK = Task(
    "toy", "toy", 9, TrainingOptions, "toy.cell", lambda c: (f"toy-{c['n']}",) * 2,
    lambda cell, options, keras, backend: WorkerOrder(
        "toy.worker", "toybox", {}, options.timeout_s, payload={"n": cell.n}
    ),
)
""",
    "store": """
from dataclasses import dataclass

from tfvariants.store.cellresult import AnyResult
from tfvariants.store.result import ResultError


@dataclass(frozen=True)
class ToyResult(AnyResult):
    status: str
    squeak: int
    device: str


def validate(data, source="result"):
    if not isinstance(data.get("squeak"), int):
        raise ResultError(f"{source}: field 'squeak': expected a whole number")
    return data


def parse(result, facts):
    return ToyResult(result["status"], result["squeak"], facts.device)
""",
    "analyze": """
BUILT = []


def build_toy(contents, report, settings):
    BUILT.append(contents)
    return None
""",
    "commands": """\"\"\"A toy's command.\"\"\"
from tfvariants.commands.command import Command


def add_options(parser):
    pass


def run(args):
    return 0


COMMAND = Command(99, "squeak", add_options, run)
""",
}


@dataclass(frozen=True)
class _ToyCell:
    """A toy's planned cell (plan/task.py ``PlannedCell``)."""

    n: int = 1
    variant: str = "local"
    threads: int = 1
    repeat: int = 0

    @property
    def cell_id(self) -> str:
        return f"toy-{self.n}"

    @property
    def workload(self) -> str:
        return "toybox"

    def to_dict(self) -> dict:
        return {"task": "toy", "n": self.n}


TOPOLOGY = Topology((LogicalCpu(0, 0, 0, 0), LogicalCpu(1, 1, 0, 0)))


def test_a_toy_task_registers_itself(tmp_path, monkeypatch):
    """A task's own files, in its own modules (here: beside the packages), are all the
    task table, the store's validate and parse, the report and the command line need."""
    import importlib
    import sys

    from tfvariants.cli import build_parser
    from tfvariants.execute.runner import worker_request
    from tfvariants.plan.pinning import plan_pinning
    from tfvariants.store.cellresult import parse_result
    from tfvariants.store.result import ResultError, validate_result
    from tfvariants.store.rundir import load_run_dir

    for where, text in TOY.items():
        folder = tmp_path / where.replace("/", "_")
        folder.mkdir()
        (folder / "toy.py").write_text(text, encoding="utf-8")
        package = importlib.import_module(f"tfvariants.{where.replace('/', '.')}")
        monkeypatch.setattr(package, "__path__", [*package.__path__, str(folder)])
        monkeypatch.delitem(sys.modules, f"{package.__name__}.toy", raising=False)
    tasks.cache_clear()
    try:
        assert list(tasks()) == ["train", "serve", "toy"]
        toy = {"kind": "toy.cell", "status": "ok", "cell": {"task": "toy", "n": 1}, "squeak": 3}
        assert validate_result(dict(toy)) == toy
        with pytest.raises(ResultError, match="squeak"):
            validate_result({**toy, "squeak": "loud"})
        rf.write_results(tmp_path / "res", [rf.make_result("pip", 2, "mnist_mlp", 0)])
        run = load_run_dir(tmp_path / "res").run
        parsed = parse_result(run, toy, {})
        assert type(parsed).__name__ == "ToyResult" and parsed.ok and parsed.squeak == 3
        report = build_report(tmp_path / "res")
        assert len(sys.modules["tfvariants.analyze.toy"].BUILT) == 1  # asked for its part
        assert report.part(TrainingPart) is not None
        assert "toy" in build_parser().format_help()
        # the runner sends the toy's own order: its worker, workload and payload
        cell = _ToyCell()
        order = tasks()["toy"].worker(cell, TrainingOptions(), {}, "tensorflow")
        request = worker_request(cell, order, plan_pinning(1, TOPOLOGY), Path("/r/result.json"))
        assert (request.task, request.workload, request.payload) == ("toy", "toybox", {"n": 1})
        assert order.module == "toy.worker"
    finally:
        tasks.cache_clear()
        for where in TOY:
            sys.modules.pop(f"tfvariants.{where.replace('/', '.')}.toy", None)


def test_the_envelope_carries_a_tasks_own_request_as_its_payload():
    """One generic payload instead of a field per task: serving's worker reads its
    ServeRequest from it, and refuses an envelope without one."""
    from workloads.protocol import WorkerRequest
    from workloads.serving.request import ServeRequest, serve_request_of
    from workloads.serving.worker import parse_args

    serve = ServeRequest(model="m", scenario="single_stream", min_duration_s=2.0).to_dict()
    base = dict(workload="/models/m", cell={"task": "serve"}, result="/r.json", intra_op=1)
    wreq = parse_args(["--request", WorkerRequest(task="serve", payload=serve, **base).to_json()])
    assert serve_request_of(wreq).min_duration_s == 2.0
    assert serve_request_of(wreq).model == "/models/m"  # the envelope's (a launcher rewrites it)
    with pytest.raises(SystemExit) as exc:
        parse_args(["--request", WorkerRequest(task="serve", **base).to_json()])
    assert exc.value.code == 2
