"""The dynamics kernels' workspace: one flat float buffer that the kernels carve into named
arrays (no allocation per call, and a single argument to pass through numba's dispatcher).

Every Simulator, ProcessModel and sensor suite owns its buffers (``new_workspace``: part of
its Data); the Model holds none. The convenience functions of this package (``rnea(model,
...)``, ``aba``, ``crba``, ``energy``, ...) share one buffer per Model, kept here beside it
(weakly: it goes with the Model), as pinocchio's Python functions would share one Data. They
are found by the Model's id (a dict lookup; a WeakKeyDictionary costs a weak reference per call),
and a finalizer drops the entry with the Model, before its id can be reused.

Those functions pass the Model's arrays and that buffer to their kernels as one table of
addresses (``model_table``: layout.ArrayTable), made once per Model: numba unboxes one array
argument instead of five."""
from __future__ import annotations

import threading
import weakref

import numpy as np

from numba import types

from ..codes import BAD_ARG0, OK
from ..layout import ArrayTable, Bound, Layout
from .checks import kernel_vectors, raise_for

_CONVENIENCE: dict[int, np.ndarray] = {}
_TABLES: dict[int, Bound] = {}


DYNAMICS = Layout("DynamicsViews", [
    ("oR", ("nj", 3, 3)), ("op", ("nj", 3)), ("oY", ("nj", 10)),    # world-frame kinematics
    ("ov", ("nj", 6)), ("oa", ("nj", 6)), ("of", ("nj", 6)),         # RNEA
    ("pA", ("nj", 6)), ("c", ("nj", 6)), ("IA", ("nj", 6, 6)),       # ABA
    ("oS", ("nv", 6)), ("U", ("nv", 6)), ("Dinv", ("nv", 6)), ("u", ("nv",)),
    ("Rq", (3, 3)), ("pq", (3,)), ("tmp", (6, 6)), ("small", (6, 6))], __name__)
carve = DYNAMICS.carve  # carve(ws, nj, nv) -> DynamicsViews (step: inlined into the kernels)


def workspace_size(nj: int, nv: int) -> int:
    return DYNAMICS.size(nj=nj, nv=nv)


def new_workspace(model) -> np.ndarray:
    """A workspace of its own for a simulation's Data."""
    return np.zeros(workspace_size(model.njoints, model.nv))


def workspace(model) -> np.ndarray:
    """The workspace the convenience functions share for this model, made on first use
    (kernels hold the GIL, so one per model is safe for threads)."""
    ws = _CONVENIENCE.get(id(model))
    if ws is None:
        ws = _CONVENIENCE[id(model)] = new_workspace(model)
        weakref.finalize(model, _CONVENIENCE.pop, id(model), None)
    return ws


# The convenience functions' kernels take (vectors..., out, table): the Model's arrays and its
# shared workspace, by address (model_table).
MODEL_ARRAYS = ArrayTable("ModelArrays", [
    ("joint_int", "int64", 2), ("joint_real", "float64", 2), ("gravity", "float64", 1),
    ("armature", "float64", 1), ("ws", "float64", 1)], __name__)
unpack_model = MODEL_ARRAYS.unpack


def model_table(model) -> np.ndarray:
    """The MODEL_ARRAYS table of the model's arrays and its convenience workspace, made on
    first use (the Model writes its gravity and armature in place: the table stays true; a
    Model's arrays are not replaced after construction)."""
    bound = _TABLES.get(id(model))
    if bound is None:
        bound = _TABLES[id(model)] = MODEL_ARRAYS.bind((
            model.joint_int, model.joint_real, model.gravity, model.armature, workspace(model)))
        weakref.finalize(model, _TABLES.pop, id(model), None)
    return bound.table


VECTOR = types.Array(types.float64, 1, "C")
TABLE = types.Array(types.int64, 1, "C")


def closed_on_first_call(namespace: dict, name: str, kernel, signature: tuple):
    """What to bind to ``namespace[name]``: a function that, at the first call, loads (or
    compiles) ``kernel`` for its one ``signature``, closes it to compilation, puts it in its
    place and calls it. Closed, so that a call with other argument types raises
    TypeError (numba finds no matching definition) instead of compiling one: the convenience
    functions then convert their inputs and call again (what an argument check in Python would
    cost on every call, numba's dispatch does in C)."""
    def first(*args):
        with _FIRST_CALL:  # (another thread may be closing it: compile() refuses once closed)
            if namespace[name] is first:
                kernel.compile(signature)
                kernel.disable_compile()
                namespace[name] = kernel
        return kernel(*args)
    return first


_FIRST_CALL = threading.Lock()


def call_checked(entry, model, inputs: tuple, out: np.ndarray, names: tuple[str, ...]) -> None:
    """``entry(*inputs, out, model_table(model))`` for a convenience function: its inputs as
    given when they are what the kernel takes (numba's dispatch checks the types, the kernel
    the lengths), else converted (``kernel_vectors``: ValueError naming a wrong length or type)
    and called again; ValueError naming the input that is not finite (``raise_for``)."""
    table = model_table(model)
    try:
        code = entry(*inputs, out, table)
    except TypeError:
        code = BAD_ARG0
    if code != OK:
        code = entry(*kernel_vectors(model, inputs, names), out, table)
        if code != OK:
            raise_for(code, names, model)
