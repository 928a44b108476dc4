"""A run judged as it goes: every quantity the checks and metrics name is kept up to date after
each step in a few preallocated numbers (no trajectory is stored), and each check remembers
the first time it failed and the value there."""
from __future__ import annotations

import math

import numpy as np

from ..dynamics.workspace import new_workspace
from ..model import FREE_FLYER, Model
from .spec import METRICS, CampaignSpec

# check -> (its quantity, "above" / "below")
CHECKS = {"base_height": ("base_height_min", "above"), "base_tilt": ("base_tilt_max", "below"),
          "tracking_rms": ("tracking_rms", "below"), "tracking_max": ("tracking_max", "below"),
          "joint_limit_margin": ("joint_limit_margin_min", "above"),
          "contact_force_peak": ("contact_force_peak", "below"),
          "only_feet_touch": ("foreign_contact_force", "feet"),
          "energy_gain": ("energy_gain_max", "below")}
DIVERGED = "diverged"  # a step left the physical bounds (integrators/bounds.py): always judged
SOLVER = "no_solver_failure"
CONTROLLER = "controller"  # a controller process that exited, hung or sent a rejected command

# a step's row of what observe reads, as a compiled run records it (campaign/ticks.py): the
# time, the base's height, quaternion x and y, position x and y, the joint-limit margin, the
# worst tracking error, the contact force peak and the foreign one, the energy gain
(T_TIME, T_HEIGHT, T_QX, T_QY, T_X, T_Y, T_MARGIN, T_TRACKING, T_PEAK, T_FOREIGN,
 T_ENERGY), N_TRACE = range(11), 11
# observe's quantities that a check may watch, in observe's order (a step's first failed check
# is the first of them), each kept by its min or max
TRACED = {"base_height_min": min, "base_tilt_max": max, "joint_limit_margin_min": min,
          "tracking_max": max, "contact_force_peak": max, "foreign_contact_force": max,
          "energy_gain_max": max}


class Monitor:
    """The quantities of one run: ``observe(sim, target, tracked)`` after each step (target:
    the position target per DOF; tracked: the DOFs in position mode), ``fail_solver(t)``,
    ``fail_controller(t)``,
    ``finish(t)``, then ``metrics()`` and ``failed`` (check, time, value) or None."""

    def __init__(self, spec: CampaignSpec, model: Model, foot_bodies: list[int] | None,
                 tracked_dofs: list[int] | None) -> None:
        self.checks = {name: getattr(spec.checks, name) for name in CHECKS
                       if getattr(spec.checks, name) is not None}
        self.solver_check = spec.checks.no_solver_failure
        free = np.flatnonzero(model.joint_type == FREE_FLYER)
        self._base = int(model.idx_q[free[0]]) if len(free) else -1
        self._one_dof_q = np.array([model.idx_q[i] for i in range(model.njoints)
                                    if model.joint_type[i] != FREE_FLYER], dtype=int)
        lower = model.lower_position_limit[self._one_dof_q]
        upper = model.upper_position_limit[self._one_dof_q]
        self._limited = np.isfinite(lower) & np.isfinite(upper)
        self._lower, self._upper = lower[self._limited], upper[self._limited]
        self._foreign = np.ones(model.njoints, dtype=bool)
        if foot_bodies is not None:
            self._foreign[foot_bodies] = False
        self._tracked = None if tracked_dofs is None else np.array(tracked_dofs, dtype=int)
        self._error = np.zeros(model.nv)
        self._q_of_v = np.zeros(model.nv, dtype=int)  # a one-DOF joint's q index by its v's
        self._q_of_v[model.idx_v[model.joint_type != FREE_FLYER]] = self._one_dof_q
        self.values = {name: math.nan for name in METRICS}
        self._sums = {"tracking": 0.0, "tracking_count": 0, "effort": 0.0, "steps": 0}
        self._start = None
        self.failed: tuple[str, float, float] | None = None
        self._energy = "energy_gain" in self.checks or "energy_gain_max" in spec.metrics
        self._contact = False  # (observed: whether the integrator models contact)
        self._observed = None  # (observed: its arrays but the contact wrenches')

    def start(self, sim) -> None:
        self._start = (sim.energy(), sim.q[:2].copy() if self._base >= 0 else None)

    def observe(self, sim, target: np.ndarray, tracked: np.ndarray) -> None:
        t, q = sim.t, sim.q
        values = self.values
        if self._base >= 0:
            b = self._base
            tilt = 2.0 * math.asin(min(1.0, math.hypot(q[b + 3], q[b + 4])))
            self._update("base_height_min", float(q[b + 2]), min, t)
            self._update("base_tilt_max", tilt, max, t)
            x0, y0 = self._start[1]
            values["base_drift"] = math.hypot(q[b] - x0, q[b + 1] - y0)
        if self._limited.any():
            q1 = q[self._one_dof_q][self._limited]
            margin = min(float(np.min(q1 - self._lower)), float(np.min(self._upper - q1)))
            self._update("joint_limit_margin_min", margin, min, t)
        self._observe_tracking(q, target, tracked, t)
        if sim.integrator.models_contact:
            forces = np.linalg.norm(sim.body_wrenches()[:, :3], axis=1)
            self._update("contact_force_peak", float(forces.max(initial=0.0)), max, t)
            self._update("foreign_contact_force",
                         float(forces[self._foreign].max(initial=0.0)), max, t)
        if self._energy:
            self._update("energy_gain_max", sim.energy() - self._start[0], max, t)
        effort = sim.effort
        self._sums["effort"] += float(effort @ effort)
        self._sums["steps"] += 1
        values["effort_rms"] = math.sqrt(self._sums["effort"] / (self._sums["steps"]
                                                                 * max(1, len(effort))))

    def tracked_dofs(self, tracked: np.ndarray) -> np.ndarray:
        """The DOFs whose tracking errors count: the spec's, else the controller's."""
        return np.asarray(tracked if self._tracked is None else self._tracked, dtype=np.int64)

    def observed(self, sim, tracked: np.ndarray) -> tuple:
        """What a compiled run's observe (campaign/ticks.py) reads, bound to ``sim``'s arrays
        (bound again when the integrator replaced a buffer): the base's q index, the limited
        joints' q indices and limits, the tracked DOFs and each DOF's q index, the foreign
        bodies, the energy's arrays (model, workspace, parts, start), the contact wrenches'
        (Integrator.wrench_arguments), flags (contact, energy)."""
        model, integrator = sim.model, sim.integrator
        contact = self._contact = integrator.models_contact
        if contact:
            wrenches = integrator.wrench_arguments()
        else:  # never read: the types of a contact integrator's
            nj = model.njoints
            wrenches = (np.zeros((0, 4), dtype=np.int64), np.zeros((0, 8)), np.zeros((0, 3)),
                        np.zeros(0), np.zeros(3, dtype=np.int64), sim.dt, np.zeros((nj, 3)),
                        np.zeros((nj, 6)), np.zeros(nj, dtype=np.int64))
        if self._observed is None:
            energy = (model.joint_int, model.joint_real, model.gravity, model.armature,
                      new_workspace(model), np.zeros(2), np.array([self._start[0]]))
            self._observed = (self._base, self._one_dof_q[self._limited].astype(np.int64),
                              self._lower.copy(), self._upper.copy(), self.tracked_dofs(tracked),
                              self._q_of_v.astype(np.int64), self._foreign, energy)
        return (*self._observed, wrenches, np.array([contact, self._energy], np.int64))

    def replay(self, trace: np.ndarray, efforts: np.ndarray, errors: np.ndarray) -> None:
        """observe of each row in turn, from a compiled run's records (one row per step:
        trace's T_* columns, the efforts and the tracking errors), bit for bit: the tilt and
        the drift by math.hypot and the sums of squares by numpy's dot, as observe has them."""
        values, sums = self.values, self._sums
        if not len(trace):
            return
        series = {}
        if self._base >= 0:
            series["base_height_min"] = trace[:, T_HEIGHT]
            series["base_tilt_max"] = np.array([
                2.0 * math.asin(min(1.0, math.hypot(x, y)))
                for x, y in zip(trace[:, T_QX].tolist(), trace[:, T_QY].tolist())])
            x0, y0 = self._start[1]
            values["base_drift"] = math.hypot(trace[-1, T_X] - x0, trace[-1, T_Y] - y0)
        if self._limited.any():
            series["joint_limit_margin_min"] = trace[:, T_MARGIN]
        if errors.shape[1]:
            for error in errors:
                sums["tracking"] += float(error @ error)
                sums["tracking_count"] += len(error)
            values["tracking_rms"] = math.sqrt(sums["tracking"] / sums["tracking_count"])
            series["tracking_max"] = trace[:, T_TRACKING]
        if self._contact:
            series["contact_force_peak"] = trace[:, T_PEAK]
            series["foreign_contact_force"] = trace[:, T_FOREIGN]
        if self._energy:
            series["energy_gain_max"] = trace[:, T_ENERGY]
        for effort in efforts:
            sums["effort"] += float(effort @ effort)
            sums["steps"] += 1
        values["effort_rms"] = math.sqrt(sums["effort"] / (sums["steps"]
                                                          * max(1, efforts.shape[1])))
        for name, column in series.items():
            values[name] = _kept(values[name], column, TRACED[name])
        self._judge_series(trace[:, T_TIME], series)

    def _judge_series(self, t: np.ndarray, series: dict) -> None:
        """The first failed instant check over the rows: the earliest row, within a row the
        first quantity in observe's order."""
        first = None
        for order, (name, column) in enumerate(series.items()):
            for check, (watched, sense) in CHECKS.items():
                if watched != name or check not in self.checks or check == "tracking_rms":
                    continue
                bound = self.checks[check]
                bad = column > 0.0 if sense == "feet" else (
                    column <= bound.above if sense == "above" else column >= bound.below)
                rows = np.flatnonzero(bad & (t >= bound.after))
                if len(rows) and (first is None or (rows[0], order) < first[:2]):
                    first = (rows[0], order, check, column)
        if first is not None and self.failed is None:
            row, _, check, column = first
            self.failed = (check, float(t[row]), float(column[row]))

    def _observe_tracking(self, q, target, tracked, t) -> None:
        dofs = tracked if self._tracked is None else self._tracked
        if len(dofs) == 0:
            return
        error = self._error[:len(dofs)]
        np.subtract(target[dofs], q[self._q_of_v[dofs]], out=error)
        self._sums["tracking"] += float(error @ error)
        self._sums["tracking_count"] += len(dofs)
        self.values["tracking_rms"] = math.sqrt(self._sums["tracking"]
                                                / self._sums["tracking_count"])
        self._update("tracking_max", float(np.abs(error).max()), max, t)

    def _update(self, name: str, value: float, keep, t: float) -> None:
        old = self.values[name]
        self.values[name] = value if math.isnan(old) else keep(old, value)
        self._check_instant(name, value, t)

    def _check_instant(self, quantity: str, value: float, t: float) -> None:
        for check, (watched, sense) in CHECKS.items():
            if watched != quantity or check not in self.checks or check == "tracking_rms":
                continue
            self._judge(check, sense, value, t)

    def _judge(self, check: str, sense: str, value: float, t: float) -> None:
        bound = self.checks[check]
        if self.failed is not None or t < bound.after:
            return
        bad = value > 0.0 if sense == "feet" else (
            value <= bound.above if sense == "above" else value >= bound.below)
        if bad:
            self.failed = (check, t, float(value))

    def fail_diverged(self, departure) -> None:
        """The divergence guard refused a step (StepInfo.departure): ``diverged`` at that
        step's time, its value the quantity that left its bound (the run's message names it)."""
        if self.failed is None:
            self.failed = (DIVERGED, departure.t, departure.value)

    def fail_solver(self, t: float) -> None:
        if self.solver_check and self.failed is None:
            self.failed = (SOLVER, t, math.nan)

    def fail_controller(self, t: float) -> None:
        if self.failed is None:
            self.failed = (CONTROLLER, t, math.nan)

    def finish(self, t: float) -> None:
        """The whole-run checks (tracking RMS), judged at the end."""
        if "tracking_rms" in self.checks and not math.isnan(self.values["tracking_rms"]):
            self._judge("tracking_rms", "below", self.values["tracking_rms"], t)

    def metrics(self) -> dict[str, float]:
        return dict(self.values)


def _kept(old: float, column: np.ndarray, keep) -> float:
    """_update's running min / max over a column's values in turn, from old (NaN: none yet)."""
    values = column.tolist()
    if not np.isnan(column).any():
        return keep(values) if math.isnan(old) else keep(old, keep(values))
    for value in values:
        old = value if math.isnan(old) else keep(old, value)
    return old
