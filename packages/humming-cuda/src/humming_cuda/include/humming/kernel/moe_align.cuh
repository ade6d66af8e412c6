// moe_align: vLLM's moe_align_block_size on the GPU, deterministic, without host synchronisation.
//
// Output contract (humming_core.numerics.moe.moe_align): sorted_ids holds indices into the flattened
// topk_ids grouped by expert, each expert's run padded to a multiple of block_size with the sentinel
// numel; expert_ids holds one expert per block; post[0] the used length.
//
// The flattened ids are cut into chunks of `chunk` entries (a multiple of 32), one warp per chunk.
//   count:   each warp counts its chunk per expert into a shared-memory row (one row per warp, so no
//            atomics) and stores it as hist[chunk][expert]; all threads fill sorted_ids with numel.
//   scan:    one CTA turns hist into exclusive per-chunk bases (a walk down each expert's column) and
//            the padded expert sizes into starts[expert] (a block-wide scan), starts[E] = total.
//   scatter: each warp walks its chunk again in order; a token's place is starts + its chunk base +
//            the count of the same expert earlier in the chunk (a running row plus __match_any_sync
//            rank inside the 32 lanes). Every block of block_size finds its expert by binary search.
// Because every rank is a count of *earlier* entries, tokens stay in ascending order within an
// expert: the result equals the reference position for position (vLLM's atomics do not promise it).
// Small inputs run all three phases in one CTA (the fused phase) to pay for a single launch.
//
// Optionally the scatter also zeroes row i of `zero_rows` for every entry i that takes no part (an
// id outside [0, E) or a non-local expert): a fused MoE layer's output rows that no GEMM writes,
// zeroed here instead of by a fill of the whole output.
//
// Workspace (int32): hist [num_chunks * E] then starts [E + 1]. Shared memory: one row of E ints per
// warp (dynamic), which bounds E by the CTA's shared memory (the host picks warps per CTA to fit).
#pragma once
#include "humming/ptx/pdl.cuh"

namespace humming {
namespace moe_align {

constexpr int FUSED = 0, COUNT = 1, SCAN = 2, SCATTER = 3;
constexpr unsigned FULL_MASK = 0xffffffffu;

struct Args {
  const int* expert_map;  // [E] global -> local expert or -1; nullptr without expert parallelism
  int* sorted_ids;
  int* expert_ids;
  int* post;
  int* workspace;
  int numel, num_experts, block_size, length, chunk, num_chunks, ignore_invalid;
  char* zero_rows;  // nullptr: none; else rows of zero_row_bytes, zero_ld bytes apart
  long long zero_ld;
  int zero_row_bytes, zero_unit;  // zero_unit (16, 4 or 2) divides the address, ld and row bytes

  __device__ int* hist(int c) const { return workspace + static_cast<long long>(c) * num_experts; }
  __device__ int* starts() const { return hist(num_chunks); }
};

// The expert an entry is counted under, or -1 when it takes no part: ids outside [0, E) are dropped
// (as vLLM's kernel does); with expert_map and ignore_invalid, non-local experts are dropped and the
// rest are counted under their local id.
template <typename IdT>
__device__ __forceinline__ int routing_key(const IdT* ids, const Args& a, int i) {
  if (i >= a.numel) return -1;
  const long long id = static_cast<long long>(ids[i]);
  if (id < 0 || id >= a.num_experts) return -1;
  int key = static_cast<int>(id);
  if (a.expert_map != nullptr && a.ignore_invalid) {
    key = a.expert_map[key];
    if (key < 0 || key >= a.num_experts) return -1;
  }
  return key;
}

// What a block of expert `e` reports: without ignore_invalid the map turns non-local experts to -1.
__device__ __forceinline__ int block_expert(const Args& a, int e) {
  return (a.expert_map != nullptr && !a.ignore_invalid) ? a.expert_map[e] : e;
}

// One warp counts chunk c into its shared row, then publishes the row as hist[c].
template <typename IdT>
__device__ void count_chunk(const IdT* ids, const Args& a, int c, int* row, int lane) {
  for (int e = lane; e < a.num_experts; e += 32) row[e] = 0;
  __syncwarp();
  const int begin = c * a.chunk;
  const int end = begin + a.chunk < a.numel ? begin + a.chunk : a.numel;
  for (int i = begin + lane; i - lane < end; i += 32) {
    const int key = routing_key(ids, a, i);
    const unsigned peers = __match_any_sync(FULL_MASK, key);
    // Lanes with equal keys form one group; its lowest lane adds the group's size. Groups have
    // distinct keys, so the row needs no atomics.
    if (key >= 0 && lane == __ffs(peers) - 1) row[key] += __popc(peers);
    __syncwarp();
  }
  int* out = a.hist(c);
  for (int e = lane; e < a.num_experts; e += 32) out[e] = row[e];
  __syncwarp();
}

// The warp zeroes row i of zero_rows with stores of zero_unit bytes.
__device__ __forceinline__ void zero_row(const Args& a, int i, int lane) {
  char* row = a.zero_rows + static_cast<long long>(i) * a.zero_ld;
  if (a.zero_unit == 16) {
    for (int b = 16 * lane; b < a.zero_row_bytes; b += 16 * 32)
      *reinterpret_cast<uint4*>(row + b) = make_uint4(0u, 0u, 0u, 0u);
  } else if (a.zero_unit == 4) {
    for (int b = 4 * lane; b < a.zero_row_bytes; b += 4 * 32)
      *reinterpret_cast<unsigned*>(row + b) = 0u;
  } else {
    for (int b = 2 * lane; b < a.zero_row_bytes; b += 2 * 32)
      *reinterpret_cast<unsigned short*>(row + b) = 0;
  }
}

// One warp zeroes the zero_rows rows of chunk c's dropped entries, one row at a time.
template <typename IdT>
__device__ void zero_dropped(const IdT* ids, const Args& a, int c, int lane) {
  const int begin = c * a.chunk;
  const int end = begin + a.chunk < a.numel ? begin + a.chunk : a.numel;
  for (int i = begin + lane; i - lane < end; i += 32) {
    const bool dropped = i < end && routing_key(ids, a, i) < 0;
    for (unsigned left = __ballot_sync(FULL_MASK, dropped); left != 0u; left &= left - 1u) {
      zero_row(a, i - lane + __ffs(left) - 1, lane);
    }
  }
}

// One warp places chunk c: positions continue from starts[e] + the entries of e in earlier chunks.
template <typename IdT>
__device__ void scatter_chunk(const IdT* ids, const Args& a, int c, int* row, int lane) {
  const int* base = a.hist(c);
  const int* starts = a.starts();
  for (int e = lane; e < a.num_experts; e += 32) row[e] = starts[e] + base[e];
  __syncwarp();
  const unsigned earlier = (1u << lane) - 1u;
  const int begin = c * a.chunk;
  const int end = begin + a.chunk < a.numel ? begin + a.chunk : a.numel;
  for (int i = begin + lane; i - lane < end; i += 32) {
    const int key = routing_key(ids, a, i);
    const unsigned peers = __match_any_sync(FULL_MASK, key);
    const int pos = key >= 0 ? row[key] + __popc(peers & earlier) : 0;
    __syncwarp();  // every lane has read the row before the group's leader advances it
    if (key >= 0) {
      if (lane == __ffs(peers) - 1) row[key] += __popc(peers);
      a.sorted_ids[pos] = i;
    }
    __syncwarp();
  }
}

// Exclusive sum of v over the CTA (blockDim.x a multiple of 32); `total` gets the CTA's sum.
__device__ __forceinline__ int block_exclusive_sum(int v, int* warp_sums, int& total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  int incl = v;
  for (int d = 1; d < 32; d <<= 1) {
    const int up = __shfl_up_sync(FULL_MASK, incl, d);
    if (lane >= d) incl += up;
  }
  if (lane == 31) warp_sums[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    int s = lane < warps ? warp_sums[lane] : 0;
    for (int d = 1; d < 32; d <<= 1) {
      const int up = __shfl_up_sync(FULL_MASK, s, d);
      if (lane >= d) s += up;
    }
    warp_sums[lane] = s;
  }
  __syncthreads();
  const int offset = warp == 0 ? 0 : warp_sums[warp - 1];
  total = warp_sums[warps - 1];
  __syncthreads();  // warp_sums is reused by the next call
  return offset + incl - v;
}

// One CTA: per-chunk bases (exclusive, in place in hist), padded sizes, starts, total.
__device__ void scan_experts(const Args& a) {
  __shared__ int warp_sums[32];
  int* starts = a.starts();
  int carry = 0;
  for (int tile = 0; tile < a.num_experts; tile += blockDim.x) {
    const int e = tile + threadIdx.x;
    int padded = 0;
    if (e < a.num_experts) {
      int count = 0;
      for (int c = 0; c < a.num_chunks; ++c) {
        int* h = a.hist(c) + e;
        const int v = *h;
        *h = count;
        count += v;
      }
      padded = (count + a.block_size - 1) / a.block_size * a.block_size;
    }
    int tile_total = 0;
    const int before = block_exclusive_sum(padded, warp_sums, tile_total);
    if (e < a.num_experts) starts[e] = carry + before;
    carry += tile_total;
  }
  if (threadIdx.x == 0) {
    starts[a.num_experts] = carry;
    a.post[0] = carry;
  }
}

// Block b of the used length belongs to the last expert whose run starts at or before it (runs of
// empty experts have no blocks); unused tail blocks report expert 0, as the reference does.
__device__ void write_expert_ids(const Args& a, int thread, int threads) {
  const int* starts = a.starts();
  const int total = starts[a.num_experts];
  const int blocks = (a.length + a.block_size - 1) / a.block_size;
  for (int b = thread; b < blocks; b += threads) {
    const long long pos = static_cast<long long>(b) * a.block_size;
    int lo = 0;
    if (pos < total) {
      int hi = a.num_experts;
      while (hi - lo > 1) {
        const int mid = (lo + hi) >> 1;
        if (starts[mid] <= pos) lo = mid; else hi = mid;
      }
    }
    a.expert_ids[b] = block_expert(a, lo);
  }
}

template <typename IdT>
__device__ void count_phase(const IdT* ids, const Args& a, int* rows) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int thread = blockIdx.x * blockDim.x + threadIdx.x, threads = gridDim.x * blockDim.x;
  for (int i = thread; i < a.length; i += threads) a.sorted_ids[i] = a.numel;
  int* row = rows + warp * a.num_experts;
  for (int c = blockIdx.x * warps + warp; c < a.num_chunks; c += gridDim.x * warps) {
    count_chunk(ids, a, c, row, lane);
  }
}

template <typename IdT>
__device__ void scatter_phase(const IdT* ids, const Args& a, int* rows) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  write_expert_ids(a, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
  int* row = rows + warp * a.num_experts;
  for (int c = blockIdx.x * warps + warp; c < a.num_chunks; c += gridDim.x * warps) {
    scatter_chunk(ids, a, c, row, lane);
    if (a.zero_rows != nullptr) zero_dropped(ids, a, c, lane);
  }
}

template <int PHASE, typename IdT>
__device__ __forceinline__ void run(const IdT* ids, const Args& a) {
  extern __shared__ int rows[];
  // The last phase lets a PDL kernel after it launch at once: one that reads the routing waits for
  // this grid first (the MoE decode form without routing_ready), so it only starts early.
  if constexpr (PHASE == SCATTER || PHASE == FUSED) allow_next_grid();
  if constexpr (PHASE == COUNT || PHASE == FUSED) count_phase(ids, a, rows);
  if constexpr (PHASE == FUSED) __syncthreads();  // hist and the sentinel fill are visible to all
  if constexpr (PHASE == SCAN || PHASE == FUSED) scan_experts(a);
  if constexpr (PHASE == FUSED) __syncthreads();  // starts and the chunk bases are final
  if constexpr (PHASE == SCATTER || PHASE == FUSED) scatter_phase(ids, a, rows);
}

}  // namespace moe_align
}  // namespace humming

// One phase as an extern "C" kernel; parameters in the order of humming_cuda.kernels.moe_align.bind.
// 512 threads at most (plan.MAX_THREADS): a 1024 bound made sm_100's ptxas spill the fused kernel.
// One CTA per SM is enough (the grids are one CTA, or a few for the split phases): without that
// minimum ptxas held the kernels to 40 registers and spilled on sm_86-89 once zero_dropped came in.
#define HUMMING_MOE_ALIGN_ENTRY(NAME, PHASE, IdT)                                                  \
  extern "C" __global__ void __launch_bounds__(512, 1) NAME(                                      \
      const IdT* topk_ids, const int* expert_map, int* sorted_ids, int* expert_ids, int* post,     \
      int* workspace, int numel, int num_experts, int block_size, int length, int chunk,           \
      int num_chunks, int ignore_invalid, char* zero_rows, long long zero_ld, int zero_row_bytes,  \
      int zero_unit) {                                                                             \
    const humming::moe_align::Args args{expert_map, sorted_ids,     expert_ids, post,           \
                                        workspace,  numel,          num_experts, block_size,     \
                                        length,     chunk,          num_chunks, ignore_invalid,  \
                                        zero_rows,  zero_ld,        zero_row_bytes, zero_unit};  \
    humming::moe_align::run<PHASE, IdT>(topk_ids, args);                                           \
  }
