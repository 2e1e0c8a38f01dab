"""A resume changes nothing silently: a new value of an option that judges cells
(declared ``rejudged``) is applied to the whole report and said; any other option a
resume keeps is refused when given another value (tests/test_bad_input.py)."""

from __future__ import annotations

import json

import pytest
from test_bad_input import make_run, resumable

from tfvariants.cli import main
from tfvariants.commands import compare
from tfvariants.execute import runner
from tfvariants.options import declare
from tfvariants.options.serving import ServingOptions
from tfvariants.options.training import TrainingOptions


@pytest.mark.parametrize(
    "flag,value,stored,shown",
    [
        ("--confidence", "0.8", ("confidence", 0.8), "80% confidence"),
        ("--min-effect", "10%", ("min_effect", 0.1), None),
        ("--disturbed", "include", ("disturbed_policy", "include"), None),
    ],
)
def test_a_rejudged_option_on_resume_judges_the_whole_report(
    flag, value, stored, shown, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "run_cell", lambda *a, **k: pytest.fail("nothing to run"))
    monkeypatch.setattr(compare, "probe_variants", lambda *a, **k: None)
    make_run(tmp_path)
    resumable()(tmp_path)
    capsys.readouterr()
    assert (
        main(["compare", "--resume", "--out", "R", "--no-peak", flag, value, "-o", "r.html"]) == 0
    )
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if line.startswith(f"tfvariants: --resume: {flag} ")]
    assert len(said) == 1 and "every cell of the report is judged with it" in said[0], err
    name, want = stored
    assert json.loads((tmp_path / "R" / "run.json").read_text())["options"][name] == want
    if shown:
        assert shown in (tmp_path / "r.html").read_text()
    # said once: a second resume with the same value has nothing to say
    assert (
        main(["compare", "--resume", "--out", "R", "--no-peak", flag, value, "-o", "r.html"]) == 0
    )
    assert f"--resume: {flag}" not in capsys.readouterr().err


def test_every_option_declares_what_a_resume_does_with_it():
    # A judged option is rejudged on compare; serve's matrix identity still holds it.
    training = declare.declared(TrainingOptions)
    for name in ("confidence", "min_effect", "equivalence_band", "disturbed_policy"):
        assert training[name].resume == declare.REJUDGED, name
    serving_identity = [
        n
        for n, o in declare.declared(ServingOptions).items()
        if o.resume not in (declare.CHANGEABLE, declare.THIS_COMMAND)
    ]
    assert "confidence" in serving_identity
