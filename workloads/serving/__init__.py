"""Serving benchmarks that run INSIDE a variant: models behind a compiled call, an HTTP
server speaking TensorFlow Serving's REST predict API, a closed-loop client, and MLPerf
LoadGen scenarios. ``mlcommons-loadgen`` is imported only by :mod:`.loadgen`."""
