#!/bin/bash
# Session 37 (carry .whl .abx): session 35's run93 (the 128-column tile over every split at the
# mid-M points, the cost model's fit data) with wna16_wgmma/heuristics.py as of 367f6f6^ swapped
# in (.abx/wna16_wgmma_heuristics_old.py = git show 367f6f6^:<that file>), as run93.sh asks: the
# device's copy of the tree is thrown away after, so nothing is restored.
cp .abx/wna16_wgmma_heuristics_old.py packages/humming-cuda/src/humming_cuda/kernels/wna16_wgmma/heuristics.py || exit 1
timeout 470 bash benchmarks/notes/session35/run93.sh
