"""Specs are typed in their options (issue 40): a spec holds its task's frozen options
class, an options object is not a mapping (run.json's shape is its ``record()``), and
no code narrows a mapping back into options with ``.of()``."""

from __future__ import annotations

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
    sources = [p for p in (ROOT / "tfvariants").rglob("*") if p.suffix in (".py", ".html")]
    calls = [f"{p}: {m}" for p in sources for m in re.findall(r".*\.of\(", p.read_text())]
    assert calls == []
    plan = [p.read_text() for p in (ROOT / "tfvariants" / "plan").glob("*.py")]
    assert not [t for t in plan if re.search(r"options: Mapping\[str, Any\]", t)]
