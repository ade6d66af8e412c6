"""Argument checking before launch: each mistake is named, with what was expected and given.

Runs on the CPU. `OnCuda` tensors are CPU tensors that report being on cuda:0, so every check runs
as on a GPU (the generated fast path and the explanatory path alike); plain CPU tensors exercise
the device check.
"""

from __future__ import annotations

import ctypes

import pytest
import torch

from humming_cuda.args import ScalarArg, Signature, TensorArg


class OnCuda(torch.Tensor):
    __torch_function__ = torch._C._disabled_torch_function_impl
    is_cuda = True

    def get_device(self) -> int:
        return 0


def cuda(t: torch.Tensor) -> torch.Tensor:
    return t.as_subclass(OnCuda)


SIG = Signature(
    TensorArg("x", (torch.float16, torch.bfloat16), ("M", "K"), layout="rows"),
    TensorArg("w", torch.int32, ("N", "KP")),
    TensorArg("bias", torch.float16, ("N",), optional=True),
    TensorArg("out", torch.float16, ("M", "N")),
    ScalarArg("m", "int32", dim="M"),
    ScalarArg("alpha", "float32"),
    kernel="demo",
)
DIMS = {"N": 32, "K": 64, "KP": 8}


def args(on=cuda, **over):
    values = {
        "x": torch.zeros(4, 64, dtype=torch.float16),
        "w": torch.zeros(32, 8, dtype=torch.int32),
        "out": torch.zeros(4, 32, dtype=torch.float16),
        "alpha": 1.5,
        **over,
    }
    return {
        k: on(v) if isinstance(v, torch.Tensor) else v for k, v in values.items() if v is not None
    }


def test_well_formed_arguments_bind_dims_and_pack_in_order():
    values = args()
    dims, params = SIG.bind(values, DIMS, device_index=0)
    assert dims == {**DIMS, "M": 4}
    ptr = {k: v.data_ptr() for k, v in values.items() if isinstance(v, torch.Tensor)}
    assert params == [ptr["x"], ptr["w"], 0, ptr["out"], 4, 1.5]
    assert SIG._fast(values, dict(DIMS), 0) == params  # taken by the generated fast path
    assert SIG.pack(values, dims) == params and SIG.check(values, DIMS, 0) == dims
    assert SIG.ctypes == (ctypes.c_uint64,) * 4 + (ctypes.c_int32, ctypes.c_float)
    bias = cuda(torch.zeros(32, dtype=torch.float16))
    assert SIG.bind({**values, "bias": bias, "m": 7}, DIMS, 0)[1][2:5] == [
        bias.data_ptr(),
        values["out"].data_ptr(),
        7,
    ]


def test_device_is_checked_last_and_named():
    with pytest.raises(
        ValueError, match=r"'x': expected a tensor on a CUDA device .* got one on cpu"
    ):
        SIG.check(args(on=lambda t: t), DIMS)
    with pytest.raises(ValueError, match=r"'x': expected a tensor on cuda:1 .* got one on cpu"):
        SIG.check(args(), DIMS, device_index=1)


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"x": torch.zeros(4, 64, dtype=torch.float32)}, r"'x': expected dtype float16 or bfloat16, got float32"),
        ({"w": torch.zeros(32, 9, dtype=torch.int32)}, r"'w': expected shape \(32, 8\) \(dim 1 is KP=8\), got shape \(32, 9\)"),
        ({"out": torch.zeros(5, 32, dtype=torch.float16)}, r"'out': expected shape \(4, 32\) \(dim 0 is M=4\)"),
        ({"x": torch.zeros(4, 64, 1, dtype=torch.float16)}, r"'x': expected 2 dims \(M, K\), got shape \(4, 64, 1\)"),
        ({"w": torch.zeros(8, 32, dtype=torch.int32).T}, r"'w': expected a contiguous tensor, got strides \(1, 32\)"),
        ({"x": torch.zeros(64, 4, dtype=torch.float16).T}, r"'x': expected innermost stride 1"),
        ({"x": torch.zeros(4, 65, dtype=torch.float16)[:, 1:]}, r"'x': expected a data pointer aligned to 16 bytes"),
        ({"x": torch.zeros(4, 68, dtype=torch.float16)[:, :64]}, r"'x': expected a row stride that is a multiple of 16 bytes, got 136"),
        ({"w": None}, r"'w': expected a tensor of shape \(N, KP\), got nothing"),
        ({"bias": torch.zeros(31, dtype=torch.float16)}, r"'bias': expected shape \(32,\)"),
        ({"alpha": None}, r"scalar argument 'alpha' missing"),
        ({"alpha": "1"}, r"'alpha': expected a number \(float32\), got '1'"),
        ({"m": 2.5}, r"'m': expected an int \(int32\), got 2.5"),
        ({"w": [1, 2]}, r"'w': expected a torch.Tensor, got list"),
        ({"y": torch.zeros(1)}, r"unexpected argument\(s\) \['y'\]; this kernel takes x, w, bias, out, m, alpha"),
    ],
)  # fmt: skip
def test_each_mistake_is_named(over, message):
    values = args(**over)  # an argument set to None is left out
    assert SIG._fast(values, dict(DIMS), 0) is None  # the fast path declines ...
    with pytest.raises(ValueError, match=message) as info:  # ... and the explanation names it
        SIG.bind(values, DIMS, 0)
    assert str(info.value).startswith("demo: ")


def test_row_slices_with_aligned_stride_are_accepted_by_rows_layout():
    wide = torch.zeros(4, 128, dtype=torch.float16)[:, :64]  # row stride 256 bytes
    values = args(x=wide)
    assert SIG._fast(values, dict(DIMS), 0) is not None
    assert SIG.check(values, DIMS, 0)["M"] == 4


def test_signature_rejects_duplicates_and_unknown_c_types():
    with pytest.raises(ValueError, match=r"unique, repeated: \['a'\]"):
        Signature(ScalarArg("a", "int32"), ScalarArg("a", "int32"), kernel="dup")
    with pytest.raises(ValueError, match="C type 'int16'"):
        Signature(ScalarArg("a", "int16"), kernel="bad")
