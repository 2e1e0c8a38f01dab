"""The code's shape limits (issue 27), measured on the source so that a change that breaks
one says so here: modules of at most 450 lines, functions of at most 80 (host and workers),
at most 30 `# fmt: skip` markers, and few bare `Any` annotations in host signatures."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 80
MAX_FMT_SKIP = 30
# Bare `Any` parameters and returns in tfvariants/: 18 (issue 27 asks for at most 20; the
# JSON readers return Any on purpose). Lower it as they go, never raise it.
MAX_BARE_ANY = 18


def _sources(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (ROOT / f).rglob("*.py"))


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _is_bare_any(annotation: ast.expr | None) -> bool:
    if isinstance(annotation, ast.Name):
        return annotation.id == "Any"
    if isinstance(annotation, ast.Attribute):
        return annotation.attr == "Any"
    return isinstance(annotation, ast.Constant) and annotation.value == "Any"


def bare_any(tree: ast.AST) -> list[str]:
    """Each parameter or return annotated with exactly ``Any``."""
    out = []
    for f in _functions(tree):
        a = f.args
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, (a.vararg, a.kwarg))]
        out += [f"{f.name}({p.arg})" for p in params if _is_bare_any(p.annotation)]
        out += [f"{f.name} -> Any"] if _is_bare_any(f.returns) else []
    return out


def test_no_module_is_over_450_lines():
    long = []
    for path in _sources("tfvariants", "workloads"):
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_MODULE_LINES:
            long.append(f"{path.relative_to(ROOT)}: {n}")
    assert long == []


def test_no_function_is_over_80_lines():
    long = []
    for path in _sources("tfvariants", "workloads"):
        for f in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            n = (f.end_lineno or f.lineno) - f.lineno + 1
            if n > MAX_FUNCTION_LINES:
                long.append(f"{path.relative_to(ROOT)}:{f.lineno} {f.name}: {n}")
    assert long == []


def test_few_fmt_skip_markers():
    count = sum(
        line.rstrip().endswith("# fmt: skip")
        for path in _sources("tfvariants", "workloads")
        for line in path.read_text(encoding="utf-8").splitlines()
    )
    assert count <= MAX_FMT_SKIP


def test_few_bare_any_in_host_signatures():
    found = [
        f"{path.relative_to(ROOT)} {where}"
        for path in _sources("tfvariants")
        for where in bare_any(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert len(found) <= MAX_BARE_ANY, "\n".join(found)


def test_the_any_scan_sees_parameters_returns_and_star_args():
    tree = ast.parse(
        "def f(a: Any, b: int, *c: Any, d: typing.Any, **e: 'Any') -> Any: ...\n"
        "def g(x: list[Any]) -> dict[str, Any]: ...\n"
    )
    assert bare_any(tree) == ["f(a)", "f(d)", "f(c)", "f(e)", "f -> Any"]
