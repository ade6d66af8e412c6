"""The published-humming MoE adapter (bench/peer.py's `moe`) against a stand-in `humming` package
that records how it is driven: expert-stacked HummingLayers built by the documented flow, routing
aligned (vLLM's layout) to the M block of the kernel the peer's own heuristic picks for each layer,
w13 -> SiLU-and-mul (process_input) -> w2 chained as indexed GEMMs, and every failure turned into
an omission with its reason. The real package runs only on the GPU host."""

from __future__ import annotations

import sys
import types
from types import SimpleNamespace
from typing import ClassVar

import pytest
import torch

from humming_core.numerics.moe import moe_align
from humming_cuda.bench import dense, moe, peer
from humming_cuda.bench.baselines import Unavailable

E, TOPK, HIDDEN, WIDTH, M = 4, 2, 32, 8, 3
BLOCKS = {2 * WIDTH: 4, HIDDEN: 8}  # the fake heuristic's M block per layer (by N): w13 4, w2 8
PEER_MODULES = ("humming", "humming.layer", "humming.tune", "humming.forward")


class FakeMoeLayer(torch.nn.Module):
    built: ClassVar[list[FakeMoeLayer]] = []
    fail_on: ClassVar[str | None] = None

    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs, self.steps, self.calls = kwargs, [], []
        self.shape_n, self.humming_config = kwargs["shape_n"], None
        FakeMoeLayer.built.append(self)

    def load_from_unquantized(self, w):
        self.steps.append(("load", tuple(w.shape), w.dtype))

    def transform(self):
        if FakeMoeLayer.fail_on == "transform":
            raise RuntimeError("no kernel for this format")
        self.humming_config = SimpleNamespace(layer=self)
        self.steps.append(("transform",))

    def forward(self, inputs, outputs, **kwargs):
        if FakeMoeLayer.fail_on == "forward":
            raise RuntimeError("launch failed")
        self.calls.append({"inputs": inputs, "outputs": outputs, **kwargs})
        outputs.copy_(torch.arange(outputs.shape[0]).unsqueeze(1).expand_as(outputs))  # row ids
        return outputs


tunings, processed = [], []


def fake_tuning(layer_config, shape_m, gemm_type, device):
    tunings.append((layer_config.layer, shape_m, gemm_type, device))
    return {"block_shape": (BLOCKS[layer_config.layer.shape_n], 64, 64)}


def fake_process_input(config, inputs, *, activation_type, activation_impl):
    processed.append((config.layer, inputs, activation_type, activation_impl))
    act = inputs[:, : inputs.shape[1] // 2] + 0.5  # GLU halves the width
    fp8 = config.layer.kwargs["input_config"] is not None  # per-token scales for 8-bit inputs
    return act, None, torch.full((act.shape[0], 1), 2.0) if fp8 else None


@pytest.fixture
def published(monkeypatch):
    # the routing alignment runs on the active device: the reference one for these CPU tensors
    # (on a GPU host CUDA would be active and refuse them)
    monkeypatch.setenv("HUMMING_DEVICE", "reference")
    modules = {name: types.ModuleType(name) for name in PEER_MODULES}
    modules["humming.layer"].HummingLayer = FakeMoeLayer
    modules["humming.tune"].get_heuristics_config = fake_tuning
    modules["humming.forward"].may_process_input = fake_process_input
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    FakeMoeLayer.built, FakeMoeLayer.fail_on = [], None
    tunings.clear()
    processed.clear()
    peer.release_moe()
    return FakeMoeLayer


def _routes(count: int = 2, m: int = M) -> list[tuple]:
    gen = torch.Generator().manual_seed(0)
    return [
        (
            torch.softmax(torch.randn(m, TOPK, generator=gen), -1),
            torch.stack([torch.randperm(E, generator=gen)[:TOPK] for _ in range(m)]).int(),
        )
        for _ in range(count)
    ]


def _x(m: int = M) -> torch.Tensor:
    return torch.randn(m, HIDDEN, dtype=torch.bfloat16)


def test_every_moe_spec_has_a_peer_format():
    assert set(moe.SPECS) <= set(peer.FORMATS)
    weights, inputs = peer.FORMATS["MXFP4_A8"]
    assert weights == peer.FORMATS["MXFP4"][0] and inputs == {"dtype": "float8e4m3"}


def test_expert_layers_follow_the_documented_flow(published):
    peer.moe("MXFP4_A8", _x(), _routes(), copies=2, num_experts=E, width=WIDTH)
    assert len(published.built) == 4, "a (w13, w2) pair per weight copy"
    shapes = [(layer.kwargs["shape_n"], layer.kwargs["shape_k"]) for layer in published.built]
    assert shapes == [(2 * WIDTH, HIDDEN), (HIDDEN, WIDTH)] * 2
    for layer, (n, k) in zip(published.built, shapes, strict=True):
        assert layer.kwargs["num_experts"] == E and layer.kwargs["torch_dtype"] == torch.bfloat16
        assert layer.kwargs["weight_config"] == peer.FORMATS["MXFP4"][0]
        assert layer.kwargs["input_config"] == {"dtype": "float8e4m3"}
        assert layer.steps[:2] == [("load", (E, n, k), torch.bfloat16), ("transform",)]
    first, second = (layer.kwargs["weight_config"] for layer in published.built[:2])
    assert first is not second, "each layer gets its own config: the peer may edit it in place"


def test_a_call_aligns_per_kernel_block_and_chains_the_layers(published):
    x, routes = _x(), _routes()
    fn = peer.moe("MXFP4_A8", x, routes, copies=2, num_experts=E, width=WIDTH)
    # the peer's heuristic is asked once per layer, for M * top_k routed rows of an indexed GEMM
    w13, w2 = published.built[:2]
    assert tunings == [(w13, M * TOPK, "indexed", x.device), (w2, M * TOPK, "indexed", x.device)]
    for layer in published.built:
        layer.calls.clear()
    processed.clear()
    out = fn(1)  # weight copy 1, routing 1
    w13, w2 = published.built[2:]
    assert not published.built[0].calls and not published.built[1].calls
    (c13,), (c2,) = w13.calls, w2.calls
    ids = routes[1][1]
    for call, block, top_k in ((c13, 4, TOPK), (c2, 8, 1)):
        want = moe_align(ids, block, E)
        got = (call["sorted_ids"], call["expert_ids"], call["num_tokens_padded"])
        assert all(torch.equal(g, w) for g, w in zip(got, want, strict=True)), block
        assert call["top_k"] == top_k and call["compute_config"] == {"gemm_type": "indexed"}
        assert call["tuning_config"] == {"block_shape": (block, 64, 64)}
    assert c13["inputs"] is x and c13["outputs"].shape == (M * TOPK, 2 * WIDTH)
    # SiLU-and-mul on the split halves of w13's rows, by the peer's kernel, with w2's format
    ((layer, h13, kind, impl),) = processed
    assert layer is w2 and h13 is c13["outputs"] and kind == "binary_split"
    assert impl == peer.SILU_MUL
    torch.testing.assert_close(c2["inputs"], h13[:, :WIDTH] + 0.5)
    torch.testing.assert_close(c2["input_scale"], torch.full((M * TOPK, 1), 2.0))
    assert out is c2["outputs"] and out.shape == (M * TOPK, HIDDEN), "unweighted [M*top_k, H]"


def test_sixteen_bit_formats_pass_no_input_scale(published):
    peer.moe("W4A16_G128", _x(), _routes(), copies=1, num_experts=E, width=WIDTH)(0)
    w13, w2 = published.built
    assert w13.kwargs["input_config"] is None
    assert w13.kwargs["weight_config"] == {"dtype": "int4", "group_size": 128}
    assert w2.calls[-1]["input_scale"] is None


def test_the_optional_topk_sum_weights_each_expert_row(published):
    routes = _routes()
    fn = peer.moe("MXFP4", _x(), routes, copies=1, num_experts=E, width=WIDTH, topk_sum=True)
    weights = routes[0][0]
    rows = torch.arange(M * TOPK, dtype=torch.float32).view(M, TOPK)  # what the fake w2 writes
    want = (weights * rows).sum(-1, keepdim=True).expand(M, HIDDEN)
    torch.testing.assert_close(fn(0).float(), want, rtol=1e-2, atol=1e-2)  # bf16 rows


def test_layers_are_built_once_per_spec_and_freed_for_the_next(published):
    peer.moe("MXFP4", _x(1), _routes(m=1), copies=4, num_experts=E, width=WIDTH)
    peer.moe("MXFP4", _x(64), _routes(m=64), copies=2, num_experts=E, width=WIDTH)
    assert len(published.built) == 8, "large M reuses the first two of the four copies"
    peer.moe("W4A16_G128", _x(1), _routes(m=1), copies=2, num_experts=E, width=WIDTH)
    assert len(published.built) == 12 and len(peer._built_moe) == 1
    peer.release_moe()
    assert not peer._built_moe


def test_failures_become_omissions_with_the_reason(published, monkeypatch):
    x, routes = _x(), _routes()
    with pytest.raises(Unavailable, match="no published-humming equivalent of NVFP4"):
        peer.moe("NVFP4", x, routes, 1, E, WIDTH)
    published.fail_on = "forward"
    with pytest.raises(Unavailable, match="MoE failed on MXFP4: RuntimeError\\('launch failed"):
        peer.moe("MXFP4", x, routes, 1, E, WIDTH)
    assert not peer._built_moe, "a failed build is not kept"
    published.fail_on = "transform"
    with pytest.raises(Unavailable, match="MoE failed on MXFP4: RuntimeError\\('no kernel"):
        peer.moe("MXFP4", x, routes, 1, E, WIDTH)
    published.fail_on = None
    monkeypatch.delattr(sys.modules["humming.forward"], "may_process_input")
    with pytest.raises(Unavailable, match=r"has no humming\.forward\.may_process_input"):
        peer.moe("MXFP4", x, routes, 1, E, WIDTH)
    monkeypatch.setitem(sys.modules, "humming.tune", None)  # what a missing module imports as
    with pytest.raises(Unavailable, match="not importable"):
        peer.moe("MXFP4", x, routes, 1, E, WIDTH)


def test_the_moe_suite_reports_the_peer_per_spec(monkeypatch):
    monkeypatch.setattr(dense, "graph_time_us", lambda fn, calls: (fn(0), 30.0)[1])
    monkeypatch.setattr(moe, "graph_time_us", lambda fn, calls: 20.0)
    monkeypatch.setattr(moe, "host_overhead_us", lambda fn, gpu, calls: 1.0)
    monkeypatch.setattr(moe, "unsupported_reason", lambda device, spec: None)
    monkeypatch.setattr(moe, "get_device", lambda: None)
    layer = SimpleNamespace(release=lambda: None)
    monkeypatch.setattr(moe, "layer_pairs", lambda spec, dev, copies, ms: [(layer, layer)] * 4)
    monkeypatch.setattr(moe, "humming_fn", lambda pairs, x, routes: lambda i: None)
    monkeypatch.setattr(moe, "kernel_of", lambda layer, rows: {})
    monkeypatch.setattr(moe.baselines, "grouped_mm_bf16", lambda *args: lambda i: None)
    built, released = [], []
    monkeypatch.setattr(
        moe,
        "_peer_moe",
        lambda name, x, routes, copies: built.append((name, x.shape[0], copies)) or (lambda i: 0),
    )
    monkeypatch.setattr(peer, "release_moe", lambda: released.append(True))
    result = moe.run(("W4A16_G128", "MXFP4"), ms=(1, 512), log=lambda line: None, device="cpu")
    assert all(r["us"]["peer"] == 30.0 for r in result["rows"])
    assert "peer" not in result["omitted"]
    # per spec and M, with the weight copies the humming column rotates through at that M
    assert built == [(s, m, c) for s in ("W4A16_G128", "MXFP4") for m, c in ((1, 4), (512, 2))]
    assert released == [True, True], "the peer's layers are freed after each spec"


def test_the_suite_omits_the_peer_off_cuda_and_passes_the_experts_on_cuda(monkeypatch):
    with pytest.raises(Unavailable, match="CUDA devices only"):
        moe._peer_moe("MXFP4", _x(), _routes(), 2)
    seen = []
    monkeypatch.setattr(peer, "moe", lambda *args: seen.append(args) or "fn")
    x = SimpleNamespace(device=torch.device("cuda"))  # a CUDA tensor's device, without a GPU
    assert moe._peer_moe("MXFP4", x, ["route"], 2) == "fn"
    assert seen == [("MXFP4", x, ["route"], 2, moe.E, moe.WIDTH)]
