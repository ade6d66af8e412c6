"""`humming bench` plumbing on CPU: suite selection, row shapes, roofline numbers, skipped specs and
the grouped-GEMM operands; GPU timing and kernels are replaced by stand-ins."""

from __future__ import annotations

import argparse
import json

import pytest
import torch

from humming_core.ops import MOE_BUCKETS, bucket_of
from humming_core.spec import preset
from humming_cuda.bench import baselines, cli, dense, moe
from humming_cuda.device import CudaDevice

DENSE_KEYS = {"spec", "N", "K", "M", "roof_us", "us", "host_us", "kernels"}


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers())
    return parser.parse_args(["bench", *argv])


@pytest.mark.parametrize(
    ("spec", "n", "k", "m", "want"),
    [  # KERNELS.md's W4A16 roof column
        ("W4A16_G128", 6144, 4096, 1, 3.0),
        ("W4A16_G128", 57344, 8192, 1, 56.8),
        ("W4A16_G128", 57344, 8192, 4096, 3891),
        ("W4A16_G128", 8192, 28672, 32, 28.9),
    ],
)
def test_dense_roof_matches_kernels_md(spec, n, k, m, want):
    assert dense.roof_us(preset(spec), n, k, m) == pytest.approx(want, rel=0.01, abs=0.05)


def test_act8_roof_uses_one_byte_activations_and_the_fp8_peak():
    w8, w16 = preset("W8A8_FP8"), preset("E4M3_G128")
    assert dense.act_bytes(w8) == 1 and dense.act_bytes(w16) == 2
    compute_bound = dense.roof_us(w8, 57344, 8192, 4096)  # fp8 compute-bound at M = 4096
    assert compute_bound == pytest.approx(2 * 4096 * 57344 * 8192 / dense.FP8_FLOPS * 1e6)
    fp16_bound = dense.roof_us(w16, 57344, 8192, 4096)
    assert fp16_bound / compute_bound == pytest.approx(dense.FP8_FLOPS / dense.FP16_FLOPS)


@pytest.mark.parametrize(
    ("spec", "m", "want"),
    [  # KERNELS.md's MoE roof column (Qwen3-30B-A3B experts)
        ("W4A16_G128", 1, 4.6),
        ("W4A16_G128", 8, 29.6),
        ("W4A16_G128", 32, 64.4),
        ("W4A16_G128", 8192, 625),
        ("MXFP4", 1, 4.7),
    ],
)
def test_moe_roof_matches_kernels_md(spec, m, want):
    assert moe.roof_us(preset(spec), m) == pytest.approx(want, abs=0.06, rel=0.002)


def test_expected_experts_counts_distinct_picks():
    assert moe.expected_experts(128, 8, 0) == 0
    assert moe.expected_experts(128, 8, 1) == pytest.approx(8)
    assert moe.expected_experts(128, 8, 8) == pytest.approx(128 * (1 - (120 / 128) ** 8))
    assert moe.expected_experts(128, 8, 8192) == pytest.approx(128)


def test_suite_selection():
    assert cli.suite_call(_args()) == (dense, {})
    module, kwargs = cli.suite_call(_args("--suite", "act8", "--m", "1,16"))
    assert module is dense and kwargs == {
        "specs": dense.ACT8_SPECS,
        "ms": (1, 16),
        "baseline_names": dense.ACT8_BASELINES,
    }
    assert cli.suite_call(_args("--suite", "act8", "--specs", "W8A8_FP8"))[1]["specs"] == (
        "W8A8_FP8",
    )
    assert cli.suite_call(_args("--suite", "moe", "--m", "8")) == (moe, {"ms": (8,)})
    with pytest.raises(ValueError, match="--layers"):
        cli.suite_call(_args("--suite", "moe", "--layers", "64x64"))
    with pytest.raises(SystemExit):
        _args("--suite", "w4a4")


def test_each_suite_writes_its_own_json_and_png(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda: "NVIDIA H200")
    plots = []
    monkeypatch.setattr(dense, "plot", lambda result, path, title: plots.append((path, title)))
    for module in (dense, moe):
        monkeypatch.setattr(module, "run", lambda on_row, **kw: {"rows": [], "kw": sorted(kw)})
    for suite in cli.SUITES:
        assert cli.run(_args("--suite", suite)) == 0
        written = json.loads((tmp_path / f"benchmarks/results/h200/{suite}.json").read_text())
        assert written["kw"] == (["baseline_names", "specs"] if suite == "act8" else [])
        assert plots[-1] == (f"benchmarks/results/h200/{suite}.png", cli.TITLES[suite])


class _FakeConfig:
    def __init__(self, bucket: int) -> None:
        self.bucket = bucket

    def model_dump(self, mode: str) -> dict:
        return {"family": "fake", "bucket": self.bucket}


class _FakeLayer:
    """A layer whose config names its bucket (the MoE buckets: the dense ones, then on to 65536)."""

    n_out, out_dtype = 8, torch.bfloat16
    released = False

    def config_for(self, rows):
        return _FakeConfig(bucket_of(rows, MOE_BUCKETS))

    def run(self, x, out):
        return out

    def release(self):
        self.released = True


def _fake_timing(monkeypatch, modules, us=10.0):
    for module in modules:
        monkeypatch.setattr(module, "graph_time_us", lambda fn, calls: (fn(0), us)[1])
        monkeypatch.setattr(module, "host_overhead_us", lambda fn, gpu, calls: 1.5)


def test_dense_grid_rows_and_baseline_set(monkeypatch):
    built = []
    _fake_timing(monkeypatch, [dense])
    layers = []
    monkeypatch.setattr(
        dense,
        "_rotated_layers",
        lambda spec, n, k, dev, copies: layers.append(_FakeLayer()) or layers[-1:],
    )

    def fp8(x, n, copies):
        built.append((x.shape[0], n))
        return lambda i: None

    def fp16(x, n, copies):
        raise baselines.Unavailable("no cuBLAS here")

    monkeypatch.setattr(baselines, "cublaslt_fp8", fp8)
    monkeypatch.setattr(baselines, "cublas_fp16", fp16)
    result = dense.run(
        specs=dense.ACT8_SPECS[:2],
        layers=((256, 128),),
        ms=(1, 16),
        log=lambda line: None,
        baseline_names=dense.ACT8_BASELINES,
        device="cpu",
    )
    rows = result["rows"]
    assert [(r["spec"], r["M"]) for r in rows] == [
        (s, m) for s in dense.ACT8_SPECS[:2] for m in (1, 16)
    ]
    assert all(set(r) == DENSE_KEYS and set(r["us"]) == {"humming", "cublaslt_fp8"} for r in rows)
    # the kernel of each point: the config of the layer's bucket for M (M=16 -> bucket 16)
    assert [r["kernels"] for r in rows[:2]] == [
        {"gemm": {"family": "fake", "bucket": b}} for b in (1, 16)
    ]
    assert built == [(1, 256), (16, 256)], "a baseline is measured once per (N, K, M)"
    assert "cublas_fp16" not in result["omitted"]  # not asked for, so never tried
    assert len(layers) == 2 and all(layer.released for layer in layers)
    result = dense.run(("W8A16",), ((256, 128),), (1,), lambda line: None, device="cpu")
    assert result["omitted"]["cublas_fp16"] == "no cuBLAS here"
    assert set(result["rows"][0]["us"]) == {"humming", "cublaslt_fp8"}
    with pytest.raises(ValueError, match="unknown baselines"):
        dense.run(baseline_names=("cutlass",), device="cpu")


def test_moe_skips_specs_without_a_moe_kernel():
    device = CudaDevice.for_arch("sm_90a")
    assert moe.unsupported_reason(device, preset("W4A16_G128")) is None
    assert moe.unsupported_reason(device, preset("MXFP4")) is None
    assert moe.unsupported_reason(device, preset("MXFP4_A8")) is None
    # no MoE kernel takes 128x128 block weight scales with per-group activation scales yet
    assert "moe_w8a8: " in moe.unsupported_reason(device, preset("FP8_BLOCK128"))


def test_moe_grid_rows(monkeypatch):
    _fake_timing(monkeypatch, [dense, moe], us=20.0)
    monkeypatch.setattr(moe, "get_device", lambda: CudaDevice.for_arch("sm_90a"))
    pairs = [(_FakeLayer(), _FakeLayer())]
    monkeypatch.setattr(moe, "layer_pairs", lambda spec, dev, copies, ms: pairs * copies)
    monkeypatch.setattr(moe, "humming_fn", lambda pairs, x, routes: lambda i: None)
    grouped = []
    monkeypatch.setattr(
        baselines,
        "grouped_mm_bf16",
        lambda x, routes, e, width, copies: grouped.append(x.shape[0]) or (lambda i: None),
    )
    specs = ("W4A16_G128", "FP8_BLOCK128", "MXFP4_A8")
    result = moe.run(specs, ms=(1, 32, 2048), log=lambda line: None, device="cpu")
    assert set(result["skipped"]) == {"FP8_BLOCK128"}
    assert result["skipped"]["FP8_BLOCK128"].startswith("no MoE kernel on cuda: ")
    rows = result["rows"]
    assert [(r["spec"], r["M"]) for r in rows] == [
        (s, m) for s in ("W4A16_G128", "MXFP4_A8") for m in (1, 32, 2048)
    ]
    for r in rows:
        assert set(r) == DENSE_KEYS | {"E", "topk"}
        bucket = {1: 8, 32: 256, 2048: 16384}[r["M"]]  # M * top-8 routed rows
        assert r["kernels"] == {k: {"family": "fake", "bucket": bucket} for k in ("w13", "w2")}
        assert (r["E"], r["topk"], r["N"], r["K"]) == (128, 8, 1536, 2048)
        assert set(r["us"]) == {"humming", "grouped_mm_bf16"}
        assert r["roof_us"] == round(moe.roof_us(preset(r["spec"]), r["M"]), 3)
    assert grouped == [1, 32, 2048], (
        "the bf16 baseline does not depend on the spec: measured once per M"
    )
    assert all(layer.released for layer in pairs[0])


def test_routings_are_uniform_distinct_and_int32():
    routes = moe.routings(64, 3, torch.device("cpu"))
    assert len(routes) == 3
    for weights, ids in routes:
        assert ids.dtype == torch.int32 and ids.shape == (64, moe.TOPK)
        assert all(len(set(row.tolist())) == moe.TOPK for row in ids)
        torch.testing.assert_close(weights.sum(-1), torch.ones(64))
    assert not torch.equal(routes[0][1], routes[1][1]), "every call routes anew"


def test_sorted_operands_feed_a_grouped_gemm():
    """The offs convention torch._grouped_mm takes (int32 cumulative row ends per expert)."""
    gen = torch.Generator().manual_seed(0)
    e, topk, m, k, n = 6, 2, 9, 32, 16
    x = torch.randn(m, k, generator=gen).bfloat16()
    ids = torch.stack([torch.randperm(e, generator=gen)[:topk] for _ in range(m)]).int()
    w = torch.randn(e, n, k, generator=gen).bfloat16()
    xs, ends = baselines.sorted_by_expert(x, ids, e)
    assert ends.dtype == torch.int32 and int(ends[-1]) == m * topk
    try:
        got = torch._grouped_mm(xs, w.transpose(-2, -1), offs=ends)
    except (RuntimeError, NotImplementedError) as exc:
        pytest.skip(f"this torch has no CPU grouped GEMM: {exc}")
    order = torch.argsort(ids.reshape(-1).long(), stable=True)
    experts = ids.reshape(-1).long()[order]
    want = torch.stack(
        [x[t // topk].float() @ w[ex].float().T for t, ex in zip(order, experts, strict=True)]
    )
    torch.testing.assert_close(got.float(), want, rtol=2e-2, atol=2e-2)


def test_moe_twins_run_on_their_own_weights():
    """moe.twins clones packed weights instead of packing anew (PreparedMoe.with_weights): each
    twin runs on its own clone (on the reference device)."""
    from humming_core.numerics import quantize_weight
    from humming_core.ops import PreparedMoe, moe_align

    spec = preset("W4A16_G128").replace(layout="moe")
    cw = quantize_weight(torch.randn(4, 32, 64) * 0.1, spec)
    first, twin = moe.twins(PreparedMoe(cw, device="reference", buckets=(4,)), 2)
    assert all(twin.packed[k].data_ptr() != t.data_ptr() for k, t in first.packed.items())
    for t in twin.packed.values():
        if t.is_floating_point():
            t.zero_()  # the twin's scales
    ids = torch.tensor([[0, 1], [2, 3]], dtype=torch.int32)
    align = moe_align(ids, 16, 4, device="reference")
    x = torch.randn(2, 64).half()
    assert first.run(x, *align, 2, 16).abs().sum() > 0
    assert (twin.run(x, *align, 2, 16) == 0).all()


def test_moe_suite_runs_its_real_layers_on_the_reference_device(monkeypatch):
    """The MoE suite's own layers, routing and fused calls, shrunk and on CPU (reference device);
    only the CUDA-graph timing is replaced (it calls every captured call once). The reference
    device is named: on a GPU host the CUDA device would be active and refuse CPU tensors."""
    monkeypatch.setenv("HUMMING_DEVICE", "reference")
    for name, value in (("E", 8), ("TOPK", 2), ("HIDDEN", 64), ("WIDTH", 32)):
        monkeypatch.setattr(moe, name, value)
    calls_seen = []

    def timing(fn, calls):
        for i in range(calls):
            fn(i)
        calls_seen.append(calls)
        return 1.0

    for module in (dense, moe):
        monkeypatch.setattr(module, "graph_time_us", timing)
    monkeypatch.setattr(moe, "host_overhead_us", lambda fn, gpu, calls: 0.0)
    result = moe.run(specs=("W4A16_G128",), ms=(1, 3), log=lambda line: None, device="cpu")
    assert [r["M"] for r in result["rows"]] == [1, 3]
    assert all(r["us"]["humming"] == 1.0 for r in result["rows"])
    assert set(result["rows"][0]["us"]) | set(result["omitted"]) >= {"grouped_mm_bf16"}
    assert calls_seen[0] == 16, "decode batches capture 16 calls, each with its own routing"


@pytest.mark.parametrize(
    ("name", "folder"),
    [
        ("NVIDIA H200", "h200"),
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("NVIDIA A100-SXM4-80GB", "a100"),
        ("NVIDIA GeForce RTX 4090", "nvidia-geforce-rtx-4090"),
    ],
)
def test_default_results_folder_is_the_gpu_models(monkeypatch, tmp_path, name, folder):
    """Without --out a run writes under its own GPU model's folder: an H100's rows never land in
    the committed H200 files."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda: name)
    monkeypatch.setattr(dense, "plot", lambda result, path, title: None)
    monkeypatch.setattr(dense, "run", lambda on_row, **kw: {"rows": []})
    assert cli.results_dir(name) == f"benchmarks/results/{folder}"
    assert cli.run(_args("--suite", "dense")) == 0
    assert (tmp_path / f"benchmarks/results/{folder}/dense.json").exists()
