"""The import layering docs/ARCHITECTURE.md draws, checked on the source: every import
statement of every module (module level, inside functions and under TYPE_CHECKING alike;
relative ones resolved), with no exemptions.

Stages from the ground up: a module may import its own stage or a stage of a LOWER rank,
never one above and never another stage of its own rank (variants/ and execute/ stand
side by side). Every module of tfvariants/ belongs to a listed stage. The same holds for
the rooms of analyze/. workloads/ runs inside variant environments and never imports
tfvariants."""

from __future__ import annotations

import ast
import graphlib
from collections.abc import Iterator
from pathlib import Path

from tfvariants.plan.tasks import tasks

ROOT = Path(__file__).resolve().parent.parent

# tfvariants/<stage>/ or tfvariants/<stage>.py -> its rank. "tfvariants" is the package's
# own __init__.py (its version); errors.py is the one exception type every stage raises.
STAGES = {
    "tfvariants": 0,
    "errors": 0,
    "options": 1,
    "plan": 2,
    "store": 3,
    "analyze": 4,
    "render": 5,
    "variants": 6,
    "execute": 6,
    "rounds": 7,
    "commands": 8,
    "cli": 9,
    "__main__": 10,
}

# tfvariants/analyze/<room>/ or <room>.py -> its rank ("analyze": the package's __init__).
# Above the report's room, each task's own (tfvariants.analyze.<stem>, a package or one
# module), found as the report finds them, in the tasks' order.
ROOMS = {
    "analyze": 0,
    "statistics": 0,
    "cost": 1,
    "baseline": 2,
    "shared": 3,
    "report": 4,
    **{t.stem: 5 + i for i, t in enumerate(tasks().values())},
}


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) for every import in the file: ``from X import a`` names X.a when
    that is a module of this tree (``from tfvariants import errors``), else X."""
    package = _module_of(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            named = {f"{module}.{a.name}" for a in node.names}
            targets = {full if _is_module(full) else module for full in named}
            yield from ((node.lineno, target) for target in sorted(targets))


def _unit(module: str, level: int) -> str | None:
    """The stage (level 1: tfvariants.<stage>) or the analyze room (level 2:
    tfvariants.analyze.<room>) a module belongs to; None when outside."""
    parts = module.split(".")
    prefix = ["tfvariants", "analyze"][:level]
    if parts[:level] != prefix:
        return None
    return parts[level] if len(parts) > level else parts[level - 1]


def _edges(folder: str, level: int) -> list[tuple[str, str, str]]:
    """(from unit, to unit, where) for every import between two units under ``folder``."""
    out = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        own = _unit(_module_of(path), level)
        for line, module in _imports(path):
            target = _unit(module, level)
            if own is not None and target is not None and target != own:
                out.append((own, target, f"{path.relative_to(ROOT)}:{line} imports {module}"))
    return out


def _violations(folder: str, level: int, ranks: dict[str, int]) -> list[str]:
    bad = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        own = _unit(_module_of(path), level)
        if own not in ranks:
            bad.append(f"{path.relative_to(ROOT)} is in no listed {['stage', 'room'][level - 1]}")
    for own, target, where in _edges(folder, level):
        if own in ranks and (target not in ranks or ranks[target] >= ranks[own]):
            bad.append(where)
    return bad


def _cycle(edges: list[tuple[str, str, str]]) -> list[str] | None:
    graph: dict[str, set[str]] = {}
    for own, target, _ in edges:
        graph.setdefault(own, set()).add(target)
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return None


def test_no_stage_imports_its_rank_or_above():
    assert _violations("tfvariants", 1, STAGES) == []


def test_no_room_of_analyze_imports_its_rank_or_above():
    assert _violations("tfvariants/analyze", 2, ROOMS) == []


def test_variants_and_execute_never_import_each_other():
    both = {"variants", "execute"}
    assert [w for a, b, w in _edges("tfvariants", 1) if {a, b} == both] == []


def test_the_stage_graph_is_acyclic():
    assert _cycle(_edges("tfvariants", 1)) is None


def test_the_graph_of_analyze_rooms_is_acyclic():
    assert _cycle(_edges("tfvariants/analyze", 2)) is None


def test_workloads_never_import_tfvariants():
    bad = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in sorted((ROOT / "workloads").rglob("*.py"))
        for line, module in _imports(path)
        if module.split(".")[0] == "tfvariants"
    ]
    assert bad == []


def _tree(tmp_path: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_check_sees_each_kind_of_forbidden_import(tmp_path, monkeypatch):
    """The scan itself: an import in a function, one under TYPE_CHECKING, a relative one,
    one between side-by-side stages, a module in no stage and a room above its own."""
    _tree(
        tmp_path,
        {
            "tfvariants/store/bad.py": "def f():\n    from tfvariants.analyze import x\n",
            "tfvariants/plan/typed.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                "    from tfvariants.store.bad import f\n"
            ),
            "tfvariants/options/rel.py": "from ..plan import typed\n",
            "tfvariants/variants/side.py": "import tfvariants.execute.y\n",
            "tfvariants/stray/new.py": "",
            "tfvariants/analyze/statistics/up.py": "from tfvariants.analyze.report import z\n",
            "tfvariants/analyze/report/z.py": "from tfvariants.analyze.statistics import up\n",
        },
    )
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    assert _violations("tfvariants", 1, STAGES) == [
        "tfvariants/stray/new.py is in no listed stage",
        "tfvariants/options/rel.py:1 imports tfvariants.plan.typed",
        "tfvariants/plan/typed.py:3 imports tfvariants.store.bad",
        "tfvariants/store/bad.py:2 imports tfvariants.analyze",
        "tfvariants/variants/side.py:1 imports tfvariants.execute.y",
    ]
    assert _violations("tfvariants/analyze", 2, ROOMS) == [
        "tfvariants/analyze/statistics/up.py:1 imports tfvariants.analyze.report.z"
    ]
    assert _cycle(_edges("tfvariants/analyze", 2)) in (
        ["statistics", "report", "statistics"],
        ["report", "statistics", "report"],
    )
