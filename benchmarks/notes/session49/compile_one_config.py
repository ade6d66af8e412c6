"""One fixed register-A config's compile under a tree, for bisecting (session 49).

    PYTHONPATH=TREE/packages/humming-cuda/src:TREE/packages/humming-core/src \\
        python3 compile_one_config.py BLOCK_M

W4A16 g128, rs_block_m BLOCK_M, split 1, 4 stages, group_m 1 (fields the tree lacks are left
out): min of 5 compile seconds, the cubin's bytes and its SASS instruction count (deterministic,
unlike the seconds on a shared box).
"""

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("CUDA_CACHE_DISABLE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "packages/humming-cuda/tests"))

from sass_audit import disassemble

from humming_core.spec import preset
from humming_cuda.device import CudaDevice
from humming_cuda.kernels.wna16_wgmma import WgmmaWna16Config

device = CudaDevice.for_arch("sm_90a")
want = {"arch": "sm_90a", "weights_in_registers": True, "rs_block_m": int(sys.argv[1])}
want |= {"split_k": 1, "stages": 4, "group_m": 1, "pdl": True}
config = WgmmaWna16Config(**{k: v for k, v in want.items() if k in WgmmaWna16Config.model_fields})
source = device.render(preset("W4A16_G128"), config)
artifact = device.compile(source)
seconds = []
for _ in range(5):
    start = time.perf_counter()
    device.compile(source)
    seconds.append(time.perf_counter() - start)
lines = (line.strip() for line in disassemble(artifact.binary).splitlines())
count = sum(1 for line in lines if line.endswith(";") and not line.startswith("."))
print(f"{min(seconds):.3f} cubin={len(artifact.binary)} sass_instr={count}")
