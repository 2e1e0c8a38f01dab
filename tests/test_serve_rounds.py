"""serve's adaptive rounds: without --max-repeats the last look follows the budget,
planned from the first look's round cost (wall times only, never a verdict) and recorded
in run.json and the report; --max-repeats and a resumed run keep theirs."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from tfvariants.analyze.cost.pricing import parse_pricing_option
from tfvariants.analyze.serving.part import ServingPart
from tfvariants.analyze.serving.sentences import look_plan_sentence
from tfvariants.analyze.statistics import adaptive
from tfvariants.options.serving import ServingOptions
from tfvariants.plan.serve import ServeCell, ServeSpec
from tfvariants.rounds.serving import (
    MAX_PLANNED_LAST,
    ROUND_MARGIN,
    NextServeRound,
    plan_last_look,
    round_cost,
)
from tfvariants.store.adaptiveplans import look_plan
from tfvariants.store.result import write_json_atomic
from tfvariants.store.rundir import load_run_dir, update_run
from tfvariants.store.runfile import new_run, write_run
from tfvariants.store.serving import serving


def _spec(max_repeats: int | None = None, budget_s: float = 600.0) -> ServeSpec:
    options = ServingOptions(
        min_effect=0.05,
        confidence=0.95,
        p99_bound_ms=100.0,
        budget_s=budget_s,
        max_repeats=max_repeats,
    )
    return ServeSpec(
        variants=("local",),
        threads=(1, 2),
        models=("m",),
        scenarios=("concurrency",),
        concurrency=(1,),
        paths=("http",),
        repeats=5,
        options=options,
        variant_info={"local": {"kind": "local", "device": "cpu"}},
    )


def _store(out: Path, rounds: int, ratio: float, wall_s: float = 6.8) -> None:
    """``rounds`` rounds of 1 and 2 threads, 1 thread ``ratio`` times faster, noisy
    enough that 20 rounds of a ratio near 1.08 stay undecided at the 5 % band."""
    noise = [1.0, 0.93, 1.06, 0.97, 1.04, 0.95, 1.02, 0.99, 1.07, 0.94]
    for r in range(rounds):
        for threads, thr in ((1, 55.0 * ratio), (2, 55.0)):
            cell = ServeCell("local", threads, "m", "concurrency", "http", 1, r)
            j = noise[(r + 3 * threads) % len(noise)]
            result = {
                "schema_version": 1,
                "kind": "tfvariants.serve_cell",
                "cell": cell.to_dict(),
                "status": "ok",
                "reason": None,
                "metrics": {"throughput_per_s": thr * j, "p99_ms": 20.0, "validity": None},
                "placement": {"shared": True, "server_cpus": [0, 1]},
                "runner": {"wall_s": wall_s + 0.1 * threads},
            }
            write_json_atomic(out / "cells" / f"{cell.cell_id}.json", result)


def test_the_last_look_holds_the_budget_at_the_measured_round_cost():
    plan = plan_last_look(5, 600.0, 13.7)
    assert plan.last_look == int(600 // (13.7 * ROUND_MARGIN)) == 39
    assert plan_last_look(5, 3600.0, 13.7).last_look == MAX_PLANNED_LAST
    assert plan_last_look(5, 60.0, 13.7).last_look == 5  # not even the first look fits
    sentence = look_plan_sentence(look_plan(plan.to_json()))
    assert sentence is not None and "last look (39 repeats)" in sentence
    assert "10 min at about 15.1 s per round" in sentence
    assert look_plan_sentence(None) is None and look_plan({"round_s": "x"}) is None


def test_round_cost_is_the_sum_of_each_cells_median_wall(tmp_path):
    _store(tmp_path, 5, 1.08)
    cells = serving(load_run_dir(tmp_path).parsed.values())
    assert round_cost(cells, 5) == pytest.approx(6.9 + 7.0)
    assert round_cost(cells, 0) is None  # nothing timed before the look
    # a configuration whose cells failed took their time too
    for r in range(5):
        cell = ServeCell("local", 3, "m", "concurrency", "http", 1, r)
        failed = {
            "schema_version": 1,
            "kind": "tfvariants.serve_cell",
            "cell": cell.to_dict(),
            "status": "failed",
            "reason": "server did not start",
            "runner": {"wall_s": 2.0},
        }
        write_json_atomic(tmp_path / "cells" / f"{cell.cell_id}.json", failed)
    cells = serving(load_run_dir(tmp_path).parsed.values())
    assert round_cost(cells, 5) == pytest.approx(6.9 + 7.0 + 2.0)


def test_planned_looks_run_past_20_repeats_and_ignore_the_verdicts(tmp_path):
    said: list[str] = []
    pricing = parse_pricing_option("gce-2017")
    hook = NextServeRound(_spec(), None, pricing=pricing, baseline=None, say=said.append)
    _store(tmp_path / "a", 5, 1.08)
    cells, why = hook(load_run_dir(tmp_path / "a").parsed)
    assert hook.plan is not None and hook.rule is not None
    assert hook.plan.last_look == int(600 // (13.9 * ROUND_MARGIN)) == 39
    assert hook.rule.looks[-1] == 39 and len(said) == 1 and "planned from the budget" in said[0]
    # the same walls with a clearly decided effect: the same looks (no verdict went in)
    other = NextServeRound(_spec(), None, pricing=pricing, baseline=None)
    _store(tmp_path / "b", 5, 1.8)
    other(load_run_dir(tmp_path / "b").parsed)
    assert other.rule == hook.rule
    # 20 rounds of an effect near the band's edge, undecided: the old fixed last look of 20
    # stopped here; the planned one runs another round
    _store(tmp_path / "c", 20, 1.08)
    fresh = NextServeRound(_spec(), None, pricing=pricing, baseline=None)
    cells, why = fresh(load_run_dir(tmp_path / "c").parsed)
    assert fresh.rule == hook.rule  # a resume plans the same looks from the same cells
    assert "undecided" in why and sorted(c.repeat for c in cells) == [20, 20]


def test_max_repeats_fixes_the_looks(tmp_path):
    rule = adaptive.stopping_rule(5, 20)
    hook = NextServeRound(_spec(20), rule, pricing=None, baseline=None)
    _store(tmp_path, 20, 1.08)
    cells, why = hook(load_run_dir(tmp_path).parsed)
    assert cells == [] and adaptive.AT_LAST_LOOK in why and hook.plan is None


@pytest.mark.parametrize(
    "argv, expected",
    [
        ([], None),  # the budget's default: planned at the first look
        (["--max-repeats", "30"], 30),
        (["--budget", "off"], adaptive.DEFAULT_MAX_REPEATS),
    ],
)
def test_serve_leaves_the_last_look_to_the_budget_unless_told(argv, expected):
    from tfvariants.cli import build_parser
    from tfvariants.commands.serve_spec import build_serve_spec

    args = build_parser().parse_args(["serve", "--threads", "1,2", *argv])
    spec, _ = build_serve_spec(args)
    assert spec.options.max_repeats == expected


def test_the_report_states_the_planned_last_look_and_uses_its_looks(tmp_path):
    from tfvariants.commands.report import write_report

    spec = _spec()
    _store(tmp_path / "res", 20, 1.08)
    write_run(tmp_path / "res", new_run(spec, []))
    hook = NextServeRound(spec, None, pricing=None, baseline=None)
    hook(load_run_dir(tmp_path / "res").parsed)
    assert hook.rule is not None and hook.plan is not None
    update_run(tmp_path / "res", adaptive={**hook.rule.to_json(), "look_plan": hook.plan.to_json()})
    html_path = tmp_path / "rep" / "index.html"
    part = write_report(tmp_path / "res", html_path).part(ServingPart)
    assert part is not None and part.analysis.settings.looks == hook.rule.looks
    html = html_path.read_text()
    assert "Adaptive rounds: the last look (39 repeats) was planned from the budget" in html


def test_a_run_at_its_last_look_says_a_new_run_decides_not_more_budget(tmp_path):
    """The report's sentence, the answer's next step and serve's closing line give one
    --max-repeats: the last look plus the most repeats an undecided comparison needs."""
    from rich.console import Console

    from tfvariants.analyze.serving.analysis import analyze_serving
    from tfvariants.analyze.shared.settings import ReportSettings
    from tfvariants.commands import rounds
    from tfvariants.commands.report import write_report
    from tfvariants.render.answertext import answer_of_report

    rule = adaptive.stopping_rule(5, 20)
    _store(tmp_path, 20, 1.08)
    write_run(tmp_path, new_run(_spec(20), []))
    stopped = f"2 comparison(s) {adaptive.AT_LAST_LOOK} 20 repeats"
    update_run(tmp_path, adaptive={**rule.to_json(), "stopped": stopped})
    pricing = parse_pricing_option("gce-2017")
    (rep,) = analyze_serving(tmp_path, pricing=pricing).models
    (i,) = [n for n, line in enumerate(rep.conclusions) if "planned last look" in line]
    assert ": undecided (" in rep.conclusions[i - 1]
    assert "(20 repeats), which more budget cannot pass" in rep.conclusions[i]
    report = write_report(tmp_path, tmp_path / "rep.html", ReportSettings(pricing=pricing))
    answer = answer_of_report(report)
    assert answer is not None and answer.needed_more is not None
    said = io.StringIO()
    rounds.last_look_next(report.frame, answer, Console(file=said, width=400))
    figure = adaptive.last_look_repeats(answer.needed_more, 20)
    assert figure > 40  # the comparison needs more than twice the last look
    places = [rep.conclusions[i], answer.next_step or "", said.getvalue()]
    assert [_max_repeats(text) for text in places] == [figure] * 3, places
    # a run.json without max_repeats (written before it was kept): both read the last
    # look through adaptive.last_look_of, so the sentence is there and agrees
    older = {k: v for k, v in rule.to_json().items() if k != "max_repeats"}
    update_run(tmp_path, adaptive={**older, "stopped": stopped})
    report = write_report(tmp_path, tmp_path / "rep.html", ReportSettings(pricing=pricing))
    (rep,) = report.part(ServingPart).analysis.models
    said = io.StringIO()
    rounds.last_look_next(report.frame, answer_of_report(report), Console(file=said, width=400))
    (line,) = [line for line in rep.conclusions if "planned last look" in line]
    assert _max_repeats(line) == _max_repeats(said.getvalue()) == figure
    # decided at a look, or stopped by the budget: no such line
    update_run(tmp_path, adaptive={**rule.to_json(), "stopped": "budget: 590 s spent"})
    (rep,) = analyze_serving(tmp_path, pricing=parse_pricing_option("gce-2017")).models
    assert not any("planned last look" in line for line in rep.conclusions)


def _max_repeats(text: str) -> int:
    """The --max-repeats a next step gives (the first: each says one)."""
    (figure, *_) = re.findall(r"--max-repeats (\d+)", text)
    return int(figure)


def test_run_json_records_the_plan_and_a_run_stopped_before_its_first_look(tmp_path):
    from rich.console import Console

    from tfvariants.analyze.statistics.decide import run_looks
    from tfvariants.commands.serve import _record
    from tfvariants.execute.matrix import MatrixOutcome
    from tfvariants.store.runfile import load_run, read_run

    spec = _spec()
    write_run(tmp_path, new_run(spec, []))
    hook = NextServeRound(spec, None, pricing=None, baseline=None)
    quiet = Console(file=io.StringIO())
    stopped = MatrixOutcome(planned=10, stopped="", spent_s=12.0)
    _record(tmp_path, hook, spec, None, stopped, quiet)
    record = load_run(tmp_path)["adaptive"]
    # no looks yet: the report judges at one look's level, a resume plans them then
    assert (
        record["looks"] == [] and "look_plan" not in record and run_looks(read_run(tmp_path)) == 1
    )
    _store(tmp_path, 5, 1.08)
    hook(load_run_dir(tmp_path).parsed)
    before = read_run(tmp_path).adaptive
    _record(tmp_path, hook, spec, before, MatrixOutcome(planned=10, spent_s=80.0), quiet)
    record = load_run(tmp_path)["adaptive"]
    assert record["looks"] == [5, 16, 28, 39] and record["look_plan"]["last_look"] == 39
    assert record["spent_s"] == 80.0


# A look plan as run.json keeps it: 39 repeats from a 10-minute budget.
LOOK_PLAN_39 = {"round_s": 15.1, "budget_s": 600.0, "last_look": 39, "first_look": 5,
                "margin": 1.1, "cap": 50}  # fmt: skip


def test_a_resume_keeps_the_last_look_its_run_fixed(tmp_path):
    from tfvariants.rounds.serving import stored_max_repeats

    write_run(tmp_path, new_run(_spec(), []))
    assert stored_max_repeats(tmp_path, resume=True) is None  # before its first look
    update_run(tmp_path, adaptive={"looks": [5, 16, 28, 39], "look_plan": LOOK_PLAN_39})
    # planned from a 10-minute budget: a resume with another --budget keeps 39
    assert stored_max_repeats(tmp_path, resume=True) == 39
    assert stored_max_repeats(tmp_path, resume=False) is None
    write_run(tmp_path, new_run(_spec(20), []))
    assert stored_max_repeats(tmp_path, resume=True) == 20  # --max-repeats as stored


@pytest.mark.parametrize(
    ("policy", "expected"), [("auto", "decided"), ("exclude", "nothing to compare")]
)
def test_the_rounds_judge_by_the_runs_disturbed_policy(tmp_path, policy, expected):
    """A neighbour that stayed for the whole run: every cell disturbed. The hook judges
    as the report does: "auto" compares them (under load) and stops when decided;
    "exclude" has nothing to compare (what every serving run did before)."""
    import dataclasses
    import json

    _store(tmp_path, 5, 1.8)
    for path in (tmp_path / "cells").glob("*.json"):
        r = json.loads(path.read_text())
        r["cpu"] = {"others_share": 0.5, "steal_share": 0.0}
        write_json_atomic(path, r)
    spec = _spec(max_repeats=5)
    spec = dataclasses.replace(
        spec, options=dataclasses.replace(spec.options, disturbed_policy=policy)
    )
    hook = NextServeRound(spec, adaptive.stopping_rule(5, 5), pricing=None, baseline=None)
    cells, why = hook(load_run_dir(tmp_path).parsed)
    assert cells == [] and expected in why
