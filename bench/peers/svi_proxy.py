"""A proxy for Lee et al.'s "DRNEA vs SVI" timing (Lee et al. 2016: DRNEA evaluates the DEL equation
15x faster than the scalable variational integrator (SVI) of Johnson and Murphey at 10 DOF,
32x at 100 DOF, in whole simulations under the same root finder). We have no SVI. What we
can time on one machine is the step SVI's cost comes from: evaluating the two-configuration
DEL residual in generalized coordinates from the dense mass matrix and its configuration
derivative (Christoffel terms), against our DRNEA doing the same job in O(n).

The proxy, labelled as such wherever it is reported:

- ours: `mbsim_ros.dynamics.drnea.del_residual_kernel`, the forced DEL residual
  f = D2 Ld(q_prev, q) + D1 Ld(q, q_next) of our discrete Lagrangian (trapezoidal, per body on
  SE(3)), one compiled call;
- dense (SVI-like): the DEL residual of the midpoint discrete Lagrangian in generalized
  coordinates, Ld(a, b) = h [T(m, w) - V(m)] with m = (a + b) / 2, w = (b - a) / h, so that

      D1 Ld(a, b) = h/2 (C(m, w)^T w - g(m)) - M(m) w,   D2 Ld(a, b) = h/2 (...) + M(m) w

  (dT/dq = C(q, v)^T v for the Coriolis matrix with dM/dt = C + C^T), evaluated at the two
  midpoints with pinocchio's CRBA (M, symmetrised), its Coriolis matrix C (the Christoffel
  terms, an n x n matrix) and generalized gravity g: four compiled C++ calls per midpoint and
  dense n x n products, O(n^2) on a chain.

It is not SVI (a different discrete Lagrangian, a different code base: pinocchio's C++ is
faster per operation than trep's), and it times one residual, not a whole step with its root
finder. It shows how the O(n) and O(n^2) evaluations part as n grows on this machine.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from mbsim_ros.dynamics.configuration import difference
from mbsim_ros.dynamics.drnea import del_residual_kernel
from mbsim_ros.model import chain_urdf, load_urdf
from peers.timing import median_us

DT = 1e-3
SIZES = (10, 100)
CALLS = 300


class DenseDEL:
    """The midpoint-rule DEL residual in generalized coordinates from pinocchio's dense M and
    C (revolute joints only: q and v have the same size)."""

    def __init__(self, xml: str) -> None:
        self.model = pin.buildModelFromXML(xml)
        self.data = self.model.createData()
        if self.model.nq != self.model.nv:
            raise ValueError("the dense proxy needs nq == nv (revolute joints)")
        self.lower = np.tril_indices(self.model.nv, -1)  # CRBA fills the upper triangle

    def d_ld(self, a: np.ndarray, b: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
        """(D1 Ld(a, b), D2 Ld(a, b))."""
        m, w = 0.5 * (a + b), (b - a) / h
        M = pin.crba(self.model, self.data, m)
        M[self.lower] = M.T[self.lower]
        C = pin.computeCoriolisMatrix(self.model, self.data, m, w)
        g = pin.computeGeneralizedGravity(self.model, self.data, m)
        half = 0.5 * h * (C.T @ w - g)
        Mw = M @ w
        return half - Mw, half + Mw

    def residual(self, q_prev, q, q_next, h: float) -> np.ndarray:
        return self.d_ld(q_prev, q, h)[1] + self.d_ld(q, q_next, h)[0]

    def action(self, a, b, h: float) -> float:
        """Ld(a, b), for checks."""
        m, w = 0.5 * (a + b), (b - a) / h
        return h * (pin.computeKineticEnergy(self.model, self.data, m, w)
                    - pin.computePotentialEnergy(self.model, self.data, m))


def costs(sizes=SIZES, calls: int = CALLS) -> dict[int, tuple[float, float]]:
    """links -> (ours us, dense us) per residual evaluation: the median over `calls` calls,
    at a random 3-D chain configuration moving at ~1 rad/s."""
    out = {}
    for n in sizes:
        xml = chain_urdf(n)
        model, dense = load_urdf(xml), DenseDEL(xml)
        rng = np.random.default_rng(n)
        q = rng.uniform(-0.5, 0.5, model.nq)
        q_prev, q_next = q - DT * rng.normal(size=model.nv), q + DT * rng.normal(size=model.nv)
        x_prev, x_next = difference(model, q_prev, q), difference(model, q, q_next)
        zero, res = np.zeros(model.nv), np.empty(model.nv)
        ji, jr, grav, damp = model.joint_int, model.joint_real, model.gravity, model.damping
        armature = model.armature

        def ours():
            del_residual_kernel(ji, jr, grav, damp, armature, DT, q_prev, q, q_next, x_prev,
                                x_next, zero, zero, res)

        out[n] = (median_us(ours, calls),
                  median_us(lambda: dense.residual(q_prev, q, q_next, DT), calls))
    return out


def summary_line(figures: dict[int, tuple[float, float]]) -> str:
    cells = " | ".join(f"{n} links: ours {o:.1f} us, dense {d:.1f} us, dense / ours {d / o:.2g}"
                       for n, (o, d) in figures.items())
    return f"papers: DEL residual, DRNEA (ours) vs dense M + Coriolis (SVI-like proxy): {cells}"
