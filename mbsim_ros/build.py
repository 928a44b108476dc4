"""One way from a configuration to a Simulator, for the CLI and the node alike: load what is
simulated (a scene, or a URDF with closures on its links), choose the start configuration,
make the Simulator. The front ends only read their own inputs (command-line flags and a YAML
file; ROS parameters) and turn the errors into their own messages: ConfigError, ModelError
and SceneError, all ValueErrors, name the entry at fault."""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .contact.scene import Scene, load_scene
from .contact.scene_urdf import scene_urdf
from .dynamics.closures import ConstraintKinematics, project
from .model import LimitWarning, Model, load_urdf
from .model.closures import load_closures, urdf_frames
from .model.settings import initial_configuration
from .model.urdf import read_urdf
from .sim import Simulator


@dataclass
class Simulated:
    """What a configuration simulates: the model, the scene it comes from (None for a URDF),
    the URDF's closures and the URDF itself (file or text; None for a scene)."""

    model: Model
    scene: Scene | None = None
    closures: list = field(default_factory=list)
    urdf_source: str | Path | None = None

    def robot_description(self) -> str:
        """What ``robot_description`` carries for it: the URDF's text, or a scene's models as
        one URDF (contact/scene_urdf.py)."""
        if self.scene is not None:
            return scene_urdf(self.scene)
        return read_urdf(self.urdf_source)[0]


def load_simulated(*, scene=None, urdf=None, floating_base: bool = False,
                   balance_inertia: bool = False, closures=None) -> Simulated:
    """A scene (a YAML path, a mapping or a loaded Scene), else a URDF (a file or URDF text)
    with the ``closures`` entries (a config's list) on its links."""
    if scene is not None:
        loaded = scene if isinstance(scene, Scene) else load_scene(scene)
        return Simulated(loaded.model, scene=loaded)
    model = load_urdf(urdf, floating_base=floating_base, balance_inertia=balance_inertia)
    found = load_closures(closures, urdf_frames(urdf, floating_base=floating_base)) \
        if closures else []
    return Simulated(model, closures=found, urdf_source=urdf)


def start_configuration(simulated: Simulated, positions: dict | None) -> np.ndarray:
    """The scene's poses (or the neutral configuration) with the one-DOF joints named in
    ``positions`` set, clamped into the joint limits (one LimitWarning names the joints
    moved)."""
    q = simulated.scene.q0.copy() if simulated.scene is not None \
        else simulated.model.neutral()
    return initial_configuration(simulated.model, positions, q)


def make_simulator(simulated: Simulated, q0, integrator: str, dt: float,
                   options: dict | None = None) -> Simulator:
    """The Simulator of ``simulated`` (the scene's contact, the closures as constraints),
    started at q0 projected onto the closures; its reset() returns there."""
    options = dict(options or {})
    q0 = np.asarray(q0, dtype=float)
    with warnings.catch_warnings():  # the start is q0, clamped (and reported) already
        warnings.simplefilter("ignore", LimitWarning)
        if simulated.scene is not None:
            sim = Simulator.from_scene(simulated.scene, dt=dt, integrator=integrator, **options)
        else:
            if simulated.closures:
                options["constraints"] = simulated.closures
                q0 = project(ConstraintKinematics(simulated.model), simulated.closures, q0)[0]
            sim = Simulator(simulated.model, dt=dt, integrator=integrator, **options)
        sim.start_at(q0)
    return sim
