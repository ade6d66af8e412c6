"""The user API: quantized GEMM (dense and MoE) on the active device."""

from .gemm import gemm, prepare
from .grouped import grouped_gemm, grouped_rows
from .layer import M_BUCKETS, PreparedGemm, PreparedLayer, bucket_of
from .moe import (
    MOE_BUCKETS,
    ROUTING_ID_DTYPES,
    PreparedMoe,
    fused_moe,
    fused_moe_rows,
    moe_align,
    moe_bucket_of,
    moe_gemm,
)

__all__ = [
    "MOE_BUCKETS",
    "M_BUCKETS",
    "ROUTING_ID_DTYPES",
    "PreparedGemm",
    "PreparedLayer",
    "PreparedMoe",
    "bucket_of",
    "fused_moe",
    "fused_moe_rows",
    "gemm",
    "grouped_gemm",
    "grouped_rows",
    "moe_align",
    "moe_bucket_of",
    "moe_gemm",
    "prepare",
]
