"""Bit packing and the canonical weight form."""

from .canonical import CanonicalWeight

__all__ = ["CanonicalWeight"]
