"""Setting the simulation's state from outside (``~/set_state``, ``~/set_base_state``): the
messages' contents checked whole and written into copies of q and v; the node then restarts
the Simulator from them (time goes on). Plain Python, like commands.py: the node hands in the
messages' fields, so this runs and is tested without ROS.

A rejected message changes nothing and names its reason (CommandError, as for commands).
"""
from __future__ import annotations

import numpy as np

from .commands import ActuatedJoints, CommandError, named_values

WORLD_FRAME = "world"
QUATERNION_TOLERANCE = 1e-3  # |norm - 1| accepted (and normalised away) in a base pose


def set_joints(joints: ActuatedJoints, q: np.ndarray, v: np.ndarray, names, position,
               velocity) -> None:
    """Write a JointState's positions and velocities (each empty or one per name; efforts are
    ignored, they are commands) into q and v by joint name; the joints it does not name keep
    their values. Raises CommandError, leaving q and v as they were."""
    indices, values = named_values(joints, list(names), {"position": position,
                                                         "velocity": velocity})
    if "position" in values:
        q[joints.idx_q[indices]] = values["position"]
    if "velocity" in values:
        v[joints.idx_v[indices]] = values["velocity"]


def set_base(idx_q: int, idx_v: int, base_frame: str, q: np.ndarray, v: np.ndarray, *,
             frame_id: str, child_frame_id: str, position, orientation, linear,
             angular) -> None:
    """Write a floating base's state, as nav_msgs/Odometry carries it (what ``~/odom``
    publishes), into q and v: the pose of ``child_frame_id`` in ``frame_id`` (position, unit
    quaternion x y z w) and its twist in ``child_frame_id`` (linear velocity of the frame's
    origin and angular velocity, both in the base frame: pinocchio's free-flyer v). Empty frame
    ids mean ``world`` and the base. Raises CommandError naming a wrong frame, a value that is
    not finite, or an orientation that is not a unit quaternion (within
    QUATERNION_TOLERANCE; it is normalised)."""
    if frame_id not in ("", WORLD_FRAME):
        raise CommandError(f"header.frame_id '{frame_id}': the pose must be in "
                           f"'{WORLD_FRAME}'")
    if child_frame_id not in ("", base_frame):
        raise CommandError(f"child_frame_id '{child_frame_id}' is not the base frame "
                           f"'{base_frame}'")
    parts = {"position": position, "orientation": orientation, "linear velocity": linear,
             "angular velocity": angular}
    arrays = {name: np.asarray(values, dtype=float) for name, values in parts.items()}
    for name, array in arrays.items():
        if not np.all(np.isfinite(array)):
            raise CommandError(f"the base {name} is NaN or infinite")
    norm = float(np.linalg.norm(arrays["orientation"]))
    if abs(norm - 1.0) > QUATERNION_TOLERANCE:
        raise CommandError(f"the base orientation is not a unit quaternion (norm {norm:.6g})")
    q[idx_q:idx_q + 3] = arrays["position"]
    q[idx_q + 3:idx_q + 7] = arrays["orientation"] / norm
    v[idx_v:idx_v + 3] = arrays["linear velocity"]
    v[idx_v + 3:idx_v + 6] = arrays["angular velocity"]
