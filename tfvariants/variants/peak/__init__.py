"""How close to the hardware: a variant's attainable and theoretical peak per thread count.

The attainable peak is measured by workloads.peakprobe inside the variant, pinned like a
cell of that thread count, outside timed cells; it is cached on disk by content like the
instruction census (``$XDG_CACHE_HOME/tfvariants/census/peak-*.json``), keyed by the
variant's TensorFlow binary (its framework library's sha256, or a container image's id),
the settings that change its kernels (the variant's env), this CPU (model, flags), the
CPU set and the thread pools. The theoretical peak is computed from the CPU
(:mod:`tfvariants.variants.peak.theory`).
"""

from tfvariants.variants.peak.run import measure, measure_all

__all__ = ["measure", "measure_all"]
