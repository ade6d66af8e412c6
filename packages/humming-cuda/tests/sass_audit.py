"""Checks on the SASS that NVRTC makes, for ptxas bugs and code-quality regressions that no
source-level test can see, and the listing / main-loop finder they and
benchmarks/kernel_resources.py read it with.

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

# One instruction line of `nvdisasm -c`: /*0f70*/ [@P3 ]OPCODE operands ; (guard, opcode,
# operands). An opcode may carry a shape: QGMMA.64x128x32.F32.
_INSTRUCTION = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Za-z0-9_.]+)\s*([^;]*);")


MMA_OPS = ("HMMA", "HGMMA", "IMMA", "IGMMA", "QMMA", "QGMMA", "OMMA", "UTCHMMA", "UTCQMMA")


def listing(sass: str) -> list[tuple[str, str]]:
    """A listing in order: (opcode, branch target or '') per instruction, predicates and modifiers
    dropped, and ('', name) per label (`.L_x_3:`)."""
    items = []
    for line in sass.splitlines():
        text = line.strip()
        if text.startswith(".") and text.endswith(":"):
            items.append(("", text[:-1]))
        elif text.startswith("/*") and "*/" in text:
            words = text.split("*/", 1)[1].strip().lstrip("{").split()
            if words:
                op = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
                target = text.split("`(")[1].split(")")[0] if "`(" in text else ""
                items.append((op.split(".")[0].rstrip(";"), target))
    return items


def main_loop_range(items: list[tuple[str, str]]) -> tuple[int, int, int] | None:
    """The main loop of a `listing`: the backward branch whose range holds the most MMA
    instructions, as (MMA count, index of its label, index of the branch), or None."""
    labels = {name: i for i, (op, name) in enumerate(items) if not op}
    best = None
    for i, (op, target) in enumerate(items):
        start = labels.get(target, i) if op == "BRA" else i
        if start < i:
            mmas = sum(o in MMA_OPS for o, _ in items[start : i + 1])
            if mmas and (best is None or mmas > best[0]):
                best = (mmas, start, i)
    return best


def main_loop_opcodes(sass: str) -> list[str]:
    """The opcodes of `sass`'s main loop (main_loop_range), in order; empty without one."""
    items = listing(sass)
    found = main_loop_range(items)
    if found is None:
        return []
    _, start, end = found
    return [op for op, _ in items[start : end + 1] if op]


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
        _, opcode, operands = m.groups()
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
    try:
        import nvidia

        roots = list(nvidia.__path__)
    except ImportError:  # no nvidia wheels (a CUDA toolkit machine): PATH only
        roots = []
    for root in roots:
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


# A label line and a branch's target: .L_x_12:  /  [@P0] BRA[.U.ANY] `(.L_x_12) ;
_LABEL = re.compile(r"^(\.L_x_\d+):")
_BRANCH_TARGET = re.compile(r"`\((\.L_x_\d+)\)")
# A wgmma (HGMMA: 16-bit operands, QGMMA: fp8, IGMMA: int8) with 32-bit accumulators:
# HGMMA.64x128x16.F32[.BF16] Racc, [RA, ]gdesc[...], Racc[, gsb0]: N / 2 per thread
_WGMMA = re.compile(r"^[HQI]GMMA\.64x(\d+)x\d+\.[FS]32")


Group = tuple[frozenset, frozenset]  # (accumulator, A-fragment registers) of one wgmma group
_NO_GROUP: Group = (frozenset(), frozenset())
# Control instructions: they neither read nor write data registers the audit follows.
_CONTROL = ("BRA", "BSSY", "BSYNC", "WARPGROUP")
# Opcodes whose first register operand is read, not written: stores, reductions, control.
_NO_DESTINATION = ("ST", "RED", "ATOM", *_CONTROL)


def _wgmma_registers(shape: re.Match, operands: str) -> Group:
    """A wgmma's accumulators (N / 2 from its first operand) and, with A from registers,
    the 4 registers of its A fragment (its second operand)."""
    regs = re.findall(r"^\s*R(\d+),\s*(?:R(\d+))?", operands)[0]
    acc = range(int(regs[0]), int(regs[0]) + int(shape.group(1)) // 2)
    a = range(int(regs[1]), int(regs[1]) + 4) if regs[1] else range(0)
    return frozenset(acc), frozenset(a)


def _destination(opcode: str, operands: str) -> set[int]:
    """The registers an instruction writes: its first operand (a pair for .64 / CS2R, four for
    .128), none for stores and the like."""
    m = re.match(r"\s*R(\d+)\b", operands)
    if m is None or opcode.startswith(_NO_DESTINATION):
        return set()
    width = 4 if ".128" in opcode else 2 if (".64" in opcode or opcode.startswith("CS2R")) else 1
    return set(range(int(m.group(1)), int(m.group(1)) + width))


def _merge(old: tuple, new: tuple) -> tuple:
    """Pending groups reaching one instruction along two paths, most recent last."""
    n = max(len(old), len(new))
    pad = lambda groups: (_NO_GROUP,) * (n - len(groups)) + groups  # noqa: E731
    return tuple((a[0] | b[0], a[1] | b[1]) for a, b in zip(pad(old), pad(new), strict=True))


def accumulator_reads_in_flight(sass: str) -> list[str]:
    """Instructions that touch a wgmma group's accumulators, or write its register A fragment,
    while the group may still be in flight, found by a data flow over the kernel's branches. A
    group runs from its wgmmas (the last one marked `gsb0`) until a `WARPGROUP.DEPBAR.LE gsb0, n`
    leaves at most n groups pending; before then its accumulators have not landed and its A
    registers may still be read. ptxas 13.0 and 13.5 scheduled F2FP conversions of accumulators
    above the final DEPBAR this way in a register-A wgmma kernel
    (benchmarks/notes/wna16_wgmma_rs.md). Another group's registers (a second accumulator set) are
    free to use."""
    lines = [line for line in sass.splitlines() if _INSTRUCTION.match(line) or _LABEL.match(line)]
    labels = {m.group(1): i for i, line in enumerate(lines) if (m := _LABEL.match(line))}
    seen: dict[int, tuple] = {}
    flagged: set[int] = set()
    work: list[tuple[int, tuple, Group]] = [(0, (), _NO_GROUP)]
    while work:
        i, pending, building = work.pop()
        while i < len(lines):
            state = _merge(seen[i], pending) if i in seen else pending
            if i in seen and state == seen[i] and building == _NO_GROUP:
                break  # nothing new reaches this line
            seen[i] = pending = state
            m = _INSTRUCTION.match(lines[i])
            i += 1
            if m is None:  # a label
                continue
            guard, opcode, operands = m.groups()
            shape = _WGMMA.match(opcode)
            if shape:
                acc, a = _wgmma_registers(shape, operands)
                building = (building[0] | acc, building[1] | a)
                if "gsb0" in operands:
                    pending, building = (*pending, building)[-8:], _NO_GROUP
                continue
            if opcode.startswith("WARPGROUP.DEPBAR"):
                keep = int(operands.split(",")[-1].strip(), 16)
                pending = pending[len(pending) - keep :] if keep else ()
                continue
            live = (*pending, building)
            accumulators = set().union(*(g[0] for g in live))
            fragments = set().union(*(g[1] for g in live))
            named = {int(r) for r in re.findall(r"\bR(\d+)\b", operands)}
            if not opcode.startswith(_CONTROL) and (
                named & accumulators or _destination(opcode, operands) & fragments
            ):
                flagged.add(i - 1)
            target = _BRANCH_TARGET.search(operands) if opcode.startswith("BRA") else None
            if target:
                work.append((labels[target.group(1)], pending, building))
            if (target or opcode == "EXIT") and guard is None:
                break  # no fall-through
    return [lines[i].strip() for i in sorted(flagged)]
