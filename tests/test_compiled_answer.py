"""The compiled-vs-stock answer a `--preset compiled` report opens with
(tfvariants/analyze/compiled.py), from groups made by hand."""

from __future__ import annotations

from types import SimpleNamespace

from tfvariants.analyze.report.compiled import answer
from tfvariants.analyze.statistics import stats
from tfvariants.analyze.training.groups import Group, WorkloadReport

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


def _group(variant: str, median_s: float, disturbed: bool) -> Group:
    raw = {"environment": {"cpu": {"model": "AMD EPYC", "isa_flags": ["avx2", "avx512f"]}}}
    results = [SimpleNamespace(ok=True, disturbed=disturbed, raw=raw) for _ in range(3)]
    iv = stats.Interval(median_s, median_s, median_s, "exact", 3)
    return Group("mnist_cnn", variant, 2, results=results, time=iv)  # type: ignore[arg-type]


def test_no_verdict_says_why_and_gives_the_medians_as_such() -> None:
    stock, avx512 = _group("tf-2.14", 100.0, True), _group("intel-avx512-2.14", 80.0, True)
    wr = WorkloadReport("mnist_cnn", [stock, avx512], baseline=stock)
    lines = answer([wr], RUN, 0.05)
    assert lines is not None
    assert lines[0].startswith("On AMD EPYC, with AVX-512: no verdict")
    assert lines[1] == (
        "mnist_cnn: intel-avx512-2.14@2 vs tf-2.14@2: no verdict (3 of its 3 and 3 of the "
        "stock wheel's 3 repeats were disturbed by other processes (others' share above 25 % "
        "of the pinned CPUs), which verdicts leave out; median time ratio 0.800, not a "
        "verdict) (compiled for AVX512+FMA+AVX2)."
    )
    assert "2017 study" in lines[-1]


def test_only_a_preset_run_has_an_answer() -> None:
    stock = _group("tf-2.14", 100.0, False)
    wr = WorkloadReport("mnist_cnn", [stock], baseline=stock)
    assert answer([wr], {"options": {}}, 0.05) is None
