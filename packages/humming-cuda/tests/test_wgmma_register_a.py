"""wgmma with A from registers (humming/mma/wgmma.cuh, wgmma_f16.cuh `*_rs`): the building block of
an out^T form for the wgmma families (weights as the register A operand, dequantized in registers;
activations as the shared-memory B operand; benchmarks/notes/w4a8_wgmma_next.md).

One warpgroup computes D[64, 128] = A[64, K] @ B[128, K]^T: B is copied into shared memory in the
128-byte swizzle a TMA load writes, A is loaded into registers in the layout the wrappers document
(the mma.sync A fragment per warp), D is stored in the documented accumulator layout. Small
integers make every product and sum exact, so a wrong fragment layout cannot hide in a tolerance.
The compile test runs in CI; the launch needs an sm_90 GPU.
"""

from __future__ import annotations

import pytest

from humming_core.device import KernelSource

PROBE = r"""
#include "humming/mma/wgmma_f16.cuh"
#include "humming/ptx/cp_async.cuh"

namespace {
using namespace humming;

// B [128][128 bytes] into shared memory: row r's 16-byte chunk c at chunk c ^ (r % 8) (TMA's 128B
// swizzle), then the generic-proxy writes made visible to wgmma.
__device__ void stage_b(unsigned char* b_s, const unsigned char* b) {
  for (int i = threadIdx.x; i < 128 * 8; i += 128) {
    const int r = i / 8, c = i % 8;
    *reinterpret_cast<uint4*>(b_s + r * 128 + ((c ^ (r % 8)) * 16)) =
        *reinterpret_cast<const uint4*>(b + r * 128 + c * 16);
  }
  fence_proxy_async_smem();
  __syncthreads();
}

// d[4j + 0/1] = row 16w + g, columns 8j + 2t + 0/1; d[4j + 2/3] = row + 8.
__device__ void store_d(float* out, const float (&d)[64]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int row = 16 * warp + g;
  for (int j = 0; j < 16; ++j) {
    const int col = 8 * j + 2 * t;
    out[row * 128 + col] = d[4 * j];
    out[row * 128 + col + 1] = d[4 * j + 1];
    out[(row + 8) * 128 + col] = d[4 * j + 2];
    out[(row + 8) * 128 + col + 1] = d[4 * j + 3];
  }
}

__device__ u32 word(const unsigned char* p) { return *reinterpret_cast<const u32*>(p); }

// A [64][128 bytes] (K-major rows), B [128][128 bytes], out [64][128] fp32: four steps of 32 bytes
// of K each (k32 of e4m3, k16 of fp16) through MMA, the register-A wrapper under test.
template <void (*MMA)(float (&)[64], const u32 (&)[4], u64, bool)>
__device__ void probe(const unsigned char* a, const unsigned char* b, float* out) {
  __shared__ alignas(1024) unsigned char b_s[128 * 128];
  stage_b(b_s, b);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const unsigned char* r0 = a + (16 * warp + g) * 128;
  const unsigned char* r8 = r0 + 8 * 128;
  u32 frag[4][4];
  for (int ks = 0; ks < 4; ++ks) {
    frag[ks][0] = word(r0 + 32 * ks + 4 * t);
    frag[ks][1] = word(r8 + 32 * ks + 4 * t);
    frag[ks][2] = word(r0 + 32 * ks + 16 + 4 * t);
    frag[ks][3] = word(r8 + 32 * ks + 16 + 4 * t);
  }
  float d[64];
  for (int i = 0; i < 64; ++i) d[i] = 0.f;
  const u64 desc = sw128_kmajor_desc(smem_addr(b_s));
  wgmma_fence();
  for (int ks = 0; ks < 4; ++ks) MMA(d, frag[ks], desc_advance(desc, 32 * ks), ks > 0);
  wgmma_commit();
  wgmma_wait<0>();
  fence_registers(d);
  store_d(out, d);
}
}  // namespace

extern "C" __global__ void __launch_bounds__(128) probe_e4m3(const unsigned char* a,
                                                              const unsigned char* b, float* out) {
  probe<wgmma_m64n128k32_e4m3_rs>(a, b, out);
}

extern "C" __global__ void __launch_bounds__(128) probe_f16(const unsigned char* a,
                                                             const unsigned char* b, float* out) {
  probe<wgmma_m64n128k16_f16_rs>(a, b, out);
}
"""


def _source(name: str) -> KernelSource:
    from humming_cuda.headers import humming_include_root

    return KernelSource(
        name=name, code=PROBE, arch="sm_90a", headers=(str(humming_include_root()),)
    )


@pytest.mark.compile
@pytest.mark.parametrize("name", ["probe_e4m3", "probe_f16"])
def test_register_a_wgmma_compiles_for_sm90a(name):
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
    from humming_cuda.compiler import compile_source

    artifact = compile_source(_source(name))
    assert artifact.meta["resources"]["spill_stores"] == 0, artifact.meta["resources"]


@pytest.mark.cuda
@pytest.mark.parametrize(
    ("name", "dtype", "k"), [("probe_e4m3", "float8_e4m3fn", 128), ("probe_f16", "float16", 64)]
)
def test_register_a_fragment_layout_on_the_gpu(name, dtype, k):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("needs an sm_90 GPU (wgmma)")
    import ctypes

    from humming_cuda.compiler import compile_source
    from humming_cuda.launch import Launcher
    from humming_cuda.loader import load

    gen = torch.Generator(device="cuda").manual_seed(5)
    ints = lambda *s: torch.randint(-8, 9, s, generator=gen, device="cuda").float()  # noqa: E731
    a, b = ints(64, k), ints(128, k)
    kind = getattr(torch, dtype)
    out = torch.full((64, 128), float("nan"), device="cuda")
    fn = load(compile_source(_source(name)))
    launch = Launcher(fn, (ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64))
    a_q, b_q = a.to(kind).contiguous(), b.to(kind).contiguous()
    launch((1, 1, 1), (128, 1, 1), [a_q.data_ptr(), b_q.data_ptr(), out.data_ptr()])
    torch.cuda.synchronize()
    torch.testing.assert_close(out, a @ b.T, rtol=0, atol=0)
