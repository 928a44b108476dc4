"""The dynamics kernels' workspace: one flat float buffer that the kernels carve into named
arrays (no allocation per call, and a single argument to pass through numba's dispatcher).

Every Simulator, ProcessModel and sensor suite owns its buffers (``new_workspace``: part of
its Data); the Model holds none. The convenience functions of this package (``rnea(model,
...)``, ``aba``, ``crba``, ``energy``, ...) share one buffer per Model, kept here beside it
(weakly: it goes with the Model), as pinocchio's Python functions would share one Data."""
from __future__ import annotations

import weakref

import numpy as np

from .._jit import step

_CONVENIENCE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def workspace_size(nj: int, nv: int) -> int:
    per_joint = 9 + 3 + 10 + 6 * 6 + 36
    per_dof = 6 + 6 + 6 + 1
    return nj * per_joint + nv * per_dof + 9 + 3 + 36 + 36


def new_workspace(model) -> np.ndarray:
    """A workspace of its own for a simulation's Data."""
    return np.zeros(workspace_size(model.njoints, model.nv))


def workspace(model) -> np.ndarray:
    """The workspace the convenience functions share for this model, made on first use
    (kernels hold the GIL, so one per model is safe for threads)."""
    ws = _CONVENIENCE.get(model)
    if ws is None:
        ws = _CONVENIENCE[model] = new_workspace(model)
    return ws


@step
def carve(ws, nj, nv):
    """Views: oR (nj,3,3), op (nj,3), oY (nj,10), ov, oa, of, pA, c (nj,6), IA (nj,6,6),
    oS, U, Dinv (nv,6), u (nv), Rq (3,3), pq (3), tmp (6,6), small (6,6)."""
    o = 0
    oR = ws[o:o + nj * 9].reshape((nj, 3, 3))
    o += nj * 9
    op = ws[o:o + nj * 3].reshape((nj, 3))
    o += nj * 3
    oY = ws[o:o + nj * 10].reshape((nj, 10))
    o += nj * 10
    ov = ws[o:o + nj * 6].reshape((nj, 6))
    o += nj * 6
    oa = ws[o:o + nj * 6].reshape((nj, 6))
    o += nj * 6
    of = ws[o:o + nj * 6].reshape((nj, 6))
    o += nj * 6
    pA = ws[o:o + nj * 6].reshape((nj, 6))
    o += nj * 6
    c = ws[o:o + nj * 6].reshape((nj, 6))
    o += nj * 6
    IA = ws[o:o + nj * 36].reshape((nj, 6, 6))
    o += nj * 36
    oS = ws[o:o + nv * 6].reshape((nv, 6))
    o += nv * 6
    U = ws[o:o + nv * 6].reshape((nv, 6))
    o += nv * 6
    Dinv = ws[o:o + nv * 6].reshape((nv, 6))
    o += nv * 6
    u = ws[o:o + nv]
    o += nv
    Rq = ws[o:o + 9].reshape((3, 3))
    o += 9
    pq = ws[o:o + 3]
    o += 3
    tmp = ws[o:o + 36].reshape((6, 6))
    o += 36
    small = ws[o:o + 36].reshape((6, 6))
    return oR, op, oY, ov, oa, of, pA, c, IA, oS, U, Dinv, u, Rq, pq, tmp, small
