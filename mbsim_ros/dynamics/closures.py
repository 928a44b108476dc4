"""Constraint elements (model/constraints.py) on the configuration manifold: their rows G(q) and
gaps phi(q), the projection of q back onto phi = 0, and the mobility analysis (the blog post
"Using lots of linear algebra to create a generalized dynamics solver").

    projection: Newton steps -G dq = phi solved in the least-squares sense (minimum norm, i.e.
                along the fixed directions F only: the post's -J F x = f), q <- q (+) dq
    mobility:   G = U S V^T; DOF = nv - rank, rank = #{s_i > tol * max(1, s_max)};
                the free directions are the last nv - rank columns of V (the post's D)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

from ..model.constraints import Element, rows_from_wrenches, subtree_masks
from .configuration import integrate
from .rnea import rnea_kernel
from .workspace import DYNAMICS, workspace_size

RANK_TOLERANCE = 1e-9      # singular values below this (relative to max(1, s_max)) are zero
PROJECTION_TOLERANCE = 1e-12


class ConstraintKinematics:
    """World-frame kinematics (oR, op, oS) of a model at any q, in a workspace of its own (so a
    projection or an analysis never disturbs an integrator's buffers)."""

    def __init__(self, model) -> None:
        self.model = model
        self.masks = subtree_masks(model.joint_int, model.nv)
        self._ws = np.zeros(workspace_size(model.njoints, model.nv))
        self._views = DYNAMICS.views(self._ws, model.njoints, model.nv)  # once: they hold _ws
        self._zero_v = np.zeros(model.nv)
        self._tau = np.zeros(model.nv)
        self._no_gravity = np.zeros(3)

    def evaluate(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        m = self.model
        rnea_kernel(m.joint_int, m.joint_real, self._no_gravity, m.armature, q, self._zero_v,
                    self._zero_v, self._ws, self._tau)
        views = self._views
        return views.oR, views.op, views.oS

    def inverse_dynamics(self, q: np.ndarray, v: np.ndarray, a: np.ndarray):
        """(of, oR, op, tau) of the RNEA at (q, v, a) with the model's gravity, copies: of[i]
        after the backward pass is the subtree's I a + v x* I v - m g (world, world origin)."""
        m = self.model
        tau = np.empty(m.nv)
        rnea_kernel(m.joint_int, m.joint_real, m.gravity, m.armature, q, v, a, self._ws, tau)
        views = self._views
        return views.of.copy(), views.oR.copy(), views.op.copy(), tau

    def rows(self, elements: list[Element], q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(G, phi) of the elements' rows stacked, at q."""
        return element_rows(self.masks, *self.evaluate(q), elements)


def element_rows(masks, oR, op, oS, elements) -> tuple[np.ndarray, np.ndarray]:
    """(G, phi) of the elements at the kinematics (oR, op, oS)."""
    if not elements:
        return np.zeros((0, oS.shape[0])), np.zeros(0)
    Gs, phis = [], []
    for element in elements:
        phi, W = element.unit_wrenches(oR, op)
        Gs.append(rows_from_wrenches(masks, oS, element.joints, W))
        phis.append(phi)
    return np.concatenate(Gs), np.concatenate(phis)


def row_labels(elements: list[Element]) -> list[str]:
    """One label per row: the element's name and, for closures, the direction."""
    labels = []
    for element in elements:
        directions = getattr(element, "row_directions", None)
        labels += [f"{element.name} {d}" for d in directions] if directions else [element.name]
    return labels


def project(kinematics: ConstraintKinematics, elements: list[Element], q: np.ndarray, *,
            tolerance: float = PROJECTION_TOLERANCE, max_iterations: int = 20
            ) -> tuple[np.ndarray, float]:
    """q moved onto the rigid elements' manifold (|phi| <= tolerance), and the final max |phi|.
    The generalized-dynamics-solver post's projection: -J F x = f by least squares, repeated
    (Newton)."""
    rigid = [e for e in elements if e.rigid]
    q = np.array(q, dtype=float)
    error = 0.0
    for _ in range(max_iterations):
        G, phi = kinematics.rows(rigid, q)
        error = float(np.abs(phi).max()) if phi.size else 0.0
        if error <= tolerance:
            break
        dq = np.linalg.lstsq(G, -phi, rcond=1e-10)[0]
        q = integrate(kinematics.model, q, dq)
    return q, error


@dataclass
class Mobility:
    """What the mobility analysis found at one configuration."""

    dof: int
    rank: int
    rows: int
    tolerance: float
    singular_values: list[float]
    redundant: list[str] = field(default_factory=list)   # rows implied by the others
    free_directions: list[list[float]] = field(default_factory=list)  # (dof, nv): the post's D
    singular: bool = False        # the rank is below its value at nearby configurations
    generic_rank: int = 0
    closure_error: float = 0.0    # max |phi| after projection


def mobility(kinematics: ConstraintKinematics, elements: list[Element], q: np.ndarray, *,
             tolerance: float = RANK_TOLERANCE, probes: int = 4, seed: int = 0) -> Mobility:
    """DOF of the rigid elements at q (already projected): nv - rank G by SVD. Redundant rows
    are those a pivoted QR of G^T leaves out; the configuration is singular when G has a higher
    rank at a few random configurations 1e-3 away (a dead point, a stretched-out chain)."""
    rigid = [e for e in elements if e.rigid]
    nv = kinematics.model.nv
    G, phi = kinematics.rows(rigid, q)
    rank, s, V = _rank(G, tolerance)
    labels = row_labels(rigid)
    redundant: list[str] = []
    if rank < G.shape[0]:
        pivots = scipy.linalg.qr(G.T, pivoting=True, mode="r")[1]
        redundant = [labels[r] for r in sorted(pivots[rank:])]
    free = V[rank:] if G.shape[0] else np.eye(nv)
    generic = rank
    rng = np.random.default_rng(seed)
    for _ in range(probes if G.shape[0] else 0):
        nearby = integrate(kinematics.model, q, rng.normal(size=nv) * 1e-3)
        generic = max(generic, _rank(kinematics.rows(rigid, nearby)[0], tolerance)[0])
    return Mobility(dof=nv - rank, rank=rank, rows=G.shape[0], tolerance=tolerance,
                    singular_values=s.tolist(), redundant=redundant,
                    free_directions=free.tolist(), singular=generic > rank, generic_rank=generic,
                    closure_error=float(np.abs(phi).max()) if phi.size else 0.0)


def _rank(G: np.ndarray, tolerance: float) -> tuple[int, np.ndarray, np.ndarray]:
    if G.shape[0] == 0:
        return 0, np.zeros(0), np.zeros((0, G.shape[1]))
    _, s, Vt = np.linalg.svd(G)
    rank = int(np.sum(s > tolerance * max(1.0, float(s.max()))))
    return rank, s, Vt
