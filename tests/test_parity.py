"""Accuracy parity across variants, and the report's parity and variant-probe blocks."""

from __future__ import annotations

import resultfactory as rf

from tfvariants.analyze.report.build import assemble
from tfvariants.analyze.training.analysis import analyze
from tfvariants.analyze.training.part import training_part
from tfvariants.render.html import render_html
from tfvariants.render.labels import config_words


def _run(variants: list[str], info: dict | None = None) -> dict:
    """A valid run.json record naming the variants (order: the first is the baseline)."""
    return {
        "schema_version": 1,
        "kind": "tfvariants.run",
        "variants": variants,
        "threads": [2],
        "workloads": ["mnist_cnn"],
        "repeats": 3,
        "options": {},
        "variant_info": info or {v: {"kind": "local", "device": "cpu"} for v in variants},
    }


def _results(acc: dict[str, list[float]], loss: dict[str, list[float | None]]) -> list[dict]:
    out = []
    for variant, accs in acc.items():
        for repeat, (a, lo) in enumerate(zip(accs, loss[variant], strict=True)):
            r = rf.make_result(variant, 2, "mnist_cnn", repeat)
            r["metrics"] = {"loss": lo, "accuracy": a, "val_accuracy": a, "val_loss": lo}
            out.append(r)
    return out


def test_outlier_flagged_against_the_spread_of_repeats(tmp_path) -> None:
    results = _results(
        {
            "local": [0.90, 0.91, 0.89],
            "isa-sse41": [0.905, 0.90, 0.895],
            "fast-wrong": [0.62, 0.60, 0.61],
        },
        {
            "local": [0.30, 0.31, 0.29],
            "isa-sse41": [0.30, 0.30, 0.31],
            "fast-wrong": [1.2, 1.25, 1.22],
        },
    )
    a = analyze(
        rf.write_results(tmp_path / "r", results, _run(["local", "isa-sse41", "fast-wrong"]))
    )
    rows = {p.variant: p for p in a.workloads[0].parity}
    assert rows["local"].accuracy.delta is None and not rows["local"].outlier  # reference
    ok = rows["isa-sse41"]
    assert not ok.outlier and abs(ok.accuracy.delta) < ok.accuracy.tolerance
    assert ok.accuracy.tolerance == 0.05  # the floor: pooled sd 0.01 x 4 is smaller
    bad = rows["fast-wrong"]
    assert bad.outlier and round(bad.accuracy.delta, 6) == -0.29
    assert bad.flags[0] == "accuracy 0.610 vs 0.900 (tolerance ±0.050)"
    assert "loss 1.22 vs 0.3" in bad.flags[1]
    assert any(w.kind == "accuracy_parity" and "fast-wrong" in w.message for w in a.warnings)
    html = render_html(assemble(training_part(a)))
    assert "Accuracy parity" in html and "accuracy 0.610 vs 0.900" in html


def test_wide_repeats_widen_the_tolerance_and_divergence_is_flagged(tmp_path) -> None:
    results = _results(
        {"local": [0.5, 0.7, 0.9], "other": [0.62, 0.75, 0.66], "nan": [0.1, 0.1, 0.1]},
        {"local": [1.0, 0.8, 0.5], "other": [0.9, 0.85, 0.8], "nan": [None, None, None]},
    )
    a = analyze(rf.write_results(tmp_path / "r", results, _run(["local", "other", "nan"])))
    rows = {p.variant: p for p in a.workloads[0].parity}
    assert not rows["other"].outlier  # inside 4 x the (large) pooled spread
    assert rows["other"].accuracy.tolerance > 0.3
    assert "3 of 3 repeats diverged (loss not finite)" in rows["nan"].flags
    assert "accuracy at chance (0.10)" in rows["nan"].flags


def test_better_than_the_baseline_is_noted_not_flagged(tmp_path) -> None:
    results = _results(
        {"local": [0.90, 0.90, 0.90], "jax": [0.97, 0.96, 0.97]},
        {"local": [0.30, 0.30, 0.30], "jax": [0.10, 0.11, 0.10]},
    )
    a = analyze(rf.write_results(tmp_path / "r", results, _run(["local", "jax"])))
    jax = {p.variant: p for p in a.workloads[0].parity}["jax"]
    assert not jax.outlier and jax.accuracy.better and jax.loss.better
    assert jax.notes == [
        "accuracy 0.970 vs 0.900 (tolerance ±0.050): better than the baseline",
        "loss 0.1 vs 0.3 (tolerance ±0.045): better than the baseline",
    ]
    assert not any(w.kind == "accuracy_parity" for w in a.warnings)
    assert "better than the baseline" in render_html(assemble(training_part(a)))


def test_single_variant_has_no_parity_block(tmp_path) -> None:
    results = _results({"local": [0.9, 0.91]}, {"local": [0.3, 0.31]})
    a = analyze(rf.write_results(tmp_path / "r", results))
    assert len(a.workloads[0].parity) == 1
    assert "Accuracy parity" not in render_html(assemble(training_part(a)))


def test_variant_probe_block(tmp_path) -> None:
    results = _results({"local": [0.9], "isa-avx512": [0.9]}, {"local": [0.3], "isa-avx512": [0.3]})
    run = _run(
        ["local", "isa-avx512"],
        {
            "local": {
                "kind": "local",
                "device": "cpu",
                "backend": "tensorflow",
                "base": None,
                "overlay_env": {},
                "onednn": {
                    "isa": "Intel AVX-512 (bf16)",
                    "host_isa": "Intel AVX-512 (bf16)",
                    "custom_ops": "on",
                    "host_custom_ops": "on",
                    "backend_version": "2.21.0",
                    "noop": [],
                    "changes": [],
                    "unknown": [],
                },
            },
            "isa-avx512": {
                "kind": "local",
                "device": "cpu",
                "backend": "tensorflow",
                "base": "local",
                "overlay_env": {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE"},
                "onednn": {
                    "isa": "Intel AVX-512",
                    "host_isa": "Intel AVX-512 (bf16)",
                    "noop": ["ONEDNN_MAX_CPU_ISA=AVX512_CORE: no-op on this host (x)"],
                    "changes": [],
                    "unknown": [],
                },
            },
        },
    )
    html = render_html(
        assemble(training_part(analyze(rf.write_results(tmp_path / "r", results, run))))
    )
    assert "Variants on this host" in html
    assert "<code>ONEDNN_MAX_CPU_ISA=AVX512_CORE</code>" in html
    assert "no-op</span> ONEDNN_MAX_CPU_ISA=AVX512_CORE: no-op on this host (x)" in html
    assert "tensorflow 2.21.0" in html


def test_each_workload_judged_against_its_own_baseline(tmp_path) -> None:
    """The header names the run's baseline (the GPU, which ran mnist_mlp only); mnist_cnn's
    ratios use its own baseline (local), and so must its accuracy parity: judged against
    the header's GPU, which has no mnist_cnn repeats, nothing was judged at all."""
    results = _results(
        {"local": [0.90, 0.91, 0.89], "fast-wrong": [0.62, 0.60, 0.61]},
        {"local": [0.30, 0.31, 0.29], "fast-wrong": [1.2, 1.25, 1.22]},
    )
    results += [rf.make_result("gpu", 2, "mnist_mlp", i, gpu=True) for i in range(3)]
    results += [rf.make_result("local", 2, "mnist_mlp", i) for i in range(3)]
    results += [rf.make_result("gpu", 2, "mnist_cnn", i, status="skipped") for i in range(3)]
    info = {v: {"kind": "local", "device": "cpu"} for v in ("local", "fast-wrong")}
    run = {
        **_run(["gpu", "local", "fast-wrong"], {**info, "gpu": {"kind": "image", "device": "gpu"}}),
        "workloads": ["mnist_mlp", "mnist_cnn"],
    }
    a = analyze(rf.write_results(tmp_path / "r", results, run))
    assert config_words(a.baseline) == "gpu@2"
    cnn = a.workloads[1]
    assert cnn.name == "mnist_cnn" and cnn.baseline is not None
    assert cnn.baseline.label == "local@2"
    rows = {p.variant: p for p in cnn.parity}
    assert rows["local"].accuracy.delta is None  # the reference
    assert rows["fast-wrong"].outlier
    assert rows["fast-wrong"].flags[0] == "accuracy 0.610 vs 0.900 (tolerance ±0.050)"
    assert any(
        w.kind == "accuracy_parity" and "than local" in w.message and "fast-wrong" in w.message
        for w in a.warnings
    )
    html = render_html(
        assemble(training_part(a))
    )  # mnist_mlp's block names the GPU, mnist_cnn's local
    assert html.count("against the baseline variant gpu:") == 1
    assert html.count("against the baseline variant local:") == 1
