import sys, os, tempfile, statistics, time
root = sys.argv[1]
sys.path.insert(0, root + "/benchmarks")
os.environ["HUMMING_CACHE_DIR"] = tempfile.mkdtemp()
import jit_bench as jb
from humming_cuda.device import CudaDevice
from humming_core.spec import preset
import humming_cuda; print(humming_cuda.__file__)
dev = CudaDevice.for_arch("sm_90a")
spec = preset("W4A16_G128")
configs = jb.layer_configs(dev, spec, 4096, 4096)
srcs = [dev.render(spec, c) for c in configs]
rows = jb.measure_cold(dev, srcs, repeats=5)
for c, r in zip(configs, rows):
    print(c.family, getattr(c,"rs_block_m",None), getattr(c,"split_k",None), "median", r["seconds"], "min", min(r["samples"]), r.get("registers"))
print("mean", round(statistics.mean(r["seconds"] for r in rows),3), "max", max(r["seconds"] for r in rows), "n", len(rows))
print("mean of mins", round(statistics.mean(min(r["samples"]) for r in rows),3), "max of mins", max(min(r["samples"]) for r in rows))
