"""A campaign run in one compiled loop (campaign/ticks.py) gives the row of the Python loop over
sim.step bit for bit (run.run(compiled=False)): the Solo12 push and the arm tracking examples,
each built-in controller (hold, pd, trajectory; servo and effort mode), each check failing and
passing, every integrator with a fused step, servos that saturate, the command delay, a
control rate below the step rate, pushes, contact buffers that grow (steps handed back to
Python), a diverging run. Runs the compiled loop does not take (actuator lag, a Python
controller) still give their rows; after a process's first run, runs compile and load nothing
(numba's events)."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from test_campaign import SPEC, changed

from mbsim_ros._jit import CompilerActivity
from mbsim_ros.campaign import ticks
from mbsim_ros.campaign.run import Pushes, prepared, run
from mbsim_ros.campaign.spec import load_spec
from mbsim_ros.integrators import compliant

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "campaigns"
SCENE = str(ROOT / "config" / "scenes" / "solo12_standing.yaml")
HELPERS = str(Path(__file__).resolve().parent / "campaign_helpers")

ARM = {key: value for key, value in SPEC.items() if key != "runs_per_task"}
SOLO = {
    "scene": SCENE,
    "integrator": "compliant",
    "dt": 0.001,
    "duration": 0.3,
    "controller": {"type": "pd", "kp": 20.0, "kd": 0.5,
                   "posture": {"FL_KFE": -1.4, "FR_KFE": -1.4}},
    "randomize": {
        "link_mass": {"dist": "uniform", "low": 0.8, "high": 1.2},
        "friction": {"dist": "uniform", "low": 0.4, "high": 1.0},
        "delay": {"dist": "choice", "values": [0.0, 0.002]},
        "pushes": [{"link": "base_link", "start": 0.1, "duration": 0.05,
                    "force": [0.0, {"dist": "uniform", "low": -80.0, "high": 80.0}, 0.0]}]},
    "checks": {"base_height": {"above": 0.2}, "base_tilt": {"below": 0.05},
               "only_feet_touch": {"feet": ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"]},
               "contact_force_peak": {"below": 60.0, "after": 0.05},
               "tracking_rms": {"below": 0.05}, "tracking_max": {"below": 0.5}},
    "metrics": ["base_height_min", "base_tilt_max", "base_drift", "contact_force_peak",
                "foreign_contact_force", "tracking_rms", "tracking_max", "effort_rms",
                "energy_gain_max", "joint_limit_margin_min"],
}


SATURATING = changed(ARM, integrator="compliant", controller={
    "type": "pd", "kp": 3000.0, "kd": 150.0, "posture": {"joint1": 1.2, "joint2": -0.5}})


def example(name: str, duration: float) -> dict:
    data = yaml.safe_load((EXAMPLES / name).read_text())
    data["duration"] = duration
    if "scene" in data:
        data["scene"] = str((EXAMPLES / data["scene"]).resolve())
    if data["controller"].get("file"):
        data["controller"]["file"] = str(EXAMPLES / data["controller"]["file"])
    return data


def rows(data: dict, seeds, compiled: bool) -> list[dict]:
    _, data = load_spec(data)
    prep = prepared(data)
    return [run(prep, 7, seed, compiled=compiled) for seed in seeds]


def untimed(row: dict) -> str:
    return repr({k: v for k, v in row.items() if k != "wall_time"})


class Driven:
    """How many runs went through the compiled loop (ticks.drive), the steps it handed back
    to Python (ticks.observe_step) and those it asked the pushes' force for (Pushes.apply),
    by monkeypatch."""

    def __init__(self, monkeypatch) -> None:
        self.count = self.handed_back = self.pushed = 0
        drive, observe_step, apply = ticks.drive, ticks.observe_step, Pushes.apply

        def counted(*args):
            self.count += 1
            return drive(*args)

        def observed(*args):
            self.handed_back += 1
            return observe_step(*args)

        def pushed(*args):
            self.pushed += 1
            return apply(*args)

        monkeypatch.setattr(ticks, "drive", counted)
        monkeypatch.setattr(ticks, "observe_step", observed)
        monkeypatch.setattr(Pushes, "apply", pushed)


CASES = {
    "solo12_push": (example("solo12_push.yaml", 0.6), 3),
    "arm_tracking": (example("arm_tracking.yaml", 0.6), 3),
    "arm_hold_pushed": (ARM, 4),
    "arm_pd_euler_effort_mode": (changed(
        ARM, integrator="euler", controller={"type": "pd", "omega": 30.0, "mode": "effort",
                                             "posture": {"joint1": 0.3}},
        checks={"energy_gain": {"below": 5.0}, "joint_limit_margin": {"above": 0.05}}), 3),
    # a posture beyond the arm's effort limits: servos saturate (the step taken again)
    "arm_pd_compliant_saturating": (SATURATING, 3),
    "arm_pd_compliant_explicit_saturating": (changed(
        SATURATING, integrator_options={"velocity_terms": "explicit"}), 2),
    "arm_pd_euler_saturating": (changed(SATURATING, integrator="euler"), 2),
    "arm_pd_variational_saturating": (changed(SATURATING, integrator="variational"), 2),
    "solo12_pd_every_check": (SOLO, 4),
    # contact buffers of 2: the first steps hand back to Python, which grows them (UNFINISHED)
    "solo12_buffers_grown": (changed(SOLO, integrator_options={"max_contacts": 2}), 2),
    "solo12_hold_effort_mode": (changed(SOLO, controller={"type": "hold", "kp": 3.0,
                                                          "kd": 0.1, "mode": "effort"}), 2),
    # an explicit PD too stiff for its step: the divergence guard stops the run
    "arm_diverging": (changed(ARM, integrator="euler", dt=0.01, checks={},
                              controller={"type": "pd", "omega": 150.0, "mode": "effort",
                                          "posture": {"joint1": 0.3}}), 2),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_compiled_loop_gives_the_python_loops_rows_bit_for_bit(case, monkeypatch):
    data, runs = CASES[case]
    python = rows(data, range(runs), compiled=False)
    driven = Driven(monkeypatch)
    compiled = rows(data, range(runs), compiled=True)
    assert driven.count == runs  # every run through the compiled loop
    pushed = sum(round(push["duration"] / data["dt"]) for push in data["randomize"].get(
        "pushes", ()))  # steps a push is on (within one)
    whole = sum(r["steps"] == round(data["duration"] / data["dt"]) for r in compiled)
    # Python computed the pushes' force on their steps, and took a few steps the fused step
    # handed back (a buffer grown), no more
    assert whole * (pushed - 1) <= driven.pushed <= runs * (pushed + 10)
    assert driven.handed_back <= 5 * runs, driven.handed_back
    assert [untimed(r) for r in compiled] == [untimed(r) for r in python]
    assert all(r["failed_check"] != "exception" for r in compiled), compiled


def test_buffers_too_small_are_grown_by_steps_handed_back(monkeypatch):
    driven = Driven(monkeypatch)
    rows(SOLO, [0], compiled=True)
    usual = driven.handed_back
    rows(CASES["solo12_buffers_grown"][0], [0], compiled=True)
    assert driven.handed_back - usual > usual, (usual, driven.handed_back)


def test_the_saturating_case_saturates(monkeypatch):
    """Its servos saturate in the Python loop's steps (compliant: the step solved again)."""
    saturated = []
    solve_again = compliant.servo_saturated

    def counted(*args):
        saturated.append(solve_again(*args))
        return saturated[-1]

    monkeypatch.setattr(compliant, "servo_saturated", counted)
    rows(SATURATING, [0], compiled=False)
    assert sum(saturated) > 100, sum(saturated)


def test_the_cases_fail_and_pass_what_they_are_meant_to():
    """The cases reach what they are there for (a case whose runs all pass judges nothing)."""
    solo = rows(SOLO, range(4), compiled=True)
    failed = {r["failed_check"] for r in solo}
    assert failed - {""}, failed
    assert all(not math.isnan(r["foreign_contact_force"]) for r in solo)
    push = rows(*[CASES["solo12_push"][0]], range(3), compiled=True)
    assert all(r["steps"] == 600 for r in push)
    diverging = rows(CASES["arm_diverging"][0], range(2), compiled=True)
    assert {r["failed_check"] for r in diverging} == {"diverged"}, diverging
    assert all(0 < r["steps"] < 30 and r["message"] for r in diverging)


@pytest.mark.parametrize("changes", [
    {"randomize__lag": {"dist": "choice", "values": [40.0, 80.0]}},  # actuator models
    {"controller": {"type": "python", "function": "campaign_controllers:hold_joint2",
                    "kp": 3000.0, "kd": 150.0}},
])
def test_runs_the_loop_does_not_take_keep_their_rows(changes, monkeypatch):
    if "controller" in changes:
        monkeypatch.syspath_prepend(HELPERS)
    data = changed(ARM, **changes)
    driven = Driven(monkeypatch)
    compiled = rows(data, range(2), compiled=True)
    assert driven.count == 0
    assert [untimed(r) for r in compiled] == [untimed(r) for r in rows(data, range(2), False)]
    assert all(r["steps"] == 150 for r in compiled), compiled


def test_runs_after_the_first_compile_and_load_nothing():
    _, data = load_spec(example("solo12_push.yaml", 0.2))
    prep = prepared(data)
    run(prep, 0, 0)
    with CompilerActivity() as activity:
        done = [run(prep, 0, seed) for seed in (1, 2, 3)]
    assert (activity.compiles, activity.loads) == (0, 0), activity.compiled
    assert all(r["steps"] == 200 for r in done)
