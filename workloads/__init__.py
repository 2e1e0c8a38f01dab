"""What runs INSIDE a variant: the worker entry point and the benchmark workloads.

This package needs only the standard library and TensorFlow/Keras (+ numpy), because a
variant's image or venv does not have tfvariants installed.
It must never import tfvariants.
"""

import os as _os

# The test suite sets this for every test not marked as running real TensorFlow
# (tests/conftest.py); the host passes it to workers. Then importing a Keras backend
# in this process fails at once, naming the guard, so the fast suite never starts
# real TensorFlow by accident.
if _os.environ.get("TFV_NO_REAL_WORKERS") == "1":
    from workloads import nobackend as _nobackend

    _nobackend.install()
