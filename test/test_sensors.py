"""Simulated sensors (mbsim_ros.sensors) against analytic readings: a pendulum's IMU
(angular velocity, centripetal and tangential specific force), a free-falling spinning box
(specific force zero, not -g; Euler's equations at an offset point), IMUs at rest (+g up),
force-torque sensors on held loads (weight and offset torque), a resting ball whose contact
carries its weight; noise statistics against the parameters (white-noise std, Allan deviation
of the bias random walk), seeds, encoder quantisation and delay, and bad entries."""
from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import box_link_urdf, relative_error

from mbsim_ros import Simulator, load_urdf
from mbsim_ros.config import ConfigError
from mbsim_ros.contact.scene import quaternion_to_matrix
from mbsim_ros.dynamics import aba
from mbsim_ros.dynamics.workspace import workspace_size
from mbsim_ros.model import shipped_urdf
from mbsim_ros.spatial import rpy_matrix
from mbsim_ros.model.closures import urdf_frames
from mbsim_ros.sensors import SensorSuite
from mbsim_ros.sensors.kernels import sensor_truth

G = 9.81
DT = 1e-3
PENDULUM = shipped_urdf("pendulum")  # 1 kg at 1 m below a pivot about y; the base is fixed
I_PIVOT = 1.0 + 1e-6                 # m L^2 + the bob's own 1e-6 kg m^2
SLIDER = """<robot name="slider"><link name="base"/>
<joint name="slide" type="prismatic"><parent link="base"/><child link="load"/>
<axis xyz="0 0 1"/><limit lower="-10" upper="10" effort="100" velocity="10"/></joint>
<link name="load"><inertial><origin xyz="0.2 0 -0.5"/><mass value="2"/>
<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link></robot>"""


def pendulum(theta: float = 0.0, integrator: str = "variational") -> Simulator:
    sim = Simulator(load_urdf(PENDULUM), dt=DT, integrator=integrator)
    sim.reset([theta])
    return sim


def imu(name: str, link: str, **extra) -> dict:
    return {"type": "imu", "name": name, "link": link, **extra}


def run(sim: Simulator, suite: SensorSuite, steps: int, tau=None) -> None:
    for _ in range(steps):
        sim.step(tau)
        suite.update()


def rotation(row: np.ndarray) -> np.ndarray:
    return quaternion_to_matrix(row[3:7])


# -- IMU ----------------------------------------------------------------------------------------

def test_pendulum_imu_reads_the_centripetal_and_tangential_specific_force():
    """At l below the pivot the link frame reads w = (0, th', 0) and specific force
    (-l th'' - g sin th, 0, l th'^2 + g cos th) with th'' = -g sin th / (I / m L): at the bob
    (l = L) the tangential part vanishes (only the rod pulls), at mid-rod it is -g sin th / 2.
    The sensor frames are turned (rpy) to check the frame change too."""
    sim = pendulum(1.0)
    mount = (math.pi / 2, 0.3, 0.0)
    suite = SensorSuite(sim, [imu("bob", "link1", xyz=[0, 0, -1.0], rpy=list(mount)),
                              imu("mid", "link1", xyz=[0, 0, -0.5])], frames=urdf_frames(PENDULUM))
    turn = rpy_matrix(mount)
    checked = 0
    for step in range(1, 1201):
        sim.step()
        suite.update()
        if step % 40:
            continue
        theta, rate = sim.q[0], sim.v[0]
        accel = -G * math.sin(theta) / I_PIVOT
        link = np.array([[math.cos(theta), 0, math.sin(theta)], [0, 1, 0],
                         [-math.sin(theta), 0, math.cos(theta)]])
        # the step's mean acceleration lags the state by half a step: |error| <= l dt/2 |th'''|
        lag = 0.6 * DT * G * abs(rate) + 1e-4
        for row, length, frame in ((suite.imu_readings[0], 1.0, turn),
                                   (suite.imu_readings[1], 0.5, np.eye(3))):
            force = np.array([-length * accel - G * math.sin(theta), 0.0,
                              length * rate ** 2 + G * math.cos(theta)])
            reading = frame @ row[10:13]  # back to link axes
            assert abs(reading[0] - force[0]) < length * lag
            assert abs(reading[1]) < 1e-9 and abs(reading[2] - force[2]) < 1e-9
            assert np.allclose(frame @ row[7:10], [0.0, rate, 0.0], atol=1e-12)
            assert np.allclose(rotation(row), link @ frame, atol=1e-12)
            assert np.allclose(row[:3], link @ [0, 0, -length], atol=1e-12)
        checked += 1
    assert checked == 30


@pytest.mark.parametrize("integrator", ["variational", "euler"])
def test_a_free_falling_spinning_box_reads_zero_specific_force(integrator):
    """No contact, no joint: the specific force at the centre of mass is zero (a real
    accelerometer in free fall reads 0, not -g); at an offset point r it is the rigid-body
    acceleration relative to the centre, w' x r + w x (w x r) with Euler's w' = -I^-1 (w x I w);
    the gyro reads the body-frame angular velocity and the orientation is the base's."""
    mass, size = 2.0, (0.3, 0.2, 0.1)
    model = load_urdf(box_link_urdf("box", mass, size, ""), floating_base=True)
    sim = Simulator(model, dt=DT, integrator=integrator)
    sim.reset(np.array([0, 0, 5.0, 0, 0, 0, 1.0]), [1.0, 0.0, 2.0, 0.3, 0.4, 1.5])
    corner = np.array([0.15, 0.1, 0.05])
    suite = SensorSuite(sim, [imu("centre", "box"), imu("corner", "box", xyz=list(corner))])
    x, y, z = size
    inertia = mass / 12 * np.diag([y * y + z * z, x * x + z * z, x * x + y * y])
    for _ in range(10):
        run(sim, suite, 50)
        w = np.array(sim.v[3:6])
        w_dot = -np.linalg.solve(inertia, np.cross(w, inertia @ w))
        centre, offset = suite.imu_readings
        assert np.abs(centre[10:13]).max() < 0.02, centre[10:13]  # -g would be 9.81
        expected = np.cross(w_dot, corner) + np.cross(w, np.cross(w, corner))
        assert np.abs(offset[10:13] - expected).max() < 0.02
        assert np.allclose(centre[7:10], w, atol=1e-12)
        assert min(np.abs(centre[3:7] - sim.q[3:7]).max(),
                   np.abs(centre[3:7] + sim.q[3:7]).max()) < 1e-12


def test_imus_at_rest_read_plus_g_up():
    """A hanging pendulum at rest and the base fixed to the world: +9.81 along the world's up
    in the sensor frame (a mount pitched by +90 deg reads it along its -x)."""
    sim = pendulum(0.0)
    suite = SensorSuite(sim, [imu("bob", "link1", xyz=[0, 0, -1]), imu("base", "base"),
                              imu("pitched", "link1", rpy=[0, math.pi / 2, 0])],
                        frames=urdf_frames(PENDULUM))
    run(sim, suite, 100)
    bob, base, pitched = suite.imu_readings
    for row in (bob, base):
        assert np.allclose(row[7:], [0, 0, 0, 0, 0, G], atol=1e-9)
    assert np.allclose(pitched[10:13], [-G, 0, 0], atol=1e-9)


# -- force-torque ------------------------------------------------------------------------------

def test_force_torque_on_a_held_pendulum_reads_its_weight_and_the_holding_torque():
    """Held at th = 0.5 by tau = m g L sin th: the pivot carries the weight, (-sin th, 0,
    cos th) m g in the link frame, and the torque about the pivot is tau along y."""
    theta = 0.5
    sim = pendulum(theta)
    suite = SensorSuite(sim, [{"type": "force_torque", "name": "pivot", "joint": "joint1"}])
    hold = np.array([G * math.sin(theta)])
    run(sim, suite, 200, hold)
    expected = [-G * math.sin(theta), 0.0, G * math.cos(theta), 0.0, G * math.sin(theta), 0.0]
    assert np.allclose(suite.wrench_readings[0], expected, atol=1e-9)


def test_force_torque_on_a_hanging_offset_load_reads_the_offset_torque():
    """A 2 kg load whose centre of mass is 0.2 m beside a vertical slide, held by the slide's
    force m g: force (0, 0, m g), torque about the joint origin -c x (-m g z) = (0, -0.2 m g, 0)
    (the slide's bearing holds the moment)."""
    sim = Simulator(load_urdf(SLIDER), dt=DT)
    suite = SensorSuite(sim, [{"type": "force_torque", "name": "slide", "joint": "slide"}])
    run(sim, suite, 200, [2.0 * G])
    assert np.allclose(suite.wrench_readings[0], [0, 0, 2 * G, 0, -0.2 * 2 * G, 0], atol=1e-9)


def test_force_torque_is_the_reaction_wrench_of_the_acceleration_it_is_given():
    """On the falling arm (joint damping 0.1 N m s/rad): the compiled pass given the
    instantaneous acceleration a_k (ABA with the damping torque) is Simulator.joint_wrenches()
    to rounding; the reading itself comes from the step's mean acceleration, half a step
    behind: its distance to joint_wrenches() is half of what the acceleration's change over the
    step, a_k - a_(k-1), makes of the wrench at the same state."""
    model = load_urdf(shipped_urdf("arm7"))
    sim = Simulator(model, dt=DT)
    sim.reset(np.array([0.0, 0.6, 0.0, -1.2, 0.0, 0.8, 0.0]))
    joints = ["joint2", "joint4", "joint7"]
    suite = SensorSuite(sim, [{"type": "force_torque", "name": j, "joint": j} for j in joints])
    ws = np.zeros(workspace_size(model.njoints, model.nv))
    none = np.zeros(0, dtype=np.int64)

    def wrenches(a):
        out = np.zeros((3, 6))
        sensor_truth(model.joint_int, model.joint_real, model.gravity, np.array(sim.q),
                     np.array(sim.v), a, ws, model.njoints, np.zeros((model.njoints, 6)), none,
                     np.zeros((0, 12)), np.zeros((0, 13)), np.array([1, 3, 6]), out)
        return out

    def acceleration():
        return aba(model, sim.q, sim.v, -model.damping * sim.v)

    for _ in range(5):
        run(sim, suite, 59)
        before = acceleration()
        run(sim, suite, 1)
        reference = np.array([sim.joint_wrenches()[j] for j in joints])
        now = wrenches(acceleration())
        assert relative_error(now, reference) < 1e-12
        lag = np.abs(now - wrenches(before))  # per component; O(dt^2) terms: 2% of the largest
        bound = 0.6 * lag + 0.02 * lag.max(axis=1, keepdims=True)
        assert np.all(np.abs(suite.wrench_readings - reference) <= bound)


def test_a_resting_ball_weighs_nothing_on_its_free_flyer_and_switches_its_contact():
    """A ball at rest on the floor: the contact carries its weight, so the wrench through its
    free-flyer joint is zero (the contact is subtracted from the Newton-Euler wrench), its IMU
    reads +g, its contact switch is on, off above a threshold of twice its weight; a falling
    ball's switch is off and its contact wrench exactly zero (the wrench topics' convention)."""
    scene = {"ground": {"friction": 0.5}, "models": [
        {"sphere": {"radius": 0.05, "mass": 2.0}, "position": [0.3, 0.2, 0.05], "name": "rest"},
        {"sphere": {"radius": 0.05, "mass": 1.0}, "position": [-0.3, 0.0, 1.0], "name": "drop"}]}
    sim = Simulator.from_scene(scene, dt=DT)
    suite = SensorSuite(sim, [
        {"type": "force_torque", "name": "flyer", "joint": "rest/root_joint"},
        imu("imu", "rest/rest"), {"type": "contact", "name": "rest", "link": "rest/rest"},
        {"type": "contact", "name": "heavy", "link": "rest/rest", "threshold": 4 * G},
        {"type": "contact", "name": "drop", "link": "drop/drop", "decimation": 2}])
    run(sim, suite, 200)
    assert np.abs(suite.wrench_readings[0]).max() < 1e-6
    assert np.allclose(suite.imu_readings[0][10:13], [0, 0, G], atol=1e-6)
    assert list(suite.in_contact) == [True, False, False]
    assert np.all(sim.integrator.body_wrenches()[sim.model.body_names.index("drop/drop")] == 0.0)


# -- noise -------------------------------------------------------------------------------------

STATIC = '<robot name="post"><link name="post"/></robot>'  # no joint: fixed to the world


def allan_deviation(x: np.ndarray, period: float, clusters: np.ndarray) -> np.ndarray:
    """Overlapping Allan deviation of samples x (rows) at tau = m period for m in clusters
    (IEEE Std 952-1997, Annex C), averaged over the columns (axes) as variances."""
    cumulative = np.vstack([np.zeros(x.shape[1]), np.cumsum(x, axis=0)])
    out = []
    for m in clusters:
        means = (cumulative[m:] - cumulative[:-m]) / m
        out.append(math.sqrt(0.5 * np.mean((means[m:] - means[:-m]) ** 2)))
    return np.array(out)


def test_noise_matches_its_densities_and_the_bias_walks_with_an_allan_slope_of_one_half():
    """White noise: per-sample std = density / sqrt(sample period) (a 250 Hz IMU: 4 steps).
    Bias random walk K: Allan deviation sqrt(N^2 / tau + K^2 tau / 3) (IEEE Std 952-1997):
    slope -1/2 at short tau at the white level, +1/2 at long tau at the walk's level. 100 s
    at 1 kHz; each tolerance is 3 to 5 standard errors of its estimate at this length
    (measured over 40 seeds: the long-tau slope 0.04, its levels 0.03-0.09 relative, the
    short-tau levels 0.002, the per-sample std 0.005)."""
    sim = Simulator(load_urdf(STATIC), dt=DT)
    white, density, walk = 0.01, 1e-3, 1e-2
    suite = SensorSuite(sim, [
        imu("white", "post", rate=250, gyroscope_noise_density=white,
            accelerometer_noise_density=white, seed=1),
        imu("walk", "post", gyroscope_noise_density=density, gyroscope_random_walk=walk,
            accelerometer_noise_density=density, accelerometer_random_walk=walk, seed=2)],
        frames=urdf_frames(STATIC))
    n = 100_000
    readings = np.empty((2, n, 6))
    for k in range(n):
        sim.step()
        suite.update()
        readings[:, k] = suite.imu_readings[:, 7:13]
    truth = np.array([0, 0, 0, 0, 0, G])
    sampled = readings[0, 3::4] - truth  # the samples of the 250 Hz sensor
    assert np.allclose(sampled.std(axis=0), white / math.sqrt(4 * DT), rtol=0.02)
    short = np.array([1, 2, 4, 8])
    long = np.array([1000, 2000, 4000, 8000])
    adev_short = allan_deviation(readings[1] - truth, DT, short)
    adev_long = allan_deviation(readings[1] - truth, DT, long)
    slope_short = np.polyfit(np.log(short), np.log(adev_short), 1)[0]
    slope_long = np.polyfit(np.log(long), np.log(adev_long), 1)[0]
    assert abs(slope_short + 0.5) < 0.01 and abs(slope_long - 0.5) < 0.15, \
        (slope_short, slope_long)
    tau = short * DT
    assert np.allclose(adev_short, np.sqrt(density ** 2 / tau + walk ** 2 * tau / 3), rtol=0.01)
    tau = long * DT
    ratio = adev_long / np.sqrt(density ** 2 / tau + walk ** 2 * tau / 3)
    assert np.all((ratio > 0.7) & (ratio < 1.3)), ratio
    assert suite.imu_readings[0][3:7].tolist() == [0, 0, 0, 1], "no orientation noise"


def test_a_seed_repeats_a_run_bit_for_bit():
    """Same seed: identical readings (also after a reset); another seed: different ones."""
    def readings(seed: int, suite=None) -> np.ndarray:
        sim = suite.sim if suite else pendulum(1.0)
        if suite:
            sim.reset([1.0])
            suite.reset()
        suite = suite or SensorSuite(sim, [
            imu("imu", "link1", gyroscope_noise_density=1e-3, gyroscope_random_walk=1e-4,
                accelerometer_noise_density=1e-2, accelerometer_random_walk=1e-3,
                orientation_noise=1e-3, seed=seed),
            {"type": "force_torque", "name": "ft", "joint": "joint1", "force_noise": 0.1,
             "torque_noise": [0.01, 0.02, 0.03], "seed": seed + 1}],
            {"noise": 1e-3, "velocity_noise": 1e-2, "seed": seed})
        out = []
        for _ in range(300):
            sim.step()
            suite.update()
            out.append(np.concatenate([suite.imu_readings[0], suite.wrench_readings[0],
                                       suite.encoder_q, suite.encoder_v]))
        return np.array(out), suite

    first, suite = readings(7)
    assert np.array_equal(first, readings(7)[0])
    assert np.array_equal(first, readings(7, suite)[0])
    other = readings(8)[0]
    assert np.all(first[:, 3:] != other[:, 3:]), "every reading but the IMU's position is noisy"


def test_a_state_set_from_outside_keeps_the_noise_going():
    """reset(noise=False) (the node's ~/set_state): the IMU's bias and the generators go on,
    the encoders' delay line restarts full of the new state."""
    sim = pendulum(0.5)
    suite = SensorSuite(sim, [imu("imu", "link1", gyroscope_random_walk=0.1, seed=5)],
                        {"delay_ticks": 2})
    run(sim, suite, 50)
    bias = suite.imu_bias.copy()
    assert np.abs(bias).max() > 0
    sim.reset([-0.2], [1.0])
    suite.reset(noise=False)
    assert np.array_equal(suite.imu_bias, bias) and suite.encoder_q[0] == -0.2
    run(sim, suite, 1)
    assert suite.encoder_q[0] == -0.2 and suite.encoder_v[0] == 1.0, "two steps of delay"
    assert not np.array_equal(suite.imu_bias, bias)
    suite.reset()
    assert not suite.imu_bias.any()


# -- encoders ----------------------------------------------------------------------------------

def test_encoders_quantise_and_delay_exactly():
    """counts_per_revolution 4096: every position is res floor(q / res + 1/2), res = 2 pi /
    4096; delay_ticks 3: the reading at step k is the state of step k - 3 (the start before)."""
    model = load_urdf(shipped_urdf("arm7"))
    sim = Simulator(model, dt=DT)
    q0 = np.array([0.0, 0.6, 0.0, -1.2, 0.0, 0.8, 0.0])
    sim.reset(q0)
    suite = SensorSuite(sim, [], {"counts_per_revolution": 4096, "delay_ticks": 3})
    res = 2 * math.pi / 4096
    history = [q0.copy()] * 3
    velocities = [np.zeros(7)] * 3
    for _ in range(200):
        sim.step()
        suite.update()
        history.append(np.array(sim.q))
        velocities.append(np.array(sim.v))
        assert np.array_equal(suite.encoder_q, res * np.floor(history[-4] / res + 0.5))
        assert np.array_equal(suite.encoder_v, velocities[-4])


def test_prismatic_encoders_count_per_metre_and_noise_has_its_std():
    sim = Simulator(load_urdf(SLIDER), dt=DT)
    suite = SensorSuite(sim, [], {"counts_per_metre": 1000, "seed": 3})
    for _ in range(100):
        sim.step()
        suite.update()
        assert suite.encoder_q[0] == 1e-3 * math.floor(sim.q[0] / 1e-3 + 0.5)
    assert sim.q[0] < -0.04  # it fell, through many counts
    model = load_urdf(shipped_urdf("arm7"))
    sim = Simulator(model, dt=DT)
    suite = SensorSuite(sim, [], {"noise": 1e-3, "velocity_noise": 2e-2, "seed": 4})
    errors = []
    for _ in range(2000):
        sim.step()
        suite.update()
        errors.append(np.concatenate([suite.encoder_q - sim.q, suite.encoder_v - sim.v]))
    errors = np.array(errors)
    assert np.allclose(errors[:, :7].std(), 1e-3, rtol=0.03)  # 14000 samples: 0.6% std error
    assert np.allclose(errors[:, 7:].std(), 2e-2, rtol=0.03)


def test_encoders_are_off_by_default():
    sim = pendulum(0.3)
    assert SensorSuite(sim, []).encoders is None
    assert SensorSuite(sim, [], {"counts_per_revolution": 0, "noise": 0.0}).encoders is None


# -- bad entries --------------------------------------------------------------------------------

@pytest.mark.parametrize("entry, words", [
    ({"type": "lidar", "name": "scan", "link": "link1"}, ["sensors[0].type", "lidar", "imu"]),
    ({"type": "imu", "name": "imu", "link": "nope"}, ["sensors[0].link", "'nope'", "link1"]),
    ({"type": "force_torque", "name": "ft", "joint": "elbow"}, ["sensors[0].joint", "'elbow'",
                                                                 "joint1"]),
    ({"type": "imu", "link": "link1", "gyro_noise": 1.0}, ["sensors[0].gyro_noise",
                                                           "gyroscope_noise_density"]),
    ({"type": "imu", "link": "link1", "rate": 300}, ["300", "1000"]),
    ({"type": "imu", "link": "link1", "gyroscope_noise_density": -1.0}, [">= 0"]),
    ({"type": "force_torque", "joint": "joint1", "force_noise": [1, 2]}, ["force_noise"]),
    ({"type": "contact", "link": "link1"}, ["contact", "scene"]),
    ("imu", ["sensors[0]", "mapping"]),
])
def test_a_bad_sensor_entry_is_one_line_naming_it(entry, words):
    with pytest.raises(ConfigError) as error:
        SensorSuite(pendulum(), [entry], frames=urdf_frames(PENDULUM))
    message = str(error.value)
    assert "\n" not in message
    for word in words:
        assert word in message, message


@pytest.mark.parametrize("encoders, words", [
    ({"delay_ticks": 1.5}, ["delay_ticks"]),
    ({"counts": 10}, ["counts", "counts_per_revolution"]),
    ({"noise": "x"}, ["noise"]),
])
def test_bad_encoder_settings_are_named(encoders, words):
    with pytest.raises(ConfigError) as error:
        SensorSuite(pendulum(), [], encoders)
    for word in ["encoders", *words]:
        assert word in str(error.value)
