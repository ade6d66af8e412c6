"""Small CUDA kernels for testing the JIT runtime itself (not part of the library).

- `humming_test::hmma_scale_add<HAS_BIAS>`: out[M,N] = (a[M,K] @ b[N,K]^T) * scale (+ bias[N]),
  fp16 in and out, one warp per 16×8 tile with mma.sync m16n8k8 (present on every arch from
  sm_75), a template so the compiler's name-expression path is exercised.
- `smem_reverse`: reverses each block's slice of a float array through dynamic shared memory, to
  exercise the >48 KB dynamic-smem opt-in.
"""

from __future__ import annotations

import torch

from humming_core.device import KernelSource
from humming_cuda.args import ScalarArg, Signature, TensorArg
from humming_cuda.headers import humming_include_root

HMMA_CODE = r"""
#include <cuda_fp16.h>

namespace humming_test {

// m16n8k8 fragments (PTX ISA, mma.m16n8k8 .f16): g = lane / 4, t = lane % 4.
//   A (row-major 16x8): a0 = A[g][2t..2t+1], a1 = A[g+8][2t..2t+1]
//   B (col-major 8x8):  b0 = B[2t..2t+1][g]  = b[n=g][k=2t..2t+1] for b stored [N, K]
//   C (16x8 f32):       c0,c1 = C[g][2t..2t+1], c2,c3 = C[g+8][2t..2t+1]
template <bool HAS_BIAS>
__global__ void hmma_scale_add(const half* __restrict__ a, const half* __restrict__ b,
                               const half* __restrict__ bias, half* __restrict__ out,
                               float scale, int M, int N, int K) {
  const int lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int row0 = blockIdx.y * 16, col0 = blockIdx.x * 8;
  if (row0 >= M || col0 >= N) return;
  float c[4] = {0.f, 0.f, 0.f, 0.f};
  for (int k0 = 0; k0 < K; k0 += 8) {
    const unsigned a0 = *reinterpret_cast<const unsigned*>(a + (row0 + g) * K + k0 + 2 * t);
    const unsigned a1 = *reinterpret_cast<const unsigned*>(a + (row0 + g + 8) * K + k0 + 2 * t);
    const unsigned b0 = *reinterpret_cast<const unsigned*>(b + (col0 + g) * K + k0 + 2 * t);
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(b0));
  }
  for (int i = 0; i < 4; ++i) {
    const int row = row0 + g + (i / 2) * 8, col = col0 + 2 * t + (i % 2);
    float v = c[i] * scale;
    if (HAS_BIAS) v += __half2float(bias[col]);
    out[row * N + col] = __float2half(v);
  }
}

template __global__ void hmma_scale_add<true>(const half*, const half*, const half*, half*, float,
                                              int, int, int);
template __global__ void hmma_scale_add<false>(const half*, const half*, const half*, half*, float,
                                               int, int, int);
}  // namespace humming_test

extern "C" __global__ void smem_reverse(const float* __restrict__ x, float* __restrict__ y, int n) {
  extern __shared__ float buf[];
  const int per_block = n / gridDim.x, base = blockIdx.x * per_block;
  for (int i = threadIdx.x; i < per_block; i += blockDim.x) buf[i] = x[base + i];
  __syncthreads();
  for (int i = threadIdx.x; i < per_block; i += blockDim.x) y[base + i] = buf[per_block - 1 - i];
}
"""


def hmma_source(arch: str, has_bias: bool = True) -> KernelSource:
    name = f"humming_test::hmma_scale_add<{'true' if has_bias else 'false'}>"
    return KernelSource(
        name=name, code=HMMA_CODE, arch=arch, headers=(str(humming_include_root()),)
    )


def smem_source(arch: str) -> KernelSource:
    return KernelSource(name="smem_reverse", code=HMMA_CODE, arch=arch)


HMMA_SIGNATURE = Signature(
    TensorArg("a", torch.float16, ("M", "K")),
    TensorArg("b", torch.float16, ("N", "K")),
    TensorArg("bias", torch.float16, ("N",), optional=True),
    TensorArg("out", torch.float16, ("M", "N")),
    ScalarArg("scale", "float32"),
    ScalarArg("m", "int32", dim="M"),
    ScalarArg("n", "int32", dim="N"),
    ScalarArg("k", "int32", dim="K"),
    kernel="hmma_scale_add",
)


def hmma_reference(a, b, bias, scale):
    out = (a.float() @ b.float().T) * scale
    if bias is not None:
        out = out + bias.float()
    return out.half()
