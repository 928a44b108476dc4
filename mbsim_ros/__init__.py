"""mbsim_ros: a multibody simulator for robot control loops (library, CLI and ROS 2 node)."""
from .model import Model, ModelError, load_urdf

__version__ = "0.1.0"
__all__ = ["Model", "ModelError", "Simulator", "load_urdf", "__version__"]


def __getattr__(name: str):
    if name == "Simulator":  # lazy: importing the package must not compile every integrator
        from .sim import Simulator

        return Simulator
    raise AttributeError(f"module 'mbsim_ros' has no attribute {name!r}")
