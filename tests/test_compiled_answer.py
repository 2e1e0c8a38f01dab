"""The compiled-vs-stock answer a `--preset compiled` report opens with
(tfvariants/analyze/compiled.py), from groups made by hand."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tfvariants.analyze.statistics import stats
from tfvariants.analyze.training.compiled import answer
from tfvariants.analyze.training.groups import Group, WorkloadReport
from tfvariants.store.record import run_record

RUN = {
    "options": {
        "preset": {
            "name": "compiled",
            "stock": "tf-2.14",
            "builds": ["intel-avx512-2.14"],
            "skipped": {},
        }
    },
    "variant_info": {"intel-avx512-2.14": {"compiled_for": "AVX512+FMA+AVX2"}},
}


def _group(
    variant: str, median_s: float, disturbed: bool, cmp: stats.Comparison | None = None
) -> Group:
    raw = {"environment": {"cpu": {"model": "AMD EPYC", "isa_flags": ["avx2", "avx512f"]}}}
    results = [
        SimpleNamespace(ok=True, disturbed=disturbed, raw=raw, wall_s=12.0) for _ in range(3)
    ]
    iv = stats.Interval(median_s, median_s, median_s, "exact", 3)
    return Group(
        "mnist_cnn",
        variant,
        2,
        results=results,
        time=iv,
        time_cmp=cmp,  # type: ignore[arg-type]
    )


def test_no_verdict_says_why_and_gives_the_medians_as_such() -> None:
    stock, avx512 = _group("tf-2.14", 100.0, True), _group("intel-avx512-2.14", 80.0, True)
    wr = WorkloadReport("mnist_cnn", [stock, avx512], baseline=stock)
    lines = answer([wr], run_record(RUN), 0.05)
    assert lines is not None
    assert lines[0].startswith("On AMD EPYC, with AVX-512: no verdict")
    assert lines[1] == (
        "intel-avx512-2.14 (compiled for AVX512+FMA+AVX2): mnist_cnn intel-avx512-2.14@2 vs "
        "tf-2.14@2: no verdict (3 of its 3 and 3 of the stock wheel's 3 repeats were disturbed "
        "by other processes (others' share above 25 % of the pinned CPUs), which verdicts leave "
        "out; median time ratio 0.800, not a verdict)."
    )
    assert "2017 study" in lines[-1]


def test_only_a_preset_run_has_an_answer() -> None:
    stock = _group("tf-2.14", 100.0, False)
    wr = WorkloadReport("mnist_cnn", [stock], baseline=stock)
    assert answer([wr], run_record({"options": {}}), 0.05) is None


def _cmp(verdict: str, lo: float, hi: float, more: int | None) -> stats.Comparison:
    ratio = stats.Interval((lo + hi) / 2, lo, hi, "hodges-lehmann", 5, 0.984, 5)
    return stats.Comparison(ratio, verdict, (), more, 0.05, 0.10)


@pytest.mark.parametrize(
    ("verdict", "lo", "hi", "more", "said"),
    [
        ("different", 0.70, 0.80, None, "faster by 1.33x (98.4% interval 1.25-1.43x)."),
        # A proven difference inside the band (no minimum effect) says so.
        ("different", 1.04, 1.09, None, "slower by 1.06x (98.4% interval 1.04-1.09x; within"),
        ("equivalent", 0.95, 1.05, None, "equivalent within +/-10% (ratio 1.00, 98.4% interval"),
        # Two builds + the stock wheel, one workload: a round is 3 cells of 12 s; 9 more
        # repeats are 324 s: a 6-minute budget.
        ("undecided", 0.85, 1.12, 9, "undecided: --resume --budget 6m: about 9 more repeats"),
        ("undecided", 0.85, 1.12, None, "undecided: a quieter machine: at this noise no"),
    ],
)
def test_one_line_per_build_with_the_answer_or_the_next_step(
    verdict: str, lo: float, hi: float, more: int | None, said: str
) -> None:
    run = {"options": {"preset": {**RUN["options"]["preset"], "band": 0.10}}}  # type: ignore[index]
    run["options"]["preset"]["builds"] = ["intel-avx512-2.14", "intel-2.14"]
    stock = _group("tf-2.14", 100.0, False)
    build = _group("intel-avx512-2.14", 80.0, False, _cmp(verdict, lo, hi, more))
    other = _group("intel-2.14", 100.0, False, _cmp("equivalent", 0.97, 1.02, None))
    wr = WorkloadReport("mnist_cnn", [stock, build, other], baseline=stock)
    lines = answer([wr], run_record(run), 0.05)
    assert lines is not None
    assert lines[1].startswith(f"intel-avx512-2.14: mnist_cnn {said}")
    assert lines[2].startswith("intel-2.14: mnist_cnn equivalent within +/-10%")
    assert lines[3].startswith("'Equivalent' means within +/-10% of the stock wheel: the question")
    assert "near the edge of +/-5 %" in lines[3]
    assert ("excludes 1" in lines[3]) == (run["options"]["preset"].get("min_effect") == 0)


def test_the_band_words_say_what_faster_needs_when_the_preset_has_no_min_effect() -> None:
    run = {"options": {"preset": {**RUN["options"]["preset"], "band": 0.10, "min_effect": 0}}}  # type: ignore[index]
    run["options"]["preset"]["builds"] = ["intel-2.14"]
    stock = _group("tf-2.14", 100.0, False)
    build = _group("intel-2.14", 100.0, False, _cmp("equivalent", 0.97, 1.02, None))
    lines = answer(
        [WorkloadReport("mnist_cnn", [stock, build], baseline=stock)], run_record(run), 0.0
    )
    assert lines is not None
    assert "'Faster' and 'slower' mean the interval excludes 1" in lines[2]


def test_a_run_stopped_at_its_last_look_is_not_sent_back_for_more_budget() -> None:
    """At the planned last look more budget runs no round: the next step is a new run
    planned with a larger --max-repeats (a resume with one would weaken the confidence)."""
    run = {
        **RUN,
        "adaptive": {
            "max_repeats": 20,
            "stopped": "1 comparison(s) still undecided after the maximum of 20 repeats",
        },
    }
    stock = _group("tf-2.14", 100.0, False)
    build = _group("intel-avx512-2.14", 107.0, False, _cmp("undecided", 1.04, 1.11, 8))
    lines = answer(
        [WorkloadReport("mnist_cnn", [stock, build], baseline=stock)], run_record(run), 0.05
    )
    assert lines is not None
    assert "undecided: a new run with --max-repeats 40 planned from the start" in lines[1]
    assert "--budget" not in lines[1]
    # Stopped by the budget (or still running): --resume with more budget is the step.
    run["adaptive"]["stopped"] = "budget used"  # type: ignore[index]
    lines = answer(
        [WorkloadReport("mnist_cnn", [stock, build], baseline=stock)], run_record(run), 0.05
    )
    assert lines is not None and "undecided: --resume" in lines[1]


def test_at_last_look_reads_the_stop_the_rounds_record() -> None:
    from tfvariants.analyze.statistics import adaptive
    from tfvariants.rounds import decide

    assert adaptive.at_last_look(f"2 comparison(s) {adaptive.AT_LAST_LOOK} 20 repeats")
    assert not adaptive.at_last_look("every comparison was decided by the look after 10 repeats")
    assert not adaptive.at_last_look(None) and not adaptive.at_last_look(20)
    assert "AT_LAST_LOOK" in decide.__dict__  # the rounds word their stop with it


@pytest.mark.parametrize(
    ("mores", "needed", "figure"),
    [
        ([8, 31, None], 31, 39),  # the most any undecided one needs, beyond the last look of 8
        ([3], 3, 16),  # never under twice the last look
        ([None, None], 0, None),  # none gave a figure: a quieter machine, no --max-repeats
        ([], None, 16),  # nothing undecided to count from: twice the last look
    ],
)
def test_one_rule_gives_the_last_looks_next_step_its_figure(
    mores: list[int | None], needed: int | None, figure: int | None
) -> None:
    """The answer's next step (answer.next_step, also each compiled build's line) and the
    closing line and serving sentence (adaptive.last_look_next) say one --max-repeats."""
    import re

    from tfvariants.analyze.report.answer import next_step
    from tfvariants.analyze.statistics import adaptive

    cmps = [_cmp("undecided", 0.85, 1.12, more) for more in mores]
    cmps.append(_cmp("different", 0.70, 0.80, 99))  # decided: not counted
    assert adaptive.needed_more(cmps) == needed
    closing = adaptive.last_look_next(needed, 8)
    if figure is None:
        assert closing == adaptive.QUIETER_NEXT
    else:
        assert re.findall(r"--max-repeats (\d+)", closing)[0] == str(figure)
    if mores:  # the answer's step for the undecided comparison that needs the most
        cmp = max(cmps[:-1], key=lambda c: c.more_repeats or 0)
        step = next_step(cmp, 12.0, 8)
        assert step.startswith(
            closing if figure is None else f"a new run with --max-repeats {figure} "
        )
