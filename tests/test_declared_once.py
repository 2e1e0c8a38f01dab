"""Each run option is declared once (issue 40): no command adds a declared option's flag
to its parser by hand, and what a command line's ``--budget off`` means is the
declaration's (no budget: exactly --repeats rounds), the same in compare and serve."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tfvariants.cli import build_parser
from tfvariants.options import declare
from tfvariants.options.decision import DecisionOptions
from tfvariants.options.serving import ServingOptions
from tfvariants.options.training import TrainingOptions

ROOT = Path(__file__).resolve().parent.parent


def _declared_flags() -> set[str]:
    classes = (TrainingOptions, ServingOptions)
    return {o.flag for cls in classes for o in declare.declared(cls).values() if o.flag}


def hand_added(tree: ast.AST, flags: set[str]) -> list[str]:
    """Each ``add_argument("--flag", ...)`` call naming one of ``flags``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
            named = [a.value for a in node.args if isinstance(a, ast.Constant)]
            out += [f"{n} (line {node.lineno})" for n in named if n in flags]
    return out


def test_no_command_adds_a_declared_option_by_hand():
    flags = _declared_flags()
    assert {"--budget", "--duet", "--timeout", "--order-seed"} <= flags
    found = [
        f"{path.relative_to(ROOT)}: {hit}"
        for path in sorted((ROOT / "tfvariants").rglob("*.py"))
        if "options" not in path.relative_to(ROOT).parts
        for hit in hand_added(ast.parse(path.read_text(encoding="utf-8")), flags)
    ]
    assert found == []


def test_the_scan_sees_a_hand_added_flag():
    tree = ast.parse('p.add_argument("--budget", default=None)\np.add_argument("--x")\n')
    assert hand_added(tree, {"--budget"}) == ["--budget (line 1)"]


def test_budget_off_wins_over_every_other_layer():
    got = declare.resolve(
        DecisionOptions, {"budget_s": "off"}, {"budget_s": 300.0}, {"budget_s": 600.0}, {}
    )
    assert got["budget_s"] is None
    assert declare.resolve(DecisionOptions, {}, {"budget_s": 300.0}, {}, {})["budget_s"] == 300.0


@pytest.mark.parametrize(
    ("argv", "budget"),
    [
        ([], 600.0),  # serve's quick-scale default
        (["--budget", "off"], None),
        (["--budget", "OFF"], None),
        (["--budget", "5m"], 300.0),
        (["--repeats", "3"], None),  # --repeats alone: exactly 3
        (["--preset", "study"], None),
        (["--preset", "study", "--budget", "20m"], 1200.0),
    ],
)
def test_serve_budget_from_its_declaration(argv, budget):
    from tfvariants.commands.serve_spec import build_serve_spec

    spec, _ = build_serve_spec(build_parser().parse_args(["serve", "--threads", "1", *argv]))
    assert spec.options.budget_s == budget


def test_compare_budget_off_turns_quicks_budget_off():
    from tfvariants.commands import rounds
    from tfvariants.store.record import EMPTY_RUN

    def budget(*argv: str) -> float | None:
        args = build_parser().parse_args(["compare", *argv])
        return rounds.training_options(args, EMPTY_RUN, repeats=5).budget_s

    assert budget("--quick") == rounds.QUICK_BUDGET_S
    assert budget("--quick", "--budget", "off") is None
    assert budget("--budget", "2m") == 120.0


@pytest.mark.parametrize("command", ["compare", "serve"])
def test_a_bad_budget_is_one_line(command, capsys):
    from tfvariants.cli import main

    code = main([command, "--budget", "soon", "--threads", "1", "--dry-run"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) <= 2 and "--budget" in err[-1], err
