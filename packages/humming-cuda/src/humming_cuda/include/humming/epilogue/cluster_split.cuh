// Split-K within a thread-block cluster: the K splits of one output tile are the CTAs of one
// cluster (cluster dims (1, 1, splits), split = rank), and their partial tiles, staged in each
// CTA's shared memory, are summed over distributed shared memory instead of a global workspace.
//
// Why: with the workspace (split_tile.cuh) every split writes its fp32 tile to L2 and the last to
// arrive reads all of them back alone (a 128 x 256 tile split 4: 512 KB through one SM) while
// the others have finished; the cost model charges it 0.012 K steps per token row and split
// (wna16_wgmma heuristics). Here rank r of S sums rows [r ROWS / S, (r + 1) ROWS / S) of all S
// tiles, in rank order (the same sum on every launch), and stores them: each CTA reads one tile's
// worth, all at once, SM to SM, and nothing goes through global memory.
#pragma once
#include "humming/arith/common.cuh"
#include "humming/mma/wgmma.cuh"  // named_barrier
#include "humming/ptx/cluster.cuh"
#include "humming/ptx/smem_addr.cuh"

namespace humming {

// MAX_SPLITS: the most CTAs of a portable cluster.
template <int ROWS, int COLS, int THREADS, int BAR, int MAX_SPLITS = 8>
struct ClusterSplitReducer {
  static_assert(COLS % 4 == 0, "rows move in float4s");
  struct Rows {
    int first, last;
  };

  // This CTA's rows of the tile's first `rows`: rank r of `splits`.
  HM_DEVICE static Rows share(u32 rank, u32 splits, int rows = ROWS) {
    const int r = static_cast<int>(rank), s = static_cast<int>(splits);
    return Rows{r * rows / s, (r + 1) * rows / s};
  }

  // Run by the THREADS threads of every CTA of the cluster once each has staged its partial tile
  // at `tile` (row-major ROWS x COLS fp32; every row's layout the same in every CTA). Returns this
  // CTA's rows, which `tile` then holds summed over the cluster (the THREADS threads synchronised);
  // the caller stores them and calls done() before it exits: the peers may still be reading this
  // CTA's other rows until then.
  HM_DEVICE static Rows reduce(float* tile) {
    const u32 splits = cluster_size(), rank = cluster_rank();
    if (splits > MAX_SPLITS) __trap();
    cluster_arrive();
    cluster_wait();  // every CTA's partial tile is staged and visible
    const Rows rows = share(rank, splits);
    const u32 base = smem_addr(tile);
    u32 peer[MAX_SPLITS];
#pragma unroll
    for (int z = 0; z < MAX_SPLITS; ++z) peer[z] = z < splits ? peer_smem(base, z) : 0u;
    float4* own = reinterpret_cast<float4*>(tile);
    const int t = threadIdx.x % THREADS;
    for (int i = rows.first * COLS / 4 + t; i < rows.last * COLS / 4; i += THREADS) {
      float4 part[MAX_SPLITS];
#pragma unroll
      for (int z = 0; z < MAX_SPLITS; ++z) {
        if (z < splits) part[z] = ld_peer_f4(peer[z] + 16 * i);
      }
      float4 sum = part[0];
#pragma unroll
      for (int z = 1; z < MAX_SPLITS; ++z) {
        if (z < splits) {
          sum.x += part[z].x, sum.y += part[z].y, sum.z += part[z].z, sum.w += part[z].w;
        }
      }
      own[i] = sum;
    }
    cluster_arrive();  // this CTA has read its rows of every peer's tile
    named_barrier<THREADS>(BAR);
    return rows;
  }

  // Wait until every CTA of the cluster has read its rows out of this CTA's tile.
  HM_DEVICE static void done() { cluster_wait(); }
};

}  // namespace humming
