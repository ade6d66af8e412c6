"""Humming's T-Head Zhenwu PPU device package (810E, M890).

What is here: the `ppu` plugin and its probe (plugin), the capability rows (caps), the SDK
compiler run in a subprocess (toolchain), a reader for cubin and PPU binaries (elf), the PPU
code-generation dialect with its weight-row permutation and spec check (dialect), the PPU weight
layouts (layout), which humming-cuda family runs a spec (families: WnA16 for 16-bit activations,
W8A8 / W4A8 for int8 ones), `PpuDevice` rendering those kernels in the PPU dialect (device), and
`PpuEmulationDevice` running the PPU data paths on an NVIDIA GPU (emulation). README.md,
"Status", says what has run where.
"""
