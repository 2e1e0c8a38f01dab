"""What runs INSIDE a variant: the worker entry point and the benchmark workloads.

This package needs only the standard library and TensorFlow/Keras (+ numpy), because a variant's image or venv does not have tfvariants installed.
It must never import tfvariants.
"""
