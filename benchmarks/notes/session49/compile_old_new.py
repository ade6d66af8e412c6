"""Cold compile of the W4A16 g128 4096x4096 layer's kernels under a tree (session 49).

    PYTHONPATH=TREE/packages/humming-cuda/src:TREE/packages/humming-core/src \\
        python3 compile_old_new.py TREE

Run once per tree (e.g. a `git archive` of 7e6ff3d, session 12's code, and HEAD), alternating:
each kernel compiled 5 times by jit_bench.measure_cold of that tree; median and min per kernel.
"""

import os
import statistics
import sys
import tempfile

sys.path.insert(0, sys.argv[1] + "/benchmarks")
os.environ["HUMMING_CACHE_DIR"] = tempfile.mkdtemp()

import jit_bench

from humming_core.spec import preset
from humming_cuda.device import CudaDevice

device = CudaDevice.for_arch("sm_90a")
spec = preset("W4A16_G128")
configs = jit_bench.layer_configs(device, spec, 4096, 4096)
rows = jit_bench.measure_cold(device, [device.render(spec, c) for c in configs], repeats=5)
for config, row in zip(configs, rows, strict=True):
    block = getattr(config, "rs_block_m", None)
    split = getattr(config, "split_k", None)
    print(config.family, block, split, "median", row["seconds"], "min", min(row["samples"]))
mins = [min(r["samples"]) for r in rows]
print("mean of mins", round(statistics.mean(mins), 3), "max of mins", max(mins), "n", len(rows))
