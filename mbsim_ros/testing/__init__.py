"""Integration tests of a user's ROS 2 controller against this simulator, in pytest
(docs/TESTING.md). The pytest plugin (``plugin.py``, registered through the ``pytest11``
entry point, so installing mbsim_ros is enough) gives a test the ``mbsim`` fixture:

    def test_solo_stands(mbsim):
        run = mbsim(scene="config/scenes/solo12_standing.yaml",
                    controller=["python3", "solo12_pd.py", "--ros-args", "-p", "kp:=10.0"])
        trace = run.advance(0.5)
        assert trace.base_height.min() > 0.2

``ControllerSimulation`` (simulation.py) is the same thing without pytest (a ``with`` block);
``Trace`` (trace.py) holds what was published, by joint and link name.

The names are imported at first use: pytest loads the plugin in every session of an
environment where mbsim_ros is installed, and that must not cost rclpy and the compiled
kernels (nor fail without rclpy) until a test asks for the fixture.
"""
from __future__ import annotations

import importlib

_HOMES = {"ControllerFailed": "simulation", "ControllerSimulation": "simulation",
          "SimulationFailed": "simulation", "Columns": "trace", "Trace": "trace"}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name in _HOMES:
        return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
