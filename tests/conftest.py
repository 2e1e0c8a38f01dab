from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


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
