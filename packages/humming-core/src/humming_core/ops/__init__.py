"""The user API: quantized GEMM (dense and MoE) on the active device."""

from .gemm import gemm, prepare
from .layer import M_BUCKETS, PreparedGemm, PreparedLayer, bucket_of
from .moe import PreparedMoe, fused_moe, moe_align, moe_gemm

__all__ = [
    "M_BUCKETS",
    "PreparedGemm",
    "PreparedLayer",
    "PreparedMoe",
    "bucket_of",
    "fused_moe",
    "gemm",
    "moe_align",
    "moe_gemm",
    "prepare",
]
