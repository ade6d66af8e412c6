// Which instruction dialect the kernels are generated for (humming_cuda.kernels.wna16.render).
// NVIDIA sources define nothing, so their preprocessed code is exactly what was verified on the
// H200; a PPU source defines HUMMING_DIALECT=1 (and the PPU toolchain USE_PPU=1); the emulation of
// the PPU data paths on an NVIDIA GPU defines HUMMING_DIALECT=2.
#pragma once

#define HM_DIALECT_NVIDIA 0
#define HM_DIALECT_PPU 1
#define HM_DIALECT_PPU_EMULATION 2

#ifndef HUMMING_DIALECT
#define HUMMING_DIALECT HM_DIALECT_NVIDIA
#endif

#if defined(USE_PPU) && HUMMING_DIALECT != HM_DIALECT_PPU
#error "USE_PPU is set (PPU toolchain) but the source was not rendered with dialect='ppu'"
#endif

// The PPU dialects (real and emulated) store weights with output rows permuted within every 8 and
// keep N=16 accumulator fragments; they also drop the L2 evict-first hint the PPU lacks.
#define HM_PPU_LAYOUT (HUMMING_DIALECT != HM_DIALECT_NVIDIA)
