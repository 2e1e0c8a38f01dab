"""The answer table is on the first screen: each golden run's report, laid out by
headless Chromium in a 1280x800 window, shows its answer table without scrolling."""

import html as html_lib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from compiledruns import compiled_run
from test_report_browser import CHROMIUM, FLAGS, require_chromium

from tfvariants.analyze.cost.catalog import load_catalog
from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.analyze.shared.settings import ReportSettings
from tfvariants.commands.report import write_report

GOLDEN = Path(__file__).resolve().parent / "golden" / "runs"

# Appended before </body> of a copy of the report: the answer table's box in the
# viewport as laid out, written into the DOM that --dump-dom prints.
BOX = """<script>
window.addEventListener('load', () => {
  const t = document.getElementById('answer-table');
  const r = t ? t.getBoundingClientRect() : null;
  const pre = document.createElement('pre');
  pre.id = 'box';
  pre.textContent = JSON.stringify({box: r && [r.left, r.top, r.right, r.bottom],
                                    view: [window.innerWidth, window.innerHeight]});
  document.body.appendChild(pre);
});
</script></body>"""


@pytest.mark.browser
@pytest.mark.parametrize(
    "name",
    ["compiled", "quick", "serve", "multi", "compiled-undecided", "compiled-equivalent"],
)
def test_the_answer_table_is_in_the_first_1280x800_viewport(name, tmp_path):
    """The golden runs, and compiled-preset runs all undecided and all equivalent (the
    golden `compiled` run is the mixed case)."""
    require_chromium()
    run = tmp_path / name
    if name.startswith("compiled-"):
        compiled_run(run, name.removeprefix("compiled-"))
    else:
        shutil.copytree(GOLDEN / name, run)
    html = tmp_path / "index.html"
    write_report(run, html, ReportSettings(pricing=Pricing(load_catalog("gce-2017"))))
    probe = tmp_path / "probe.html"
    probe.write_text(html.read_text().replace("</body>", BOX))
    dom = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
         "--window-size=1280,800", "--dump-dom", probe.as_uri()],
        check=True, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    m = re.search(r'<pre id="box">(.*?)</pre>', dom.stdout, re.S)
    assert m, dom.stderr[-2000:]
    got = json.loads(html_lib.unescape(m.group(1)))
    assert got["box"] is not None, "no answer table"
    left, top, right, bottom = got["box"]
    # Laid out 1280 px wide (headless Chromium's window chrome takes some of the 800 px
    # height from innerHeight, not from the page): the table ends within the first 800.
    assert got["view"][0] == 1280
    assert 0 <= left and right <= 1280 and 0 <= top and bottom <= 800, got
