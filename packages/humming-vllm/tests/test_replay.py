"""Replay of tensors recorded from real vLLM layers on the CPU (record_replay.py) through the
vLLM-free core: the canonical weight each layer was prepared from, its input and its output.

On the CPU the recorded output must be the reference numerics up to the order of the fp32
sums (the CPU's BLAS picks it, and it differs between CPUs: two of the fixtures differ in two
elements by one fp16 ulp on a CPU other than the recording one); on an NVIDIA GPU the real kernels
must match within the error bound derived in humming_core.testing.conformance."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors import safe_open

from humming_core.packing import CanonicalWeight
from humming_core.spec import QuantSpec

FIXTURES = sorted((Path(__file__).parent / "fixtures" / "replay").glob("*.safetensors"))


def _load(path: Path) -> tuple[CanonicalWeight, torch.Tensor, torch.Tensor]:
    """(canonical weight, the GEMM's input after the act-order gather, the recorded output)."""
    with safe_open(path, "pt") as f:
        meta = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open has no iter)
    cw = CanonicalWeight(
        QuantSpec.from_json(meta["spec"]),
        int(meta["n"]),
        int(meta["k"]),
        tensors["cw.qweight"],
        tensors["cw.scales"],
        tensors.get("cw.zeros"),
        tensors.get("cw.global_scale"),
        tensors.get("cw.bias"),
    )
    x = tensors["x"]
    index = tensors.get("input_index")
    if index is not None:  # as HummingLinearMethod.apply: index == K reads a zero column
        x = torch.nn.functional.pad(x, (0, 1)).index_select(-1, index)
    return cw, x, tensors["out"]


def test_fixtures_exist_and_are_small():
    assert len(FIXTURES) >= 5
    assert sum(p.stat().st_size for p in FIXTURES) < 400_000


def _summation_order_slack(x: torch.Tensor, cw: CanonicalWeight, ref: torch.Tensor, out):
    """How far two roundings of one GEMM may lie apart when only the order of their fp32 sums
    differs: each sum of K products is within gamma_K * sum(|x_i w_i|) of the exact one
    (gamma_K = K u / (1 - K u), u = 2^-24), and each side then rounds to the output dtype (at most
    |value| * eps apart between the two roundings, or a subnormal step)."""
    from humming_core.numerics import dequantize_weight

    u = 2.0**-24
    gamma = cw.k * u / (1 - cw.k * u)
    magnitude = x.double().abs() @ dequantize_weight(cw).double().abs().T
    info = torch.finfo(out.dtype)
    rounding = torch.maximum(ref.double().abs(), out.double().abs()) * info.eps
    return 2 * gamma * magnitude + rounding + info.smallest_normal * info.eps


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_recorded_outputs_are_the_reference_numerics(path):
    from humming_core.numerics import reference_gemm

    cw, x, out = _load(path)
    ref = reference_gemm(x, cw)
    assert ref.dtype == out.dtype and ref.shape == out.shape
    diff = (ref.double() - out.double()).abs()
    assert bool((diff <= _summation_order_slack(x, cw, ref, out)).all()), float(diff.max())


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)")
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_replay_on_cuda_kernels_within_the_conformance_bound(path):
    from humming_core.jit import compile_count
    from humming_core.ops import PreparedGemm
    from humming_core.testing.conformance import within_bound

    cw, x, out = _load(path)
    layer = PreparedGemm(cw.to("cuda"), "cuda")
    layer.run(x.cuda())  # warm-up
    before = compile_count()
    got = layer.run(x.cuda())
    assert compile_count() == before, "a kernel was compiled after the layer was prepared"
    assert within_bound(got, x, cw) <= 1.0
    assert within_bound(out, x, cw) <= 1.0  # the recorded CPU output, by the same bound
