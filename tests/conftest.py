from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


# Tests with one of these markers may start real workers (real TensorFlow, containers,
# serving, a Ray cluster, built environments); every other test runs with
# TFV_NO_REAL_WORKERS=1, so a worker in this interpreter or a container is refused
# (tfvariants.execute.runner.refuse_real_worker) and the fast suite stays fast.
REAL_WORKER_MARKERS = {"tf", "container", "serve", "ray", "envs", "browser"}


@pytest.fixture(autouse=True)
def _no_real_workers(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    marks = {m.name for m in request.node.iter_markers()}
    if not marks & REAL_WORKER_MARKERS and "needs_tf" not in request.fixturenames:
        monkeypatch.setenv("TFV_NO_REAL_WORKERS", "1")


_REAL = ("tf", "envs", "container", "serve", "ray")


@pytest.fixture(autouse=True)
def _isa_gate_off_in_unit_tests(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The up-front ISA gate imports a variant's TensorFlow once per binary (cached in
    the user's cache folder): unit tests keep it off; tests/test_isacensus.py turns it
    on with fakes, marked tests run it for real."""
    if not any(request.node.get_closest_marker(m) for m in _REAL):
        monkeypatch.setenv("TFVARIANTS_ISA_GATE", "off")


def tf_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("tensorflow") is not None


@pytest.fixture
def needs_tf() -> None:
    if not tf_available():
        if os.environ.get("TFV_REQUIRE_TF") == "1":
            pytest.fail("TensorFlow is required (TFV_REQUIRE_TF=1) but not importable")
        pytest.skip("TensorFlow not installed in this interpreter")


def require_loadgen() -> None:
    """Skip without MLPerf LoadGen, unless CI says it must be there (TFV_REQUIRE_SERVE=1):
    then a missing optional extra fails instead of passing as 'skipped'."""
    import importlib.util

    if importlib.util.find_spec("mlperf_loadgen") is None:
        if os.environ.get("TFV_REQUIRE_SERVE") == "1":
            pytest.fail(
                "LoadGen is required (TFV_REQUIRE_SERVE=1): pip install 'tfvariants[serve]'"
            )
        pytest.skip("LoadGen not installed: pip install 'tfvariants[serve]'")
