"""The published-humming baseline adapter (bench/peer.py) against a stand-in `humming.layer` that
records how it is driven: the documented HummingLayer flow (construct with the format, load a float
weight, transform, call), one layer per weight copy, and every failure turned into an omission with
its reason. The real package runs only on the GPU host (scripts/gpu_wheels.sh carries it there)."""

from __future__ import annotations

import sys
import types
from typing import ClassVar

import pytest
import torch

from humming_cuda.bench import dense, peer
from humming_cuda.bench.baselines import Unavailable


class FakeLayer(torch.nn.Module):
    built: ClassVar[list[FakeLayer]] = []
    fail_on: ClassVar[str | None] = None

    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs, self.steps = kwargs, []
        FakeLayer.built.append(self)

    def load_from_unquantized(self, w):
        self.steps.append(("load", tuple(w.shape), w.dtype))

    def transform(self):
        if FakeLayer.fail_on == "transform":
            raise RuntimeError("no kernel for this format")
        self.steps.append(("transform",))

    def forward(self, x):
        self.steps.append(("call", tuple(x.shape)))
        return x[:, :1]


@pytest.fixture
def published(monkeypatch):
    module = types.ModuleType("humming.layer")
    module.HummingLayer = FakeLayer
    monkeypatch.setitem(sys.modules, "humming", types.ModuleType("humming"))
    monkeypatch.setitem(sys.modules, "humming.layer", module)
    FakeLayer.built, FakeLayer.fail_on = [], None
    peer._built.clear()
    return FakeLayer


def test_every_default_spec_has_a_peer_format():
    assert set(dense.SPECS) | set(dense.ACT8_SPECS) <= set(peer.FORMATS)


def test_layers_follow_the_documented_flow(published):
    x = torch.randn(3, 256, dtype=torch.float16)
    fn = peer.dense("FP8_BLOCK128", x, 128, 256, copies=2)
    assert len(published.built) == 2
    for layer in published.built:
        kw = layer.kwargs
        assert (kw["shape_n"], kw["shape_k"], kw["torch_dtype"]) == (128, 256, torch.float16)
        assert kw["weight_config"] == {
            "dtype": "float8e4m3",
            "group_size": 128,
            "group_size_n": 128,
            "scale_dtype": "float32",
        }
        assert kw["input_config"] == {"dtype": "float8e4m3", "group_size": 128}
        assert layer.steps[:2] == [("load", (128, 256), torch.float16), ("transform",)]
    fn(1)
    assert published.built[1].steps[-1] == ("call", (3, 256))
    # each layer got its own copy of the configs: the peer may edit them in place
    assert (
        published.built[0].kwargs["weight_config"] is not published.built[1].kwargs["weight_config"]
    )


def test_layers_are_built_once_per_shape_and_freed_for_the_next(published):
    for m in (1, 8, 64):  # the bench sweeps M for one layer shape
        peer.dense("W8A16", torch.randn(m, 128, dtype=torch.float16), 64, 128, copies=2)
    assert len(published.built) == 2
    peer.dense("W8A16", torch.randn(1, 256, dtype=torch.float16), 64, 256, copies=2)
    assert len(published.built) == 4 and len(peer._built) == 1


def test_sixteen_bit_formats_pass_no_input_config(published):
    peer.dense("W4A16_G128", torch.randn(1, 128, dtype=torch.float16), 64, 128, copies=1)
    assert published.built[0].kwargs["input_config"] is None
    assert published.built[0].kwargs["weight_config"] == {"dtype": "int4", "group_size": 128}


def test_failures_become_omissions_with_the_reason(published, monkeypatch):
    x = torch.randn(1, 128, dtype=torch.float16)
    with pytest.raises(Unavailable, match="no published-humming equivalent of NVFP4"):
        peer.dense("NVFP4", x, 64, 128, copies=1)
    published.fail_on = "transform"
    with pytest.raises(Unavailable, match="failed on MXFP4: RuntimeError\\('no kernel"):
        peer.dense("MXFP4", x, 64, 128, copies=1)
    monkeypatch.delitem(sys.modules, "humming.layer")
    monkeypatch.setitem(sys.modules, "humming", None)  # what an uninstalled package imports as
    with pytest.raises(Unavailable, match="not importable"):
        peer.dense("MXFP4", x, 64, 128, copies=1)


def test_spec_dependent_baselines_are_measured_per_spec(monkeypatch):
    """cuBLAS is timed once per (N, K, M) for all specs; the peer once per spec as well."""
    monkeypatch.setattr(dense, "graph_time_us", lambda fn, calls: 7.0)
    measured, omitted, built = {}, {}, []
    for spec in ("W4A16_G128", "W8A16"):
        row = dense.Row(spec, 64, 128, 1, 1.0)
        builders = {
            b: (lambda b=b, spec=spec: built.append((b, spec)) or (lambda i: None))
            for b in ("cublas_fp16", "peer")
        }
        dense.measure_baselines(row, builders, (64, 128, 1), 4, measured, omitted)
        assert row.us == {"cublas_fp16": 7.0, "peer": 7.0}
    assert built == [("cublas_fp16", "W4A16_G128"), ("peer", "W4A16_G128"), ("peer", "W8A16")]
