"""A serving cell in the pip image (marker ``container``): the model server and its
client inside one container with ``--network none``, talking over the container's own
loopback; a user model file mounted into it. Skips without engine or image unless
TFV_REQUIRE_CONTAINER=1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_container import ROOT, _prerequisite

from tfvariants.store.result import load_result
from tfvariants.variants import BUILTINS
from tfvariants.variants import engine as engines

pytestmark = pytest.mark.container

TINY = """
def build_model(keras):
    inp = keras.Input((16, 16, 3))
    x = keras.layers.GlobalAveragePooling2D()(keras.layers.Conv2D(4, 3)(inp))
    return keras.Model(inp, keras.layers.Dense(5)(x))
"""


def test_user_model_served_over_loopback_inside_the_pip_image(tmp_path: Path) -> None:
    engine = engines.detect_engine()
    image = BUILTINS["pip"].image
    assert image
    _prerequisite(engine, image)
    model = tmp_path / "tiny.py"
    model.write_text(TINY)
    out = tmp_path / "run"
    env = dict(os.environ, TFVARIANTS_ENGINE=engine or "", PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "tfvariants", "serve", "--variants", "pip", "--models", str(model),
         "--scenarios", "concurrency", "--concurrency", "2", "--path", "inprocess,http",
         "--threads", "1", "--repeats", "1", "--min-duration", "0.3s", "--max-duration", "3s",
         "--min-queries", "20", "--encoding", "b64", "--out", str(out),
         "--report", str(tmp_path / "rep" / "index.html")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    for path in sorted((out / "cells").glob("*.json")):
        r = load_result(path)
        assert r["status"] == "ok", (r.get("reason"), r.get("stderr_tail"))
        assert (
            r["runner"]["command"][:2] == [engine, "run"] and "--network" in r["runner"]["command"]
        )
        assert r["environment"]["python"]["executable"].startswith("/opt/venv/")
        assert r["model"]["name"] == "tiny" and r["closed_loop"]["completed"] >= 20
