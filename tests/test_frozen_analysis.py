"""No mutable dataclass in analyze/ (issue 40): the report is a pipeline of pure
functions over frozen records, each built once (``dataclasses.replace`` where a later
stage adds a derived fact), checked on the source."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _frozen(decorator: ast.expr) -> bool | None:
    """True/False for a @dataclass decorator (frozen or not), None for any other."""
    call = decorator if isinstance(decorator, ast.Call) else None
    target = call.func if call is not None else decorator
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
    if name != "dataclass":
        return None
    return call is not None and any(
        k.arg == "frozen" and isinstance(k.value, ast.Constant) and k.value.value is True
        for k in call.keywords
    )


def mutable_dataclasses(source: str) -> list[str]:
    return [
        node.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ClassDef)
        if any(_frozen(d) is False for d in node.decorator_list)
    ]


def test_no_mutable_dataclass_in_analyze():
    found = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / "tfvariants" / "analyze").rglob("*.py"))
        for name in mutable_dataclasses(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_the_scan_sees_every_spelling_of_a_mutable_dataclass():
    source = (
        "import dataclasses\nfrom dataclasses import dataclass\n"
        "@dataclass\nclass A: pass\n"
        "@dataclass(kw_only=True)\nclass B: pass\n"
        "@dataclasses.dataclass(frozen=False)\nclass C: pass\n"
        "@dataclass(frozen=True)\nclass D: pass\n"
        "@dataclasses.dataclass(frozen=True, kw_only=True)\nclass E: pass\n"
        "class F: pass\n"
    )
    assert mutable_dataclasses(source) == ["A", "B", "C"]


# How a module would read run.json itself rather than the report's typed records.
RAW_RUN = re.compile(
    r"\bload_run\b|\bread_json_file\b|\bjson\.loads?\(|store\.runfile|run\.json|"
    r"\brun\.(options|adaptive|variant_info|preset|hosts)\b"
)


def raw_run_reads(text: str) -> list[str]:
    return [m.group(0) for m in RAW_RUN.finditer(text)]


def test_render_and_templates_read_no_raw_run_json():
    """render/ and its templates format the frozen report (issue 40): no run.json read,
    no run record's options or adaptive record reached through ``.run``."""
    sources = [p for p in (ROOT / "tfvariants" / "render").rglob("*") if p.is_file()]
    found = [
        f"{p.relative_to(ROOT)}: {hit}"
        for p in sources
        if p.suffix in (".py", ".html")
        for hit in raw_run_reads(p.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_the_raw_read_scan_sees_each_spelling():
    text = "load_run(d)\n{{ a.run.options.min_effect }}\njson.loads(t)\n{{ a.header.adaptive }}\n"
    assert raw_run_reads(text) == ["load_run", "run.options", "json.loads("]
