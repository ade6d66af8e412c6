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


# An instruction line whose opcode may carry a shape (HGMMA.64x128x16.F32), a label line, and a
# branch's target: .L_x_12:  /  [@P0] BRA[.U.ANY] `(.L_x_12) ;
_SHAPED = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Za-z0-9_.]+)\s*([^;]*);")
_LABEL = re.compile(r"^(\.L_x_\d+):")
_BRANCH_TARGET = re.compile(r"`\((\.L_x_\d+)\)")
# HGMMA.64x128x16.F32[.BF16] Racc, ..., gdesc[...], Racc[, gsb0]: N / 2 fp32 accumulators per thread
_HGMMA = re.compile(r"^HGMMA\.64x(\d+)x\d+\.F32")


def _accumulator_registers(lines: list[str]) -> set[int]:
    """Every register an HGMMA of `lines` accumulates into."""
    registers: set[int] = set()
    for line in lines:
        m = _SHAPED.match(line)
        shape = m and _HGMMA.match(m.group(2))
        if shape:
            first = int(re.match(r"\s*R(\d+)", m.group(3)).group(1))
            registers.update(range(first, first + int(shape.group(1)) // 2))
    return registers


def _touches(opcode: str, operands: str, registers: set[int]) -> bool:
    """Whether a non-wgmma instruction names one of `registers`."""
    if opcode.startswith(("HGMMA", "WARPGROUP", "BRA", "BSSY", "BSYNC")):
        return False
    return bool({int(r) for r in re.findall(r"\bR(\d+)\b", operands)} & registers)


def accumulator_reads_in_flight(sass: str) -> list[str]:
    """Instructions that touch a wgmma's accumulator registers while a wgmma group may still be in
    flight, found by a data flow over the kernel's branches. A group is in flight from its
    `gsb0` HGMMA until a `WARPGROUP.DEPBAR.LE gsb0, n` leaves at most n groups pending; reading
    or writing an accumulator register before then sees (or clobbers) a result that has not
    landed. ptxas 13.0 and 13.5 scheduled F2FP conversions of accumulators above the final
    DEPBAR this way in a register-A wgmma kernel (benchmarks/notes/wna16_wgmma_rs.md)."""
    lines = [line for line in sass.splitlines() if _SHAPED.match(line) or _LABEL.match(line)]
    accumulators = _accumulator_registers(lines)
    labels = {m.group(1): i for i, line in enumerate(lines) if (m := _LABEL.match(line))}
    pending_at = [-1] * len(lines)  # the most groups seen pending at each line (-1: unreached)
    flagged: set[int] = set()
    work = [(0, 0)] if accumulators else []
    while work:
        i, pending = work.pop()
        while i < len(lines) and pending > pending_at[i]:
            pending_at[i] = pending
            m = _SHAPED.match(lines[i])
            i += 1
            if m is None:  # a label
                continue
            guard, opcode, operands = m.groups()
            if _HGMMA.match(opcode):
                pending = min(pending + ("gsb0" in operands), 8)
            elif opcode.startswith("WARPGROUP.DEPBAR"):
                pending = min(pending, int(operands.split(",")[-1].strip(), 16))
            elif pending and _touches(opcode, operands, accumulators):
                flagged.add(i - 1)
            target = _BRANCH_TARGET.search(operands) if opcode.startswith("BRA") else None
            if target:
                work.append((labels[target.group(1)], pending))
            if (target or opcode == "EXIT") and guard is None:
                break  # no fall-through
    return [lines[i].strip() for i in sorted(flagged)]
