"""run.json's adaptive plans (store/adaptiveplans.py): what the rounds write is what a
resume and the report read back, typed; a plan that is not whole reads as none."""

from tfvariants.store.adaptiveplans import LookPlan, WindowBack, WindowPlan, look_plan, window_plan
from tfvariants.store.record import run_record


def test_a_window_plan_reads_back_as_written():
    plan = WindowPlan(
        3.0, 6.0, 5, "K* = 1.3", components={"cells": 10}, rule="the rule",
        back={"cifar10_cnn": WindowBack(6.0, 7, 1.4)}, min_steady_steps=44,
        warmup_max_s={"mnist_cnn": 3.0},
    )  # fmt: skip
    assert window_plan(plan.to_json()) == plan
    bare = WindowPlan(3.0, 6.0, 5, "K* = 1.3")
    assert bare.to_json() == {
        "min_steady_s": 3.0, "previous_s": 6.0, "reason": "K* = 1.3", "from_repeat": 5
    }  # fmt: skip
    assert window_plan({"min_steady_s": 3.0, "previous_s": 6.0}) is None  # no from_repeat


def test_a_look_plan_reads_back_as_written_and_the_run_record_holds_both_typed():
    plan = LookPlan(15.1, 600.0, 39, 5, 1.1, 50)
    assert look_plan(plan.to_json()) == plan
    assert look_plan({"last_look": 39}) is None  # not whole: no budget or round cost
    window = WindowPlan(3.0, 6.0, 5, "K* = 1.3")
    run = run_record({"adaptive": {"look_plan": plan.to_json(), "window_plan": window.to_json()}})
    assert run.adaptive is not None
    assert run.adaptive.look_plan == plan and run.adaptive.window_plan == window
