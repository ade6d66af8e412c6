"""The NVIDIA WnA16 byte-identity matrix: rendered source and NVRTC cubin sha256 per case.

The PPU dialect options (humming_ppu) are rendered through the same headers as the NVIDIA kernels,
which were verified on an H200 (conformance and compute-sanitizer). With no GPU to re-verify, the
default dialect's output must stay byte-identical: fixtures/wna16_nvidia_sha256.json holds the
hashes taken before the dialect existed; test_wna16_nvidia_identity.py compares against them.

Regenerate (only for a deliberate NVIDIA kernel change that has been re-verified on hardware):
    uv run python packages/humming-cuda/tests/wna16_identity_cases.py
"""

from __future__ import annotations

from pathlib import Path

from identity_fixture import write_fixture
from wna16_cases import FORMATS, make_spec

from humming_cuda.kernels.wna16 import FAMILY, Wna16Config

FIXTURE = Path(__file__).parent / "fixtures" / "wna16_nvidia_sha256.json"
ARCHS = ("sm_80", "sm_90a")
# Small-M decode tile, a multi-fragment prefill tile, and a wide-N tile with one K warp.
TILES = (
    {"m_frags": 1, "warps_n": 1, "warps_k": 4, "k_steps": 2, "stages": 4},
    {"m_frags": 4, "warps_n": 2, "warps_k": 2, "k_steps": 2, "stages": 3},
    {"m_frags": 2, "warps_n": 4, "warps_k": 1, "k_steps": 4, "stages": 4},
)


def identity_cases() -> list[tuple[str, object, Wna16Config]]:
    """(case id, spec, config) for every FORMATS entry x activation x tile x arch."""
    cases = []
    for arch in ARCHS:
        for i, fmt in enumerate(FORMATS):
            for act in ("fp16", "bf16"):
                spec = make_spec(fmt, act, 64, 4096, bias=i % 2 == 0, out=None, sdt=fmt[2][-1])
                for t, tile in enumerate(TILES):
                    cfg = Wna16Config(arch=arch, **tile)
                    cid = f"{arch}-f{i}-{fmt[0]}-z{fmt[1]}-{fmt[2][-1]}-{act}-t{t}"
                    cases.append((cid, spec, cfg))
    return cases


if __name__ == "__main__":
    write_fixture(FIXTURE, FAMILY, identity_cases())
