"""The dynamics kernels' workspace: one flat float buffer that the kernels carve into named
arrays (no allocation per call, and a single argument to pass through numba's dispatcher).

Every Simulator, ProcessModel and sensor suite owns its buffers (``new_workspace``: part of
its Data); the Model holds none. The convenience functions of this package (``rnea(model,
...)``, ``aba``, ``crba``, ``energy``, ...) share one buffer per Model, kept here beside it
(weakly: it goes with the Model), as pinocchio's Python functions would share one Data. They
are found by the Model's id (a dict lookup; a WeakKeyDictionary costs a weak reference per call),
and a finalizer drops the entry with the Model, before its id can be reused."""
from __future__ import annotations

import weakref

import numpy as np

from ..layout import Layout

_CONVENIENCE: dict[int, np.ndarray] = {}


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
