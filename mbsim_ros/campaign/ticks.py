"""A campaign run's steps in one compiled loop (``ticks``): the built-in controller's law
(hold / pd / trajectory: controllers.JointServo), the command delay, the servos' targets, the
integrator's fused step (whichever it is: the loop takes its compiled entry and its bound
arguments, Integrator.fused) and what the checks and metrics read, recorded per step into
preallocated arrays (checks.Monitor.replay judges them after the run, bit for bit what
``observe`` after each step gives).

The loop returns to Python before a step that a push is on (PUSHED): the Simulator computes the
pushes' generalized force at that state (numpy's, Simulator._external_efforts, as sim.step
would), and the loop resumes at that step with it added to the command. It hands a step back
when the fused step returned UNFINISHED (a buffer to grow, a solver fallback): ``drive`` takes
that step as run._drive does (sim.step), and the loop resumes at the next step with its
arguments bound again. A run it cannot take (sensors, actuator models, a
recording, a Python or ROS controller, an integrator without a fused step that evaluates the
servos) takes run._drive's path: ``takes`` says which.
"""
from __future__ import annotations

import numpy as np

from .._jit import kernel, step
from ..codes import OK, UNFINISHED
from ..dynamics.energy import energy_kernel
from ..integrators.compliant_kernels import body_wrenches
from ..integrators.compliant_step import RESOLVE, compliant_advance
from ..integrators.euler import euler_advance
from ..integrators.servo import EFFORT, S_EFFORT, load_targets
from ..integrators.variational import variational_advance
from ..sim import fused_failure
from .checks import (N_TRACE, T_ENERGY, T_FOREIGN, T_HEIGHT, T_MARGIN, T_PEAK, T_QX, T_QY,
                     T_TIME, T_TRACKING, T_X, T_Y, Monitor)
from .controllers import JointServo

PUSHED = -1  # ticks' answer before a step that a push is on (the pushes' force to compute)

# command_tick's line: rings (4: mode, q_target, v_target, tau; ticks + 1; nv) and cursor
# (the next row, started); servos: load_targets' arrays, flags (load_targets' last answer) and
# the servos' saturation


@step
def command_tick(k, controller, line, servos, q, v, tau_out) -> None:
    """Step k's command as the joints get it: the controller's law every decimation-th step
    (JointServo.__call__), pushed through the delay line (CommandLine.apply; the first command
    fills it), the servos loaded when a DOF is not in effort mode (Servos.load); the effort
    into tau_out."""
    targets, speeds, iq, iv, kp, kd, explicit, decimation, mode, q_target, v_target, tau = \
        controller
    if k % decimation == 0:
        row = min(k, targets.shape[0] - 1)
        for d in range(iv.shape[0]):
            j = iv[d]
            if explicit:
                tau[j] = kp[j] * (targets[row, d] - q[iq[d]]) + kd[j] * (speeds[row, d] - v[j])
            q_target[j] = targets[row, d]
            v_target[j] = speeds[row, d]
    rings, cursor = line
    width, nv = rings.shape[1], rings.shape[2]
    if cursor[1] == 0:  # the first command fills the line
        for r in range(width):
            for j in range(nv):
                rings[0, r, j] = float(mode[j])
                rings[1, r, j], rings[2, r, j], rings[3, r, j] = q_target[j], v_target[j], tau[j]
        cursor[1] = 1
    at = cursor[0]
    for j in range(nv):
        rings[0, at, j] = float(mode[j])
        rings[1, at, j], rings[2, at, j], rings[3, at, j] = q_target[j], v_target[j], tau[j]
    at = (at + 1) % width
    cursor[0] = at
    servoed = False
    for j in range(nv):
        servoed = servoed or rings[0, at, j] != EFFORT
        tau_out[j] = rings[3, at, j]
    if servoed:
        gains, joint_iq, joint_mode, integral, table, servo_iq, position_mode, on, flags, _ = \
            servos
        flags[0] = load_targets(rings[0, at], rings[1, at], rings[2, at], gains, joint_iq,
                                joint_mode, integral, table, servo_iq, position_mode, on)


@step
def observe(row, t, q, v, effort, target, observed, records) -> None:
    """Row ``row`` of the records: what Monitor.observe reads after a step (checks.T_*),
    the step's efforts and tracking errors (their sums of squares are Monitor.replay's, by
    numpy as observe takes them)."""
    base, limit_iq, lower, upper, dofs, q_of_v, foreign, energy, wrenches, flags = observed
    trace, efforts, errors = records
    out = trace[row]
    out[T_TIME] = t
    if base >= 0:
        out[T_HEIGHT], out[T_QX], out[T_QY] = q[base + 2], q[base + 3], q[base + 4]
        out[T_X], out[T_Y] = q[base], q[base + 1]
    if limit_iq.shape[0]:
        below, above = q[limit_iq[0]] - lower[0], upper[0] - q[limit_iq[0]]
        for a in range(1, limit_iq.shape[0]):
            below = min(below, q[limit_iq[a]] - lower[a])
            above = min(above, upper[a] - q[limit_iq[a]])
        out[T_MARGIN] = above if above < below else below
    if dofs.shape[0]:
        worst = 0.0
        for d in range(dofs.shape[0]):
            error = target[dofs[d]] - q[q_of_v[dofs[d]]]
            errors[row, d] = error
            worst = max(worst, abs(error))
        out[T_TRACKING] = worst
    if flags[0]:  # a contact integrator: body_wrenches' world-axes forces
        contact_int, contact_real, directions, gamma, counts, h, origins, wrench, touching = \
            wrenches
        body_wrenches(contact_int, contact_real, directions, gamma, counts[0], h, origins,
                      wrench, touching)
        peak, other = 0.0, 0.0
        for j in range(wrench.shape[0]):
            force = np.sqrt((wrench[j, 0] * wrench[j, 0] + wrench[j, 1] * wrench[j, 1])
                            + wrench[j, 2] * wrench[j, 2])
            peak = max(peak, force)
            if foreign[j]:
                other = max(other, force)
        out[T_PEAK], out[T_FOREIGN] = peak, other
    if flags[1]:  # the energy gain over the start's (energy: the model's arrays, ws, out, e0)
        joint_int, joint_real, gravity, armature, ws, parts, start = energy
        energy_kernel(joint_int, joint_real, gravity, armature, q, v, ws, parts)
        out[T_ENERGY] = (parts[0] + parts[1]) - start[0]
    for j in range(effort.shape[0]):
        efforts[row, j] = effort[j]


@kernel
def observe_step(row, t, q, v, effort, target, observed, records) -> None:
    """observe from Python: a step that Python took (drive)."""
    observe(row, t, q, v, effort, target, observed, records)


@step
def ticks(advance, arguments, run) -> tuple:
    """Steps begin .. end-1 of a run (run: begin, end, the state's steps and t0 at begin, dt,
    pushed (per step: a push is on), external (the pushes' force on step begin when primed),
    primed, and the arrays of command_tick, the state (q, v, effort), the step's tau and
    scratch, the arrays of observe): each one's command (command_tick), the fused step
    ``advance(tau (+ external), *arguments)``, the servoed joints' efforts (Servos.applied)
    and the records (observe). Returns (k, code): end and OK, or the step k it stopped at:
    PUSHED before its command (the force to compute), UNFINISHED after it (Python takes the
    step), or the fused step's failure."""
    (begin, end, steps0, t0, dt, pushed, external, primed, controller, line, servos, state,
     tau, tau_sum, observed, records) = run
    q, v, effort = state
    table, on, flags, saturated = servos[4], servos[7], servos[8], servos[9]
    for k in range(begin, end):
        if pushed[k] and not (primed and k == begin):
            return k, PUSHED
        command_tick(k, controller, line, servos, q, v, tau)
        step_tau = tau
        if pushed[k]:  # (sim.step's tau + data.external)
            for j in range(tau.shape[0]):
                tau_sum[j] = tau[j] + external[j]
            step_tau = tau_sum
        if flags[0] & 1:  # (as the general path: no joint saturated at the step's start)
            for j in range(saturated.shape[0]):
                saturated[j] = 0
        code = advance(step_tau, *arguments)
        while code == RESOLVE:  # a servo newly saturated: the step again (compliant_step.py)
            code = advance(step_tau, *arguments)
        if code != OK:
            return k, code
        if flags[0] & 1:
            for j in range(effort.shape[0]):
                if on[j]:
                    effort[j] = table[S_EFFORT, j]
        observe(k, t0 + (steps0 + k - begin + 1) * dt, q, v, effort, controller[9], observed,
                records)
    return end, OK


# ticks for each fused step of ours, the step a global: each cached like any kernel (numba
# caches no function that takes a compiled function as an argument: run_ticks, for any other
# step, compiles once per process)

@kernel
def compliant_ticks(arguments, run) -> tuple:
    return ticks(compliant_advance, arguments, run)


@kernel
def euler_ticks(arguments, run) -> tuple:
    return ticks(euler_advance, arguments, run)


@kernel
def variational_ticks(arguments, run) -> tuple:
    return ticks(variational_advance, arguments, run)


@kernel
def run_ticks(advance, arguments, run) -> tuple:
    return ticks(advance, arguments, run)


TICKS = {compliant_advance: compliant_ticks, euler_advance: euler_ticks,
         variational_advance: variational_ticks}


def run_steps(advance, arguments: tuple, run: tuple) -> tuple:
    """ticks with the fused step ``advance`` and its arguments (Integrator.fused)."""
    entry = TICKS.get(advance)
    if entry is None:
        return run_ticks(advance, arguments, run)
    return entry(arguments, run)


def takes(sim, suite, controller, record) -> bool:
    """Whether a run goes through ticks: a built-in controller, no sensors, actuator
    models or recording, an integrator whose fused step evaluates the servos (and no
    integral gain: the integrals advance in Python)."""
    integrator = sim.integrator
    return (isinstance(controller, JointServo) and suite is None and record is None
            and sim.actuators is None and integrator.fused_servos
            and not np.any(sim.servos.gains[2] > 0.0)
            and integrator.fused(sim.state, sim.data) is not None)


def drive(sim, controller: JointServo, line, monitor: Monitor, pushes, decimation: int,
          steps: int) -> str:
    """run._drive's loop (after the controller's attach and the monitor's start) through
    ticks; the message of the step that stopped it ("" for none)."""
    state, data, integrator, servos = sim.state, sim.data, sim.integrator, sim.servos
    dt, nv = sim.dt, sim.model.nv
    t = np.arange(steps) * dt  # (pushes.apply's times: k * dt)
    pushed = np.zeros(steps, dtype=np.bool_)
    for _, start, end, *_ in pushes.items:
        pushed |= (start <= t) & (t < end)
    law = controller.compiled(decimation)
    flags = np.array([int(servos.active)])
    line_arrays = (np.zeros((4, line.ticks + 1, nv)), np.zeros(2, dtype=np.int64))
    servo_arrays = (*servos.load_arrays(), flags, servos.saturated)
    state_arrays, tau, tau_sum, external = (state.q, state.v, state.effort), *np.zeros((3, nv))
    dofs = monitor.tracked_dofs(controller.tracked)
    records = (np.full((steps, N_TRACE), np.nan), np.zeros((steps, nv)),
               np.zeros((steps, len(dofs))))
    failure, k, primed, bound = None, 0, False, None
    while k < steps and failure is None:
        if bound is None:  # (after a step of sim.step's: its buffers may be new ones)
            bound = integrator.fused(state, data), monitor.observed(sim, controller.tracked)
        (advance, _, arguments), observed = bound
        begin = k
        k, code = run_steps(advance, arguments, (
            begin, steps, state.steps, state.t0, dt, pushed, external, primed, law,
            line_arrays, servo_arrays, state_arrays, tau, tau_sum, observed, records))
        state.steps += k - begin
        servos.loaded(int(flags[0]))
        primed = code == PUSHED
        if primed:  # the pushes' force at this state, as sim.step computes it
            pushes.apply(sim, k * dt)
            sim._external_efforts()
            external[:] = data.external
        elif code == UNFINISHED:  # this step by sim.step, as run._drive takes it
            pushes.apply(sim, k * dt)
            info = sim.step(tau)
            bound = None
            if info.converged:
                observe_step(k, sim.t, state.q, state.v, state.effort, law[9],
                             monitor.observed(sim, controller.tracked), records)
                k += 1
            else:
                failure = info
        elif code != OK:  # what sim.step says of the fused step's failure
            failure = fused_failure(code, data, state)
            state.failed = failure.copy()
    monitor.replay(*(r[:k] for r in records))
    if failure is None:
        return ""
    if failure.departure is not None:
        monitor.fail_diverged(failure.departure)
    else:
        monitor.fail_solver(sim.t)
    return failure.message
