"""Load and launch on a real GPU: correctness, CUDA graphs, torch.compile, streams, smem opt-in."""

from __future__ import annotations

import ctypes
import subprocess
import sys
import textwrap
import threading

import pytest
import torch
from testkernels import HMMA_SIGNATURE, hmma_reference, hmma_source, smem_source

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]


@pytest.fixture(scope="module")
def arch():
    from humming_cuda.caps import arch_for_capability

    return arch_for_capability(*torch.cuda.get_device_capability())


def _kernel(arch, has_bias=True, cluster=None, pdl=False):
    from humming_cuda.compiler import compile_source
    from humming_cuda.launch import BoundKernel, LaunchShape
    from humming_cuda.loader import load

    function = load(compile_source(hmma_source(arch, has_bias)))

    def shape(dims):
        return LaunchShape(grid=(dims["N"] // 8, dims["M"] // 16, 1), block=(32, 1, 1))

    return BoundKernel("hmma", function, HMMA_SIGNATURE, shape, cluster=cluster, pdl=pdl)


def _operands(m=64, n=32, k=64, seed=0):
    # Small integers: every product and sum is exact in fp32 and fp16, so results compare exactly.
    gen = torch.Generator(device="cuda").manual_seed(seed)
    ints = lambda *s: torch.randint(-3, 4, s, generator=gen, device="cuda").half()  # noqa: E731
    return ints(m, k), ints(n, k), ints(n), torch.empty(m, n, dtype=torch.float16, device="cuda")


def test_launched_kernel_is_exact(arch):
    a, b, bias, out = _operands()
    _kernel(arch)(a=a, b=b, bias=bias, out=out, scale=0.5)
    torch.testing.assert_close(out, hmma_reference(a, b, bias, 0.5), rtol=0, atol=0)
    no_bias = _kernel(arch, has_bias=False)
    no_bias(a=a, b=b, out=out, scale=2.0)
    torch.testing.assert_close(out, hmma_reference(a, b, None, 2.0), rtol=0, atol=0)


def test_replayed_in_a_cuda_graph_without_compiling(arch):
    from humming_core.jit import compile_count

    kernel = _kernel(arch)
    a, b, bias, out = _operands()
    kernel(a=a, b=b, bias=bias, out=out, scale=1.0)  # warm-up outside capture
    torch.cuda.synchronize()
    compiles = compile_count()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kernel(a=a, b=b, bias=bias, out=out, scale=1.0)
    for seed in (1, 2):
        a2, b2, bias2, _ = _operands(seed=seed)
        a.copy_(a2), b.copy_(b2), bias.copy_(bias2)
        out.zero_()
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(out, hmma_reference(a2, b2, bias2, 1.0), rtol=0, atol=0)
    assert compile_count() == compiles


def test_called_under_torch_compile_fullgraph(arch):
    kernel = _kernel(arch)

    @torch.library.custom_op("humming_test::hmma", mutates_args=())
    def hmma(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor, scale: float) -> torch.Tensor:
        out = torch.empty(a.shape[0], b.shape[0], dtype=a.dtype, device=a.device)
        kernel(a=a, b=b, bias=bias, out=out, scale=scale)
        return out

    @hmma.register_fake
    def _(a, b, bias, scale):
        return a.new_empty(a.shape[0], b.shape[0])

    a, b, bias, _ = _operands()
    # aot_eager: dynamo and the fake kernel are what is under test, not inductor's code generation
    compiled = torch.compile(
        lambda a, b, bias: hmma(a, b, bias, 0.5) + 1, fullgraph=True, backend="aot_eager"
    )
    torch.testing.assert_close(
        compiled(a, b, bias), hmma_reference(a, b, bias, 0.5) + 1, rtol=0, atol=0
    )


def test_side_stream_other_thread_pdl_and_cluster(arch):
    a, b, bias, out = _operands(m=32, n=64)
    want = hmma_reference(a, b, bias, 1.0)
    stream = torch.cuda.Stream()
    kernel = _kernel(arch)
    with torch.cuda.stream(stream):
        kernel(a=a, b=b, bias=bias, out=out, scale=1.0)
    stream.synchronize()
    torch.testing.assert_close(out, want, rtol=0, atol=0)

    errors = []

    def run():  # a thread torch never used has no current CUDA context
        try:
            out.zero_()
            kernel(a=a, b=b, bias=bias, out=out, scale=1.0)
            torch.cuda.synchronize()
        except Exception as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start(), thread.join()
    assert not errors and torch.equal(out, want)

    if "clusters" in _features(arch):
        out.zero_()
        _kernel(arch, cluster=(2, 1, 1), pdl=True)(a=a, b=b, bias=bias, out=out, scale=1.0)
        torch.testing.assert_close(out, want, rtol=0, atol=0)


def _features(arch):
    from humming_cuda.caps import caps_for_arch

    return caps_for_arch(arch).features


def test_dynamic_smem_above_48k(arch):
    from humming_cuda.compiler import compile_source
    from humming_cuda.launch import Launcher
    from humming_cuda.loader import load

    fn = load(compile_source(smem_source(arch)))
    blocks, per_block = 4, 16384  # 64 KB of floats per block: needs the opt-in
    x = torch.randn(blocks * per_block, device="cuda")
    y = torch.empty_like(x)
    launch = Launcher(fn, (ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int32))  # (x, y, n)
    launch((blocks, 1, 1), (256, 1, 1), [x.data_ptr(), y.data_ptr(), x.numel()], smem=per_block * 4)
    assert fn.max_dynamic_smem == per_block * 4
    torch.testing.assert_close(y, x.view(blocks, per_block).flip(1).reshape(-1), rtol=0, atol=0)


def test_argument_errors_are_clear(arch):
    kernel = _kernel(arch)
    a, b, bias, out = _operands()
    with pytest.raises(
        ValueError, match=r"'b': expected shape \(32, 64\) \(dim 1 is K=64\), got shape \(32, 48\)"
    ):
        kernel(a=a, b=b[:, :48].contiguous(), bias=bias, out=out, scale=1.0)
    with pytest.raises(ValueError, match=r"'a': expected dtype float16, got bfloat16"):
        kernel(a=a.bfloat16(), b=b, bias=bias, out=out, scale=1.0)
    with pytest.raises(ValueError, match=r"'out': expected a tensor on cuda:0 .* got one on cpu"):
        kernel(a=a, b=b, bias=bias, out=out.cpu(), scale=1.0)
    with pytest.raises(ValueError, match=r"'a': expected a contiguous tensor"):
        kernel(a=a.T.contiguous().T, b=b, bias=bias, out=out, scale=1.0)


def test_detect_and_plugin_on_this_gpu(arch):
    from humming_cuda.detect import detect
    from humming_cuda.device import CudaDevice
    from humming_cuda.plugin import PLUGIN

    caps = detect(0)
    props = torch.cuda.get_device_properties(0)
    assert caps.arch == arch and caps.name == props.name
    assert caps.sm_count == props.multi_processor_count and caps.l2_bytes == props.L2_cache_size
    assert caps.smem_per_block >= 48 * 1024 and caps.mem_bandwidth_gbs > 100
    assert PLUGIN.probe() and PLUGIN.probe_reason == ""
    assert CudaDevice().caps() == caps


def test_probe_creates_no_cuda_state_in_a_fresh_process():
    code = textwrap.dedent(
        """
        import torch
        from humming_cuda.plugin import PLUGIN
        assert PLUGIN.probe(), PLUGIN.probe_reason
        assert not torch.cuda.is_initialized(), "the probe initialised torch's CUDA"
        from cuda.bindings import driver
        err, ctx = driver.cuCtxGetCurrent()  # not initialised at all (ctx None) is fine too
        assert ctx is None or int(ctx) == 0, "the probe left a current context"
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr


def test_device_load_needs_a_binding(arch):
    from humming_cuda.compiler import compile_source
    from humming_cuda.device import CudaDevice

    artifact = compile_source(hmma_source(arch))
    with pytest.raises(ValueError, match="carries no family/spec/config binding"):
        CudaDevice().load(artifact)
