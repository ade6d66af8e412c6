# Source this at the start of every GPU-machine command:  source scripts/gpu_setup.sh
# The device machine has no network and no uv: wheels it lacks travel in .whl/ (scripts/gpu_wheels.sh),
# and the workspace packages are installed with pip so their entry points register.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || return 1
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1 HUMMING_TEST_REQUIRE=cuda HUMMING_CACHE_DIR=/tmp/humming-cache
python3 -m pip install -q --no-index --no-deps --no-build-isolation \
  packages/humming-core packages/humming-cuda packages/humming-ppu packages/humming-vllm || return 1
