"""Loop closures next to a URDF (URDF describes trees): a ``closures:`` block in a config,

    closures:
      - {frame_a: coupler_tip, frame_b: rocker_tip, directions: [x, z]}
      - {frame_a: left_arm, frame_b: right_arm, xyz_a: [0.1, 0, 0]}   # all six directions

frames are link names (links merged by fixed joints included), ``directions`` drawn from
x, y, z, rx, ry, rz in frame_a's axes (all six when omitted), ``xyz_a`` / ``xyz_b`` optional
points in each link's frame where the closure acts (default: the link origins).
"""
from __future__ import annotations

import os

import numpy as np

from ..schema import nearest, validate
from ..schema.closures import ClosuresBlock
from .constraints import Attachment, FrameConstraint
from .model import ConfigError
from .urdf import _check_structure, _parse_with_pinocchio, _parse_xml, read_urdf


def urdf_frames(source: str | os.PathLike, *, floating_base: bool = False
                ) -> dict[str, Attachment]:
    """Every link of a URDF as an Attachment to the joint that moves it (our joint order, as
    load_urdf makes it; links merged by fixed joints at their placement in that joint's frame)."""
    xml_text, label = read_urdf(source)
    robot = _check_structure(_parse_xml(xml_text, label), label)
    pin_model = _parse_with_pinocchio(xml_text, label, floating_base and not robot.root_floating)
    frames = {}
    for frame in pin_model.frames:
        if str(frame.type).endswith("BODY"):
            frames[frame.name] = Attachment(frame.name, int(frame.parentJoint) - 1,
                                            np.array(frame.placement.rotation),
                                            np.array(frame.placement.translation))
    return frames


def load_closures(entries, frames: dict[str, Attachment]) -> list[FrameConstraint]:
    """FrameConstraints from a config's ``closures`` list (schema: schema/closures.py);
    ConfigError names the bad item."""
    specs = validate(ClosuresBlock, {"closures": entries}, "", ConfigError).closures
    closures = []
    for k, spec in enumerate(specs):
        what = f"closures[{k}]"
        ends = []
        for side in ("a", "b"):
            name = getattr(spec, f"frame_{side}")
            if name not in frames:
                guess = nearest(name, frames)
                raise ConfigError(f"{what}.frame_{side}: '{name}' is not a link of the model "
                                  + (f"(did you mean {guess}? " if guess else "(")
                                  + f"links: {', '.join(sorted(frames))})")
            base = frames[name]
            offset = np.array(getattr(spec, f"xyz_{side}"))
            ends.append(Attachment(name, base.joint, base.rotation,
                                   base.position + base.rotation @ offset))
        closures.append(FrameConstraint(*ends, spec.directions,
                                        name=f"{what} {ends[0].name}-{ends[1].name}"))
    return closures
