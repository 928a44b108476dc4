"""A scene's models as one URDF (what the node publishes as ``robot_description`` for a scene,
so robot_state_publisher and RViz show every model).

The names are the ones the scene's Model uses: with several models each link and joint is
prefixed ``<model name>/`` (``merge``'s prefixes); with one model they are the URDF's own. A
root link ``world`` holds every model: a fixed joint at the model's placement (a fixed base
or a static object, ``<prefix>world_joint``), or a ``floating`` joint named as the Model's
free-flyer (``<prefix>root_joint``; robot_state_publisher publishes no transform for it, its
pose is the node's to publish). Links, joints and top-level
materials are kept (a material name once); transmissions and simulator extensions are left
out. The ground and static boxes are not models: they are not in it.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

from .scene import Scene

WORLD_LINK = "world"
FREE_FLYER_JOINT = "root_joint"  # pinocchio's name for the free-flyer that load_urdf adds


def scene_urdf(scene: Scene) -> str:
    robot = ET.Element("robot", name="scene")
    ET.SubElement(robot, "link", name=WORLD_LINK)
    materials = set()
    several = len(scene.sources) > 1
    for name, xml, floating, position, rotation in scene.sources:
        prefix = f"{name}/" if several else ""
        root = _add_model(robot, ET.fromstring(xml), prefix, materials)
        if root == WORLD_LINK:  # a one-model scene whose URDF has its own world link
            continue
        joint = ET.SubElement(robot, "joint", type="floating" if floating else "fixed",
                              name=prefix + (FREE_FLYER_JOINT if floating else "world_joint"))
        ET.SubElement(joint, "parent", link=WORLD_LINK)
        ET.SubElement(joint, "child", link=root)
        if not floating:
            ET.SubElement(joint, "origin", xyz=_numbers(position), rpy=_numbers(_rpy(rotation)))
    return ET.tostring(robot, encoding="unicode")


def _add_model(robot: ET.Element, urdf: ET.Element, prefix: str, materials: set) -> str:
    """Copy the URDF's links, joints and materials into robot with prefixed names; returns
    its root link (the prefixed link that is no joint's child)."""
    children = set()
    for element in urdf:
        if element.tag == "material":
            if element.get("name") not in materials:
                materials.add(element.get("name"))
                robot.append(element)
            continue
        if element.tag not in ("link", "joint"):
            continue
        element.set("name", prefix + element.get("name"))
        for tag, attribute in (("parent", "link"), ("child", "link"), ("mimic", "joint")):
            for reference in element.findall(tag):
                reference.set(attribute, prefix + reference.get(attribute))
        children.update(child.get("link") for child in element.findall("child"))
        robot.append(element)
    links = [e.get("name") for e in urdf if e.tag == "link"]
    return next(link for link in links if link not in children)


def _rpy(rotation: np.ndarray) -> np.ndarray:
    """URDF's roll, pitch, yaw of a rotation matrix (R = Rz(yaw) Ry(pitch) Rx(roll))."""
    import pinocchio as pin

    return np.asarray(pin.rpy.matrixToRpy(np.asarray(rotation, dtype=float)))


def _numbers(values) -> str:
    return " ".join(repr(float(x)) for x in values)
