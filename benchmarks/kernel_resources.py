"""What a point's kernel costs in registers, spills and instructions, without a GPU (issue 6/7/8
tuning: check a header change here before spending device time on it).

    python3 benchmarks/kernel_resources.py W4A8_FP8:57344x8192:1 [--arch sm_90a] \\
        [--b .ab/packages/humming-cuda/src/humming_cuda/include] [--ops 12] [--set stages=3] \\
        [--sass DIR]

For each point SPEC:NxK:M: the config the device would choose on `--arch` (with `--set` changes),
rendered once and compiled by NVRTC against this tree's headers (A) and, with `--b`, against
another version's include/ directory (B). Prints each entry's registers, spill stores / loads,
stack and the SASS opcode counts of the whole cubin (static counts: an unrolled main loop
dominates them, but they are not executed counts; ncu_stalls.py gives those on the GPU). The
opcode counts need nvdisasm (the nvidia-cuda-nvdisasm wheel, or a CUDA toolkit on PATH);
`--sass DIR` also writes each variant's disassembly there (`<kernel>.<A|B>.sass`), to read a main
loop instruction by instruction. `--loop` also reports the main loop (the backward branch whose
range holds the most MMA instructions): its static instruction count per MMA, and that of its
MMA part (from the label before its first MMA to the back-edge, a straight line in the unrolled
loops here; the rest of the range holds the copies, cold paths included).
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

from points import Point, field_values, headers_from, with_fields

from humming_cuda.compiler import compile_source
from humming_cuda.device import CudaDevice

# nvdisasm lookup, disassembly and the main-loop finder are the SASS audit's
# (packages/humming-cuda/tests/sass_audit.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "packages" / "humming-cuda" / "tests"))
from sass_audit import MMA_OPS, disassemble, listing, main_loop_range, nvdisasm


def have_nvdisasm() -> bool:
    try:
        nvdisasm()
    except FileNotFoundError:
        return False
    return True


def opcodes(sass: str) -> collections.Counter:
    """Static SASS opcode counts of a listing."""
    return collections.Counter(op for op, _ in listing(sass) if op)


def main_loop(sass: str) -> str:
    """The main loop's per-MMA static counts (see the module docstring), or why there is none."""
    items = listing(sass)
    found = main_loop_range(items)
    if found is None:
        return "no loop with MMA instructions"
    mmas, start, end = found

    def ops(lo: int, hi: int) -> list[str]:
        return [op for op, _ in items[lo : hi + 1] if op]

    first = next(j for j in range(start, end) if items[j][0] in MMA_OPS)
    part = max(j for j in range(start, first) if not items[j][0])
    whole, mma_part = ops(start, end), ops(part, end)
    top = collections.Counter(mma_part).most_common(8)
    return (
        f"main loop: {mmas} MMA, {len(whole)} instructions ({len(whole) / mmas:.1f} per MMA); "
        f"MMA part {len(mma_part)} ({len(mma_part) / mmas:.1f} per MMA): "
        + "  ".join(f"{op} {n}" for op, n in top)
    )


def report(
    label: str, artifact, with_sass: bool, ops: int, sass_dir: Path | None, loop: bool = False
) -> None:
    for name, res in artifact.meta["functions"].items():
        keys = ("registers", "spill_stores", "spill_loads", "stack_bytes")
        print(f"  {label} {name}: " + "  ".join(f"{k} {res.get(k)}" for k in keys))
    for line in artifact.meta["log"].splitlines():
        if "serialized" in line:  # ptxas C751x: the wgmmas wait for each other
            print(f"  {label} {line.strip()}")
    if with_sass:
        sass = disassemble(artifact.binary)
        if sass_dir is not None:
            sass_dir.mkdir(parents=True, exist_ok=True)
            (sass_dir / f"{artifact.name}.{label}.sass").write_text(sass)
        counts = opcodes(sass)
        top = "  ".join(f"{op} {n}" for op, n in counts.most_common(ops))
        print(f"  {label} {sum(counts.values())} instructions: {top}")
        if loop:
            print(f"  {label} {main_loop(sass)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("points", nargs="+", help="SPEC:NxK:M")
    parser.add_argument("--arch", default="sm_90a")
    parser.add_argument("--b", type=Path, help="another version's include/ root")
    parser.add_argument("--set", action="append", default=[], help="config field=value")
    parser.add_argument("--ops", type=int, default=12, help="opcodes to list")
    parser.add_argument("--sass", type=Path, help="write each variant's disassembly here")
    parser.add_argument("--loop", action="store_true", help="the main loop's counts per MMA")
    args = parser.parse_args()
    if args.b is not None and not (args.b / "humming").is_dir():
        raise SystemExit(f"--b {args.b} has no humming/ headers: pass the include/ directory")
    device = CudaDevice.for_arch(args.arch)
    update = field_values(args.set)
    with_sass = have_nvdisasm()
    for text in args.points:
        point = Point.parse(text)
        config = device.candidates(point.spec, point.problem)[0]
        if update:
            config = with_fields(config, update)
        source = device.render(point.spec, config)
        fields = config.model_dump(exclude={"arch", "family"})
        print(f"{text} on {args.arch}: {config.family} {fields}")
        report("A", compile_source(source), with_sass, args.ops, args.sass, args.loop)
        if args.b is not None:
            with headers_from(args.b.resolve()):
                report("B", compile_source(source), with_sass, args.ops, args.sass, args.loop)


if __name__ == "__main__":
    main()
