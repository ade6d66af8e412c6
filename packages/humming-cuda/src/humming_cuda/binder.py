"""The launch-path argument check, generated per kernel signature as straight-line Python.

Every eager launch checks every argument, and a general loop over declarations costs several
microseconds per call (the budget is 15 µs for the whole call). So each Signature gets a function
written for it, like `collections.namedtuple` does: one `if` per fact, no loop, no message
formatting. It answers only "all good" (the parameter list) or "something is off" (None); then
Signature's explanatory path finds the argument at fault and raises with a full message.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

Binder = Callable[[Mapping[str, Any], dict, "int | None"], "list[int | float] | None"]
_LAYOUTS = ("contiguous", "rows", "strided")


def _tensor_lines(i: int, arg: Any, env: dict[str, Any]) -> list[str]:
    v, dtypes = f"v{i}", f"dtypes{i}"
    env[dtypes] = arg.dtypes
    lines = [f"{v} = get({arg.name!r})"]
    if arg.optional:
        lines += [f"if {v} is None:", f"    p{i} = 0", "else:"]
        pad = "    "
    else:
        lines += [f"if {v} is None: return None"]
        pad = ""
    body = [
        f"if {v}.dtype not in {dtypes}: return None",
        f"s = {v}.shape",
        f"if len(s) != {len(arg.shape)}: return None",
    ]
    for axis, want in enumerate(arg.shape):
        if isinstance(want, str):
            body.append(f"if bound.setdefault({want!r}, s[{axis}]) != s[{axis}]: return None")
        else:
            body.append(f"if s[{axis}] != {int(want)}: return None")
    body.append(f"p{i} = {v}.data_ptr()")
    body.append(f"if p{i} % {int(arg.align)}: return None")
    if arg.layout == "contiguous":
        body.append(f"if not {v}.is_contiguous(): return None")
    elif arg.layout == "rows" and arg.shape:
        body.append(f"if {v}.stride(-1) != 1 and s[-1] > 1: return None")
        if len(arg.shape) > 1:
            body.append(f"if ({v}.stride(-2) * {v}.element_size()) % {int(arg.align)}: return None")
    body.append(
        f"if not {v}.is_cuda or (device_index is not None and {v}.get_device() != device_index): return None"
    )
    return lines + [pad + line for line in body]


def _scalar_lines(i: int, arg: Any, env: dict[str, Any]) -> list[str]:
    kinds = f"kinds{i}"
    env[kinds] = (int, float) if arg.ctype_name.startswith("float") else (int,)
    lines = [f"p{i} = get({arg.name!r})", f"if p{i} is None:"]
    if arg.dim is None:
        lines.append("    return None")
    else:
        lines += [f"    p{i} = bound.get({arg.dim!r})", f"    if p{i} is None: return None"]
    lines.append(
        f"elif type(p{i}) not in {kinds}: return None"
    )  # bool and numpy ints: explained path
    return lines


@functools.cache
def compile_binder(args: tuple[Any, ...]) -> Binder:
    """A function (values, bound, device_index) -> parameter list, or None when anything is off.

    Cached per argument tuple (the declarations are frozen dataclasses): the generated function
    depends on nothing else, and Python's compile() of it is about 1 ms, most of what binding a
    loaded kernel costs, so every kernel of a layer with one signature shares one binder.

    `bound` is updated with the dims the tensors bind. Tensors are told from scalars by their
    `dtypes` attribute (humming_cuda.args.TensorArg). Argument and dim names enter the generated
    code only as string literals (repr), so any name is safe.
    """
    env: dict[str, Any] = {"names": frozenset(a.name for a in args)}
    body = ["if not names.issuperset(values): return None", "get = values.get"]
    for i, arg in enumerate(args):
        body += _tensor_lines(i, arg, env) if hasattr(arg, "dtypes") else _scalar_lines(i, arg, env)
    body.append("return [" + ", ".join(f"p{i}" for i in range(len(args))) + "]")
    source = "def bind(values, bound, device_index):\n    try:\n"
    source += "".join(f"        {line}\n" for line in body)
    source += "    except (AttributeError, TypeError, IndexError):\n        return None\n"
    exec(compile(source, f"<humming binder {len(args)} args>", "exec"), env)
    return env["bind"]
