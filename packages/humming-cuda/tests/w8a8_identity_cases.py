"""The NVIDIA W8A8 / W4A8 byte-identity matrix: rendered source and NVRTC cubin sha256 per case.

The w8a8 family's PPU dialects (humming_ppu) are rendered through the same headers as the NVIDIA
kernels, whose cuda suites passed on the H200. The default dialect's output must stay
byte-identical: fixtures/w8a8_nvidia_sha256.json holds the hashes of the NVIDIA kernels last
verified on the H200 (taken before the dialect existed, retaken after the split-K change of session
5 passed there, and after session 14's sm_90 int4 x fp8 fp16 step, decode-tile register cap,
early group-scale loads and stride-based stage copies passed there; every source changed then too,
as the quantizer format's name key gained its `wide` field. The copies' committed form was not
itself re-run at every case: benchmarks/notes/session14.md lists which cubins match the measured
ones), and after session 16's PDL pipeline (weights before griddepcontrol.wait, activations after;
w8a8 + moe_w8a8 + PPU-emulation conformance, 193 passed on the H200). Retaken in session 17
WITHOUT a hardware run (the session had no GPU time): the main loop's stage copies went back to
their pre-PDL order (activations, then weights; the PDL prologue is unchanged), because NVRTC 13.5
spilled the sm_90a fp8 block-scale 128x128 tile (140 spill stores) with the weights first. Each
stage's two copies target disjoint shared memory and are committed together, so only the issue
order changed; the next GPU session must re-run test_w8a8_conformance.py and
test_ppu_w8a8_conformance.py (benchmarks/notes/session17.md). Retaken in session 23 for the sm_90a
cubins only: the modules' quantizer entries wait for the previous grid (griddepcontrol.wait;
ActQuantizer launches them with PDL), the GEMM entries' code is unchanged. On the H200 with that
change: test_act_quant_cuda.py (codes and scales bit-identical to the reference), the W8A8 /
W4A8 split-K, user-API and PDL-chain tests of test_w8a8_conformance.py and the MoE a8
conformance passed (benchmarks/notes/session23.md, section 2). Retaken in session 26 for the
quantizer entries (every case: they share each module): 16-byte loads, quotients by
RoundedDivisor, per-token rows kept in shared memory, two chunks per lane in group mode; the GEMM
entries' code is unchanged. On the H200 with exactly that code: test_act_quant_cuda.py (with a
4M-value bit-identity test), test_w8a8_conformance.py, test_w8a8_wgmma_conformance.py, 268 passed
(benchmarks/notes/session26.md, run 42). Retaken in session 28: the decode and mid tiles (at most
64 rows) of formats with activation-group or weight-block scales copy them with each stage and
promote from shared memory (every cubin's bytes changed; W8A8-fp8's decode kernel was checked to
keep its SASS). On
the H200 with exactly that code: test_w8a8_conformance.py + test_ppu_w8a8_conformance.py 176
passed, compute-sanitizer memcheck / racecheck clean on an FP8 block-128 split-K decode case
(benchmarks/notes/session28.md, run 62). Retaken in session 51 WITHOUT a hardware run (no device
was lent): the quantizer gained the fused input GLU (ActSpec.input_glu, a template parameter and
a new header for the activation functions), which moved the headers' line tables and so every
cubin's bytes; the SASS of all 69 cases, addresses stripped, is identical to the previous
headers' (benchmarks/notes/session51/sass_same.py), so no instruction changed.
test_w8a8_nvidia_identity.py compares against them.

Regenerate (only for a deliberate NVIDIA kernel change that has been re-verified on hardware):
    uv run python packages/humming-cuda/tests/w8a8_identity_cases.py
"""

from __future__ import annotations

from pathlib import Path

from identity_fixture import write_fixture
from w8a8_cases import FORMATS, W4_FORMATS, make_spec, make_w4_spec

from humming_core.device import GemmProblem
from humming_cuda.caps import caps_for_arch
from humming_cuda.kernels.w8a8 import FAMILY

FIXTURE = Path(__file__).parent / "fixtures" / "w8a8_nvidia_sha256.json"
ARCHS = ("sm_80", "sm_90a")
# The heuristic's decode, mid and prefill tiles (promoting and not, 8- and 4-bit weights).
M_SIZES = (1, 64, 512)


def _specs() -> list[tuple[str, object]]:
    specs = []
    for i, f in enumerate(FORMATS):
        out = ("bf16", "fp16", "fp32")[i % 3]
        specs.append((f"{f[0]}-{f[1]}-{f[2]}-{out}", make_spec(*f, bias=i % 2 == 0, out=out)))
    for i, f in enumerate(W4_FORMATS):
        out = ("fp16", "fp32", "bf16")[i % 3]
        name = f"{f[0]}x{f[1]}-{f[2]}-g{f[3]}{f[4]}-{out}"
        specs.append((name, make_w4_spec(*f, bias=i % 2 == 1, out=out)))
    return specs


def identity_cases() -> list[tuple[str, object, object]]:
    """(case id, spec, config) for every format the arch supports x the heuristic tile per M."""
    cases = []
    for arch in ARCHS:
        caps = caps_for_arch(arch)
        for name, spec in _specs():
            for m in M_SIZES:
                problem = GemmProblem(n=4096, k=4096, m=m, act_dtype=spec.act.dtype.name)
                if FAMILY.supports(spec, problem, caps):
                    cfg = FAMILY.candidates(spec, problem, caps)[0]
                    cases.append((f"{arch}-{name}-m{m}", spec, cfg))
    return cases


if __name__ == "__main__":
    write_fixture(FIXTURE, FAMILY, identity_cases())
