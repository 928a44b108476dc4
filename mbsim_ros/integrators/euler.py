"""Semi-implicit (symplectic) Euler: v' = v + dt a(q, v, tau), q' = q (+) dt v'. The baseline
that the variational integrator is compared against (seed 000, Fig. 2)."""
from __future__ import annotations

import numpy as np

from .._jit import kernel
from ..dynamics.aba import aba_kernel
from ..dynamics.checks import DIVERGED, OK, SINGULAR, all_finite
from ..dynamics.configuration import integrate_kernel
from ..dynamics.workspace import workspace
from .base import Integrator, StepInfo, register


@kernel
def euler_step_kernel(joint_int, joint_real, gravity, damping, dt, q, v, tau, ws, tau_total,
                      a, q_out, v_out):
    """Joint damping enters as -damping * v at the start of the step."""
    for k in range(v.shape[0]):
        tau_total[k] = tau[k] - damping[k] * v[k]
    code = aba_kernel(joint_int, joint_real, gravity, q, v, tau_total, ws, a)
    if code != OK:
        return code
    for k in range(v.shape[0]):
        v_out[k] = v[k] + dt * a[k]
    integrate_kernel(joint_int, q, v_out, dt, q_out)
    if not (all_finite(q_out) and all_finite(v_out)):
        return DIVERGED
    return OK


@register("euler")
class SemiImplicitEuler(Integrator):
    def __init__(self, model, dt: float, **options) -> None:
        super().__init__(model, dt, **options)
        self._tau_total = np.zeros(model.nv)
        self._a = np.zeros(model.nv)
        self._ws = workspace(model)
        self._info = StepInfo()

    def step(self, q, v, tau, q_out, v_out) -> StepInfo:
        m = self.model
        code = euler_step_kernel(m.joint_int, m.joint_real, m.gravity, m.damping, self.dt, q, v,
                                 tau, self._ws, self._tau_total, self._a, q_out, v_out)
        self._info.converged = code == OK
        self._info.message = "" if code == OK else _FAILURES.get(code, f"kernel code {code}")
        return self._info


_FAILURES = {DIVERGED: "diverged: the new state is not finite",
             SINGULAR: "forward dynamics failed: singular joint-space inertia"}
