"""The compiled-vs-stock recipes for real (TensorFlow 2.14 wheels from the package index,
marker `envs`) and the compiled image made from a compiled wheel (marker `container`).

CI builds that image first (`make build-compiled WHEEL=...`, see .ci/run); without it
the container test skips, unless TFV_REQUIRE_CONTAINER=1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfvariants.variants import census, ensure_built, get_variant, skip_reason
from tfvariants.variants import engine as engines
from tfvariants.variants.recipes import COMPILED_BUILDS, COMPILED_STOCK
from workloads import isacensus

ROOT = Path(__file__).resolve().parents[1]
HAS_AVX512 = "avx512f" in isacensus.cpu_flags()


@pytest.mark.envs
def test_the_cheap_gate_on_every_compiled_recipe() -> None:
    """Each recipe builds (ending with its import check) and the up-front gate decides
    on this CPU: the AVX-512 build runs on an AVX-512 host and is skipped, with the
    extension named, on any other; the AVX builds run everywhere."""
    for name in (COMPILED_STOCK, *COMPILED_BUILDS):
        variant = get_variant(name)
        ensure_built(variant, lambda line: None)
        assert variant.readiness()[0], name
        reason = skip_reason(variant)
        if name == "intel-avx512-2.14" and not HAS_AVX512:
            assert reason and "compiled for AVX512, which this CPU lacks" in reason
        else:
            assert reason is None, (name, reason)


@pytest.mark.envs
def test_the_real_census_of_the_avx512_wheels_framework_library() -> None:
    """objdump of one real wheel's smaller library (~45 MB, under a minute; the whole
    wheel takes ~11 minutes and is never run in CI)."""
    variant = get_variant("intel-avx512-2.14")
    ensure_built(variant, lambda line: None)
    result = census.variant_census(variant)
    assert list(result["files"]) == [census.FRAMEWORK]
    assert result["compiled_for"] == "AVX512+FMA+AVX2"
    # Its zmm code sits outside dispatched kernels: the binary requires AVX-512.
    assert result["total"]["raw_rest"]["zmm"] > 1_000


COMPILED_IMAGE = os.environ.get("TFV_COMPILED_IMAGE", "tfvariants/compiled:wheel")


@pytest.mark.container
def test_a_cell_runs_inside_the_compiled_image_made_from_a_wheel(tmp_path: Path) -> None:
    engine = engines.detect_engine()
    missing = None
    if engine is None or engines.shutil.which(engine) is None:
        missing = "no container engine (docker or podman)"
    elif not engines.image_exists(engine, COMPILED_IMAGE):
        missing = f"image {COMPILED_IMAGE} not built (make build-compiled WHEEL=...)"
    if missing:
        if os.environ.get("TFV_REQUIRE_CONTAINER") == "1":
            pytest.fail(f"TFV_REQUIRE_CONTAINER=1 but {missing}")
        pytest.skip(missing)
    assert engine
    # The image's own ISA check passed at build time and kept its census.
    check = subprocess.run(
        [engine, "run", "--rm", "--network", "none", COMPILED_IMAGE,
         "cat", "/opt/tfvariants-build/isa-check.json"],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    report = json.loads(check.stdout)
    assert report["verdict"]["ok"] is True
    assert report["built"]["isa"]["compiled_for"] in ("AVX", "AVX512+FMA+AVX2")
    toml = tmp_path / "v.toml"
    toml.write_text(
        f'[variants.wheel-image]\nkind = "image"\nimage = "{COMPILED_IMAGE}"\n'
        'env = { TF_ENABLE_ONEDNN_OPTS = "1" }\n'
    )
    out = tmp_path / "run"
    env = dict(os.environ, TFVARIANTS_ENGINE=engine, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "tfvariants", "run", "mnist_mlp", "--variant", "wheel-image",
         "--variants-file", str(toml), "--threads", "1", "--epochs", "2", "--samples", "1024",
         "--out", str(out), "--timeout", "1200"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500, check=False,
    )  # fmt: skip
    cell = out / "cells" / "mnist_mlp__wheel-image__t1__r0.json"
    assert cell.exists(), proc.stderr[-2000:]
    result = json.loads(cell.read_text())
    assert result["status"] == "ok", (result.get("reason"), result.get("stderr_tail"))
    environment = result["environment"]
    assert environment["python"]["executable"].startswith("/opt/venv/")
    assert environment["tensorflow"]["version"] == "2.14.0"
    assert environment["backend"]["keras_version"].startswith("2.")
