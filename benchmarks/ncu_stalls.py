"""Where a humming kernel's warps stall, per SASS instruction (issue 6/7 tuning on the GPU host).

    python3 benchmarks/ncu_stalls.py W4A16_G128:6144x4096:4096 [--set stages=6] [--top 25] \\
        [--out $OUT/stalls] [--full] [--kernel humming_w8a8] [--peer | --cublas]
    python3 benchmarks/ncu_stalls.py moe:W4A16_G128:8192 [--gemm w2] ...

Profiles the third call of benchmarks/profile_gemm.py for the point (its `--set` config changes
pass through), or for a `moe:SPEC:M` point the third call's w13 (or w2) GEMM of
benchmarks/profile_moe.py's layer, with ncu's WarpStateStats and SourceCounters sections (`--full`:
every section), keeps the report (`<out>.ncu-rep`) and its per-instruction page (`<out>.csv`), and
prints the instructions with the most warp-stall samples (share of all samples, main reason) after
the kernel's stall reasons; with `--full`, first the report's details page (throughputs, pipe
utilisation, occupancy), also kept as `<out>.details.txt`. `--cublas` profiles cuBLASLt fp8's
kernel at the point's shape instead (profile_gemm.py --cublas), a reference for the same
sections. Needs ncu.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
SAMPLES = "Warp Stall Sampling (All Samples)"


# cuBLASLt's Hopper GEMM kernels (names vary by version: nvjet_*, sm90_xmma_gemm_*, cutlass3x_*)
CUBLAS_KERNELS = "regex:nvjet|gemm|xmma|cutlass"


def target(
    point: str,
    sets: list[str],
    gemm: str,
    kernel: str = "humming",
    peer: bool = False,
    cublas: bool = False,
) -> list[str]:
    """ncu's kernel filter and the profiled program for `point` (see the module docstring);
    `kernel`: the dense point's kernel-name regex (a quantized-activation layer launches its
    quantizer before the GEMM, so `humming_w8a8` picks the GEMM); `peer`: the published package's
    GEMM (function `humming`; profile_gemm.py --peer makes one eager call before its three)."""
    if peer:
        program = [sys.executable, str(HERE / "profile_gemm.py"), point, "--peer"]
        return ["--kernel-name", "humming", "--launch-skip", "3", *program]
    if cublas:  # the baseline makes one call when built, then profile_gemm.py's three
        program = [sys.executable, str(HERE / "profile_gemm.py"), point, "--cublas"]
        return ["--kernel-name", CUBLAS_KERNELS, "--launch-skip", "3", *program]
    if point.startswith("moe:"):
        skip = (
            4 if gemm == "w13" else 5
        )  # two humming_moe_w* kernels per call (not the alignment), third call's
        # names end in the config hash: a W4A8 module's quantizer entries (..._quant_bf16) do not
        return ["--kernel-name", "regex:humming_moe_w[a-z0-9_]*_[0-9a-f]{16}$",
                "--launch-skip", str(skip),
                sys.executable, str(HERE / "profile_moe.py"), point[4:]]  # fmt: skip
    program = [sys.executable, str(HERE / "profile_gemm.py"), point]
    for s in sets:
        program += ["--set", s]
    return ["--kernel-name", f"regex:{kernel}", "--launch-skip", "2", *program]


def profile(
    point: str,
    sets: list[str],
    out: Path,
    gemm: str = "w13",
    full: bool = False,
    kernel: str = "humming",
    peer: bool = False,
    cublas: bool = False,
) -> None:
    """ncu over the third call of `point`: writes out.ncu-rep and out.csv (and with `full`,
    out.details.txt)."""
    sections = ["--set", "full"] if full else [
        "--section", "WarpStateStats", "--section", "SourceCounters"]  # fmt: skip
    cmd = [
        "ncu",
        *sections,
        "--launch-count",
        "1",
        "-f",
        "-o",
        str(out),
        *target(point, sets, gemm, kernel, peer, cublas),
    ]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    if full:
        details = subprocess.run(
            ["ncu", "-i", f"{out}.ncu-rep", "--page", "details"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        out.with_suffix(".details.txt").write_text(details)
    page = subprocess.run(
        ["ncu", "-i", f"{out}.ncu-rep", "--page", "source", "--csv", "--print-source", "sass"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    out.with_suffix(".csv").write_text(page)


def _table(csv_text: str) -> tuple[list[str], list[list[str]]]:
    """(column titles, instruction rows) of the source page (its first row names the kernel)."""
    rows = list(csv.reader(csv_text.splitlines()))
    start = next(i for i, r in enumerate(rows) if SAMPLES in r)
    return rows[start], [r for r in rows[start + 1 :] if len(r) == len(rows[start])]


def _reasons(header: list[str]) -> list[int]:
    """Columns of the per-reason sample counts (stall_*, issued and not)."""
    return [i for i, h in enumerate(header) if h.startswith("stall_") and "Not Issued" not in h]


def top_stalls(csv_text: str, top: int) -> list[tuple[float, str, str, str]]:
    """(share of all stall samples, address, SASS, its main stall reason) of the `top`
    most-sampled instructions."""
    header, rows = _table(csv_text)
    at, source, reasons = header.index(SAMPLES), header.index("Source"), _reasons(header)
    total = sum(float(r[at] or 0) for r in rows) or 1.0
    ranked = sorted(rows, key=lambda r: -float(r[at] or 0))[:top]
    return [
        (
            float(r[at] or 0) / total,
            r[0],
            r[source],
            header[max(reasons, key=lambda i: float(r[i] or 0))],
        )
        for r in ranked
    ]


def reason_shares(csv_text: str) -> list[tuple[float, str]]:
    """Every stall reason's share of the kernel's samples, largest first."""
    header, rows = _table(csv_text)
    sums = {header[i]: sum(float(r[i] or 0) for r in rows) for i in _reasons(header)}
    total = sum(sums.values()) or 1.0
    return sorted(((v / total, k) for k, v in sums.items() if v), reverse=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("point", help="SPEC:NxK:M or moe:SPEC:M")
    parser.add_argument("--gemm", choices=("w13", "w2"), default="w13", help="a moe point's GEMM")
    parser.add_argument("--full", action="store_true", help="every ncu section, not only stalls")
    parser.add_argument("--set", action="append", default=[], help="config field=value")
    parser.add_argument("--kernel", default="humming", help="a dense point's kernel-name regex")
    parser.add_argument("--peer", action="store_true", help="the published package's kernel")
    parser.add_argument("--cublas", action="store_true", help="cuBLASLt fp8's kernel")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--out", default="stalls", help="report path without suffix")
    args = parser.parse_args()
    out = Path(args.out)
    profile(args.point, args.set, out, args.gemm, args.full, args.kernel, args.peer, args.cublas)
    if args.full:
        print(out.with_suffix(".details.txt").read_text())
    page = out.with_suffix(".csv").read_text()
    print("  ".join(f"{k} {100 * v:.1f}%" for v, k in reason_shares(page)[:8]))
    for share, address, sass, reason in top_stalls(page, args.top):
        print(f"{100 * share:5.1f}%  {reason:22s} {address}  {sass}")


if __name__ == "__main__":
    main()
