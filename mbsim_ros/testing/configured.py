"""A Simulator from a run config, as ``mbsim-ros simulate --config`` and the node read one
(config.py: a plain config, a ROS 2 parameters file or a scene file): what it simulates
(build.py), the start posture, armature, the integrator and its options, the servo gains, the
actuator models and the sensors."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..actuators import Actuators
from ..build import Simulated, load_simulated, make_simulator, start_configuration
from ..config import ConfigError, ConfigSpec, config_from, read_config, set_armature
from ..model.closures import urdf_frames
from ..sensors import SensorSuite


@dataclass
class Configured:
    """The Simulator of a config, its SensorSuite (None without sensors or encoders) and the
    command delay of its actuators (``actuators.delay_ticks``: the whole command, as the node
    delays it)."""

    simulated: Simulated
    sim: object
    suite: SensorSuite | None
    delay_ticks: int


def load_config(config=None, scene=None) -> ConfigSpec:
    """A config file (its path), a mapping of the same keys, or a scene file alone;
    ConfigError names what is wrong."""
    if (config is None) == (scene is None):
        raise ValueError("give one of config (a file or a mapping) and scene (a file)")
    if scene is not None:
        path = Path(scene)
        if not path.is_file():
            raise ConfigError(f"scene {scene}: no such file")
        return config_from({"scene": str(path.resolve())}, f"scene {scene}")
    if isinstance(config, (str, Path)):
        return read_config(config)
    return config_from(dict(config))


def _in_folder(config: ConfigSpec, path: str) -> str:
    """A path the config names, relative to the config's folder (absolute: as given)."""
    return str(config.folder / path) if config.folder is not None \
        and not Path(path).is_absolute() else path


def configured(config: ConfigSpec) -> Configured:
    """The Simulator the config describes, at its start (ValueError naming the entry at fault:
    ConfigError, ModelError, SceneError)."""
    named = "integrator" in config.model_fields_set
    integrator = "compliant" if config.scene and not named else config.integrator
    if config.scene:
        simulated = load_simulated(scene=_in_folder(config, config.scene))
        frames = None
    else:
        urdf = config.robot_description if config.robot_description.strip() else config.urdf()
        simulated = load_simulated(urdf=urdf, floating_base=config.floating_base,
                                   balance_inertia=config.balance_inertia,
                                   closures=config.model_dump()["closures"] or None)
        frames = urdf_frames(urdf, floating_base=config.floating_base)
    set_armature(simulated.model, config.armature)
    q0 = start_configuration(simulated, config.initial_positions)
    options = getattr(config, integrator)
    sim = make_simulator(simulated, q0, integrator, config.dt,
                         options.model_dump(exclude_unset=True) if options else {})
    if config.gains:
        gains = {key: {joint: getattr(values, key) for joint, values in config.gains.items()
                       if getattr(values, key) is not None}
                 for key in ("p", "d", "i", "i_clamp")}
        sim.servos.set_gains(**gains)
    actuators = config.actuators
    if actuators.velocity_limits or actuators.bandwidth or actuators.no_load_speed:
        sim.actuators = Actuators(simulated.model, config.dt,
                                  velocity_limits=actuators.velocity_limits,
                                  bandwidth=actuators.bandwidth,
                                  no_load_speed=actuators.no_load_speed)
    return Configured(simulated, sim, _suite(config, sim, frames), actuators.delay_ticks)


def _suite(config: ConfigSpec, sim, frames) -> SensorSuite | None:
    """The config's ``sensors:`` (and its ``sensors_file``'s) and ``encoders:``."""
    entries = config.model_dump(exclude_unset=True).get("sensors", [])
    if config.sensors_file:
        entries += read_config(_in_folder(config, config.sensors_file)).model_dump(
            exclude_unset=True).get("sensors", [])
    encoders = config.model_dump(exclude_unset=True).get("encoders")
    if not entries and encoders is None:
        return None
    return SensorSuite(sim, entries, encoders, frames)
