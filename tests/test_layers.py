"""The import layering docs/ARCHITECTURE.md draws, checked on the source: every import
statement (module level, in functions and under TYPE_CHECKING alike) of every module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# stage -> the stages it must never import (a stage is tfvariants/<stage>/ or workloads/)
FORBIDDEN = {
    "workloads": {"tfvariants"},  # runs inside variant environments: stdlib + Keras only
    "plan": {"analyze", "commands", "execute", "render", "rounds", "store", "variants"},
    "options": {"commands", "execute", "render", "rounds", "store", "variants"},
    "store": {"analyze", "commands", "execute", "render", "rounds", "variants"},
    "execute": {"analyze", "commands", "render", "rounds"},
    "analyze": {"commands", "execute", "render", "rounds", "variants"},
    "render": {"commands", "execute", "rounds", "variants"},
    "rounds": {"commands", "execute", "render"},
}


def _stage(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] == "workloads":
        return "workloads"
    if parts[0] != "tfvariants":
        return None
    if len(parts) < 2:
        return "tfvariants"
    if parts[1:3] == ["options", "training"]:
        return "options.training"  # compare's resolved options: used by commands/, rounds/
    return parts[1]


def _imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
    return out


def _violations(stage: str) -> list[str]:
    folder = ROOT / ("workloads" if stage == "workloads" else f"tfvariants/{stage}")
    bad = []
    for path in sorted(folder.rglob("*.py")):
        own = _stage(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for line, module in _imports(path):
            target = _stage(module)
            target_root = "tfvariants" if module.split(".")[0] == "tfvariants" else target
            if (
                own == stage
                and target != own
                and (target in FORBIDDEN[stage] or target_root in FORBIDDEN[stage])
            ):
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    return bad


@pytest.mark.parametrize("stage", sorted(FORBIDDEN))
def test_no_stage_imports_a_stage_above_it(stage):
    assert _violations(stage) == []


def test_the_check_sees_a_forbidden_import(tmp_path, monkeypatch):
    # The scan itself: a store module importing analyze is caught.
    fake = tmp_path / "tfvariants" / "store"
    fake.mkdir(parents=True)
    (fake / "bad.py").write_text("def f():\n    from tfvariants.analyze import x\n")
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    assert _violations("store") == ["tfvariants/store/bad.py:2 imports tfvariants.analyze"]
