"""Joint servos: position / velocity targets turned into joint efforts inside the integrator's
step, implicitly, so that stiff gains stay stable at any step.

Per one-DOF joint j in position mode (target q*, v*, gains kp, kd, ki, feed-forward tau_j):

    e_j = tau_j + ki I_j + kp (q* - q') + kd (v* - v')

evaluated at the step's end (q' = q + h v' in Euler and the contact integrators: the implicit
Euler of a spring-damper, which only dissipates) or over the step (the variational
integrator: the spring a potential at the midpoint configuration, the damper a Rayleigh force
split half and half between the step's ends, so a servo adds no energy of its own; see
docs/CONTROL.md). Velocity mode is the same with kp = 0. The integral I_j (of q* - q, or of
v* - v in velocity mode) enters explicitly, from the previous steps; it is clamped to
|ki I_j| <= i_clamp_j and stops integrating while the joint's effort is saturated (anti-windup).

Effort limits apply after the law: a joint whose e_j leaves [lower_j, upper_j] gets the
bound as a constant effort instead, and the step is solved again with it (an active set that
only grows, so at most nv + 1 solves; one when nothing saturates).

The law's data lives in one table (SERVO_ROWS, nv) that every integrator's kernel reads, plus
``iq`` (the q index of each servoed DOF, -1: no servo) and ``saturated`` (+1 / -1: at the upper
/ lower bound this step, 0: not).
"""
from __future__ import annotations

import numpy as np

from .._jit import kernel, step
from ..arena import Arena, ArenaPlan
from ..arrays import copy_into

# rows of the servo table
S_KP, S_KD, S_QT, S_VT, S_BIAS, S_LOWER, S_UPPER, S_EFFORT = range(8)
SERVO_ROWS = 8


def no_servo(nv: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (table, iq, saturated) of a step without servos (what a kernel takes when no joint
    is servoed: iq all -1)."""
    return np.zeros((SERVO_ROWS, nv)), np.full(nv, -1, dtype=np.int64), \
        np.zeros(nv, dtype=np.int64)


@step
def any_servo(iq) -> bool:
    for j in range(iq.shape[0]):
        if iq[j] >= 0:
            return True
    return False


@step
def clear_saturation(saturated) -> None:
    for j in range(saturated.shape[0]):
        saturated[j] = 0


@step
def servo_terms(h, servo, iq, saturated, q, tau, v, added, force) -> None:
    """The law's implicit-Euler terms for a solve (M + added) (v' - v) = h force: added_j +=
    h kd + h^2 kp, force_j += ki I + kp (q* - q) + kd v* - (kd + h kp) v; a saturated joint
    instead gets force_j += bound - tau_j (its total effort is the bound)."""
    for j in range(iq.shape[0]):
        i = iq[j]
        if i < 0:
            continue
        if saturated[j] != 0:
            bound = servo[S_UPPER, j] if saturated[j] > 0 else servo[S_LOWER, j]
            force[j] += bound - tau[j]
            continue
        kp, kd = servo[S_KP, j], servo[S_KD, j]
        added[j] += h * kd + h * h * kp
        force[j] += servo[S_BIAS, j] + kp * (servo[S_QT, j] - q[i]) + kd * servo[S_VT, j] \
            - (kd + h * kp) * v[j]


@step
def servo_forces(h, servo, iq, saturated, q, tau, u_total, linear) -> None:
    """The variational integrator's servo terms for a DEL step from q of length h: u_total =
    tau + ki I + kp (q* - q) + kd v* (the force whose half impulses open and close the step)
    and linear = kd / 2 + h kp / 4 (the servo's part of the DEL's -linear x term: the damper's
    Rayleigh half-impulses and the spring's midpoint potential, D1 of -h kp (q + x/2 - q*)^2
    / 2); a saturated joint gets its bound as u_total and no linear term."""
    for j in range(iq.shape[0]):
        u_total[j] = tau[j]
        linear[j] = 0.0
        i = iq[j]
        if i < 0:
            continue
        if saturated[j] != 0:
            u_total[j] = servo[S_UPPER, j] if saturated[j] > 0 else servo[S_LOWER, j]
            continue
        kp, kd = servo[S_KP, j], servo[S_KD, j]
        u_total[j] += servo[S_BIAS, j] + kp * (servo[S_QT, j] - q[i]) + kd * servo[S_VT, j]
        linear[j] = 0.5 * kd + 0.25 * h * kp


@step
def servo_saturation(s, servo, iq, saturated, q, tau, v_new) -> bool:
    """The joints' total efforts (tau + the law at configuration q + s v_new and velocity
    v_new: s = h for the step's end, h/2 for the midpoint) into the table's effort row; marks
    the joints outside their bounds as saturated and returns True when one was newly marked
    (the step must be solved again)."""
    changed = False
    for j in range(iq.shape[0]):
        i = iq[j]
        if i < 0:
            continue
        if saturated[j] != 0:
            servo[S_EFFORT, j] = servo[S_UPPER, j] if saturated[j] > 0 else servo[S_LOWER, j]
            continue
        e = tau[j] + servo[S_BIAS, j] \
            + servo[S_KP, j] * (servo[S_QT, j] - q[i] - s * v_new[j]) \
            + servo[S_KD, j] * (servo[S_VT, j] - v_new[j])
        servo[S_EFFORT, j] = e
        if e > servo[S_UPPER, j]:
            saturated[j] = 1
            changed = True
        elif e < servo[S_LOWER, j]:
            saturated[j] = -1
            changed = True
    return changed


@kernel
def advance_integral(h, gains_i, i_clamp, position_mode, servo, iq, saturated, q, v,
                     integral) -> None:
    """After an accepted step: I += h (q* - q) (position mode) or h (v* - v) (velocity), not
    while saturated, clamped to |ki I| <= i_clamp; the table's bias row = ki I."""
    for j in range(iq.shape[0]):
        i = iq[j]
        if i < 0 or gains_i[j] == 0.0:
            servo[S_BIAS, j] = 0.0
            continue
        if saturated[j] == 0:
            error = servo[S_QT, j] - q[i] if position_mode[j] else servo[S_VT, j] - v[j]
            integral[j] += h * error
        bound = i_clamp[j] / gains_i[j]
        integral[j] = min(bound, max(-bound, integral[j]))
        servo[S_BIAS, j] = gains_i[j] * integral[j]


EFFORT, POSITION, VELOCITY = 0, 1, 2


@kernel
def load_targets(command_mode, q_target, v_target, gains, joint_iq, mode, integral, table, iq,
                 position_mode, servoed) -> int:
    """Each DOF's interface (command_mode: EFFORT / POSITION / VELOCITY, as floats or ints)
    and targets into the servo table and iq (a DOF whose interface changes starts its integral
    from zero). Returns 1 when a DOF is servoed, + 2 when one also integrates."""
    flags = 0
    for j in range(iq.shape[0]):
        m = int(command_mode[j])
        if m != mode[j]:
            integral[j] = 0.0
            mode[j] = m
        position_mode[j] = m == POSITION
        servoed[j] = m != EFFORT
        iq[j] = joint_iq[j] if servoed[j] else -1
        table[S_KP, j] = gains[0, j] if position_mode[j] else 0.0
        table[S_KD, j] = gains[1, j] if servoed[j] else 0.0
        table[S_QT, j] = q_target[j]
        table[S_VT, j] = v_target[j]
        table[S_BIAS, j] = gains[2, j] * integral[j] if servoed[j] else 0.0
        if servoed[j]:
            flags |= 1
            if gains[2, j] > 0.0:
                flags |= 2
    return flags


class Servos:
    """The joint servos of one integrator, by joint name (one-DOF joints only).

    ``set_gains(p=, d=, i=, i_clamp=)`` (each {joint: value}, or an array over the DOFs: nv;
    free-flyer entries ignored); ``command(position=, velocity=)`` (by name, or arrays: a
    configuration, nq, and nv velocities, for every one-DOF joint) puts the named joints in
    position mode (a position, and optionally a velocity target: the impedance form; the
    step's tau is the feed-forward) or velocity mode (a velocity alone); ``release(joints)``
    returns them to effort mode; ``load`` sets every DOF's interface at once (the node's
    per-tick path). Efforts are clamped to ``[lower, upper]`` after the law (default: minus /
    plus the URDF effort limits; ``set_effort_limits``); ``applied(tau, out)``: every DOF's
    effort of the last step (Simulator.effort). Module docstring: how the integrators
    evaluate it.
    """

    kernels = (load_targets, advance_integral)  # called from Python (Integrator.kernels)

    @staticmethod
    def declare(plan: ArenaPlan, nv: int) -> None:
        """Its float64 and int64 arrays, in the arena of the integrator that holds it (the two
        masks, booleans, are its own)."""
        plan.add("servo.table", (SERVO_ROWS, nv))
        plan.add("servo.gains", (3, nv))
        plan.add("servo.i_clamp", (nv,))
        plan.add("servo.integral", (nv,))
        for name in ("servo.iq", "servo.saturated", "servo.mode", "servo.joint_iq"):
            plan.add(name, (nv,), "int64")

    def __init__(self, model, arena: Arena | None = None) -> None:
        nv = model.nv
        if arena is None:  # an arena of its own
            plan = ArenaPlan("servos")
            Servos.declare(plan, nv)
            arena = plan.allocate()
        self.table, self.iq, self.saturated = (arena["servo.table"], arena["servo.iq"],
                                               arena["servo.saturated"])
        self.iq[:] = -1  # (no_servo's)
        self.mode = arena["servo.mode"]
        self.gains = arena["servo.gains"]  # p, d, i
        self.i_clamp = arena["servo.i_clamp"]
        self.i_clamp[:] = np.inf
        self.integral = arena["servo.integral"]
        self._position_mode = np.zeros(nv, dtype=np.bool_)
        self._servoed = np.zeros(nv, dtype=np.bool_)
        self._joint_iq = arena["servo.joint_iq"]
        self._joint_iq[:] = -1
        self.dof: dict[str, int] = {}
        for i, kind in enumerate(model.joint_kinds):
            if kind != "free_flyer":
                self.dof[model.joint_names[i]] = int(model.idx_v[i])
                self._joint_iq[model.idx_v[i]] = model.idx_q[i]
        self._nq = model.nq
        self.table[S_UPPER] = model.effort_limit
        self.table[S_LOWER] = -model.effort_limit
        self.active = False
        self._integrating = False

    # -- configuration ----------------------------------------------------------------------

    def set_gains(self, p: dict | None = None, d: dict | None = None, i: dict | None = None,
                  i_clamp: dict | None = None) -> None:
        """Gains by joint name (N m/rad, N m s/rad, N m/(rad s); N/m ... for prismatic
        joints); joints not named keep theirs. ``i_clamp``: the most effort the integral may
        give (default unbounded)."""
        gains, clamps = self.gains.copy(), self.i_clamp.copy()
        for row, values in enumerate((p, d, i)):
            for j, value in self._by_dof(values, "gain", lower=0.0):
                gains[row, j] = value
        for j, value in self._by_dof(i_clamp, "i_clamp", lower=0.0, allow_inf=True):
            clamps[j] = value
        self._check_modes(np.flatnonzero(self.mode), gains=gains)
        self.gains[:], self.i_clamp[:] = gains, clamps
        self._refresh()

    def set_effort_limits(self, lower: dict | None = None, upper: dict | None = None) -> None:
        """Bounds on each servoed joint's total effort (default: the URDF effort limits)."""
        for j, value in self._by_dof(lower, "effort limit", allow_inf=True):
            self.table[S_LOWER, j] = value
        for j, value in self._by_dof(upper, "effort limit", allow_inf=True):
            self.table[S_UPPER, j] = value
        bad = [name for name, j in self.dof.items()
               if not self.table[S_LOWER, j] <= self.table[S_UPPER, j]]
        if bad:
            raise ValueError(f"effort limits with lower > upper on {', '.join(bad)}")

    def command(self, position: dict | None = None, velocity: dict | None = None) -> None:
        """Targets by joint name. A joint with a position (and maybe a velocity) goes to
        position mode, one with a velocity alone to velocity mode; the others keep theirs.
        Raises ValueError (nothing changed) for an unknown joint, a target that is not finite,
        or a mode whose gain is zero (position: p; velocity: d or i)."""
        targets = {}
        for j, value in self._by_dof(position, "position target", by_q=True):
            targets[j] = (POSITION, value, 0.0)
        for j, value in self._by_dof(velocity, "velocity target"):
            mode, q_target, _ = targets.get(j, (VELOCITY, 0.0, 0.0))
            targets[j] = (mode, q_target, value)
        dofs = np.array(sorted(targets), dtype=np.int64)
        modes = np.array([targets[j][0] for j in dofs], dtype=np.int64)
        self._check_modes(dofs, modes)
        for j in dofs:
            mode, q_target, v_target = targets[j]
            if self.mode[j] != mode:
                self.integral[j] = 0.0
            self.mode[j] = mode
            self.table[S_QT, j], self.table[S_VT, j] = q_target, v_target
        self._refresh()

    def load(self, mode: np.ndarray, q_target: np.ndarray, v_target: np.ndarray) -> None:
        """Every DOF's interface and targets at once (nv each; q_target per DOF), without
        checks or allocation: the node's per-tick path, whose commands were checked at the
        door (ros/commands.py)."""
        self.loaded(load_targets(mode, q_target, v_target, *self.load_arrays()))

    def load_arrays(self) -> tuple:
        """load_targets' arrays after the command's three (gains, each DOF's q index, mode,
        integral, table, iq, position mode, servoed): what a compiled caller passes it
        (campaign/ticks.py), then ``loaded`` with its answer."""
        return (self.gains, self._joint_iq, self.mode, self.integral, self.table, self.iq,
                self._position_mode, self._servoed)

    def loaded(self, flags: int) -> None:
        """load_targets answered ``flags``: whether a DOF is servoed, and one integrates."""
        self.active, self._integrating = bool(flags & 1), bool(flags & 2)

    def release(self, joints=None) -> None:
        """Back to effort mode (all joints by default)."""
        dofs = list(self.dof.values()) if joints is None else [self._dof(n) for n in joints]
        self.mode[dofs] = EFFORT
        self.integral[dofs] = 0.0
        self._refresh()

    _STATE = ("table", "iq", "saturated", "mode", "gains", "i_clamp", "integral",
              "_position_mode", "_servoed")

    def save_state(self) -> dict:
        """Copies of the targets, gains, integrals and saturation (the Simulator's State)."""
        saved = {name: getattr(self, name).copy() for name in self._STATE}
        saved["flags"] = np.array([self.active, self._integrating], dtype=np.bool_)
        return saved

    def load_state(self, saved: dict) -> None:
        """Write back what save_state returned (in place: the kernels keep their arrays)."""
        arrays = {name: getattr(self, name) for name in self._STATE}
        arrays["flags"] = np.zeros(2, dtype=np.bool_)
        copy_into(arrays, saved, "servos")
        self.active, self._integrating = bool(arrays["flags"][0]), bool(arrays["flags"][1])

    def reset(self) -> None:
        """Forget the integrals and last step's saturation (a Simulator reset)."""
        self.integral[:] = 0.0
        self.saturated[:] = 0
        self.table[S_BIAS] = 0.0

    def applied(self, tau: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Every DOF's effort in the last step (nv): tau, and the servoed joints' total effort
        (the law's plus tau, after the limits), into out (no allocation)."""
        np.copyto(out, tau)
        np.copyto(out, self.table[S_EFFORT], where=self._servoed)
        return out

    # -- per step ---------------------------------------------------------------------------

    def after_step(self, h: float, q: np.ndarray, v: np.ndarray) -> None:
        """The accepted step's state advances the integrals (only when an i gain is set)."""
        if self._integrating:
            advance_integral(h, self.gains[2], self.i_clamp, self._position_mode, self.table,
                             self.iq, self.saturated, q, v, self.integral)

    # -- helpers ----------------------------------------------------------------------------

    def _refresh(self) -> None:
        """The table's gain rows and iq from the modes, targets and gains."""
        self.load(self.mode.copy(), self.table[S_QT].copy(), self.table[S_VT].copy())
        self.table[S_EFFORT] = 0.0
        self.saturated[:] = 0

    def _check_modes(self, dofs, modes=None, gains=None) -> None:
        """ValueError unless each DOF's mode has the gain it needs."""
        modes = self.mode[dofs] if modes is None else modes
        gains = self.gains if gains is None else gains
        names = {j: n for n, j in self.dof.items()}
        for j, mode in zip(dofs, modes):
            if mode == POSITION and not gains[0, j] > 0.0:
                raise ValueError(f"joint '{names[j]}': a position target needs a position "
                                 f"gain (gains.{names[j]}.p > 0)")
            if mode == VELOCITY and not (gains[1, j] > 0.0 or gains[2, j] > 0.0):
                raise ValueError(f"joint '{names[j]}': a velocity target needs a damping or "
                                 f"integral gain (gains.{names[j]}.d or .i > 0)")

    def _named(self, values, by_q: bool) -> dict:
        """{joint: value} from an array over the DOFs (or the configuration, by_q)."""
        values = np.asarray(values, dtype=float).ravel()
        size = self._nq if by_q else self.iq.shape[0]
        if values.shape != (size,):
            raise ValueError(f"expected {size} values ({'nq' if by_q else 'nv'}), got "
                             f"{values.size}")
        return {name: values[self._joint_iq[j] if by_q else j] for name, j in self.dof.items()}

    def _dof(self, name: str) -> int:
        try:
            return self.dof[name]
        except KeyError:
            raise ValueError(f"unknown joint '{name}' (servoed joints: "
                             f"{', '.join(self.dof) or 'none'})") from None

    def _by_dof(self, values, what: str, lower: float = -np.inf, allow_inf: bool = False,
                by_q: bool = False) -> list[tuple[int, float]]:
        """[(dof, value)] from {joint: value} or from an array over every DOF (nv; over the
        configuration, nq, when by_q: a target configuration), every entry checked before any
        is used."""
        if values is not None and not isinstance(values, dict):
            values = self._named(values, by_q)
        found = []
        for name, value in (values or {}).items():
            j = self._dof(name)
            value = float(value)
            if not (np.isfinite(value) or (allow_inf and not np.isnan(value))):
                raise ValueError(f"joint '{name}': {what} must be finite, got {value}")
            if value < lower:
                raise ValueError(f"joint '{name}': {what} must be >= {lower:g}, got {value}")
            found.append((j, value))
        return found
