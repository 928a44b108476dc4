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
from numba import njit, types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.core.imputils import impl_ret_borrowed
from numba.core.typing import signature
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
        """The carve step, generated from the declaration: the buffer's length checked, then
        consecutive views of it from one intrinsic (carve_views). A reshaped slice costs about
        20 ns a view (numba's reshape checks and reference counting), a carray under 1 ns; a
        kernel carves 17 to 41 views per call. The views hold no reference to the buffer: they
        are for the kernel that carves them, while its caller holds the buffer (as every kernel
        argument is held)."""
        total = " + ".join(self._extent_code(shape) for _, shape in self.fields)
        dimensions = ", ".join(self.dimensions)
        lines = [f"def carve(ws, {dimensions}):",
                 f"    if ws.shape[0] < {total}:",
                 f"        raise ValueError('workspace too small for layout {self.name}')",
                 f"    return carve_views(ws, ({dimensions + ',' if dimensions else ''}))"]
        namespace = {"carve_views": carve_views(self)}
        exec(compile("\n".join(lines), f"<layout {self.name}>", "exec"), namespace)  # noqa: S102
        carve = namespace["carve"]
        carve.__module__ = module
        carve.__qualname__ = carve.__name__ = f"carve_{self.name}"
        return njit(inline="always", error_model="numpy")(carve)

    @staticmethod
    def _extent_code(shape) -> str:
        return "(" + " * ".join(str(e) for e in shape) + ")"


# The views come from intrinsics that write each view's array structure directly, as numba's
# ``carray`` does (np_cfarray: the same data pointer, shape, C strides, no meminfo), in one call
# for all of them: numba types and lowers one call per carve instead of an address, a shape
# tuple and a ``carray`` call per view, and a kernel inlines a carve at every call site (the
# variational routines carve 41 views each: docs/SPEED.md, "Cold compile: specializations").

def _views_type(views_type, fields_types):
    return types.BaseTuple.from_types(fields_types, views_type)


def _view(context, builder, dtype, data, shape):
    """The C-contiguous array of ``dtype`` at the pointer ``data`` with the intp extents
    ``shape``: the array structure numba's carray builds (np_cfarray: no meminfo or parent,
    nitems the product of the extents, C strides), as one value made field by field rather
    than through a structure in memory (a tenth of a view's lowering, and nothing for LLVM to
    fold back: docs/SPEED.md, "Cold compile, round 10")."""
    array_type = types.Array(dtype, len(shape), "C")
    model = context.data_model_manager[array_type]
    itemsize = context.get_abi_sizeof(context.get_data_type(dtype))
    strides, stride, nitems = [], cgutils.intp_t(itemsize), cgutils.intp_t(1)
    for extent in reversed(shape):
        strides.append(stride)
        stride = builder.mul(stride, extent)
    for extent in shape:
        nitems = builder.mul(nitems, extent, flags=["nsw"])
    fields = {"meminfo": None, "parent": None, "nitems": nitems,
              "itemsize": cgutils.intp_t(itemsize),
              "data": builder.bitcast(data, context.get_value_type(types.CPointer(dtype))),
              "shape": cgutils.pack_array(builder, list(shape)),
              "strides": cgutils.pack_array(builder, strides[::-1])}
    value = cgutils.get_null_value(model.get_value_type())
    for name, field in fields.items():
        if field is not None:
            value = builder.insert_value(value, field, model.get_field_position(name))
    return value


def carve_views(layout: "Layout"):
    """carve_views(ws, dimensions): the layout's views of ws (a C-contiguous float64 vector;
    dimensions: the tuple of the sizes its declaration uses, in DIMENSIONS order), consecutive
    from ws[0]; no check of ws's length (carve checks it)."""
    names = layout.dimensions

    def typer(typingctx, buffer, dimensions):
        if not (isinstance(buffer, types.Array) and buffer.ndim == 1 and buffer.layout == "C"
                and buffer.dtype == types.float64):
            raise TypingError(f"a workspace must be a C-contiguous float64 vector, got {buffer}")
        if not (isinstance(dimensions, types.BaseTuple) and len(dimensions) == len(names)
                and all(isinstance(d, types.Integer) for d in dimensions)):
            raise TypingError(f"layout {layout.name}: dimensions {names}, got {dimensions}")
        views = _views_type(layout.views_type, [types.Array(types.float64, len(shape), "C")
                                                for _, shape in layout.fields])

        def codegen(context, builder, sig, args):
            array = context.make_array(sig.args[0])(context, builder, args[0])
            sizes = {name: context.cast(builder, value, kind, types.intp) for name, value, kind
                     in zip(names, cgutils.unpack_tuple(builder, args[1]), sig.args[1])}
            offset = cgutils.intp_t(0)
            arrays = []
            for _, shape in layout.fields:
                extents = [sizes[e] if isinstance(e, str) else cgutils.intp_t(e) for e in shape]
                arrays.append(_view(context, builder, types.float64,
                                    builder.gep(array.data, [offset]), extents))
                length = extents[0]
                for extent in extents[1:]:
                    length = builder.mul(length, extent)
                offset = builder.add(offset, length)
            return context.make_tuple(builder, sig.return_type, arrays)
        return signature(views, buffer, dimensions), codegen
    typer.__name__ = typer.__qualname__ = f"carve_views_{layout.name}"
    return intrinsic(typer)


# -- A buffer's leading entries as an array ------------------------------------------------------
# A kernel sizes its scratch by the step's rows (m <= the buffers' capacity): the first m x nv
# entries of a flat buffer viewed as an m x nv array. numba's reshape of the slice costs about
# 17 ns (its -1 extents normalised, a C helper for the strides of any layout, reference
# counting); a C-contiguous vector's leading entries in a C-contiguous shape need none of it.

def _leading_view_typer(typingctx, flat, shape):
    if not (isinstance(flat, types.Array) and flat.ndim == 1 and flat.layout == "C"
            and flat.dtype in TABLE_DTYPES.values()):
        raise TypingError(f"leading: a C-contiguous float64 or int64 vector, got {flat}")
    if not (isinstance(shape, types.BaseTuple) and len(shape)
            and all(isinstance(e, types.Integer) for e in shape)):
        raise TypingError(f"leading: a tuple of integer extents, got {shape}")

    def codegen(context, builder, sig, args):
        array = context.make_array(sig.args[0])(context, builder, args[0])
        extents = [context.cast(builder, value, kind, types.intp) for value, kind
                   in zip(cgutils.unpack_tuple(builder, args[1]), sig.args[1])]
        return _view(context, builder, flat.dtype, array.data, extents)
    return signature(types.Array(flat.dtype, len(shape), "C"), flat, shape), codegen


_leading_view = intrinsic(_leading_view_typer)


@njit(inline="always", error_model="numpy")
def leading(flat, shape):
    """flat's first prod(shape) entries as a C-contiguous array of that shape (flat: a
    C-contiguous float64 or int64 vector), as flat[:prod(shape)].reshape(shape) without
    numba's reshape (above); ValueError where flat is shorter or an extent negative. The view
    holds no reference to flat: for the kernel that takes it, while its caller holds flat (as
    carve's)."""
    size = 1
    for extent in shape:
        if extent < 0:
            raise ValueError("leading: a negative extent")
        size *= extent
    if size > flat.shape[0]:
        raise ValueError("leading: the buffer is shorter than the shape")
    return _leading_view(flat, shape)


# -- One argument for many arrays -----------------------------------------------------------------
# numba's compiled entry point unboxes each array argument (about 50 ns each: 1.1 us of a 24-array
# step called from Python). An ArrayTable passes a kernel's arrays as one int64 vector of their
# addresses and shapes, and the kernel takes its views from it with ``carray``, as carve does from
# a workspace: one array to unbox, whatever the count.

TABLE_DTYPES = {"float64": types.float64, "int64": types.int64}


class ArrayTable:
    """A kernel's array arguments, declared once: ``fields`` = [(name, dtype, ndim)], dtype
    "float64" or "int64". ``table(arrays)`` (Python, at binding) checks each array and writes
    its address and shape into an int64 vector; ``unpack(table)`` (compiled, inlined into the
    kernel) gives the views back as a namedtuple, in the declared order. The table owns
    nothing: whoever binds it keeps the arrays (``Bound``), and an array replaced after binding
    is not seen (bind again)."""

    def __init__(self, name: str, fields: list[tuple[str, str, int]], module: str) -> None:
        names = [field for field, _, _ in fields]
        if len(set(names)) != len(names):
            raise ValueError(f"table {name}: an array is declared twice")
        for field, dtype, ndim in fields:
            if dtype not in TABLE_DTYPES or ndim not in (1, 2, 3):
                raise ValueError(f"table {name}: array {field}: bad dtype or ndim {dtype, ndim}")
        self.name = name
        self.fields = list(fields)
        self.size = sum(1 + ndim for _, _, ndim in fields)
        self.views_type = namedtuple(name, names)
        self.views_type.__module__ = module
        setattr(sys.modules[module], name, self.views_type)
        self.unpack = self._compile(module)

    def table(self, arrays) -> np.ndarray:
        """The int64 table of ``arrays`` (in the declared order): [address, extents...] per
        array; ValueError naming an array that is not a C-contiguous array of its declared
        dtype and ndim (the kernel reads it as one)."""
        arrays = tuple(arrays)
        if len(arrays) != len(self.fields):
            raise ValueError(f"table {self.name}: {len(self.fields)} arrays declared, "
                             f"{len(arrays)} given")
        out = np.empty(self.size, dtype=np.int64)
        o = 0
        for (field, dtype, ndim), array in zip(self.fields, arrays):
            if not (type(array) is np.ndarray and array.dtype == np.dtype(dtype)
                    and array.ndim == ndim and array.flags.c_contiguous):
                raise ValueError(f"table {self.name}: {field} must be a C-contiguous {dtype} "
                                 f"array of {ndim} dimensions, got {array!r:.80}")
            out[o] = array.ctypes.data
            out[o + 1:o + 1 + ndim] = array.shape
            o += 1 + ndim
        return out

    def bind(self, arrays) -> "Bound":
        """The table of ``arrays`` with the arrays it points into, held."""
        arrays = tuple(arrays)
        return Bound(self.table(arrays), arrays)

    def _compile(self, module: str):
        namespace = {"table_views": table_views(self)}
        exec(compile("def unpack(table):\n    return table_views(table)", f"<table {self.name}>",
                     "exec"), namespace)  # noqa: S102
        unpack = namespace["unpack"]
        unpack.__module__ = module
        unpack.__qualname__ = unpack.__name__ = f"unpack_{self.name}"
        return njit(inline="always", error_model="numpy")(unpack)


class Bound:
    """An ArrayTable's ``table`` and the ``arrays`` it points into (kept alive with it)."""

    __slots__ = ("table", "arrays")

    def __init__(self, table: np.ndarray, arrays: tuple) -> None:
        self.table, self.arrays = table, arrays


def table_views(table: ArrayTable):
    """table_views(addresses): the views of an ArrayTable's int64 table (unpack), each array's
    data at its address and its extents read from the table; no check (the table was checked
    when it was made)."""
    def typer(typingctx, addresses):
        if not (isinstance(addresses, types.Array) and addresses.ndim == 1
                and addresses.dtype == types.int64):
            raise TypingError(f"an array table must be an int64 vector, got {addresses}")
        views = _views_type(table.views_type, [types.Array(TABLE_DTYPES[dtype], ndim, "C")
                                               for _, dtype, ndim in table.fields])

        def codegen(context, builder, sig, args):
            entries = context.make_array(sig.args[0])(context, builder, args[0]).data

            def entry(o):
                return builder.load(builder.gep(entries, [cgutils.intp_t(o)]))
            arrays, o = [], 0
            for _, dtype, ndim in table.fields:
                data = builder.inttoptr(entry(o), cgutils.voidptr_t)
                arrays.append(_view(context, builder, TABLE_DTYPES[dtype], data,
                                    [entry(o + 1 + d) for d in range(ndim)]))
                o += 1 + ndim
            return context.make_tuple(builder, sig.return_type, arrays)
        return signature(views, addresses), codegen
    typer.__name__ = typer.__qualname__ = f"views_{table.name}"
    return intrinsic(typer)


@intrinsic
def writable_view(typingctx, array):
    """``array`` typed writable: the same array structure. numba types a read-only array (the
    Model's) apart from a writable one and compiles every routine it reaches once more for it;
    a kernel that only reads the Model's arrays passes them on so to share the routines the
    step compiled for its tables' views (the kinematics pass: 2.8 s of a cold compile). Never
    write through it."""
    if not isinstance(array, types.Array):
        raise TypingError(f"writable_view takes an array, got {array}")
    writable = array.copy(readonly=False)

    def codegen(context, builder, sig, args):
        return impl_ret_borrowed(context, builder, sig.return_type, args[0])
    return signature(writable, array), codegen
