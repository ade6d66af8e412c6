"""Exact reference numerics: the oracle every kernel, checkpoint loader and device is tested against."""
