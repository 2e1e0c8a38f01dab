"""Opens a rendered report in headless Chromium (Debian's chromium)."""

import os
import shutil
import subprocess

import pytest
import resultfactory as rf

from tfvariants.analyze.pricing import Pricing, load_catalog
from tfvariants.render.html import write_report

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
    write_report(d, html, pricing=Pricing(load_catalog("gce-2017")))
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
    assert "mnist_cnn: training cost vs pip@16" in dom.stdout
    assert "Uncaught" not in dom.stderr
