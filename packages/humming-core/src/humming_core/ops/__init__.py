"""The user API: quantized GEMM on the active device."""

from .gemm import gemm, prepare
from .layer import M_BUCKETS, PreparedGemm, bucket_of

__all__ = ["M_BUCKETS", "PreparedGemm", "bucket_of", "gemm", "prepare"]
