"""What the sm_90a wgmma conformance tests (test_w8a8_wgmma_conformance.py,
test_w4a8_wgmma_conformance.py, test_wna16_wgmma_conformance.py) share: the device fixture's arch
check, the parallel build of every case's kernel, the guarded call (x padded with NaN columns after
K, the output a view inside a poisoned buffer), the check of an 8-bit-activation case and the CUDA
graph replay.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

POISON = -7777.0
TORCH_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def sm90_device(family: str):
    """A CudaDevice on an sm_90a GPU; skips on any other arch (the wgmma families need sm_90a)."""
    from humming_cuda.device import CudaDevice

    dev = CudaDevice()
    if dev.caps().arch != "sm_90a":
        pytest.skip(f"the {family} family needs sm_90a, this GPU is {dev.caps().arch}")
    return dev


def problem_of(case):
    """The GemmProblem of a dense case (w8a8_cases.Case or wna16_cases.Case)."""
    from humming_core.device import GemmProblem

    return GemmProblem(n=case.n, k=case.k, m=case.m, act_dtype=case.spec.act.dtype.name)


# Fields a form built from the routed config sets so that it runs through the split-K workspace
# (where the heuristic routes the cluster form first, e.g. W8A8 from M = 65).
WORKSPACE = {"cluster_split": False}


def build_kernels(
    device, family, jobs: list[tuple[object, int]], update: dict | None = None
) -> list[tuple[object, object]]:
    """(config, kernel) per (case, candidate index) job, compiled in parallel up front; index 0
    is the heuristic's choice. `update` changes fields of every chosen config (another form)."""

    def build(job):
        case, index = job
        config = family.candidates(case.spec, problem_of(case), device.caps())[index]
        # validated like a hand-made config: a form the choice cannot take (thread 0's copies on
        # a tile that needs the producer warpgroup) fails here by name, not in the compiler
        config = type(config).model_validate({**config.model_dump(), **(update or {})})
        return config, device.load(device.compile(device.render(case.spec, config)))

    with ThreadPoolExecutor(max_workers=16) as pool:
        return list(pool.map(build, jobs))


def ring_kernels(device, family, cases: list, deep: list) -> dict:
    """(config, kernel) by (case id, candidate index): every case with the first candidate, and
    the `deep` ones also with the second (the deeper ring), compiled in parallel up front."""
    jobs = [(c, 0) for c in cases] + [(c, 1) for c in deep]
    built = build_kernels(device, family, jobs)
    return {(c.id, i): b for (c, i), b in zip(jobs, built, strict=True)}


def variant_kernels(device, family, cases: list, update: dict) -> dict:
    """(config, kernel) by case id: each case's first candidate with `update` applied."""
    jobs = [(c, 0) for c in cases]
    built = build_kernels(device, family, jobs, update=update)
    return {c.id: b for (c, _), b in zip(jobs, built, strict=True)}


def unsplit_kernels(device, family, cases: list) -> dict:
    """(config, kernel) by case id: the first candidate, unsplit; split counts bind the same
    loaded module (`split_kernel`: the split is a launch parameter)."""
    return variant_kernels(device, family, cases, {"split_k": 1, **WORKSPACE})


def split_kernel(device, family, case, unsplit, split: int):
    """(config, kernel) launching `split` CTAs per tile on the unsplit kernel's module."""
    from humming_cuda.kernels.split_k import split_iterations

    config, kernel = unsplit
    # the case's K has enough blocks that every requested split is launched as asked
    assert split_iterations(-(-case.k // 128), split)[0] == split
    config = config.model_copy(update={"split_k": split})
    return config, family.bind(kernel.function, case.spec, config, device.caps())


def guarded_call(
    kernel, x: torch.Tensor, n: int, out_dtype: str, k_pad: int, aligned: bool = False, **args
):
    """Run kernel(x=..., out=..., **args) with x copied into a NaN-filled buffer (k_pad NaN columns
    after K, a NaN row below) and out a [M, N] view inside a poisoned buffer; asserts that nothing
    outside the view was written and that no NaN (a read past K) reached the output. Returns out.
    The view starts 2 columns in and its rows are N + 6 apart (no row 16-byte aligned), or, when
    `aligned`, 8 columns in with rows a multiple of 8 columns apart (every row 16-byte aligned,
    what bulk-copied output rows need)."""
    m, k = x.shape
    x_big = torch.full((m + 1, k + k_pad), float("nan"), dtype=x.dtype, device="cuda")
    x_dev = x_big[:m, :k]
    x_dev.copy_(x)
    left, width = (8, -(-(n + 16) // 8) * 8) if aligned else (2, n + 6)
    out_big = torch.full((m + 2, width), POISON, dtype=TORCH_DTYPES[out_dtype], device="cuda")
    before = out_big.clone()
    out = out_big[1 : m + 1, left : n + left]
    kernel(x=x_dev, out=out, **args)
    torch.cuda.synchronize()

    inside = torch.zeros_like(out_big, dtype=torch.bool)
    inside[1 : m + 1, left : n + left] = True
    assert torch.equal(out_big[~inside].view(torch.uint8), before[~inside].view(torch.uint8)), (
        "wrote outside [M, N]"
    )
    assert not torch.isnan(out).any(), "NaN in the output (read past K, or a bad dequant)"
    return out


def replay_in_graph(kernel, x: torch.Tensor, out: torch.Tensor, weights: dict) -> None:
    """Capture kernel(x, out, weights) in a CUDA graph and replay it into a zeroed `out`. A warm-up
    call runs outside the capture first: it encodes the TMA tensor maps."""
    kernel(x=x, out=out, **weights)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kernel(x=x, out=out, **weights)
    out.zero_()
    graph.replay()
    torch.cuda.synchronize()


def act8_inputs(case):
    """(x, canonical weight, static activation scale or None) of a w8a8_cases.Case."""
    from w8a8_cases import static_scale

    from humming_core.numerics import quantize_weight

    gen = torch.Generator().manual_seed(case.seed)
    x = torch.randn(case.m, case.k, generator=gen).to(TORCH_DTYPES[case.x_dtype])
    x[0, : min(case.k, 16)] *= 40.0  # an outlier row segment: token and group scales differ
    bias = torch.randn(case.n, generator=gen) * 0.1 if case.spec.epilogue.bias else None
    cw = quantize_weight(torch.randn(case.n, case.k, generator=gen) * 0.05, case.spec, bias=bias)
    scale = static_scale(x, case.spec.act.dtype.name) if case.spec.act.quant == "static" else None
    return x, cw, scale


def act8_output(case, device, config, kernel) -> torch.Tensor:
    """One w8a8_cases.Case's output on `kernel` (built for `config`), through guarded_call."""
    x, cw, scale = act8_inputs(case)
    weights = device.weight_layout(case.spec, config).pack(cw, "cuda")
    extra = {} if scale is None else {"act_scale": scale.cuda()}
    return guarded_call(kernel, x.cuda(), case.n, case.spec.output_dtype, 16, **extra, **weights)


def check_cluster_split_case(family, case, device, cluster, workspace, splits) -> None:
    """Each count of `splits` as one cluster per tile (`cluster`: the case's cluster_split
    kernel, reduce_wgmma_cluster) within the bound, and bit for bit the output of the workspace
    form (`workspace`: the same case unsplit; both add the splits in split order)."""
    for split in splits:
        config, kernel = split_kernel(device, family, case, cluster, split)
        assert config.cluster_split and kernel.launcher.cluster_z_from_grid
        check_act8_case(case, device, config, kernel)
        check_same_as_workspace_form(family, case, device, config, kernel, workspace, split)


def check_scatter_split_case(family, case, device, scatter, workspace, splits) -> None:
    """Each count of `splits` summed by all of a tile's splits at once (`scatter`: the case's
    split_scatter kernel, reduce_wgmma_scatter, passed the device's resident CTAs) within the
    bound twice in a row (the tile counters back at zero after each launch), and bit for bit the
    output of the workspace form (`workspace`: the same case unsplit)."""
    for split in splits:
        config, kernel = split_kernel(device, family, case, scatter, split)
        assert config.split_scatter and kernel.scatter_ctas > 0
        check_act8_case(case, device, config, kernel)
        check_act8_case(case, device, config, kernel)
        check_same_as_workspace_form(family, case, device, config, kernel, workspace, split)


def check_same_as_workspace_form(family, case, device, config, kernel, workspace, split) -> None:
    """`kernel`'s output bit for bit that of the case's workspace split (`workspace`: the case
    unsplit, launched with `split` splits): both add the splits' partials in split order."""
    ws_config, ws_kernel = split_kernel(device, family, case, workspace, split)
    ours = act8_output(case, device, config, kernel)
    assert torch.equal(ours, act8_output(case, device, ws_config, ws_kernel)), split


def check_act8_case(case, device, config, kernel, aligned: bool = False) -> None:
    """One w8a8_cases.Case on `kernel` (built for `config`) within w8a8_cases.error_bound, the
    output in guarded_call's `aligned` view or not."""
    from w8a8_cases import error_bound

    from humming_core.numerics import reference_gemm

    x, cw, scale = act8_inputs(case)
    weights = device.weight_layout(case.spec, config).pack(cw, "cuda")
    extra = {} if scale is None else {"act_scale": scale.cuda()}
    out = guarded_call(
        kernel, x.cuda(), case.n, case.spec.output_dtype, 16, aligned, **extra, **weights
    )
    ref = reference_gemm(x, cw, act_scale_static=scale)
    err = (out.cpu().double() - ref.double()).abs()
    worst = (err / error_bound(x, cw, ref, scale)).max().item()
    assert worst <= 1.0, f"max err/bound {worst:.3f} (max err {err.max().item():.3g}, {config})"


def check_routed_graph_replay(device, preset: str, family: str) -> None:
    """The device routes an M=1030 problem of `preset` to `family`; that kernel, captured in a CUDA
    graph, replays within w8a8_cases.error_bound."""
    from w8a8_cases import Case, error_bound

    from humming_core.numerics import quantize_weight, reference_gemm
    from humming_core.spec import presets

    spec = presets.preset(preset)
    gen = torch.Generator().manual_seed(7)
    cw = quantize_weight(torch.randn(384, 512, generator=gen) * 0.05, spec)
    x = torch.randn(1030, 512, generator=gen).to(torch.bfloat16)
    config = device.candidates(spec, problem_of(Case(spec, "bf16", 1030, 384, 512, 0)))[0]
    assert config.family == family
    kernel = device.load(device.compile(device.render(spec, config)))
    weights = device.weight_layout(spec, config).pack(cw, "cuda")
    out = torch.empty(1030, 384, dtype=torch.bfloat16, device="cuda")
    replay_in_graph(kernel, x.cuda(), out, weights)
    ref = reference_gemm(x, cw)
    assert ((out.cpu().double() - ref.double()).abs() <= error_bound(x, cw, ref, None)).all()


def check_user_api_switch(device, preset: str, family: str, from_m: int = 32) -> None:
    """PreparedGemm on one packed copy: the M buckets from 16 below `from_m` run the mma.sync w8a8
    kernels, those from it up to 256 `family`; M = 5, 40 (a 128-row tile with zero rows past M on
    the wgmma kernels), 200 and 1030 match the reference."""
    from w8a8_cases import error_bound

    from humming_core.numerics import quantize_weight, reference_gemm
    from humming_core.ops import PreparedGemm
    from humming_core.spec import presets

    spec = presets.preset(preset)
    gen = torch.Generator().manual_seed(3)
    cw = quantize_weight(torch.randn(256, 640, generator=gen) * 0.05, spec)
    layer = PreparedGemm(cw, device)
    families = {b: c.family for b, c in layer.configs.items()}
    for bucket in (16, 32, 64, 128, 256):
        assert families[bucket] == ("w8a8" if bucket < from_m else family), families
    for m in (5, 40, 200, 1030):
        x = torch.randn(m, 640, generator=gen).to(torch.float16)
        out = layer.run(x.cuda())
        ref = reference_gemm(x, cw)
        bound = error_bound(x, cw, ref, None)
        assert ((out.cpu().double() - ref.double()).abs() <= bound).all(), f"M={m}"
