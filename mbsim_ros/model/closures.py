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

from .constraints import Attachment, FrameConstraint
from .model import ModelError
from .urdf import _check_structure, _parse_with_pinocchio, _parse_xml, read_urdf

CLOSURE_KEYS = ("frame_a", "frame_b", "directions", "xyz_a", "xyz_b")


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
    """FrameConstraints from a config's ``closures`` list; ModelError names the bad item."""
    if not isinstance(entries, list):
        raise ModelError(f"closures: expected a list of {{frame_a, frame_b, directions}}, "
                         f"got {entries!r}")
    closures = []
    for k, entry in enumerate(entries):
        what = f"closures[{k}]"
        if not isinstance(entry, dict) or "frame_a" not in entry or "frame_b" not in entry:
            raise ModelError(f"{what}: needs frame_a and frame_b, got {entry!r}")
        unknown = sorted(set(entry) - set(CLOSURE_KEYS))
        if unknown:
            raise ModelError(f"{what}: unknown keys {unknown} (known: {list(CLOSURE_KEYS)})")
        ends = []
        for side in ("a", "b"):
            name = entry[f"frame_{side}"]
            if name not in frames:
                raise ModelError(f"{what}: frame_{side} '{name}' is not a link of the model "
                                 f"(links: {', '.join(sorted(frames))})")
            base = frames[name]
            offset = np.asarray(entry.get(f"xyz_{side}", (0.0, 0.0, 0.0)), dtype=float)
            if offset.shape != (3,) or not np.all(np.isfinite(offset)):
                raise ModelError(f"{what}: xyz_{side} must be 3 finite numbers")
            ends.append(Attachment(name, base.joint, base.rotation,
                                   base.position + base.rotation @ offset))
        closures.append(FrameConstraint(*ends, entry.get("directions"),
                                        name=f"{what} {ends[0].name}-{ends[1].name}"))
    return closures
