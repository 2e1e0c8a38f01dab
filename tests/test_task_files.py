"""docs/ARCHITECTURE.md lists the files a new task type and a new decision setting touch:
each file it names exists (a task's own new files by serving's, the example in brackets),
a decision setting stays at 3 files, and the store reads a run's or cell's task through
plan/tasks.py instead of branching on its name."""

from __future__ import annotations

import re
from pathlib import Path

from tfvariants.options.serving import ServingOptions
from tfvariants.options.training import TrainingOptions
from tfvariants.plan.tasks import TASKS, task_of
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
    assert len(rows) >= 10
    named = [n for row in rows for n in _named(row)]
    assert "plan/tasks.py" in named and "options/serving.py" in named
    missing = [n for n in named if not _path(n).exists()]
    assert not missing, missing


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
    assert set(TASKS) == {"train", "serve"}
    branches = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in sorted((ROOT / "tfvariants" / "store").rglob("*.py"))
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"""[=!]= ["']serve["']""", line)
    ]
    assert not branches, branches
