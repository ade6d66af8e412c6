"""Benchmarks on NVIDIA GPUs: Humming against baselines measured in the same process (KERNELS.md)."""
