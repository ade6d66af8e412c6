"""A chain of GEMMs launched with programmatic dependent launch (PDL), each reading the output of
the one before: the check that a kernel reads its x only after griddepcontrol.wait."""

from __future__ import annotations

import torch


def check_pdl_chain(device, m: int, n: int = 4096, links: int = 6):
    """Six W4A16 g128 GEMMs of an n x n layer at M = m, the device's choice, each reading the
    output of the one before from a NaN-filled buffer: a kernel that read its x before the
    previous kernel finished would see NaNs or half-written rows. The chain must equal the same
    calls with a device sync between each (the kernels are deterministic: split-K partials are
    added in split order), eagerly and replayed from a CUDA graph. Returns the config."""
    from humming_core.device import GemmProblem
    from humming_core.numerics import quantize_weight
    from humming_core.spec import presets

    spec = presets.W4A16_G128
    config = device.candidates(spec, GemmProblem(n=n, k=n, m=m, act_dtype="fp16"))[0]
    assert config.pdl == device.caps().has("pdl"), config
    kernel = device.load(device.compile(device.render(spec, config)))
    layout = device.weight_layout(spec, config)
    gen = torch.Generator().manual_seed(13)
    calls = []
    for _ in range(links):
        w = quantize_weight((torch.randn(n, n, generator=gen) * 0.02).cuda(), spec)
        calls.append(kernel.prepare(**layout.pack(w, "cuda")))
    x = torch.randn(m, n, generator=gen).half().cuda()

    assert_chain_ordered(calls, x, torch.float16)
    return config


def check_quantized_chain(spec, m: int, n: int = 4096, links: int = 6) -> str:
    """The same check through the user API for a spec whose activations are quantized on the GPU:
    each layer's quantizer (launched with PDL on sm_90+) must read x, the previous layer's
    output, only after griddepcontrol.wait. Returns the family the layers ran at this M."""
    from humming_core.numerics import quantize_weight
    from humming_core.ops import bucket_of, prepare

    gen = torch.Generator().manual_seed(17)
    layers = [
        prepare(quantize_weight(torch.randn(n, n, generator=gen) * 0.02, spec), "cuda")
        for _ in range(links)
    ]
    dtype = getattr(torch, {"bf16": "bfloat16", "fp16": "float16"}[spec.output_dtype])
    x = torch.randn(m, n, generator=gen).to(dtype).cuda()

    calls = [lambda h, out, layer=layer: layer.run(h, out=out) for layer in layers]
    assert_chain_ordered(calls, x, dtype)
    return layers[0].configs[bucket_of(m)].family


def assert_chain_ordered(calls: list, x: torch.Tensor, dtype: torch.dtype) -> None:
    """Each call(h, out) reads the previous output h from a NaN-filled buffer: the chain, eager and
    replayed from a CUDA graph, must equal the same calls with a device sync between each."""
    m, n = x.shape

    def chain(sync: bool) -> list[torch.Tensor]:
        outs = [torch.full((m, n), float("nan"), dtype=dtype, device="cuda") for _ in calls]
        h = x
        for call, out in zip(calls, outs, strict=True):
            call(h, out)
            if sync:
                torch.cuda.synchronize()
            h = out
        return outs

    stepwise = chain(sync=True)
    assert all(torch.isfinite(o).all() for o in stepwise)
    for _ in range(3):
        chained = chain(sync=False)
        torch.cuda.synchronize()
        for a, b in zip(chained, stepwise, strict=True):
            assert torch.equal(a, b)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = chain(sync=False)
    for _ in range(3):
        for o in captured:
            o.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        for a, b in zip(captured, stepwise, strict=True):
            assert torch.equal(a, b)
