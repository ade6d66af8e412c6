"""Bit packing and the canonical weight form."""

from .bits import pack_k, pack_n, unpack_k, unpack_n, words_for
from .canonical import CanonicalWeight

__all__ = ["CanonicalWeight", "pack_k", "pack_n", "unpack_k", "unpack_n", "words_for"]
