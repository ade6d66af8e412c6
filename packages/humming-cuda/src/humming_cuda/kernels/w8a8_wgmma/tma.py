"""TMA tensor maps (CUtensorMap) for the wgmma kernels, encoded on the host.

Operands are K-major byte matrices ([rows, K] e4m3 codes, K contiguous) loaded as 128 x 128 boxes
(the W8A8 kernel's activations of M <= 64 rows as 64 x 128) with the 128-byte swizzle the wgmma
smem descriptors expect; the W4A8 kernel's packed 4-bit slabs
(64 bytes per row and 128 K) are loaded as 64 x 128 boxes without swizzle (its threads read them). `tile_map_params` computes the
cuTensorMapEncodeTiled arguments in plain Python (checked on CPU); `TensorMapCache` encodes them
through cuda.bindings.driver once per (pointer, rows, K, row stride): a map holds only the address,
sizes and strides, so a cached map stays right for any tensor later found at the same address
with the same shape.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import torch

from .config import BLOCK_K

BOX_ROWS = 128  # A and W boxes are both 128 rows (BLOCK_M == BLOCK_N)
# The W8A8 kernel's activation boxes when M fits its first consumer warpgroup (w8a8_wgmma.cuh)
HALF_BOX_ROWS = 64
TMA_ALIGN = 16  # global address and row strides must be multiples of 16 bytes
_MAX_CACHED = 256

# The kernel parameter: the 128-byte opaque CUtensorMap, copied by the driver at launch.
TensorMapParam = ctypes.c_uint64 * 16


@dataclass(frozen=True)
class TileMapParams:
    """cuTensorMapEncodeTiled arguments of one [rows, K] byte matrix, innermost dimension first."""

    global_dim: tuple[int, int]  # (K, rows)
    global_strides: tuple[int]  # bytes between rows (rank - 1 entries)
    # (BLOCK_K, BOX_ROWS): 128 bytes inside a row, exactly the 128B swizzle span TMA allows
    box_dim: tuple[int, int]
    element_strides: tuple[int, int] = (1, 1)
    # 1: e4m3 codes (this family); 2: fp16 / bf16 activations (the wna16_wgmma family)
    element_bytes: int = 1
    swizzle_128b: bool = True  # False: plain rows (the W4A8 packed slabs)

    @property
    def box_bytes(self) -> int:
        return self.box_dim[0] * self.box_dim[1] * self.element_bytes


def tile_map_params(
    rows: int, k: int, row_stride: int, what: str, box_rows: int = BOX_ROWS
) -> TileMapParams:
    """The tensor-map arguments for a [rows, k] byte matrix with `row_stride` bytes per row,
    loaded as boxes of `box_rows` rows."""
    if rows < 1 or k < 1:
        raise ValueError(f"{what}: shape ({rows}, {k}) must be positive in both dimensions")
    if row_stride % TMA_ALIGN or row_stride < k:
        raise ValueError(
            f"{what}: row stride {row_stride} bytes for K={k}: TMA needs a row stride of at least "
            f"K that is a multiple of {TMA_ALIGN} bytes (pad K to a multiple of 16)"
        )
    return TileMapParams(
        global_dim=(k, rows), global_strides=(row_stride,), box_dim=(BLOCK_K, box_rows)
    )


PACKED_BOX_BYTES = BLOCK_K // 2  # one 128-deep slab of 4-bit codes per row


def packed_map_params(rows: int, row_bytes: int, row_stride: int, what: str) -> TileMapParams:
    """The tensor-map arguments for the W4A8 layout's [rows, row_bytes] slabs (one box = one slab
    of 128 rows)."""
    if rows < 1 or row_bytes < PACKED_BOX_BYTES or row_bytes % PACKED_BOX_BYTES:
        raise ValueError(
            f"{what}: shape ({rows} rows, {row_bytes} bytes) is not a W4A8 layout: rows of whole "
            f"{PACKED_BOX_BYTES}-byte slabs"
        )
    if row_stride % TMA_ALIGN or row_stride < row_bytes:
        raise ValueError(f"{what}: row stride {row_stride} bytes is not a TMA row stride")
    return TileMapParams(
        global_dim=(row_bytes, rows),
        global_strides=(row_stride,),
        box_dim=(PACKED_BOX_BYTES, BOX_ROWS),
        swizzle_128b=False,
    )


def encode_arguments(address: int, params: TileMapParams) -> tuple:
    """cuTensorMapEncodeTiled's arguments in the binding's types (it takes cuuint64_t /
    cuuint32_t objects, not plain ints, for the size arrays)."""
    from cuda.bindings import driver

    if address % TMA_ALIGN:
        raise ValueError(
            f"tensor address {address:#x} is not {TMA_ALIGN}-byte aligned: TMA needs aligned "
            "tensors (copy a sliced tensor with .contiguous() or .clone())"
        )
    u64, u32 = driver.cuuint64_t, driver.cuuint32_t
    data_type = driver.CUtensorMapDataType
    return (
        data_type.CU_TENSOR_MAP_DATA_TYPE_UINT8
        if params.element_bytes == 1
        else data_type.CU_TENSOR_MAP_DATA_TYPE_UINT16,
        len(params.global_dim),
        address,
        [u64(d) for d in params.global_dim],
        [u64(s) for s in params.global_strides],
        [u32(b) for b in params.box_dim],
        [u32(e) for e in params.element_strides],
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B
        if params.swizzle_128b
        else driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE,
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        # out-of-bounds rows and K columns read as zeros: they add nothing to the sums
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    )


def encode(address: int, params: TileMapParams) -> TensorMapParam:
    """Encode one map with the driver (host only: no GPU work, capture-safe)."""
    from cuda.bindings import driver

    from ...loader import check

    tmap = check(
        driver.cuTensorMapEncodeTiled(*encode_arguments(address, params)), "cuTensorMapEncodeTiled"
    )
    return TensorMapParam(*(int(word) for word in tmap.opaque))


class TensorMapCache:
    """Encoded maps by (address, rows, K, row stride, form); bounded (activation buffers come and
    go)."""

    def __init__(self) -> None:
        self._maps: dict[tuple[int, int, int, int, bool, int], TensorMapParam] = {}

    def get(
        self, t: torch.Tensor, what: str, packed: bool = False, box_rows: int = BOX_ROWS
    ) -> TensorMapParam:
        """The map of a [rows, K] operand in boxes of `box_rows` rows, or of a W4A8 layout's slabs
        when `packed`."""
        rows, k = t.shape
        size = t.element_size()
        return self.of(t.data_ptr(), rows, k * size, t.stride(0) * size, what, packed, box_rows)

    def of(
        self,
        address: int,
        rows: int,
        row_bytes: int,
        row_stride: int,
        what: str,
        packed: bool = False,
        box_rows: int = BOX_ROWS,
    ) -> TensorMapParam:
        """`get` for the operand at `address`: `rows` rows of `row_bytes` bytes, `row_stride`
        bytes apart (a prepared call's q, which it holds as an address, not a tensor)."""
        key = (address, rows, row_bytes, row_stride, packed, box_rows)
        tmap = self._maps.get(key)
        if tmap is None:
            if len(self._maps) >= _MAX_CACHED:
                self._maps.clear()
            if packed:
                params = packed_map_params(rows, row_bytes, row_stride, what)
            else:
                params = tile_map_params(rows, row_bytes, row_stride, what, box_rows)
            tmap = self._maps[key] = encode(address, params)
        return tmap
