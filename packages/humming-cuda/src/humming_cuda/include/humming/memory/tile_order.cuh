// The order in which a 2-D grid of output tiles is visited. CTAs start in launch order (blockIdx.x
// fastest), so with blockIdx.x over N tiles one wave of 132 CTAs covers one or two M tiles times
// every N tile: each weight panel is fetched from DRAM again for every pair of M tiles (ncu on an
// H200, W8A8 fp8 8192x28672 at M=4096: 58% L2 hit rate, DRAM 56% busy, 14x the minimal traffic).
// Walking GROUP M tiles down before moving one N tile right makes a wave a GROUP x (132 / GROUP)
// block, whose operands the wave shares while they are in L2.
#pragma once
#include "humming/arith/common.cuh"

namespace humming {

struct TileCoord {
  int m, n;  // tile indices
};

// Tile `id` (0 .. tiles_n * tiles_m - 1) of a grid of tiles_n N tiles by tiles_m M tiles, in groups
// of GROUP M tiles (the last group may be shorter). A bijection of the grid, so every tile is
// still computed once.
template <int GROUP>
HM_DEVICE TileCoord grouped_tile(int id, int tiles_n, int tiles_m) {
  const int first_m = (id / (GROUP * tiles_n)) * GROUP;
  const int rows = min(tiles_m - first_m, GROUP);
  const int in_group = id - first_m * tiles_n;
  return TileCoord{first_m + in_group % rows, in_group / rows};
}

// Tile of this CTA on a grid of gridDim.x N tiles by gridDim.y M tiles (one CTA per tile).
template <int GROUP>
HM_DEVICE TileCoord grouped_tile() {
  return grouped_tile<GROUP>(blockIdx.y * gridDim.x + blockIdx.x, gridDim.x, gridDim.y);
}

}  // namespace humming
