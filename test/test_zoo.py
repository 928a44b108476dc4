"""The robot zoo: every URDF that example-robot-data ships, as a new user loads it
(``load_urdf(path)``, fixed base), is loaded once per test session and checked three ways:

1. it loads (ur3.urdf has no <link> and must keep its error; romeo_laas_small's grossly
   invalid inertia needs the opt-in ``balance_inertia=True``);
2. RNEA, CRBA and ABA equal pinocchio's (built from the same file) at a random configuration
   within the limits, without armature and with a random positive armature set on both;
3. 2 s at 1 ms from the neutral configuration clamped into the joint limits, at rest, under
   gravity, zero effort, in euler (its default velocity_terms="implicit"; see FLAILING),
   variational, compliant (joint limits, no scene) and rigid:
   no step fails, the positions stay finite, and the energy never rises above its start by
   more than rounding plus the integrator's band (BAND below).

bench/zoo.py runs the same robots and writes docs/ROBOTS.md (the figures behind the bands)."""
from __future__ import annotations

import warnings
import zlib

import numpy as np
import pinocchio as pin
import pytest

from conftest import pinocchio_model, random_configuration, relative_error, to_pinocchio_q
from mbsim_ros import Model, ModelError, load_urdf
from mbsim_ros.codes import OUT_OF_BOUNDS, message
from mbsim_ros.dynamics import aba, crba, rnea
from mbsim_ros.model.model import R_COM, R_INERTIA, R_MASS

from mbsim_ros import zoo

ZOO = zoo.zoo_urdfs()
NO_LINK = "ur3"  # ur3.urdf: a <robot> with a comment and no <link>; urdfdom refuses it too
NEEDS_REPAIR = {"romeo_laas_small": "body"}  # robot -> the link whose inertia is invalid
NO_REPAIR = "{} needs load_urdf(..., balance_inertia=True), which does not exist yet"
LOADABLE = [name for name in ZOO if name != NO_LINK]

SECONDS, DT = 2.0, 1e-3
# RNEA and CRBA are sums of products of the same numbers in another order (world frame here,
# local frames in pinocchio): rounding only, measured at most 1.4e-15 (conftest's
# relative_error: relative above 1, absolute below) over every robot that loads, the deepest
# trees (talos, g1: 44 DOF) included. 1e-12 leaves three orders for other summation orders
# and still catches any wrong term (an inertia, an axis sign, an armature left out: the
# smallest armature here is 1e-4). ABA solves M a = tau - b: its rounding is that of the
# solve, amplified by cond(M) (up to ~1e6 with the fingers' small inertias).
TOLERANCE = 1e-12
ABA_EPS = 1e-15
# Energy: E(t) - E(0) <= BAND[integrator] * S + ROUNDING * (|E(0)| + S), S = zoo.energy_scale
# (|g| sum m_i r_i: twice it bounds any energy a fixed-base robot exchanges from rest). Joint
# damping, friction and limit impacts only remove energy; what an integrator may add is its
# discretisation error, which oscillates without drift for these symplectic schemes.
# variational: the midpoint discrete Lagrangian's modified energy differs from E by
#   O((h w)^2); for motions up to w = 100 rad/s (a light finger swinging at 16 Hz) that is
#   ~1e-2 of the energy in play at 1 ms; measured at most 8e-4 S on every robot that runs.
# euler, compliant, rigid: first order (the velocity update, then q' = q + h v'): symplectic
#   Euler's modified energy differs by O(h w), 5e-2 for w = 50 rad/s; measured at most 8e-3 S
#   (the UR arms) on the robots that behave.
BAND = {"variational": 5e-3, "euler": 5e-2, "compliant": 5e-2, "rigid": 5e-2}
# Euler runs here in its default velocity_terms="implicit", the mode that finishes every robot;
# the "explicit" mode (MuJoCo's Euler: Coriolis explicit) diverges on g1 (x2), human and
# romeo (x2) and gains up to 3.4x the scale on kinova: bench/zoo.py and docs/EULER.md report it,
# test_euler.py tests it. Robots whose light distal links flail without joint limits (Euler has
# none) at h v ~ 1 rad per step: no first-order step keeps their energy (docs/EULER.md); the run
# must finish with finite states or be stopped by the divergence guard when a flailing link
# passes its speed bound (integrators/bounds.py: g1 with hands' fingers do, past 2000 rad/s on
# their way to 10^7), the energy is not checked. Real actuators' armature cures it.
FLAILING = {
    "g1_29dof_rev_1_0": "wrists (1.8e-5 kg m^2) at up to 300 rad/s: +0.12 of the scale",
    "g1_29dof_with_hand_rev_1_0": "fingers at ~1e3 rad/s: finite, energy lost (1e11 J)",
    "so100": "wrist (1.6e-5 kg m^2) at ~200 rad/s: +0.10 of the scale",
    "so101": "wrist (1.6e-5 kg m^2) at ~200 rad/s: +0.44 of the scale",
}
ROUNDING = 1e-10
SINGULAR = 1e-12  # smallest / largest eigenvalue of M below which M counts as singular


class NoRepairOption(Exception):
    """Raised where load_urdf takes no balance_inertia option (the nearest physical inertia)."""


_MODELS: dict[str, Model | Exception] = {}
_REPAIRED: set[str] = set()  # robots whose inertias the loader changed (with a warning)


def _load(name: str) -> Model:
    path = ZOO[name]
    if name not in NEEDS_REPAIR:
        return load_urdf(path)
    if not zoo.has_repair_option():
        raise NoRepairOption(NO_REPAIR.format(name))
    return load_urdf(path, balance_inertia=True)


def zoo_model(name: str) -> Model:
    """The robot's model, parsed once per session (its load error, raised again, likewise)."""
    if name not in _MODELS:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                _MODELS[name] = _load(name)
        except (ModelError, NoRepairOption) as exc:
            _MODELS[name] = exc
        else:
            if any("inertia" in str(w.message) for w in caught):
                _REPAIRED.add(name)
    model = _MODELS[name]
    if isinstance(model, Exception):
        raise model
    return model


def loaded(name: str) -> Model:
    """zoo_model, or a skip naming the load failure (test_loads reports it)."""
    try:
        return zoo_model(name)
    except NoRepairOption as exc:
        pytest.skip(str(exc))
    except ModelError as exc:
        pytest.skip(f"does not load (test_loads[{name}] fails): {exc}")


def seed(name: str) -> int:
    return zlib.crc32(name.encode())


# --- 1. loading --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ZOO)
def test_loads(name):
    path = ZOO[name]
    if name == NO_LINK:
        with pytest.raises(ModelError, match="no <link>"):
            load_urdf(path)
        return
    if name in NEEDS_REPAIR:
        if not zoo.has_repair_option():
            pytest.skip(NO_REPAIR.format(name))
        with pytest.raises(ModelError) as error:
            load_urdf(path)
        assert f"'{NEEDS_REPAIR[name]}'" in str(error.value), "the error names the link"
        assert "balance_inertia" in str(error.value), "the error points to the repair"
        with pytest.warns(Warning, match=NEEDS_REPAIR[name]):
            model = load_urdf(path, balance_inertia=True)
    else:
        model = zoo_model(name)
    assert model.nv == pinocchio_model(path, False).nv


# --- 2. dynamics against pinocchio ---------------------------------------------------------------

def pinocchio_with_our_inertias(model: Model, pm: pin.Model) -> None:
    """Our loader's inertias into pinocchio's model (body i of ours is joint i + 1 there)."""
    for i in range(model.njoints):
        row = model.joint_real[i]
        xx, xy, xz, yy, yz, zz = row[R_INERTIA]
        inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        pm.inertias[i + 1] = pin.Inertia(row[R_MASS], row[R_COM].copy(), inertia)


def full(M: np.ndarray) -> np.ndarray:
    return np.triu(M) + np.triu(M, 1).T


@pytest.mark.parametrize("with_armature", [False, True], ids=["no_armature", "armature"])
@pytest.mark.parametrize("name", LOADABLE)
def test_dynamics_match_pinocchio(name, with_armature):
    model = loaded(name)
    if model.nv == 0:
        pytest.skip("no degree of freedom: nothing to compare")
    pm = pinocchio_model(ZOO[name], False)
    if pm.nv != model.nv or list(pm.names)[1:] != model.joint_names:
        pytest.skip(f"layouts differ: pinocchio {list(pm.names)[1:]}, ours {model.joint_names}")
    if name in _REPAIRED:  # the file's inertias are invalid; pinocchio takes them as they are
        pinocchio_with_our_inertias(model, pm)
    rng = np.random.default_rng(seed(name))
    q = random_configuration(model, rng)
    v, a, tau = rng.normal(size=(3, model.nv))
    armature = 10.0 ** rng.uniform(-4.0, -1.0, model.nv) if with_armature else \
        np.zeros(model.nv)
    loaded_armature = model.armature.copy()
    try:
        model.armature = armature
        pm.armature = armature
        data, pq = pm.createData(), to_pinocchio_q(model, q)
        assert relative_error(rnea(model, q, v, a), pin.rnea(pm, data, pq, v, a)) < TOLERANCE
        expected = full(pin.crba(pm, data, pq))
        assert relative_error(crba(model, q), expected) < TOLERANCE
        condition = np.linalg.cond(expected)
        if not condition < 1.0 / SINGULAR:
            return  # a singular M (romeo's fingers without armature): ABA has no answer
        assert relative_error(aba(model, q, v, tau), pin.aba(pm, data, pq, v, tau)) < \
            ABA_EPS * condition + TOLERANCE
    finally:
        model.armature = loaded_armature


# --- 3. at rest under gravity, 2 s in every integrator --------------------------------------------

def singular_joints(model: Model, q: np.ndarray) -> list[str]:
    """The joints on a zero diagonal entry of M(q) when M(q) is singular, else []."""
    if model.nv == 0:
        return []
    M = crba(model, q)
    eigenvalues = np.linalg.eigvalsh(M)
    if eigenvalues[0] > SINGULAR * eigenvalues[-1]:
        return []
    small = np.diag(M) <= SINGULAR * eigenvalues[-1]
    return [name for name, iv, kind in zip(model.joint_names, model.idx_v, model.joint_kinds)
            if kind != "free_flyer" and small[iv]] or ["(a combination of joints)"]


def refuses_naming_joints(model: Model, integrator: str) -> bool:
    """The Simulator refuses the model, naming joints and saying to give them armature."""
    try:
        zoo.make_simulator(model, integrator, DT)
    except (ModelError, ValueError) as exc:
        return "armature" in str(exc) and bool(zoo.named_joints(model, str(exc)))
    return False


@pytest.mark.parametrize("integrator", BAND)
@pytest.mark.parametrize("name", LOADABLE)
def test_at_rest_under_gravity(name, integrator):
    """Singular M (romeo's fingers): the Simulator must refuse it naming the joints; they get
    zoo.ARMATURE (zoo.simulator does that) and the run must then pass like any other. A robot
    whose M is singular inside its range (zoo.SINGULAR_IN_RANGE: human's neck) gets it too."""
    model = loaded(name)
    q0 = model.clamped(model.neutral())[0]
    loaded_armature = model.armature.copy()
    try:
        singular = singular_joints(model, q0)
        if singular and not refuses_naming_joints(model, integrator):
            pytest.skip(f"M is singular at neutral ({', '.join(singular)}) and the Simulator "
                        f"does not refuse it yet")
        run = zoo.simulate(model, integrator, SECONDS, DT, q0=q0, robot=name)
    finally:
        model.armature = loaded_armature
    if integrator == "euler" and name in FLAILING:  # finite states (every step's energy
        assert run.finished or run.message.startswith(message(OUT_OF_BOUNDS)), run.message
        return  # evaluation checks them), up to the guard's stop
    assert run.finished, f"stopped at t = {run.t_fail:.3f} s: {run.message}"
    allowed = BAND[integrator] * run.scale + ROUNDING * (abs(run.e0) + run.scale)
    assert run.rise <= allowed, \
        f"the energy rose {run.rise:.3g} J above its start ({run.drift:.2g} of the energy " \
        f"scale {run.scale:.3g} J; band {BAND[integrator]:g})"
