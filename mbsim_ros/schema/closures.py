"""The ``closures:`` block of a config: loop closures between two links of a URDF
(docs/CLOSED_LOOPS.md). Which links exist is checked against the URDF after this
(model/closures.py)."""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from .base import Schema, Text, Vector3

Direction = Literal["x", "y", "z", "rx", "ry", "rz"]


class ClosureSpec(Schema):
    """Frame b held on frame a along some directions."""

    frame_a: Text
    """Link (or frame merged by a fixed joint) of the closure's first end."""
    frame_b: Text
    """Link of the second end."""
    directions: Annotated[list[Direction], Field(min_length=1, max_length=6)] | None = None
    """Directions held, in frame a's axes (default all six)."""
    xyz_a: Vector3 = (0.0, 0.0, 0.0)
    """Point of frame a where the closure acts (m, in the link frame)."""
    xyz_b: Vector3 = (0.0, 0.0, 0.0)
    """Point of frame b where the closure acts (m, in the link frame)."""

    @field_validator("directions")
    @classmethod
    def _distinct(cls, value):
        if value is not None and len(set(value)) != len(value):
            raise ValueError(f"directions must be distinct, got {value}")
        return value


class ClosuresBlock(Schema):
    """A closures file (the node's closures_file) as it is checked on its own."""

    closures: list[ClosureSpec] = Field(default_factory=list)
    """Loop closures."""
