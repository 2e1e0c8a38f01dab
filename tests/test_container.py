"""A real cell in the pip image (podman or docker): the container path end to end.

CI builds the image first (.ci/setup-podman.sh, then
`make build-pip BASE_IMAGE=localhost/tfvariants-base:bookworm ENGINE=podman`). Without
an engine or the image this test skips with the reason, unless TFV_REQUIRE_CONTAINER=1
(set in CI), where a missing prerequisite is a failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfvariants.variants import BUILTINS
from tfvariants.variants import engine as engines

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.container


def _prerequisite(engine: str | None, image: str) -> None:
    missing = None
    if engine is None or engines.shutil.which(engine) is None:
        missing = "no container engine (docker or podman)"
    elif not engines.image_exists(engine, image):
        missing = f"image {image} not built (make build-pip)"
    if missing:
        if os.environ.get("TFV_REQUIRE_CONTAINER") == "1":
            pytest.fail(f"TFV_REQUIRE_CONTAINER=1 but {missing}")
        pytest.skip(missing)


def test_mnist_mlp_cell_runs_inside_the_pip_image(tmp_path: Path) -> None:
    engine = engines.detect_engine()
    image = BUILTINS["pip"].image
    assert image
    _prerequisite(engine, image)
    out = tmp_path / "run"
    env = dict(os.environ, TFVARIANTS_ENGINE=engine or "", PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "tfvariants", "run", "mnist_mlp", "--variant", "pip",
         "--threads", "1", "--epochs", "2", "--samples", "2000", "--out", str(out),
         "--timeout", "1500"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    cell_file = out / "cells" / "mnist_mlp__pip__t1__r0.json"
    assert cell_file.exists(), proc.stderr
    result = json.loads(cell_file.read_text())
    assert result["status"] == "ok", (result.get("reason"), result.get("stderr_tail"))
    assert proc.returncode == 0

    # It ran in the image's venv, not in this interpreter...
    environment = result["environment"]
    assert environment["python"]["executable"].startswith("/opt/venv/")
    assert environment["tensorflow"]["version"] == "2.21.0"
    # ...pinned by the engine to exactly one CPU, read back inside the container.
    assert len(result["applied"]["affinity"]) == 1
    assert result["requested"]["cpus"] == result["applied"]["affinity"]
    assert result["applied"]["intra_op"] == 1
    command = result["runner"]["command"]
    assert command[0] == engine and command[1] == "run"
    options = command[: command.index(image)]
    assert options[options.index("--cpuset-cpus") + 1] == str(result["applied"]["affinity"][0])
    assert options[options.index("--network") + 1] == "none"
    assert "--cpus" not in options
    assert result["runner"]["variant_kind"] == "image"
    assert len(result["timing"]["epoch_times_s"]) == 2
    # The only writable mount was the scratch folder, which the host removed afterwards.
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []
