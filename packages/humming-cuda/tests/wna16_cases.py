"""Deterministic WnA16 test cases (the format matrix). They are checked with the shared error bound
derived in humming_core.testing.conformance (read its docstring).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from humming_core.spec import QuantSpec, ScaleSpec, WeightSpec

# (weight dtype, zero point, scale dtypes allowed, forced group size or None, global scale)
FORMATS = [
    # int1 symmetric has no positive value (amax / max_int is undefined): 1-bit is uint1 with a zero point.
    *((f"int{b}", "none", ("fp16", "bf16", "fp32"), None, False) for b in range(2, 9)),
    *((f"uint{b}", "int", ("fp16", "bf16"), None, False) for b in (1, 2, 3, 4, 5, 7, 8)),
    *((f"uint{b}", "float", ("fp16", "bf16"), None, False) for b in (4, 6, 8)),
    ("uint4", "none", ("fp16", "bf16"), None, False),
    *(
        (t, "none", ("fp16", "bf16", "fp32"), None, False)
        for t in ("e2m1", "e3m2", "e2m3", "e4m3", "e5m2", "e2m2", "e3m3")
    ),
    ("e2m1", "none", ("e8m0",), 32, False),  # MXFP4
    ("int4", "none", ("e8m0",), 32, False),  # MXINT4
    ("e4m3", "none", ("e8m0",), 32, False),  # MXFP8
    ("e2m1", "none", ("ue4m3",), 16, True),  # NVFP4
]
GROUPS = (16, 32, 64, 128, 256, "channel", "K")
MS = (1, 7, 16, 33, 128, 1000)
NS = (64, 72, 200, 256, 520)
KS = (64, 136, 256, 520, 1024)


@dataclass(frozen=True)
class Case:
    spec: QuantSpec
    m: int
    n: int
    k: int
    seed: int

    @property
    def id(self) -> str:
        w = self.spec.weight
        g = w.scale.group_size or w.scale.granularity
        out = self.spec.epilogue.out_dtype or "-"
        bias = "b" if self.spec.epilogue.bias else ""
        return (
            f"{w.dtype.name}-z{w.zero_point}-{w.scale.dtype.name}-g{g}-{self.spec.act.dtype.name}"
            f"-o{out}{bias}-m{self.m}n{self.n}k{self.k}"
        )


def make_spec(
    fmt: tuple, act: str, group, k: int, bias: bool, out: str | None, sdt: str
) -> QuantSpec:
    dtype, zero, _, forced, global_scale = fmt
    if forced is not None:
        scale = ScaleSpec(granularity="group", group_size=forced, dtype=sdt)
    elif group == "channel":
        scale = ScaleSpec(granularity="channel", dtype=sdt)
    else:
        size = 1 << max(4, (k - 1).bit_length()) if group == "K" else group
        scale = ScaleSpec(granularity="group", group_size=size, dtype=sdt)
    weight = WeightSpec(dtype=dtype, scale=scale, zero_point=zero, global_scale=global_scale)
    epilogue = {"bias": bias, "out_dtype": out}
    return QuantSpec(weight=weight, act={"dtype": act}, epilogue=epilogue)


def conformance_cases(count: int = 320, seed: int = 5) -> list[Case]:
    """`count` cases: every format at least 4 times, other axes sampled with a fixed seed."""
    rng = random.Random(seed)
    cases = []
    for i in range(count):
        fmt = FORMATS[i % len(FORMATS)]
        act = rng.choice(("fp16", "bf16"))
        m, n, k = rng.choice(MS), rng.choice(NS), rng.choice(KS)
        group = rng.choice(GROUPS)
        out = rng.choice((None, None, "fp32", "bf16" if act == "fp16" else "fp16"))
        sdt = rng.choice(fmt[2])
        spec = make_spec(fmt, act, group, k, rng.random() < 0.4, out, sdt)
        cases.append(Case(spec, m, n, k, seed=1000 + i))
    return cases


def random_weight(case: Case, device: str) -> torch.Tensor:
    g = torch.Generator(device="cpu").manual_seed(case.seed)
    w = torch.randn(case.n, case.k, generator=g) * 0.05
    return w.to(device)
