"""tfvariants: which TensorFlow build, on how many vCPUs or which GPU, trains fastest and
cheapest."""

__version__ = "0.1.0"
