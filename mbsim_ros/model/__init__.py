"""The kinematic tree as flat arrays, and where it comes from (URDF, generators)."""
from .chain import chain_urdf
from .model import (FREE_FLYER, PRISMATIC, REVOLUTE, JointSpec, LimitWarning, Model, ModelError,
                    merge, start_within_limits)
from .resources import DEFAULT_ROBOT, example_robot_urdf, shipped_urdf
from .urdf import load_urdf

__all__ = ["FREE_FLYER", "PRISMATIC", "REVOLUTE", "JointSpec", "LimitWarning", "Model",
           "ModelError", "merge", "start_within_limits",
           "chain_urdf", "load_urdf", "shipped_urdf", "example_robot_urdf", "DEFAULT_ROBOT"]
