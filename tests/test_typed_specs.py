"""Specs are typed in their options (issue 40): a spec holds its task's frozen options
class, an options object is not a mapping (run.json's shape is its ``record()``), and
no code narrows a mapping back into options with ``.of()``."""

from __future__ import annotations

import ast
import re
import typing
from collections.abc import Mapping
from pathlib import Path

from tfvariants.options.serving import ServingOptions
from tfvariants.options.training import TrainingOptions
from tfvariants.plan.serve import ServeSpec
from tfvariants.plan.spec import MatrixSpec

ROOT = Path(__file__).resolve().parent.parent


def test_specs_hold_their_tasks_options_class():
    assert typing.get_type_hints(MatrixSpec)["options"] is TrainingOptions
    assert typing.get_type_hints(ServeSpec)["options"] is ServingOptions
    assert isinstance(MatrixSpec((), (), (), 1).options, TrainingOptions)


def test_options_are_not_mappings_and_a_stored_record_structures_back():
    options = TrainingOptions(seed=3, later=["b"])
    assert not isinstance(options, Mapping)
    assert TrainingOptions.from_record({**options.record(), "unknown": 1}) == options


def test_no_of_call_and_no_mapping_options_in_plan():
    code = [p for folder in ("tfvariants", "workloads") for p in (ROOT / folder).rglob("*")]
    sources = [p for p in code if p.suffix in (".py", ".html")]
    calls = [f"{p}: {m}" for p in sources for m in re.findall(r".*\.of\(", p.read_text())]
    assert calls == []
    plan = [p.read_text() for p in (ROOT / "tfvariants" / "plan").glob("*.py")]
    assert not [t for t in plan if re.search(r"options: Mapping\[str, Any\]", t)]


def _mapping_options_parameters(tree: ast.AST) -> list[str]:
    """Each parameter named like run options (``options``, ``opts``, ``*_options``)
    annotated as a mapping or dict."""
    out = []
    for f in ast.walk(tree):
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = f.args
            for arg in (*a.posonlyargs, *a.args, *a.kwonlyargs):
                named = arg.arg in ("options", "opts") or arg.arg.endswith("_options")
                text = ast.unparse(arg.annotation) if arg.annotation is not None else ""
                if named and re.search(r"\b(Mapping|dict)\b", text):
                    out.append(f"{f.name}({arg.arg}: {text})")
    return out


def test_readers_of_run_options_take_the_typed_options():
    """Above the record's boundary (options/ declares it, store/ structures run.json into
    it), the decision settings, the interference rules and every other reader take the
    frozen options class, never run.json's mapping (issue 40)."""
    from tfvariants.analyze.statistics import interference
    from tfvariants.analyze.statistics.decide import Settings
    from tfvariants.options.decision import DecisionOptions

    found = [
        f"{p.relative_to(ROOT)}: {hit}"
        for p in sorted((ROOT / "tfvariants").rglob("*.py"))
        if p.relative_to(ROOT).parts[1] not in ("options", "store")
        for hit in _mapping_options_parameters(ast.parse(p.read_text(encoding="utf-8")))
    ]
    assert found == []
    assert "DecisionOptions" in str(typing.get_type_hints(Settings.from_options)["options"])
    for rule in (interference.summarise, interference.policy_of, interference.rule_of):
        assert "TrainingOptions" in str(typing.get_type_hints(rule)["options"]), rule
    # A stored value reaches the settings as the typed field (the loader bounds it).
    settings = Settings.from_options(DecisionOptions(min_effect=0.0, equivalence_band=0.1))
    assert (settings.min_effect, settings.band) == (0.0, 0.1)


def test_the_parameter_scan_sees_a_mapping_of_options():
    tree = ast.parse("def f(options: Mapping[str, Any], x: dict) -> None: ...\n")
    assert _mapping_options_parameters(tree) == ["f(options: Mapping[str, Any])"]


# run.json's record fields (store/runfile.py validate_run, store/record.py RunRecord);
# not logical_cpus, which a host's topology (`tfvariants env`) names too.
RUN_JSON_FIELDS = {
    "options", "adaptive", "variant_info", "hosts", "fixed_threads",
    "schema_version", "workload_files", "started_at", "window_plan", "look_plan", "design",
}  # fmt: skip


def _string_key_reads(tree: ast.AST, keys: set[str]) -> list[str]:
    """Each ``x["key"]`` read, ``x.get("key")`` or ``getattr(x, "key")`` call naming one
    of ``keys``."""
    out = []
    for n in ast.walk(tree):
        key = None
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load):
            key = n.slice.value if isinstance(n.slice, ast.Constant) else None
        elif isinstance(n, ast.Call) and getattr(n.func, "attr", None) == "get" and n.args:
            key = n.args[0].value if isinstance(n.args[0], ast.Constant) else None
        elif isinstance(n, ast.Call) and getattr(n.func, "id", None) == "getattr":
            name = n.args[1] if len(n.args) > 1 else None
            key = name.value if isinstance(name, ast.Constant) else None
        if key in keys:
            out.append(f"line {n.lineno}: {ast.unparse(n)}")
    return out


def test_no_string_key_read_of_run_json_outside_the_store():
    """run.json is structured once, at the store's boundary: every other stage reads the
    typed record (RunRecord, the options classes), never its fields by name."""
    found = [
        f"{p.relative_to(ROOT)}: {hit}"
        for p in sorted((ROOT / "tfvariants").rglob("*.py"))
        if p.relative_to(ROOT).parts[1] != "store"
        for hit in _string_key_reads(ast.parse(p.read_text(encoding="utf-8")), RUN_JSON_FIELDS)
    ]
    assert found == []


# The adaptive rounds' plans' own fields (store/adaptiveplans.py), as run.json keeps them:
# the window and look plans, the design and its cheaper cells.
PLAN_FIELDS = {
    "from_repeat", "back", "last_look", "first_look", "round_s",
    "switched", "warmup_max_s", "cell_s", "was_s", "previous_s",
}  # fmt: skip


def test_no_string_key_read_of_the_adaptive_plans_outside_the_store():
    """The window and look plans are typed records from the rounds to run.json and back:
    nothing reads them (or a hook's plan) by name."""
    found = [
        f"{p.relative_to(ROOT)}: {hit}"
        for p in sorted((ROOT / "tfvariants").rglob("*.py"))
        if p.relative_to(ROOT).parts[1] != "store"
        for hit in _string_key_reads(ast.parse(p.read_text(encoding="utf-8")), PLAN_FIELDS)
    ]
    assert found == []


def test_the_key_scan_sees_reads_not_writes():
    tree = ast.parse(
        'a = r.get("adaptive")\nb = r["options"]["x"]\nr["hosts"] = []\n'
        'c = getattr(hook, "window_plan", None)\n'
    )
    assert sorted(_string_key_reads(tree, RUN_JSON_FIELDS)) == [
        "line 1: r.get('adaptive')",
        "line 2: r['options']",
        "line 4: getattr(hook, 'window_plan', None)",
    ]
