"""mbsim_ros: a multibody simulator for robot control loops (library, CLI and ROS 2 node)."""
import os
import sys

if "numpy" not in sys.modules:
    # Our linear algebra is many small dense solves per step, for which OpenBLAS's thread pool
    # costs far more than it gives (measured on a 2-core VM: a 10-sphere contact step 7.1 ms with
    # the pool, 1.1 ms without). Only when we load numpy first (our executables, scripts that
    # import us first); set OPENBLAS_NUM_THREADS yourself otherwise.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from .model import Model, ModelError, load_urdf  # noqa: E402

__version__ = "0.1.0"
__all__ = ["Model", "ModelError", "Simulator", "load_urdf", "__version__"]


def __getattr__(name: str):
    if name == "Simulator":  # lazy: importing the package must not compile every integrator
        from .sim import Simulator

        return Simulator
    raise AttributeError(f"module 'mbsim_ros' has no attribute {name!r}")
