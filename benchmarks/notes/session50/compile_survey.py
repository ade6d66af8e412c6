"""Cold NVRTC seconds and SASS size of the routed kernels of a few layers (session 50): which
kernels exceed KERNELS.md's 1 s per kernel. No GPU needed (sm_90a's capability row, 132 SMs).

    PYTHONPATH=TREE/packages/humming-cuda/src:TREE/packages/humming-core/src \\
        python3 compile_survey.py TREE OUT.json W8A8_FP8,NVFP4,W8A16

Each distinct rendered source of a spec (over ops.layer's M buckets of three layers) is compiled
once to warm NVRTC, then twice more; the lower time is kept. Seconds on a shared 2-CPU box vary
by about 10%; the instruction counts are exact.
"""

import json
import os
import sys
import time

os.environ.setdefault("CUDA_CACHE_DISABLE", "1")
sys.path.insert(0, sys.argv[1] + "/packages/humming-cuda/tests")

from sass_audit import disassemble, listing

from humming_core.device import GemmProblem
from humming_core.ops.layer import M_BUCKETS
from humming_core.spec import preset
from humming_cuda.device import CudaDevice

LAYERS = ((4096, 4096), (8192, 28672), (6144, 4096))


def main() -> None:
    device = CudaDevice.for_arch("sm_90a")
    rows = []
    for name in sys.argv[3].split(","):
        spec = preset(name)
        act = spec.act.dtype.name if spec.act.dtype.name in ("fp16", "bf16") else "fp16"
        seen = set()
        for n, k in LAYERS:
            for m in M_BUCKETS:
                config = device.candidates(spec, GemmProblem(n=n, k=k, m=m, act_dtype=act))[0]
                source = device.render(spec, config)
                if source.code in seen:
                    continue
                seen.add(source.code)
                device.compile(source)
                best = float("inf")
                for _ in range(2):
                    start = time.perf_counter()
                    artifact = device.compile(source)
                    best = min(best, time.perf_counter() - start)
                items = listing(disassemble(artifact.binary))
                row = {"spec": name, "layer": f"{n}x{k}", "m": m, "family": config.family}
                row |= {"s": round(best, 3), "instr": sum(1 for op, _ in items if op)}
                row["regs"] = artifact.meta["resources"]["registers"]
                print(row, flush=True)
                rows.append(row)
    with open(sys.argv[2], "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
