"""One preset record for every task (options/preset.py): declared once, typed in the
options, written to run.json as a record, and read back from older run folders (a
serving run stored its preset's bare name)."""

import dataclasses

from tfvariants.options.preset import PresetRecord, preset_record
from tfvariants.options.serving import ServingOptions
from tfvariants.options.training import TrainingOptions
from tfvariants.store.record import run_record


def _preset_type(cls: type) -> object:
    return next(f.type for f in dataclasses.fields(cls) if f.name == "preset")


def test_both_tasks_hold_the_one_preset_record():
    assert _preset_type(TrainingOptions) == _preset_type(ServingOptions) == "PresetRecord | None"
    compiled = PresetRecord(
        name="compiled", stock="tf-2.14", builds=("intel-2.14",),
        skipped={"isa-avx512": "no avx512f"}, explanatory=("isa-sse41",), band=0.1,
        min_effect=0.0, left_out="isa-avx2",
    )  # fmt: skip
    study = PresetRecord(name="study", variants="local,gpu", threads=(1, 2), pricing="gce")
    for preset in (compiled, study):
        assert preset_record(preset.to_json()) == preset
        options = TrainingOptions(preset=preset)
        assert options.record()["preset"] == preset.to_json()  # run.json holds the record
        assert TrainingOptions.from_record(options.record()).preset == preset


def test_a_serving_run_stored_before_the_record_reads_and_resumes_as_one():
    from tfvariants.cli import build_parser
    from tfvariants.commands.serve_spec import build_serve_spec
    from tfvariants.store.rundir import _identity_diffs

    old = {"preset": "study", "p99_bound_ms": 100.0}  # as serve --preset study stored it
    assert ServingOptions.from_record(old).preset == PresetRecord(name="study")
    assert run_record({"task": "serve", "options": old}).preset == PresetRecord(name="study")
    spec, _ = build_serve_spec(build_parser().parse_args(["serve", "--preset", "study"]))
    assert spec.options.preset == PresetRecord(name="study")
    stored = spec.to_json("t")
    assert stored["options"]["preset"] == {"name": "study"}
    stored["options"]["preset"] = "study"  # an older run folder's form
    assert _identity_diffs(stored, spec) == []  # its resume is the same run
    stored["options"]["preset"] = "other"
    assert _identity_diffs(stored, spec) != []
