"""Reaction forces: the wrench each joint transmits and each constraint element's force (seed
003's constraint forces), at one state (q, v) under joint efforts tau.

    rigid rows at acceleration level:  M a + b = Q + G^T lambda,  G a + G_dot v = 0
        lambda = -(G M^-1 G^T)^+ (G M^-1 (Q - b) + G_dot v)      (least squares: redundant
                                                                   rows share in minimum norm)
    Q = tau - D v + springs' and applied forces' J^T f + compliant rows' -(k phi + c G v)
        + the last step's contact and joint-limit forces (given)
    RNEA backward pass at (q, v, a): of_i = sum over the subtree of I a + v x* I v - m g;
    the parent's wrench on the child: F_i = of_i - (external wrenches on the subtree)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.constraints import (AppliedForce, Element, SpringDamper, cross,
                                 rows_from_wrenches, spring_forces)
from .closures import ConstraintKinematics, element_rows
from .configuration import integrate
from .crba import crba

VELOCITY_STEP = 1e-6  # central difference of G along the flow for G_dot v


@dataclass
class Reactions:
    """joint name -> [fx, fy, fz, tx, ty, tz] the parent applies to the child (joint frame,
    torque about the joint origin); element name -> its row forces (N or N m; positive pushes
    the gap open), the acceleration a."""

    joint_wrenches: dict[str, np.ndarray]
    element_forces: dict[str, np.ndarray]
    acceleration: np.ndarray


def reactions(kinematics: ConstraintKinematics, q: np.ndarray, v: np.ndarray, tau: np.ndarray,
              elements: list[Element], springs: list[SpringDamper] = (),
              forces: list[AppliedForce] = (), external=None) -> Reactions:
    """The reaction forces at (q, v) under tau (module docstring). ``external``: (generalized
    force, body wrenches (joints, 6) at the world origin) of forces known otherwise (the last
    step's contacts and joint limits)."""
    model = kinematics.model
    rigid = [e for e in elements if e.rigid]
    soft = [e for e in elements if not e.rigid]
    oR, op, oS = (x.copy() for x in kinematics.evaluate(q))
    masks = kinematics.masks
    wrenches = np.zeros((model.njoints, 6))   # external, world frame, at the world origin
    Q = tau - model.damping * v
    if external is not None:
        Q = Q + external[0]
        wrenches += external[1]
    lambdas = {}
    for group in (list(springs), soft):
        G, phi = element_rows(masks, oR, op, oS, group)
        lam = spring_forces(group, phi, G @ v)
        Q = Q + G.T @ lam
        _collect(group, lam, oR, op, wrenches, lambdas)
    for applied in forces:
        W = np.stack([applied.wrench(oR, op), np.zeros(6)])[None]
        Q = Q + rows_from_wrenches(masks, oS, np.array([applied.at.joint, -1]), W)[0]
        if applied.at.joint >= 0:
            wrenches[applied.at.joint] += W[0, 0]
    M = crba(model, q)
    bias = kinematics.inverse_dynamics(q, v, np.zeros(model.nv))[3]
    G, _ = element_rows(masks, oR, op, oS, rigid)
    if G.shape[0]:
        Minv_Gt = np.linalg.solve(M, G.T)
        rhs = Minv_Gt.T @ (Q - bias) + _g_dot_v(kinematics, rigid, q, v)
        lam = -np.linalg.lstsq(G @ Minv_Gt, rhs, rcond=1e-10)[0]
        Q = Q + G.T @ lam
        _collect(rigid, lam, oR, op, wrenches, lambdas)
    a = np.linalg.solve(M, Q - bias)
    of, oR, op, _ = kinematics.inverse_dynamics(q, v, a)
    for i in range(model.njoints - 1, -1, -1):  # external wrenches summed over each subtree
        parent = model.parent[i]
        if parent >= 0:
            wrenches[parent] += wrenches[i]
    joint = {}
    for i, name in enumerate(model.joint_names):
        f_world = of[i] - wrenches[i]
        R, p = oR[i], op[i]
        force = f_world[:3]
        joint[name] = np.concatenate([R.T @ force, R.T @ (f_world[3:] - cross(p, force))])
    return Reactions(joint, lambdas, a)


def _collect(elements, lam, oR, op, wrenches, out) -> None:
    """Each element's row forces into ``out`` and its wrenches on its bodies into ``wrenches``."""
    r = 0
    for element in elements:
        rows = slice(r, r + element.row_count)
        W = element.unit_wrenches(oR, op)[1]
        for side, body in enumerate(element.joints):
            if body >= 0:
                wrenches[body] += lam[rows] @ W[:, side, :]
        out[element.name] = lam[rows].copy()
        r += element.row_count


def _g_dot_v(kinematics, rigid, q, v) -> np.ndarray:
    """G_dot v = d/ds G(q (+) s v) v at s = 0, by a central difference."""
    model, h = kinematics.model, VELOCITY_STEP
    ahead = kinematics.rows(rigid, integrate(model, q, v, h))[0] @ v
    behind = kinematics.rows(rigid, integrate(model, q, v, -h))[0] @ v
    return (ahead - behind) / (2 * h)
