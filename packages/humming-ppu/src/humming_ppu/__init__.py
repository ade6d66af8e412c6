"""Humming's T-Head Zhenwu PPU device package (810E, M890).

What is here: the `ppu` plugin and its probe (plugin), the capability rows (caps), the SDK
compiler run in a subprocess (toolchain), a reader for cubin and PPU binaries (elf), and the PPU
code-generation dialect with its weight-row permutation and spec check (dialect). The device that
renders humming-cuda's kernels in this dialect is not wired yet (README.md, "Status").
"""
