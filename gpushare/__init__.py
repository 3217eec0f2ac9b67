"""gpushare: GPU sharing (MIG, time-slicing, MPS) on AKS, provisioned with Pulumi.

This package is the domain layer: plain Python, no Pulumi imports. The Pulumi program (`__main__.py` at the
project root) and the ComponentResources in `components/` wire it to real resources.
"""
