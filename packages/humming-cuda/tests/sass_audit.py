"""Checks on the SASS that NVRTC makes, for ptxas bugs that no source-level test can see.

The one checked now: a memory instruction reading a uniform register that no instruction of the
kernel writes. ptxas 13.0 emits `LDGSTS ... [R9+UR0], desc[UR1][R6.64]` (UR0/UR1 never written)
for some evict-first weight copies; on an H200 that is CUDA_ERROR_ILLEGAL_INSTRUCTION, and the
context is lost with it. The offset-plus-descriptor form itself is legal (ptxas 13.5 writes
`[R19+UR4], desc[UR5]` with UR4 = 0 and UR5 the policy word), so the check is "every uniform
register a memory operand names is written somewhere", not "descriptors are even".
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

# One instruction line of `nvdisasm -c`: /*0f70*/ [@P3 ]OPCODE operands ;
_INSTRUCTION = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)\s*([^;]*);")


def unwritten_uniform_operands(sass: str) -> list[str]:
    """The memory instructions of `sass` whose address or descriptor names a uniform register that
    no instruction writes. SASS names the destination first, so an instruction whose first operand
    is a bare URn writes it (ULDC, UMOV, S2UR, R2UR, and sm_100+'s LDCU alike); .64 / .WIDE forms
    write a pair, .128 four."""
    written: set[int] = set()
    memory_ops: list[tuple[list[int], str]] = []
    for line in sass.splitlines():
        m = _INSTRUCTION.match(line)
        if not m:
            continue
        opcode, operands = m.groups()
        dest = re.fullmatch(r"UR(\d+)", operands.split(",")[0].strip())
        if dest:
            width = 4 if ".128" in opcode else 2 if (".64" in opcode or ".WIDE" in opcode) else 1
            written.update(range(int(dest.group(1)), int(dest.group(1)) + width))
        if "desc[" in operands:
            named = re.findall(r"\+UR(\d+)", operands) + re.findall(r"desc\[UR(\d+)\]", operands)
            memory_ops.append(([int(r) for r in named], line.strip()))
    return [line for regs, line in memory_ops if any(r not in written for r in regs)]


def nvdisasm() -> str:
    """The nvdisasm of the nvidia-cuda-nvdisasm wheel (a dev dependency), else one on PATH."""
    import nvidia

    for root in nvidia.__path__:
        for candidate in sorted(Path(root).glob("cu*/bin/nvdisasm")):
            if os.access(candidate, os.X_OK):
                return str(candidate)
    found = shutil.which("nvdisasm")
    if found is None:
        raise FileNotFoundError(
            "nvdisasm not found: install the nvidia-cuda-nvdisasm wheel (in the dev group) or put "
            "a CUDA toolkit's bin/ on PATH"
        )
    return found


def disassemble(cubin: bytes) -> str:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run(
            [nvdisasm(), "-c", f.name], check=True, capture_output=True, text=True
        ).stdout
