"""compare --dry-run and serve --dry-run are one implementation (analyze/cost/dryrun.py):
both place, time and bill their cells through the same function, and print through the
same printer (render/dryrun.py); each task gives only its cells and times (its room's
dryrun.py)."""

from __future__ import annotations

import pytest

from tfvariants.analyze.cost import dryrun
from tfvariants.analyze.serving import dryrun as serving_dryrun
from tfvariants.analyze.training import dryrun as training_dryrun
from tfvariants.cli import main
from tfvariants.errors import UserError
from tfvariants.render import dryrun as render_dryrun


def test_both_tasks_price_and_print_through_the_one_dry_run(monkeypatch, capsys):
    priced, printed = [], []
    real_priced, real_print = dryrun.priced, render_dryrun.print_dry_run

    def spy_priced(task, *a, **kw):
        priced.append(task)
        return real_priced(task, *a, **kw)

    def spy_print(dry, *a, **kw):
        printed.append(dry.task)
        return real_print(dry, *a, **kw)

    monkeypatch.setattr(training_dryrun, "priced", spy_priced)
    monkeypatch.setattr(serving_dryrun, "priced", spy_priced)
    monkeypatch.setattr(render_dryrun, "print_dry_run", spy_print)
    monkeypatch.setattr("tfvariants.commands.compare_cluster.print_dry_run", spy_print)
    common = ["--dry-run", "--threads", "2", "--variants", "local", "--pricing", "gce-2026"]
    assert main(["compare", *common, "--workloads", "mnist_cnn"]) == 0
    assert main(["serve", *common, "--models", "noop"]) == 0
    assert priced == ["train", "serve"] and printed == ["train", "serve"]
    out = capsys.readouterr()
    assert "estimated bill" in out.out + out.err


def test_serving_dry_run_without_prices_is_refused_before_planning():
    with pytest.raises(UserError, match="--dry-run needs --pricing"):
        serving_dryrun.serving_dry_run(None, None, None)  # type: ignore[arg-type]
