"""Verdicts that rest on disturbed cells say so wherever they are shown
(tfvariants.analyze.training.loadlabel): the summary's sentences, the verdict table, the CSV."""

from resultfactory import make_result, write_results


def two_thread_counts():
    """mnist_cnn at 1 and 2 threads, 5 rounds, 2 threads clearly faster."""
    return [
        make_result("local", t, "mnist_cnn", r, steady_epoch_s=2.0 * (3 - t), noise=0.02)
        for t in (1, 2)
        for r in range(5)
    ]


def loaded_run(tmp_path, disturbed_rounds):
    """mnist_cnn at 1 and 2 threads, 5 rounds; the cells of these rounds disturbed."""
    results = two_thread_counts()
    for res in results:
        shares = 0.6 if res["cell"]["repeat"] in disturbed_rounds else 0.0
        res["cpu"] = {"others_share": shares, "steal_share": 0.0}
    return write_results(tmp_path / "res", results)


def test_a_verdict_that_rests_on_disturbed_cells_says_so_wherever_it_is_shown(tmp_path):
    from tfvariants.analyze.report.build import assemble
    from tfvariants.analyze.training.analysis import analyze
    from tfvariants.analyze.training.part import training_part
    from tfvariants.render.csvout import csv_rows
    from tfvariants.render.html import render_html

    a = analyze(loaded_run(tmp_path, range(5)))  # never quiet: auto uses them
    assert a.interference.included
    one = next(g for g in a.workloads[0].groups if g.threads == 1)
    assert one.time_cmp.verdict == "different" and one.under_load == (5, 5)
    said = " ".join(a.workloads[0].conclusions)
    note = "under load: 5 of 5 rounds from disturbed or busy cells; on a quiet machine the"
    assert f"decided; {note} ratio may differ)" in said
    rows = [r for r in csv_rows(assemble(training_part(a))) if r["threads"] == 1]
    assert {r["time_verdict"] for r in rows} == {"different under load"}
    html = render_html(assemble(training_part(a)))
    assert ">under load</div>" in html and "5 of 5 rounds from disturbed or busy cells" in html
    fastest_base = analyze(tmp_path / "res", baseline="local@2").workloads[0].conclusions
    assert "was the fastest" in fastest_base[0] and note in fastest_base[0]  # the lead too


def test_a_clean_verdict_carries_no_load_label_and_a_partly_loaded_one_counts(tmp_path):
    from tfvariants.analyze.report.build import assemble
    from tfvariants.analyze.training.analysis import analyze
    from tfvariants.analyze.training.part import training_part
    from tfvariants.render.csvout import csv_rows

    clean = analyze(loaded_run(tmp_path / "clean", ()))
    assert "under load" not in " ".join(clean.workloads[0].conclusions)
    assert {
        r["time_verdict"] for r in csv_rows(assemble(training_part(clean))) if r["threads"] == 1
    } == {"different"}
    some = loaded_run(tmp_path / "some", (1, 3))
    excluded = analyze(some)  # 2 of 5 rounds disturbed: left out, the verdict is clean
    assert next(g for g in excluded.workloads[0].groups if g.threads == 1).under_load == (0, 3)
    included = analyze(some, disturbed="include")
    assert next(g for g in included.workloads[0].groups if g.threads == 1).under_load == (2, 5)
    assert "under load: 2 of 5 rounds" in " ".join(included.workloads[0].conclusions)


def test_a_verdict_on_busy_cells_at_raised_priority_says_under_load(tmp_path):
    """Root under a sustained nice 19 hog: 2-thread cells shielded, undisturbed by the
    rule, yet others filled 22-28 % of their CPUs and they stepped x1.27; the verdict
    on them is labelled, the same cells at 20 % are not."""
    from tfvariants.analyze.training.analysis import analyze

    def run(folder, share):
        results = two_thread_counts()
        for res in results:
            t = res["cell"]["threads"]
            res["cpu"] = {"others_share": share if t == 2 else 0.0, "steal_share": 0.0,
                          "runq_wait_share": 0.12}  # fmt: skip
            res.setdefault("runner", {})["priority"] = {"shielded": True, "value": -20}
        return analyze(write_results(tmp_path / folder, results))

    busy = run("busy", 0.26)
    one = next(g for g in busy.workloads[0].groups if g.threads == 1)
    assert one.time_cmp.verdict == "different" and one.under_load == (5, 5)
    assert "under load: 5 of 5 rounds from disturbed or busy cells" in " ".join(
        busy.workloads[0].conclusions
    )
    assert not busy.interference.disturbed  # the rule still calls none disturbed
    calm = run("calm", 0.20)
    assert next(g for g in calm.workloads[0].groups if g.threads == 1).under_load == (0, 5)
