"""The routed register-A wgmma kernels of a few layers: SASS instruction count, the main loop's
instructions (operands included, labels dropped) as a hash, registers, compile seconds (session 49).

    python3 sass_routed_rs_kernels.py OUT.json

Two trees' files compare which kernels' main loops a header change left identical.
"""

import hashlib
import json
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "packages/humming-cuda/tests"))

from sass_audit import disassemble, listing, main_loop_range

from humming_core.device import GemmProblem
from humming_core.ops.layer import M_BUCKETS
from humming_core.spec import preset
from humming_cuda.device import CudaDevice

LAYERS = ((4096, 4096), (4096, 14336), (8192, 28672), (2048, 7168), (6144, 4096))


def instructions(sass: str) -> list[str]:
    """One entry per listing item: the instruction's words, or '' for a label."""
    full = []
    for line in sass.splitlines():
        text = line.strip()
        if text.startswith(".") and text.endswith(":"):
            full.append("")
        elif text.startswith("/*") and "*/" in text:
            words = text.split("*/", 1)[1].strip().lstrip("{").split()
            if words:
                full.append(" ".join(words))
    return full


def summary(artifact, seconds: float) -> dict:
    sass = disassemble(artifact.binary)
    items, full = listing(sass), instructions(sass)
    found = main_loop_range(items)
    loop = (
        [re.sub(r"\.L_x_\d+", "L", t) for t in full[found[1] : found[2] + 1] if t] if found else []
    )
    return {
        "instr": sum(1 for op, _ in items if op),
        "loop_len": len(loop),
        "loop_sha": hashlib.sha256("\n".join(loop).encode()).hexdigest()[:16],
        "s": round(seconds, 3),
        "regs": artifact.meta["resources"]["registers"],
        "spills": artifact.meta["resources"]["spill_stores"],
    }


def main() -> None:
    device = CudaDevice.for_arch("sm_90a")
    out = {}
    for name in ("W4A16_G128", "MXFP4", "W8A16"):
        spec = preset(name)
        for n, k in LAYERS:
            for m in M_BUCKETS:
                c = device.candidates(spec, GemmProblem(n=n, k=k, m=m))[0]
                if c.family != "wna16_wgmma" or not c.weights_in_registers or c.rs_stream_k:
                    continue
                fields = (c.rs_block_m, c.rs_block_n, c.rs_ctas_per_sm, c.stages, c.group_m)
                key = "|".join(map(str, (name, *fields, c.rs_cluster_split, c.rs_split_scatter)))
                if key not in out:
                    start = time.perf_counter()
                    artifact = device.compile(device.render(spec, c))
                    out[key] = summary(artifact, time.perf_counter() - start)
                    print(key, out[key], flush=True)
    Path(sys.argv[1]).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
