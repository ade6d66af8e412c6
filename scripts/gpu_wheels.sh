#!/usr/bin/env bash
# Run here (with network), once: fetch the wheels the offline GPU machine lacks into .whl/: our
# dependencies and build backend, and the published humming-kernels (the benchmarks' peer baseline;
# import name `humming`) with the pure-Python dependencies the GPU image may lack
# (ignored by git via .git/info/exclude, carried to the device with `carry: [".whl"]`).
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl \
  pydantic==2.13.4 pydantic-core==2.46.4 typing-inspection annotated-types hatchling trove-classifiers \
  humming-kernels==0.1.20 tqdm tabulate safetensors
