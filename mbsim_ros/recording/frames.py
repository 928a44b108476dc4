"""The frame a recording's /tf tree hangs from."""
from __future__ import annotations

import xml.etree.ElementTree as ET

from ..build import Simulated
from ..model.urdf import read_urdf

WORLD = "world"


def root_frame(simulated: Simulated) -> str:
    """``world`` for a scene (its models hang from the world) and for a free-flying robot (its
    base's pose is in the world, as the node's odometry); a fixed-base URDF's root link
    otherwise (robot_state_publisher's root of the same tree)."""
    model = simulated.model
    if simulated.scene is not None or simulated.urdf_source is None \
            or "free_flyer" in model.joint_kinds:
        return WORLD
    robot = ET.fromstring(read_urdf(simulated.urdf_source)[0])
    children = {child.get("link") for child in robot.iter("child")}
    roots = [link.get("name") for link in robot.findall("link")
             if link.get("name") not in children]
    return roots[0] if len(roots) == 1 else WORLD
