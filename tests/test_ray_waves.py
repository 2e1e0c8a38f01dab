"""The Ray executor of the one matrix loop against a stand-in for Ray (no cluster): a
round is one wave of tasks, each stored as it ends, a round record says "wave"; a node
type no node offers fails its cells with that reason. (The real cluster: test_ray_cluster.py.)"""

from __future__ import annotations

import json

import resultfactory as rf

from tfvariants.execute import ray_executor
from tfvariants.execute.matrix import Matrix
from tfvariants.execute.policy import Policy
from tfvariants.execute.ray_executor import RaySettings, RayWaves
from tfvariants.plan.cell import Cell
from tfvariants.plan.spec import MatrixSpec, plan_cells
from tfvariants.store.rundir import load_run_dir


class FakeRay:
    """Tasks run when submitted; ``wait`` hands them back one at a time."""

    def __init__(self, offered=("n2-standard-8",)):
        self.offered, self.submitted, self.cancelled, self.shut = set(offered), [], [], False

    def nodes(self):
        res = {inst: 1 for inst in self.offered}
        return [{"Alive": True, "NodeID": "n1", "NodeManagerHostname": "h", "Resources": res}]

    def remote(self, **_kw):
        ray = self

        class Task:
            def options(self, resources, name):
                (inst,) = resources

                class Bound:
                    def remote(self, cell, variant, options, instance):
                        ref = ("ref", cell.cell_id, inst)
                        ray.submitted.append(ref)
                        return ref

                return Bound()

        return lambda fn: Task()

    def wait(self, refs, num_returns, timeout):
        ready = [r for r in refs if r[2] in self.offered][:num_returns]
        return ready, [r for r in refs if r not in ready]

    def get(self, ref):
        _, cid, inst = ref
        variant, threads, rep = cid.split("__")[1], int(cid.split("__t")[1][0]), int(cid[-1])
        result = rf.make_result(variant, threads, "mnist_mlp", rep)
        result["runner"]["wall_s"] = 3.0
        return {"result": result, "log": f"{cid} on {inst}"}

    def cancel(self, ref, force=False):
        self.cancelled.append(ref)

    def shutdown(self):
        self.shut = True


def _waves(tmp_path, ray, monkeypatch, placement):
    monkeypatch.setattr(ray_executor, "_import_ray", lambda: ray)
    monkeypatch.setattr(ray_executor, "_connect", lambda ray, address, log: None)
    settings = RaySettings(node_wait_s=0.0)
    return RayWaves(tmp_path / "run", settings, placement, {"local": object()}, lambda c: None)


def test_a_round_is_one_wave_and_the_adaptive_round_another(tmp_path, monkeypatch):
    ray = FakeRay()
    spec = MatrixSpec(("local",), (1, 2), ("mnist_mlp",), 2)
    placement = {("local", 1): "n2-standard-8", ("local", 2): "n2-standard-8"}
    waves = _waves(tmp_path, ray, monkeypatch, placement)
    more = [Cell("local", 1, "mnist_mlp", 2), Cell("local", 2, "mnist_mlp", 2)]
    rounds = iter([(more, "undecided"), ([], "decided")])
    matrix = Matrix(spec, tmp_path / "run")
    matrix.prepare(hosts=[])
    out = matrix.run(executor=waves, policy=Policy(lambda stored: next(rounds), 3600.0))
    assert len(ray.submitted) == 6 and ray.shut and out.exit_code() == 0
    assert [(r["repeat"], r["cells"], r["wave"]) for r in out.rounds] == [(2, 2, "ray")]
    assert out.stopped == "decided" and out.planned == 6
    stored = load_run_dir(tmp_path / "run", allow_mixed_hosts=True).results
    assert {c.cell_id for c in plan_cells(spec)} | {c.cell_id for c in more} == set(stored)
    log = (tmp_path / "run" / "logs" / f"{more[0].cell_id}.log").read_text()
    assert log == f"{more[0].cell_id} on n2-standard-8"


def test_a_node_type_no_node_offers_fails_its_cells_with_that_reason(tmp_path, monkeypatch):
    ray = FakeRay(offered=("n2-standard-8",))
    spec = MatrixSpec(("local",), (1, 2), ("mnist_mlp",), 1)
    placement = {("local", 1): "n2-standard-8", ("local", 2): "c2-standard-60"}
    matrix = Matrix(spec, tmp_path / "run")
    matrix.prepare(hosts=[])
    out = matrix.run(executor=_waves(tmp_path, ray, monkeypatch, placement))
    assert out.statuses == {"mnist_mlp__local__t1__r0": "ok", "mnist_mlp__local__t2__r0": "failed"}
    assert "no node of type c2-standard-60 joined" in out.reasons["mnist_mlp__local__t2__r0"]
    assert ray.cancelled and ray.shut


class NodeDiedError(Exception):
    """Named as Ray's: the node running the task died."""


class LosingRay(FakeRay):
    """The first ``losses`` attempts of every cell lose their node."""

    def __init__(self, losses):
        super().__init__()
        self.losses, self.seen = losses, {}

    def get(self, ref):
        n = self.seen[ref[1]] = self.seen.get(ref[1], 0) + 1
        if n <= self.losses:
            raise NodeDiedError("the node it was running on is dead")
        return super().get(ref)


def _one_cell(tmp_path, ray, monkeypatch, retries):
    spec = MatrixSpec(("local",), (1,), ("mnist_mlp",), 1)
    waves = _waves(tmp_path, ray, monkeypatch, {("local", 1): "n2-standard-8"})
    waves.settings = RaySettings(node_wait_s=0.0, preempt_retries=retries)
    matrix = Matrix(spec, tmp_path / "run")
    matrix.prepare(hosts=[])
    return matrix.run(executor=waves)


def test_a_lost_node_reruns_the_cell_and_records_the_attempt(tmp_path, monkeypatch, capsys):
    ray = LosingRay(losses=2)
    out = _one_cell(tmp_path, ray, monkeypatch, retries=3)
    assert out.statuses == {"mnist_mlp__local__t1__r0": "ok"} and len(ray.submitted) == 3
    stored = load_run_dir(tmp_path / "run", allow_mixed_hosts=True).results
    attempts = stored["mnist_mlp__local__t1__r0"]["attempts"]
    assert [(a["attempt"], a["instance"]) for a in attempts] == [
        (1, "n2-standard-8"),
        (2, "n2-standard-8"),
    ]
    assert all(a["reason"] == "node lost mid-cell: NodeDiedError" for a in attempts)
    err = capsys.readouterr().err
    assert "rerunning on another n2-standard-8 node (2/3)" in err
    assert "preemptions: 2 preemptions (n2-standard-8), 0 s lost" in err


def test_past_the_limit_the_cell_fails_with_the_count(tmp_path, monkeypatch):
    ray = LosingRay(losses=5)
    out = _one_cell(tmp_path, ray, monkeypatch, retries=1)
    assert out.statuses == {"mnist_mlp__local__t1__r0": "failed"} and len(ray.submitted) == 2
    reason = out.reasons["mnist_mlp__local__t1__r0"]
    assert reason.startswith(
        "node lost mid-cell (n2-standard-8) 2 times, past the limit of 1 rerun"
    )


def test_preempted_node_seconds_count_in_the_budget_check_of_the_next_wave(tmp_path, monkeypatch):
    """A lost attempt's node-seconds are spent time: the estimate the budget checks
    before a wave adds, per node type, what its preemptions cost per stored cell."""
    ray = LosingRay(losses=1)
    _one_cell(tmp_path, ray, monkeypatch, retries=3)
    path = tmp_path / "run" / "cells" / "mnist_mlp__local__t1__r0.json"
    result = json.loads(path.read_text())
    (attempt,) = result["attempts"]
    attempt["lost_s"] = 100.0  # a node lost 100 s into the cell (the fake loses it at once)
    path.write_text(json.dumps(result))
    placement = {("local", 1): "n2-standard-8", ("local", 2): "c2-standard-60"}
    waves = _waves(tmp_path, ray, monkeypatch, placement)
    again = [Cell("local", 1, "mnist_mlp", 1), Cell("local", 1, "mnist_mlp", 2)]
    assert waves.estimate(again, None) == 2 * (3.0 + 100.0)
    assert waves.estimate([Cell("local", 2, "mnist_mlp", 1)], None) == 3.0  # no loss there
