"""Humming core: specs, reference numerics, packing, formats, devices, JIT cache and the user API."""

__version__ = "0.1.0"
