"""Opens a rendered report in headless Chromium (Debian's chromium)."""

import html as html_lib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import resultfactory as rf

from tfvariants.analyze.cost.catalog import load_catalog
from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.analyze.shared.settings import ReportSettings
from tfvariants.commands.report import write_report

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def require_chromium() -> None:
    """Skip without Chromium, unless CI says it must be there (TFV_REQUIRE_BROWSER=1)."""
    if not shutil.which(CHROMIUM):
        if os.environ.get("TFV_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium not installed (apt-get install chromium)")
        pytest.skip("chromium not installed (apt-get install chromium)")


@pytest.mark.browser
def test_report_renders_in_headless_chromium(tmp_path):
    require_chromium()
    results, run = rf.study_like_results()
    bad = rf.make_result(
        "pip", 8, "mnist_mlp", 9, status="failed", reason="<script>alert(1)</script>"
    )
    results.append(bad)
    d = rf.write_results(tmp_path / "res", results, run)
    html = tmp_path / "index.html"
    write_report(d, html, ReportSettings(pricing=Pricing(load_catalog("gce-2017"))))
    png = tmp_path / "shot.png"
    common = [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    subprocess.run(
        [*common, f"--screenshot={png}", "--window-size=1280,2400", html.as_uri()],
        check=True,
        capture_output=True,
        timeout=120,
    )
    assert png.stat().st_size > 50_000  # a blank page is a few kB
    dom = subprocess.run(
        [*common, "--dump-dom", html.as_uri()],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert dom.stdout.count("<svg") == 4
    assert "<script" not in dom.stdout  # nothing injected, nothing to error
    assert "training cost vs pip@16" in dom.stdout  # the cost chart, drawn
    assert "Uncaught" not in dom.stderr


# Appended before </body> of a copy of the report: measures every table's box in the
# page as laid out, and writes the numbers into the DOM that --dump-dom prints.
MEASURE = """<script>
window.addEventListener('load', () => {
  const out = [];
  document.querySelectorAll('table').forEach((t) => {
    const box = t.parentElement;
    if (!box.offsetParent && !t.offsetParent) return;  // inside a closed <details>
    out.push({cls: t.className, head: t.rows[0] ? t.rows[0].cells[0].innerText : '',
              scroll: box.scrollWidth, client: box.clientWidth});
  });
  const page = {scroll: document.documentElement.scrollWidth, client: window.innerWidth};
  const pre = document.createElement('pre');
  pre.id = 'measure';
  pre.textContent = JSON.stringify({tables: out, page: page});
  document.body.appendChild(pre);
});
</script></body>"""


def _measure(html: Path, width: int, tmp_path: Path) -> dict:
    probe = tmp_path / f"measure-{width}.html"
    probe.write_text(html.read_text().replace("</body>", MEASURE))
    dom = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
         f"--window-size={width},2000", "--dump-dom", probe.as_uri()],
        check=True, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    m = re.search(r'<pre id="measure">(.*?)</pre>', dom.stdout, re.S)
    assert m, dom.stderr[-2000:]
    return json.loads(html_lib.unescape(m.group(1)))


@pytest.mark.browser
def test_report_tables_fit_at_1300_and_key_columns_at_800(tmp_path):
    """At 1300 px no table scrolls sideways; at 800 px the verdict tables (configuration,
    time, ratio, verdict, cost) and the summary still fit, and the page never scrolls."""
    require_chromium()
    results, run = rf.study_like_results()
    d = rf.write_results(tmp_path / "res", results, run)
    html = tmp_path / "index.html"
    write_report(d, html, ReportSettings(pricing=Pricing(load_catalog("gce-2017"))))
    text = html.read_text()
    # The verdict table leads each workload, before its measurements.
    assert text.index('class="verdicts"') < text.index("Measurements of mnist_mlp")
    wide = _measure(html, 1300, tmp_path)
    verdicts = [t for t in wide["tables"] if t["cls"] == "verdicts"]
    assert len(verdicts) == 2  # one per workload
    assert len(wide["tables"]) >= 7
    for t in wide["tables"]:
        assert t["scroll"] <= t["client"], ("1300 px", t)
    assert wide["page"]["scroll"] <= wide["page"]["client"]
    narrow = _measure(html, 800, tmp_path)
    for t in narrow["tables"]:
        if t["cls"] in ("verdicts", "summary"):
            assert t["scroll"] <= t["client"], ("800 px", t)
    assert narrow["page"]["scroll"] <= narrow["page"]["client"]


@pytest.mark.browser
def test_beside_other_runs_fits_at_1300_and_the_page_at_800(tmp_path):
    """The section that sets this run beside the other runs of its comparisons (one row
    per run and comparison, real-length folder names) does not scroll at 1300 px."""
    require_chromium()
    results, run = rf.study_like_results(repeats=6)
    # hosts declared (schema 3 keeps them: version 1 declared none), so the runs compare
    run["schema_version"] = 3
    run["hosts"] = [{"host_id": "5bce98f73f3e", "kind": "local", "label": "local (2 CPUs)"}]
    here = rf.write_results(tmp_path / "quick-20261126-065727", results, run)
    # the earlier run: every compiled cell 1.3x as slow, so the two runs disagree
    slower = [
        rf.make_result(
            "compiled",
            c["threads"],
            c["workload"],
            c["repeat"],
            steady_epoch_s=(3.2 if c["threads"] == 8 else 2.4)
            * (3.0 if c["workload"] == "mnist_cnn" else 1.0)
            * 1.3,
            noise=0.03,
        )
        if (c := r["cell"])["variant"] == "compiled" and r["status"] == "ok"
        else r
        for r in results
    ]
    earlier = {**run, "started_at": "2026-11-21T21:00:00+00:00"}
    there = rf.write_results(tmp_path / "quick-20261126-041655", slower, earlier)
    html = tmp_path / "index.html"
    pricing = Pricing(load_catalog("gce-2017"))
    write_report(here, html, ReportSettings(pricing=pricing, beside=(there,)))
    assert 'id="other-runs"' in html.read_text() and "disagrees" in html.read_text()
    wide = _measure(html, 1300, tmp_path)
    beside = [t for t in wide["tables"] if t["head"] == "workload"]
    assert beside, wide["tables"]
    for t in beside:
        assert t["scroll"] <= t["client"], ("1300 px", t)
    narrow = _measure(html, 800, tmp_path)
    assert narrow["page"]["scroll"] <= narrow["page"]["client"]
