"""torch.nn modules on Humming kernels."""

from .linear import QuantLinear

__all__ = ["QuantLinear"]
