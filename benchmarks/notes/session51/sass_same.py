"""Do the pinned W8A8 / W4A8 identity cases compile to the same SASS against this tree's headers
and another include/ directory? (Session 51: the fused input GLU moved the activation functions
into their own header and added a template parameter to the quantizer, which shifts line tables
and so every cubin's bytes; the fixture may be retaken only if the instructions did not change.)

    python3 benchmarks/notes/session51/sass_same.py /tmp/incB/packages/humming-cuda/src/humming_cuda/include

Prints the cases whose disassembly (addresses and encodings stripped) differs; needs nvdisasm.
"""

from __future__ import annotations

import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[2]), "packages/humming-cuda/tests"]
from points import headers_from  # noqa: E402
from sass_audit import disassemble  # noqa: E402
from w8a8_identity_cases import FAMILY, identity_cases  # noqa: E402

from humming_cuda.caps import caps_for_arch  # noqa: E402
from humming_cuda.compiler import compile_source  # noqa: E402


def instructions(sass: str) -> list[str]:
    """The listing's instructions and labels, without addresses or encodings."""
    out = []
    for line in sass.splitlines():
        text = re.sub(r"/\*[0-9a-fx]+\*/", "", line).strip()
        if text and not text.startswith("/*") and not text.startswith("//"):
            out.append(text)
    return out


def main() -> None:
    other = Path(sys.argv[1])
    cases = identity_cases()

    def sources(case):
        _, spec, cfg = case
        return FAMILY.render(spec, cfg, caps_for_arch(cfg.arch))

    rendered = [sources(c) for c in cases]
    with ThreadPoolExecutor(2) as pool:
        a = list(pool.map(lambda s: instructions(disassemble(compile_source(s).binary)), rendered))
    with headers_from(other), ThreadPoolExecutor(2) as pool:
        b = list(pool.map(lambda s: instructions(disassemble(compile_source(s).binary)), rendered))
    differ = [c[0] for c, x, y in zip(cases, a, b, strict=True) if x != y]
    print(f"{len(cases)} cases, {len(differ)} with different SASS: {differ}")


if __name__ == "__main__":
    main()
