"""The compiled report in fewer words with no figure lost: the stored compiled run's
page (its whole text, collapsed sections included) holds every number the page rendered
by d8208fa held (tests/golden/expected/compiled/figures.txt, taken from that page's
text less its generation time and folder; one next step is said once on purpose:
DROPPED), every per-configuration figure of its CSV,
and at least 40 % fewer words than that page's 2,684 (issue 41)."""

from __future__ import annotations

import csv
import html as html_lib
import re
import shutil
from pathlib import Path

from tfvariants.analyze.shared.format import sig3
from tfvariants.cli import main

GOLDEN = Path(__file__).resolve().parent / "golden"
OLD_WORDS = 2684  # d8208fa's page of the stored compiled run, counted as _text does


def _text(page: str) -> str:
    """The page's text as the DOM's textContent has it: scripts and styles out, tags
    out, entities decoded (collapsed <details> included)."""
    page = re.sub(r"(?s)<(script|style)\b.*?</\1>", " ", page)
    return html_lib.unescape(re.sub(r"<[^>]+>", " ", page))


def _page(tmp_path: Path) -> tuple[str, list[dict[str, str]]]:
    run = tmp_path / "results" / "compiled"
    shutil.copytree(GOLDEN / "runs" / "compiled", run)
    html, out = tmp_path / "index.html", tmp_path / "cells.csv"
    assert main(["report", str(run), "-o", str(html), "--csv", str(out)]) == 0
    with out.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return _text(html.read_text(encoding="utf-8")), rows


def _has(text: str, figure: str) -> bool:
    return re.search(r"(?<![\d.])" + re.escape(figure) + r"(?!\d)", text) is not None


# Said once for the run on purpose (issue 41): the old answer box gave each undecided
# comparison its own next step; cifar10_cnn intel-avx512-2.14's "--max-repeats 23" is
# now the run's one next step ("--max-repeats 39", for the comparison that needs most).
# Changed on purpose (issue 42): intervals on fewer than 7 rounds are widened (too few
# rounds to show whether they wander), the cost intervals of cifar10_cnn by its pooled
# dependence, and the old "tail" caution (means vs medians, no run far from the typical
# one) with its figures is gone: these bounds and the caution's figures are not shown.
WIDENED = {"0.741", "0.745", "0.758", "0.776", "0.819", "0.892", "0.894", "0.981", "0.989"}
WIDENED |= {"1.32", "1.55", "90", "201"}
DROPPED = {"23"} | WIDENED


def test_every_figure_of_the_old_page_is_still_in_the_page(tmp_path):
    text, _ = _page(tmp_path)
    text = re.sub(r"generated\s+\S+", " ", text)  # the clock is no figure of the run
    figures = (GOLDEN / "expected" / "compiled" / "figures.txt").read_text().split()
    assert len(figures) > 150
    assert sorted(f for f in figures if not _has(text, f)) == sorted(DROPPED)


def test_every_per_configuration_figure_of_the_csv_is_in_the_page(tmp_path):
    text, rows = _page(tmp_path)
    said = 0
    for row in rows:
        for col in ("time_ratio", "time_ratio_lo", "time_ratio_hi", "cost_ratio"):
            if row[col] and row["variant"] != "tf-2.14":
                assert _has(text, sig3(float(row[col]))), (row["cell_id"], col)
                said += 1
        if row["time_more_repeats"]:
            assert _has(text, row["time_more_repeats"]), row["cell_id"]
        if row["config_time_s"]:
            assert _has(text, f"{sig3(float(row['config_time_s']) / 60)} min"), row["cell_id"]
    assert said > 100


def test_the_page_has_40_percent_fewer_words_and_says_the_undecided_reason_once(tmp_path):
    text, _ = _page(tmp_path)
    assert len(text.split()) <= 0.60 * OLD_WORDS, len(text.split())
    assert "more repeat(s) per side would likely decide it" not in text
    assert text.count("reaches beyond") <= 1
