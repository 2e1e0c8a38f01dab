"""`compare --later VARIANTS`: configurations that explain rather than answer start only
once every other comparison is settled, are compared on the rounds both sides ran, and
the report says when they started (plan/spec.py, rounds/training.py, rounds/decide.py,
commands/compare_spec.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tfvariants.analyze.baseline import parse_baseline
from tfvariants.analyze.statistics import adaptive
from tfvariants.cli import main
from tfvariants.options.training import TrainingOptions
from tfvariants.plan.spec import MatrixSpec, plan_cells
from tfvariants.rounds import training as rounds

VARIANTS = ("local", "twin")
INFO = {v: {"kind": "local", "device": "cpu"} for v in VARIANTS}


def _spec(later: list[str] | None, repeats: int = 5) -> MatrixSpec:
    options: dict[str, Any] = {"budget_s": 480.0, "order_seed": 7}
    if later is not None:
        options["later"] = later
    return MatrixSpec(VARIANTS, (1, 2), ("mnist_cnn",), repeats, TrainingOptions(**options), INFO)


def _stored(rounds_of: dict[tuple[str, int], range], noise: float = 0.01) -> dict[str, Any]:
    import resultfactory as rf

    out = {}
    for (v, t), reps in rounds_of.items():
        epoch = 2.0 if t == 2 else 3.4  # 1 thread 1.7x slower: decided at the first look
        for r in reps:
            res = rf.make_result(v, t, "mnist_cnn", r, steady_epoch_s=epoch, noise=noise, seed=r)
            out[f"mnist_cnn__{v}__t{t}__r{r}"] = res
    return rf.typed(out)


def test_the_first_look_plans_no_later_variant() -> None:
    cells = plan_cells(_spec(["twin"]))
    assert {(c.variant, c.threads) for c in cells} == {("local", 1), ("local", 2)}
    assert len(cells) == 5 * 2  # twin@1 and twin@2 are left out (2 of 4 configurations)
    assert len(plan_cells(_spec(None))) == 5 * 4


def test_a_later_variant_waits_while_another_comparison_is_open() -> None:
    hook = rounds.NextRoundHook(
        _spec(["twin"]), adaptive.stopping_rule(5), baseline=parse_baseline("local@2")
    )
    # Only 4 rounds of local@1: its comparison cannot be judged yet at the look after 5.
    stored = _stored({("local", 2): range(5), ("local", 1): range(4)})
    cells, _ = hook(stored)
    assert {(c.variant, c.threads, c.repeat) for c in cells} == {("local", 1, 4)}


def test_a_later_variant_starts_at_the_next_round_once_the_others_are_settled() -> None:
    hook = rounds.NextRoundHook(
        _spec(["twin"]), adaptive.stopping_rule(5), baseline=parse_baseline("local@2")
    )
    stored = _stored({("local", 2): range(5), ("local", 1): range(5)})
    cells, why = hook(stored)
    # local@1 vs local@2 is decided (1.7x); twin's rounds start at repeat 5 beside the
    # baseline's, not at repeat 0: rounds 0-4 are not gaps of the twin.
    assert {(c.variant, c.threads, c.repeat) for c in cells} == {
        ("twin", 1, 5),
        ("twin", 2, 5),
        ("local", 2, 5),
    }
    assert "undecided at the look after 5 repeats" in why


def test_a_later_variant_keeps_its_start_and_fills_its_own_gaps() -> None:
    hook = rounds.NextRoundHook(
        _spec(["twin"]), adaptive.stopping_rule(5), baseline=parse_baseline("local@2")
    )
    # Rounds 5-6 ran for the twin at 2 threads, only round 6 at 1 thread (an interrupted
    # round 5): round 5 of twin@1 is a gap, rounds 0-4 are not.
    stored = _stored(
        {
            ("local", 2): range(7),
            ("local", 1): range(5),
            ("twin", 2): range(5, 7),
            ("twin", 1): range(6, 7),
        }
    )
    starts = hook._starts(
        [
            rounds.ConfigKey("mnist_cnn", "twin", 1),
            rounds.ConfigKey("mnist_cnn", "twin", 2),
            rounds.ConfigKey("mnist_cnn", "local", 2),
        ],
        rounds.look_verdicts(
            hook.spec, stored, hook.rule, baseline=hook.baseline, settings=hook.settings
        ),
    )
    assert starts == {
        rounds.ConfigKey("mnist_cnn", "twin", 1): 6,
        rounds.ConfigKey("mnist_cnn", "twin", 2): 5,
    }
    cells, _ = hook(stored)
    assert {(c.variant, c.threads, c.repeat) for c in cells} == {
        ("twin", 1, 7),
        ("twin", 2, 7),
        ("local", 2, 7),
    }


def test_without_later_an_undecided_configuration_fills_its_rounds_from_the_first() -> None:
    # The gap rule as before for every other configuration: a resumed run whose
    # twin@2 has rounds 2-4 missing runs them first.
    hook = rounds.NextRoundHook(
        _spec(None), adaptive.stopping_rule(5), baseline=parse_baseline("local@2")
    )
    stored = _stored(
        {
            ("local", 2): range(5),
            ("local", 1): range(5),
            ("twin", 1): range(5),
            ("twin", 2): range(2),
        }
    )
    cells, _ = hook(stored)
    assert {(c.variant, c.threads, c.repeat) for c in cells} >= {("twin", 2, 2), ("twin", 2, 4)}


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--later", "nope"], "--later nope: nope not one of --variants (local, twin)"),
        (["--later", "local"], "--later local: the baseline local cannot wait"),
        (["--later", "twin", "--no-budget"], "--later twin needs a budget"),
        (["--later", "twin", "--no-baseline"], "--later twin needs --baseline"),
        (["--later", "twin,local", "--baseline", "twin"], "every variant would wait"),
        (["--later", "twin,,x"], "--later: expected a comma list of names"),
    ],
)
def test_later_refuses_what_cannot_run_in_one_line(
    argv: list[str],
    said: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    twin = tmp_path / "twin.toml"
    twin.write_text('[variants.twin]\nkind = "local"\n', encoding="utf-8")
    cmd = ["compare", "--variants", "local,twin", "--variants-file", str(twin)]
    cmd += ["--workloads", "mnist_mlp", "--threads", "1", "--dry-run", "--no-probe"]
    if "--no-baseline" not in argv:
        cmd += ["--baseline", "local"] if "--baseline" not in argv else []
    if "--no-budget" not in argv:
        cmd += ["--budget", "8m"]
    cmd += [a for a in argv if a not in ("--no-budget", "--no-baseline")]
    code = main(cmd)
    err = capsys.readouterr().err
    assert code != 0
    assert said in err
    assert len([ln for ln in err.splitlines() if ln.strip()]) == 1
    assert not Path("results").exists()


def test_a_dry_run_counts_the_first_look_without_the_later_variants(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    twin = tmp_path / "twin.toml"
    twin.write_text('[variants.twin]\nkind = "local"\n', encoding="utf-8")
    base = ["compare", "--variants", "local,twin", "--variants-file", str(twin), "--quick"]
    base += ["--workloads", "mnist_cnn,cifar10_cnn", "--threads", "1,2", "--baseline"]
    base += ["local@2", "--dry-run", "--no-probe", "--budget", "10m"]
    assert main(base) == 0
    with_twin = capsys.readouterr().err
    assert main([*base, "--later", "twin"]) == 0
    without = capsys.readouterr().err
    # 4 configurations x 2 workloads x 5 rounds of 12.5 s: 500 s, past half of 10 min;
    # without the twin's two, 250 s fits.
    assert "the first look (after 5 more round(s), 40 cells)" in with_twin
    assert "the first look" not in without


def test_the_report_says_when_the_later_variants_started() -> None:
    from tfvariants.analyze.training.analysis import later_sentence
    from tfvariants.store.training import CellResult

    stored = _stored({("local", 2): range(9), ("twin", 2): range(5, 9)})
    cells = [r for r in stored.values() if isinstance(r, CellResult)]
    said = later_sentence(["twin"], cells)
    assert said is not None
    assert "twin from repeat 6 on (4 round(s))" in said
    assert "compared on the rounds both sides ran" in said
    assert "less power: a 1.2x difference at 10 % noise" in said and "94 %" in said
    assert "never ran" in (later_sentence(["absent"], cells) or "")
    assert later_sentence(None, cells) is None


def test_bench_noise_runs_the_twin_later_except_where_it_is_the_question() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import argparse

    import noise
    import noise_plan

    assert noise_plan.twin_later("quiet") is False
    assert all(noise_plan.twin_later(n) for n in ("bursts", "nice", "quiet-loaded", "quiet-nice"))
    # twin-membw: the twin is the question under the memory hog, with the quiet one's budget
    assert noise_plan.twin_later("twin-membw") is False
    assert noise_plan.budget_of(argparse.Namespace(budget=None), "twin-membw") == "10m"
    assert noise_plan.plan(["twin-membw"], 1, quiet=False) == [("membw", "twin-membw", 1)]
    assert noise_plan.plan(["membw"], 1, quiet=True) == [
        ("quiet", "quiet-membw", 1),
        ("membw", "membw", 1),
    ]
    args = argparse.Namespace(workloads="mnist_cnn", threads="1,2", seed=1, compare_arg=[])
    cmd = noise.compare_command(args, Path("o"), Path("t"), 1, "8m", later=True)
    assert cmd[cmd.index("--later") + 1] == "twin"
    assert "--later" not in noise.compare_command(args, Path("o"), Path("t"), 1, "10m")
    json.dumps(cmd)  # plain strings


def test_a_compare_runs_the_later_twin_after_the_threads_are_settled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_compare import FakeRunCell

    from tfvariants.execute import runner

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("tfvariants.plan.spec.logical_cpus", lambda: 2)
    fake = FakeRunCell(speedup=0.8, noise=0.02)  # 1 thread 1.74x slower
    monkeypatch.setattr(runner, "run_cell", fake)
    twin = tmp_path / "twin.toml"
    twin.write_text('[variants.twin]\nkind = "local"\n', encoding="utf-8")
    argv = ["compare", "--variants", "local,twin@2", "--variants-file", str(twin)]
    argv += ["--threads", "1,2", "--workloads", "mnist_mlp", "--baseline", "local@2"]
    argv += ["--budget", "1h", "--max-repeats", "15", "--later", "twin", "--no-probe"]
    argv += ["--no-peak", "--out", "res", "--output", "rep/index.html", "--quiet-wait", "0"]
    assert main(argv) == 0
    ran = [c[0] for c in fake.calls]
    twin_rounds = sorted(int(c.rsplit("__r", 1)[1]) for c in ran if "__twin__" in c)
    assert twin_rounds and twin_rounds[0] == 5  # after the first look, not from repeat 0
    # The first look's 10 cells had no twin: local@1 vs local@2 was decided there.
    assert not any("__twin__" in c for c in ran[:10])
    run = json.loads((tmp_path / "res/run.json").read_text())
    assert run["options"]["later"] == ["twin"]
    html = (tmp_path / "rep/index.html").read_text()
    assert "Later variants (--later) started once every other comparison was settled" in html
    assert f"twin from repeat 6 on ({len(twin_rounds)} round(s))" in html
    assert "planned cells have no result" not in html  # its first rounds were never planned


def test_a_later_variant_is_not_a_planned_cell_the_report_calls_missing() -> None:
    from tfvariants.analyze.shared.coverage import planned_ids
    from tfvariants.store.record import run_record

    run = {"variants": ["local", "twin"], "threads": [1, 2], "workloads": ["w"], "repeats": 5}
    assert len(planned_ids(run_record(run))) == 20
    run["options"] = {"later": ["twin"]}
    ids = planned_ids(run_record(run))
    assert len(ids) == 10 and not any("__twin__" in i for i in ids)
