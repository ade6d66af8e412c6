"""What the MoE WnA16 family supports, and which configs it tries per (spec, N, K, E, M bucket)."""

from __future__ import annotations

from collections.abc import Callable

from humming_core.device import DeviceCaps, GemmProblem, Support
from humming_core.spec import QuantSpec

from ..wna16.config import KernelFormat
from ..wna16.heuristics import DEFAULT_SMS, _arch_reason, _spec_reason
from ..wna16_decode import heuristics as decode
from .config import GLUS, MoeWna16Config, smem_bytes


def _block_tile(block_m: int) -> dict[str, int]:
    # The warp tiling per alignment block (16 rows per M fragment), as verified on the H200; the
    # dense family's decode tiles are not used here yet (a gathered block holds one expert's rows).
    if block_m <= 16:
        return {"m_frags": 1, "warps_n": 1, "warps_k": 4, "k_steps": 2}
    if block_m <= 32:
        return {"m_frags": 2, "warps_n": 1, "warps_k": 4, "k_steps": 2}
    if block_m <= 64:
        return {"m_frags": 4, "warps_n": 2, "warps_k": 2, "k_steps": 2}
    return {"m_frags": 4, "warps_n": 4, "warps_k": 1, "k_steps": 4}


def supports(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> Support:
    """Whether a MoE WnA16 kernel exists for this spec and problem on this arch, and if not, why."""
    reason = moe_reason(spec) or _arch_reason(spec, caps) or moe_problem_reason(spec, problem)
    return Support.no(reason) if reason else Support.yes()


def moe_reason(
    spec: QuantSpec,
    family: str = "moe_wna16",
    spec_reason: Callable[[QuantSpec], str] = _spec_reason,
) -> str:
    """Why `family` (a MoE WnA16 family with this epilogue) cannot run `spec`, or ''. The weight,
    scale and activation rules are those of its dense sibling (`spec_reason`), asked about
    dense_spec(spec): the MoE epilogue is checked here."""
    if spec.layout != "moe":
        return (
            f"layout={spec.layout!r}: the {family} family computes indexed MoE GEMMs (layout='moe')"
        )
    ep = spec.epilogue
    if ep.glu != "none" and ep.glu not in GLUS:
        return f"glu={ep.glu!r}: the {family} epilogue supports the GLUs {', '.join(GLUS)}"
    return spec_reason(dense_spec(spec))


def dense_spec(spec: QuantSpec) -> QuantSpec:
    """The same weights as a dense spec with a plain epilogue: what the dense family of the same
    formats is asked about (weight, scale and activation rules)."""
    plain = spec.epilogue.model_copy(
        update={"activation": "none", "glu": "none", "topk_weight": False}
    )
    return spec.model_copy(update={"layout": "dense", "epilogue": plain})


def moe_shape_reason(problem: GemmProblem) -> str:
    """Why `problem` is no MoE GEMM shape (no experts, empty sizes), or ''."""
    if problem.num_experts < 1:
        return f"num_experts={problem.num_experts}: a MoE layer needs at least one expert"
    if problem.n < 1 or problem.k < 1 or (problem.m is not None and problem.m < 0):
        return f"shape N={problem.n} K={problem.k} M={problem.m}: sizes must be positive"
    return ""


def moe_problem_reason(spec: QuantSpec, problem: GemmProblem) -> str:
    """Why the MoE WnA16 kernels (row gathering, GLU epilogue) cannot compute `problem`, or ''."""
    reason = moe_shape_reason(problem)
    if reason:
        return reason
    if problem.k % 8:
        return (
            f"K={problem.k}: the kernels gather activation rows in 16-byte chunks, so K must be a "
            "multiple of 8; pad K (zero weights) to the next multiple of 8"
        )
    if spec.epilogue.glu != "none" and problem.n % 2:
        return f"N={problem.n}: a GLU epilogue needs an even N (gate and up halves)"
    return ""


def block_m_for(rows: int, num_experts: int) -> int:
    """Alignment block (= tile rows) for `rows` = M * top_k routed rows over `num_experts`: the
    expected rows per expert rounded up to 16, 32 or 64, so few padding rows are computed."""
    per_expert = -(-max(rows, 1) // max(num_experts, 1))
    return 16 if per_expert <= 16 else 32 if per_expert <= 32 else 64


# The decode form takes experts expecting at most this many rows (one n8 block of tokens). H200,
# the MoE bench's layer, same run (benchmarks/moe_family_ab.py --decode, notes/session13.md), decode
# form over the dense K loop: W4A16 g128 0.66 / 0.72 / 0.70 / 0.89 at 1 / 1 / 2 / 8 rows per
# expert (M = 1, 8, 32, 128), MXFP4 0.74-0.98; with two token blocks at 16 rows (M = 256) 1.13.
MAX_DECODE_ROWS = 8

# With this many 64-column expert tiles per SM or more, the decode form takes one warp per CTA row
# of K (no split of K across warps, no reduction) and a 128-deep K step: more, smaller CTAs per SM
# keep more weight copies in flight than two CTAs that fill, drain and reduce on K = 768-2048.
# H200, the MoE bench's layer (benchmarks/moe_decode_sweep.py, notes/session18.md), W4A16 g128
# over the dense decode tile (warps_k 4): w13 0.90 / 0.93 and w2 0.97 / 0.91 of the time at
# M = 8 / 32 (12 and 16 tiles per SM); at M = 1 (1.5 / 2 tiles per SM) it lost 6-39%.
MANY_TILES_PER_SM = 4
MANY_TILES_TILE = {"warps_n": 2, "warps_k": 1, "k_steps": 8, "stages": 3}
# 4-bit float codes (MXFP4 and its fp8-activation form) on K of FLOAT4_NARROW_MIN_K or more take
# that tile with one 64-column warp per CTA and a 2-deep ring. H200, the MoE bench's layer
# (benchmarks/moe_decode_sweep.py --set warps_n=1 --set stages=2, notes/session19.md): MXFP4's w13
# (K = 2048) 0.956 / 0.968 / 0.970 of the time at M = 8 (three runs), 0.967 at M = 32, MXFP4 x
# fp8's 0.958 / 0.959; slower for MXFP4's w2 (K = 768: 1.014) and for W4A16's w13 (1.040), and
# every other warps_n 1-2 x stages 2-4 tile was slower for both GEMMs.
FLOAT4_NARROW_TILE = {"warps_n": 1, "stages": 2}
FLOAT4_NARROW_MIN_K = 2048


def _group_rows_fit(spec: QuantSpec, cfg: MoeWna16Config) -> bool:
    """One pass of the CTA's threads covers a stage's 16-bit group-scale rows, 16 bytes each
    (DecodeStageCopies' static_assert in kernel/wna16_decode.cuh)."""
    group = KernelFormat.from_spec(spec).group
    rows = 0 if group <= 0 else (1 if group >= cfg.block_k else cfg.block_k // group)
    return rows * cfg.block_n * 2 // 16 <= cfg.threads


def decode_config(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> MoeWna16Config | None:
    """The decode form (include/humming/kernel/moe_wna16_decode.cuh) when the experts expect at
    most MAX_DECODE_ROWS rows each, on the tile the dense decode kernel takes for the same weights
    and 8 tokens, or None. With MANY_TILES_PER_SM expert tiles per SM or more it takes
    MANY_TILES_TILE instead (when the stage's group-scale rows fit; 4-bit float codes on long K
    FLOAT4_NARROW_TILE over it, where theirs fit one warp's pass); a tile of two 64-column warps
    whose CTAs (one per expert block and 128 columns) would not fill two per SM takes one."""
    rows = max(problem.m if problem.m is not None else 1, 1)
    if -(-rows // max(problem.num_experts, 1)) > MAX_DECODE_ROWS:
        return None
    dense = GemmProblem(n=problem.n, k=problem.k, m=MAX_DECODE_ROWS, act_dtype=problem.act_dtype)
    plain = dense_spec(spec)
    if not decode.supports(plain, dense, caps):
        return None
    fields = decode.candidates(plain, dense, caps)[0].model_dump(
        exclude={"family", "split_k", "tokens", "ctas_per_sm", "pdl"}
    )
    blocks = min(rows, problem.num_experts)
    sms = caps.sm_count or DEFAULT_SMS
    many = MoeWna16Config(tokens=MAX_DECODE_ROWS, **{**fields, **MANY_TILES_TILE})
    if blocks * -(-problem.n // 64) >= MANY_TILES_PER_SM * sms and _group_rows_fit(spec, many):
        fmt = KernelFormat.from_spec(spec)
        narrow = many.with_fields(**FLOAT4_NARROW_TILE)
        if (
            fmt.kind == "float"
            and fmt.bits == 4
            and problem.k >= FLOAT4_NARROW_MIN_K
            and _group_rows_fit(spec, narrow)
        ):
            return narrow
        return many
    if fields["warps_n"] > 1 and blocks * -(-problem.n // 128) < 2 * sms:
        fields["warps_n"] = 1
    return MoeWna16Config(tokens=MAX_DECODE_ROWS, **fields)


def candidates(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> list[MoeWna16Config]:
    """Configs for this problem, best first; `problem.m` counts routed rows (M * top_k)."""
    if not supports(spec, problem, caps):
        return []
    fmt = KernelFormat.from_spec(spec)
    block_m = block_m_for(problem.m if problem.m is not None else 1, problem.num_experts)
    stages = 4 if caps.has("cp.async") else 2
    out: list[MoeWna16Config] = []
    first = decode_config(spec, problem, caps)
    if first is not None and smem_bytes(fmt, first) <= caps.smem_per_block:
        out.append(first)
    for want in (stages, 3):
        cfg = MoeWna16Config(arch=caps.arch, stages=min(want, stages), **_block_tile(block_m))
        while cfg.stages > 2 and smem_bytes(fmt, cfg) > caps.smem_per_block:
            cfg = cfg.with_fields(stages=cfg.stages - 1)
        if smem_bytes(fmt, cfg) <= caps.smem_per_block and cfg not in out:
            out.append(cfg)
    return out
