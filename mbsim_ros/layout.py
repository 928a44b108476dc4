"""Workspaces declared once: a flat float buffer's named views, each with its shape in terms of
the model's sizes (``nj`` joints, ``nv`` velocities, ``nq`` positions) and constants.

    DYNAMICS = Layout("DynamicsViews", [("oR", ("nj", 3, 3)), ("op", ("nj", 3)), ...])
    DYNAMICS.size(nj=..., nv=...)        # the buffer's length
    carve = DYNAMICS.carve               # compiled, in kernels: carve(ws, nj, nv) -> DynamicsViews
    DYNAMICS.views(ws, nj, nv)           # the same views for Python code (numpy, safe to keep)

(the carve step takes the dimensions the declaration uses, in the order nj, nv, nq).

From the one declaration come the size (for the allocation) and the compiled carve step that
kernels call to get their views as a namedtuple: by name (``w.oR``) or unpacked in the
declared order. Views are consecutive and disjoint by construction (test/test_layout.py
checks every declared layout), so no two names can alias one slice of the buffer.
"""
from __future__ import annotations

import sys
from collections import namedtuple

import numpy as np
from numba import carray, njit, types
from numba.core.errors import TypingError
from numba.extending import intrinsic

DIMENSIONS = ("nj", "nv", "nq")


class Layout:
    """A workspace's declaration: ``fields`` = [(name, shape)], a shape's entries ints or one
    of DIMENSIONS. ``module``: the module that owns the layout (the views' namedtuple class is
    published there, so numba's cache can find it by name)."""

    def __init__(self, name: str, fields: list[tuple[str, tuple]], module: str) -> None:
        names = [field for field, _ in fields]
        if len(set(names)) != len(names):
            raise ValueError(f"layout {name}: a view is declared twice")
        for field, shape in fields:
            for entry in shape:
                if not (isinstance(entry, int) and entry > 0 or entry in DIMENSIONS):
                    raise ValueError(f"layout {name}: view {field}: bad extent {entry!r}")
        self.name = name
        self.fields = list(fields)
        self.views_type = namedtuple(name, names)
        self.views_type.__module__ = module
        setattr(sys.modules[module], name, self.views_type)
        self.carve = self._compile(module)

    @staticmethod
    def _extent(shape, sizes: dict) -> tuple[int, ...]:
        return tuple(sizes[e] if isinstance(e, str) else e for e in shape)

    @property
    def dimensions(self) -> tuple[str, ...]:
        """The dimensions the declaration uses, in DIMENSIONS order: the carve step's
        arguments after the buffer."""
        used = {e for _, shape in self.fields for e in shape if isinstance(e, str)}
        return tuple(d for d in DIMENSIONS if d in used)

    def size(self, nj: int = 0, nv: int = 0, nq: int = 0) -> int:
        """The buffer's length for these sizes."""
        sizes = {"nj": nj, "nv": nv, "nq": nq}
        return int(sum(np.prod(self._extent(shape, sizes), dtype=np.int64)
                       for _, shape in self.fields))

    def spans(self, nj: int = 0, nv: int = 0, nq: int = 0) -> dict[str, tuple[int, int]]:
        """name -> (start, end) of each view in the buffer (for tests and tools)."""
        sizes = {"nj": nj, "nv": nv, "nq": nq}
        out, start = {}, 0
        for field, shape in self.fields:
            end = start + int(np.prod(self._extent(shape, sizes), dtype=np.int64))
            out[field] = (start, end)
            start = end
        return out

    def views(self, ws: np.ndarray, nj: int = 0, nv: int = 0, nq: int = 0):
        """The views for Python code: numpy views of ws that hold a reference to it (a view
        outlives the object that owned ws). The compiled carve is for kernels only: its views
        hold none, and one returned to Python would point into freed memory once ws goes."""
        sizes = {"nj": nj, "nv": nv, "nq": nq}
        return self.views_type(*(ws[start:end].reshape(self._extent(shape, sizes))
                                 for (_, shape), (start, end)
                                 in zip(self.fields, self.spans(nj, nv, nq).values())))

    def allocate(self, nj: int = 0, nv: int = 0, nq: int = 0) -> np.ndarray:
        return np.zeros(self.size(nj, nv, nq))

    def _compile(self, module: str):
        """The carve step, generated from the declaration: consecutive views of the buffer,
        each made with ``carray`` from the address of its first element. A reshaped slice costs
        about 20 ns a view (numba's reshape checks and reference counting), a carray under 1 ns;
        a kernel carves 17 to 41 views per call. The views hold no reference to the buffer: they
        are for the kernel that carves them, while its caller holds the buffer (as every kernel
        argument is held)."""
        total = " + ".join(self._extent_code(shape) for _, shape in self.fields)
        lines = [f"def carve(ws, {', '.join(self.dimensions)}):", "    o = 0",
                 f"    if ws.shape[0] < {total}:",
                 f"        raise ValueError('workspace too small for layout {self.name}')"]
        for field, shape in self.fields:
            extent = self._extent_code(shape)
            dims = ", ".join(map(str, shape))
            lines.append(f"    {field} = carray(element_address(ws, o), ({dims},))")
            lines.append(f"    o += {extent}")
        lines.append(f"    return {self.name}({', '.join(field for field, _ in self.fields)})")
        namespace = {self.name: self.views_type, "carray": carray,
                     "element_address": element_address}
        exec(compile("\n".join(lines), f"<layout {self.name}>", "exec"), namespace)  # noqa: S102
        carve = namespace["carve"]
        carve.__module__ = module
        carve.__qualname__ = carve.__name__ = f"carve_{self.name}"
        return njit(inline="always", error_model="numpy")(carve)

    @staticmethod
    def _extent_code(shape) -> str:
        return "(" + " * ".join(str(e) for e in shape) + ")"


@intrinsic
def element_address(typingctx, buffer, offset):
    """The address of buffer[offset] (a C-contiguous float64 vector) as a float pointer, for
    ``carray``; no bounds check (carve checks the buffer's length once)."""
    if not (isinstance(buffer, types.Array) and buffer.ndim == 1 and buffer.layout == "C"
            and buffer.dtype == types.float64):
        raise TypingError(f"a workspace must be a C-contiguous float64 vector, got {buffer}")
    signature = types.CPointer(types.float64)(buffer, offset)

    def codegen(context, builder, sig, args):
        array = context.make_array(sig.args[0])(context, builder, args[0])
        return builder.gep(array.data, [args[1]])
    return signature, codegen
