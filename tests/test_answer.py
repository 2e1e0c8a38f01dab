"""The answer at a glance (analyze/report/answer.py, render/answertext.py): the heading
counted from the verdicts, the table's rows, the terminal block, the first screen."""

from __future__ import annotations

import html as html_lib
import re
import shutil
from pathlib import Path

import pytest
from test_compare import FakeRunCell, _no_onednn_probe  # noqa: F401 (autouse: no real probe)

from tfvariants.analyze.cost.catalog import load_catalog
from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.analyze.report.answer import Answer, heading
from tfvariants.analyze.training.compiled import _head
from tfvariants.cli import main
from tfvariants.execute import runner
from tfvariants.render.answertext import WIDTH, answer_lines, answer_of_report, command_lines

GOLDEN = Path(__file__).resolve().parent / "golden" / "runs"


@pytest.mark.parametrize(
    ("verdicts", "said"),
    [
        (["different", "equivalent", "different"], "All 3 comparisons decided"),
        (["different", "undecided", "equivalent", "undecided"], "2 of 4 comparisons decided"),
        (["undecided"] * 4, "None of 4 comparisons decided yet"),
        (["equivalent"] * 3, "All 3 equivalent to the baseline"),
        (["undecided"], "The one comparison with the baseline: undecided"),
        ([], "No verdict against the baseline"),
    ],
)
def test_the_heading_counts_the_verdicts_in_their_own_words(verdicts, said):
    assert heading(verdicts) == said
    assert "partly" not in heading(verdicts)


def test_the_compiled_answer_never_says_partly_when_none_was_decided():
    head = _head("this CPU", "tf-2.14", ["undecided"] * 4, 0.1)
    assert "partly" not in head and "stayed undecided" in head
    assert "partly" in _head("this CPU", "tf-2.14", ["equivalent", "undecided"], 0.1)


def _report(name: str, tmp_path: Path):
    from tfvariants.analyze.shared.settings import ReportSettings
    from tfvariants.commands.report import write_report

    run = tmp_path / name
    shutil.copytree(GOLDEN / name, run)
    settings = ReportSettings(pricing=Pricing(load_catalog("gce-2017")))
    return write_report(run, tmp_path / f"{name}.html", settings)


def _answer(name: str, tmp_path: Path) -> Answer:
    answer = answer_of_report(_report(name, tmp_path))
    assert answer is not None
    return answer


def test_a_compiled_run_answers_the_presets_question_build_by_workload(tmp_path):
    a = _answer("compiled", tmp_path)
    assert a.question == "Is TensorFlow compiled for this CPU faster than the stock wheel tf-2.14?"
    rows = {(r.subject, r.config): r for r in a.rows}
    # the preset's builds and its stock wheel only: 2 workloads x 3
    assert sorted(rows) == sorted(
        (w, c)
        for w in ("mnist_cnn", "cifar10_cnn")
        for c in ("tf-2.14@2", "intel-2.14@2", "intel-avx512-2.14@2")
    )
    fast = rows["mnist_cnn", "intel-avx512-2.14@2"]
    assert (fast.verdict, fast.ratio, fast.interval) == (
        "faster",
        "0.749x",
        "0.739-0.761x",
    )  # 5 rounds: widened
    assert rows["mnist_cnn", "intel-2.14@2"].verdict == "equivalent"
    assert rows["cifar10_cnn", "intel-2.14@2"].verdict == "undecided"
    assert rows["mnist_cnn", "tf-2.14@2"].verdict == "baseline"
    assert all(r.cost.startswith("$") for r in a.rows)
    assert a.heading == "2 of 4 comparisons decided"
    # one next step for the run (it stopped at its last look: a new, longer run)
    assert a.next_step and "--max-repeats 39" in a.next_step and a.next_command is None


def test_a_two_variant_run_names_fastest_cheapest_and_one_resume_command(tmp_path):
    a = _answer("multi", tmp_path)
    assert (
        a.question
        == "Which build / thread count trains mnist_mlp, imdb_fasttext fastest and cheapest?"
    )
    words = {(r.subject, r.config): (r.verdict, r.best) for r in a.rows}
    assert words["mnist_mlp", "xla@2"] == ("faster", "both")
    assert words["mnist_mlp", "local@1"] == ("slower", "")
    # 5 rounds: the interval widened (too few to show a wander), no longer "equivalent"
    assert words["imdb_fasttext", "xla@2"][0] == "undecided"
    assert words["imdb_fasttext", "local@2"] == ("baseline", "both?")  # not decided
    assert a.heading == "3 of 6 comparisons decided"
    assert a.next_command is not None
    assert re.fullmatch(r"tfvariants compare --resume --out \S+multi --budget \d+m", a.next_command)
    assert (
        a.next_step == "about 123 more repeats"
    )  # widened at 5 rounds; the undecided one that needs the most


def test_a_serving_run_answers_per_model_with_its_cost_per_million(tmp_path):
    a = _answer("serve", tmp_path)
    assert a.question.startswith("Which thread count serves mobilenet_v2 cheapest")
    # 7 of its 13 configuration-rounds were disturbed: "auto" compares them, under load
    assert [(r.config, r.verdict, r.under_load) for r in a.rows] == [
        ("local@1 http", "undecided", True),
        ("local@2 http", "baseline", False),
    ]
    assert a.rows[0].cost == "$0.695/M" and a.rows[0].best == "cheapest?"
    assert a.heading == "The one comparison with the baseline: undecided"
    assert a.next_step is not None and "more repeats" in a.next_step


def test_the_first_screen_says_the_answer_in_few_words(tmp_path):
    """The question (the page's title) and the answer section: at most 80 words of prose
    besides the table."""
    _report("compiled", tmp_path)
    page = (tmp_path / "compiled.html").read_text()
    assert page.index('id="answer"') < page.index("<h2>Summary</h2>")
    section = page[page.index('<section id="answer">') : page.index("</section>")]
    prose = re.sub(r"(?s)<table.*?</table>", " ", section)
    title = re.search(r"<h1>(.*?)</h1>", page).group(1)
    words = html_lib.unescape(re.sub(r"<[^>]+>", " ", title + " " + prose)).split()
    assert len(words) <= 80, words
    # the answer box's per-build sentences and "Headroom:" sentences are not said again
    assert "Headroom:" not in page and "stayed partly" not in page
    for verdict in ("faster", "equivalent", "undecided"):
        assert f'class="verdict {verdict}"' in section


def _block(text: str, first: str) -> list[str]:
    lines = text.splitlines()
    return lines[next(i for i, line in enumerate(lines) if line.startswith(first)) :]


@pytest.mark.parametrize(("name", "most"), [("compiled", 20), ("quick", 15), ("multi", 20)])
def test_report_ends_with_the_table_plain_and_narrow(name, most, tmp_path, capsys):
    run = tmp_path / name
    shutil.copytree(GOLDEN / name, run)
    out = tmp_path / "r.html"
    assert main(["report", str(run), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    block = _block(printed, "Is TensorFlow" if name == "compiled" else "Which")
    assert block[-1] == f"report: {out}"
    assert len(block) <= most, printed
    assert max(len(line) for line in block) <= WIDTH, printed
    assert "\x1b" not in printed  # piped: no colour codes
    assert "a repeat (one cell) took" not in printed  # the long sentences: --verbose only
    assert main(["report", str(run), "-o", str(out), "--verbose"]) == 0
    assert "a repeat (one cell) took" in capsys.readouterr().out or name == "quick"


def test_the_quick_compare_ends_with_at_most_15_lines(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("tfvariants.plan.spec.logical_cpus", lambda: 2)
    monkeypatch.setattr(runner, "run_cell", FakeRunCell())
    assert main(["compare", "--quick", "--workloads", "mnist_mlp", "--out", "results/q"]) == 0
    err = capsys.readouterr().err
    block = _block(err, "Which thread count trains mnist_mlp")
    assert len(block) <= 15 and max(map(len, block)) <= WIDTH, err
    assert block[-1] == "report: reports/q/index.html" and "\x1b" not in err
    assert any(line.split()[:3] == ["mnist_mlp", "local@1", "slower"] for line in block), err
    assert "was 1.41x faster than" not in err  # the sentence: --verbose only


def test_a_long_resume_command_breaks_before_an_option_and_is_never_cut():
    command = "tfvariants compare --resume --out /" + "d" * 70 + " --budget 12m"
    lines = command_lines(command)
    assert len(lines) == 2 and lines[0].endswith(" \\")
    assert " ".join(line.strip().rstrip("\\").strip() for line in lines) == command
    assert all(len(line) <= WIDTH for line in lines)


def test_labels_are_shortened_keeping_their_threads(tmp_path):
    from tfvariants.analyze.report.answer import Row
    from tfvariants.render.answertext import shorten

    short = shorten("intel-avx512-2.14-with-a-very-long-name@16", 20)
    assert len(short) == 20 and short.startswith("intel-avx512-2") and short.endswith("..@16")
    assert shorten("local@2", 20) == "local@2"
    row = Row("w" * 30, "v" * 80 + "@2", "undecided", "1.01x", "0.9-1.2x", "$1", "", "")
    a = Answer("Q?", "H", (row,), None, None, (), ())
    assert max(map(len, answer_lines(a))) <= WIDTH


def test_the_compiled_box_keeps_only_what_the_table_does_not_say():
    from tfvariants.analyze.report.answer import notes_below
    from tfvariants.store.record import run_record

    preset = {"name": "compiled", "stock": "tf", "builds": ["a", "b"]}
    run = run_record({"options": {"preset": preset}})
    lines = [
        "On this CPU: ...",
        "a (compiled for avx2): m faster by 1.3x (...)",
        "b: m no verdict (too few repeats; median time ratio 0.9, not a verdict).",
        "c was not run: lacks AVX-512.",
        "'Equivalent' means within +/-10% ...",
        "Headroom: m on a@2 ran at 40% ...",
        "The 2017 study ...",
    ]
    assert notes_below(lines, run) == [lines[2], lines[3], lines[4], lines[6]]


def test_a_parts_own_heading_only_where_it_is_the_tables_only_part():
    """Serving's "No configuration kept p99 within ..." heads a serving-only answer; beside
    training's rows the heading counts the verdicts, which that sentence would hide."""
    from tfvariants.analyze.report.answer import _heading
    from tfvariants.analyze.report.part import AnswerPart, Row

    row = Row("m", "local@1", "undecided", "", "", "", "", "")
    serving = AnswerPart((row,), (), (), heading="No configuration kept p99 within 100 ms")
    training = AnswerPart((row,), (), ())
    assert _heading([serving], []) == "No configuration kept p99 within 100 ms"
    assert _heading([training, serving], []) == "No verdict against the baseline"
    # A part without rows (nothing to show) does not count as a second part
    assert _heading([serving, AnswerPart((), (), ())], []).startswith("No configuration")
