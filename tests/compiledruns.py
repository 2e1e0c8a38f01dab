"""Stored compiled-preset runs (fake results) whose verdicts are all one kind: every
build undecided against the stock wheel, or every build equivalent to it; for the
report's first-screen tests (the golden `compiled` run is the mixed case)."""

from __future__ import annotations

from pathlib import Path

import resultfactory as rf

# (relative noise, repeats, build -> time factor): wide noise and 5 repeats leave every
# comparison undecided; 1 % noise, 8 repeats and equal times make every one equivalent.
CASES = {
    "undecided": (0.30, 5, {"intel-2.14": 0.95, "intel-avx512-2.14": 1.05}),
    "equivalent": (0.01, 8, {"intel-2.14": 1.0, "intel-avx512-2.14": 1.0}),
}


def compiled_run(folder: Path, case: str) -> Path:
    """A compiled-preset run of two builds against the stock tf-2.14 on two workloads."""
    noise, repeats, builds = CASES[case]
    factors = {"tf-2.14": 1.0, **builds}
    results = [
        rf.make_result(v, 2, w, r, steady_epoch_s=2.0 * f, noise=noise)
        for r in range(repeats)
        for w in ("mnist_cnn", "cifar10_cnn")
        for v, f in factors.items()
    ]
    preset = {"name": "compiled", "stock": "tf-2.14", "builds": list(builds), "skipped": {}}
    run = {
        "schema_version": 1,
        "kind": "tfvariants.run",
        "variants": list(factors),
        "threads": [2],
        "workloads": ["mnist_cnn", "cifar10_cnn"],
        "repeats": repeats,
        "options": {
            "quick": True,
            "min_effect": 0.0,
            "equivalence_band": 0.10,
            "preset": {**preset, "explanatory": [], "band": 0.10, "min_effect": 0.0},
        },
        "variant_info": {v: {"kind": "venv"} for v in factors},
        "logical_cpus": 2,
        "hosts": [{"host_id": "h1", "kind": "local", "label": "local (2 CPUs)"}],
    }
    written: Path = rf.write_results(folder, results, run)
    return written
