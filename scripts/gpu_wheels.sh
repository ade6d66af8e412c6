#!/usr/bin/env bash
# Run here (with network), once: fetch the wheels the offline GPU machine lacks into .whl/
# (ignored by git via .git/info/exclude, carried to the device with `carry: [".whl"]`).
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl \
  pydantic==2.13.4 pydantic-core==2.46.4 typing-inspection annotated-types hatchling trove-classifiers
