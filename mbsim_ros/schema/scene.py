"""The scene schema: ground (its material), a heightfield, static boxes, models (URDFs, free
spheres and boxes) and gravity (docs/COMPLIANT.md#scenes; every key in docs/CONFIG.md)."""
from __future__ import annotations

from typing import Annotated

from annotated_types import Ge, Le, Lt
import numpy as np
from pydantic import ValidationInfo, field_validator, model_validator

from .base import (Count, Field, Flag, JointValues, NonNegative, Positive, Quaternion, Real,
                   Schema, Text, Vector3)

Size3 = tuple[Positive, Positive, Positive]
Restitution = Annotated[Real, Ge(0), Le(1)]
IDENTITY = (0.0, 0.0, 0.0, 1.0)
ORIGIN = (0.0, 0.0, 0.0)


class Ground(Schema):
    """The ground plane and the contact material of the whole scene: a Hertz pair (steel by
    default) or a plain stiffness."""

    height: Real = 0.0
    """Height of the plane along its normal (m)."""
    normal: Vector3 = (0.0, 0.0, 1.0)
    """Upward normal of the plane (normalised; not zero)."""
    friction: NonNegative = 0.5
    """Coulomb friction coefficient."""
    youngs_modulus: Positive | None = None
    """Young's modulus of both bodies (Pa) for Hertz contact; steel (2e11) when neither this
    nor stiffness is given."""
    poisson_ratio: Annotated[Real, Ge(0), Lt(0.5)] = 0.3
    """Poisson ratio of the Hertz material."""
    stiffness: Positive | None = None
    """A plain linear contact stiffness (N/m) instead of Hertz."""
    damping: NonNegative = 0.0
    """Contact damping with a plain stiffness (N s/m)."""
    dissipation: NonNegative = 0.0
    """Hunt-Crossley dissipation with Hertz (s/m), outside impacts."""
    restitution: Restitution = 0.0
    """Hertz only: Newton's coefficient of restitution of an impact (the rebound speed over
    the impact speed); 0: perfectly plastic (after its peak the row leaves the overlap no
    faster than two steps of gravity, at any step size). docs/COMPLIANT.md#impacts."""

    @model_validator(mode="after")
    def _one_law(self) -> "Ground":
        if self.stiffness is not None and self.youngs_modulus is not None:
            raise ValueError("give either stiffness or youngs_modulus, not both")
        if self.stiffness is not None and self.restitution > 0.0:
            raise ValueError("restitution applies to the Hertz law (youngs_modulus); with a "
                             "plain stiffness, damping sets the rebound")
        if not any(self.normal):
            raise ValueError("normal must not be zero")
        return self


class StaticBox(Schema):
    """A box fixed in the world (steps, walls, ramps)."""

    size: Size3
    """Edge lengths x, y, z (m)."""
    name: Text | None = None
    """Name in contacts and the viewer (default box<k>)."""
    position: Vector3 = ORIGIN
    """Centre in the world (m)."""
    orientation: Quaternion = IDENTITY
    """Unit quaternion (qx, qy, qz, qw)."""
    restitution: Restitution | None = None
    """Hertz only: this box's coefficient of restitution in impacts (default the ground's); a
    contact takes the smaller of its two bodies'."""


class Heightfield(Schema):
    """Terrain: a grid of heights over a rectangle, two triangles per cell, that replaces the
    ground plane (``ground`` still gives the material; docs/COMPLIANT.md#terrain). Rows run
    along y (row 0 at the least y), columns along x."""

    heights: list[list[Real]] | None = None
    """Heights (m) of the grid's points, one list per row; at least 2 x 2, rectangular."""
    file: Text | None = None
    """Instead of heights: a .npy file (m) or an 8- or 16-bit grey PNG (scaled by max_height;
    the image's top row is the grid's last, at the greatest y), relative to the scene's
    folder."""
    max_height: Positive = 1.0
    """PNG only: the height (m) of a full-scale pixel (255 or 65535)."""
    size: tuple[Positive, Positive]
    """Extent of the grid along x and y (m)."""
    position: Vector3 = ORIGIN
    """Centre of the grid in x, y and the height added to every point (m)."""

    @field_validator("heights")
    @classmethod
    def _grid(cls, value):
        if value is not None:
            check_grid(value)
        return value

    @model_validator(mode="after")
    def _one_source(self) -> "Heightfield":
        if (self.heights is None) == (self.file is None):
            raise ValueError("give either heights or file")
        return self


def check_grid(heights) -> None:
    """ValueError unless heights (lists or a 2-D array) is a rectangular grid of at least
    2 x 2 finite numbers."""
    rows = len(heights)
    columns = {len(row) for row in heights}
    if len(columns) > 1:
        raise ValueError(f"rows of different lengths {sorted(columns)}: the grid must be "
                         f"rectangular")
    if rows < 2 or min(columns) < 2:
        raise ValueError(f"the grid must have at least 2 x 2 points, got {rows} x "
                         f"{min(columns)}")
    if not np.isfinite(np.asarray(heights, dtype=float)).all():
        raise ValueError("heights must be finite")


class SphereObject(Schema):
    """A free sphere."""

    radius: Positive
    """Radius (m)."""
    mass: Positive = 1.0
    """Mass (kg)."""


class BoxObject(Schema):
    """A free box."""

    size: Size3
    """Edge lengths x, y, z (m)."""
    mass: Positive = 1.0
    """Mass (kg)."""


class Foundation(Schema):
    """An elastic foundation (Winkler) under a free box's bottom face (Drumwright 2019,
    section 5.5)."""

    depth: Positive
    """Depth of the elastic layer (m): each element's stiffness is E A_e / depth."""
    elements: Count = 10
    """Elements per side of the face's grid."""
    damping: NonNegative = 0.0
    """Damping of the whole face (N s/m), shared by area."""


class ContactSphere(Schema):
    """A contact sphere added to a URDF link (feet whose collision geometry is a mesh)."""

    link: Text
    """Link or frame it is fixed to."""
    radius: Positive
    """Radius (m)."""
    position: Vector3 = ORIGIN
    """Centre in the link's frame (m)."""


URDF_ONLY = ("floating_base", "balance_inertia", "meshes", "armature", "initial_positions",
             "contact_spheres")


class ModelEntry(Schema):
    """One model of the scene: a URDF, or a free sphere or box."""

    urdf: Text | None = None
    """URDF file (relative to the scene's folder), shipped model name or example-robot-data
    robot."""
    sphere: SphereObject | None = None
    """A free sphere instead of a URDF."""
    box: BoxObject | None = None
    """A free box instead of a URDF."""
    name: Text | None = None
    """Name of the model (prefix of its joints and links when a scene has several); default
    the URDF's robot name or 'object'."""
    position: Vector3 = ORIGIN
    """Base position in the world (m)."""
    orientation: Quaternion = IDENTITY
    """Base orientation, unit quaternion (qx, qy, qz, qw)."""
    floating_base: Flag = False
    """URDF only: add a free-flyer root joint (free objects always float)."""
    balance_inertia: Flag = False
    """URDF only: replace link inertias that are not physical by the nearest physical ones."""
    meshes: Flag = True
    """URDF only: collide with the convex hulls of the collision meshes."""
    armature: JointValues | None = None
    """URDF only: rotor inertia by joint name (kg m^2 or kg)."""
    initial_positions: JointValues | None = None
    """URDF only: the start posture by joint name (rad or m), clamped into the limits."""
    contact_spheres: list[ContactSphere] = Field(default_factory=list)
    """URDF only: contact spheres added to links."""
    foundation: Foundation | None = None
    """Box only: rest on an elastic foundation instead of the box's corners."""
    restitution: Restitution | None = None
    """Hertz only: the model's coefficient of restitution in impacts, all its shapes (default
    the ground's); a contact takes the smaller of its two bodies'."""

    @field_validator(*URDF_ONLY)
    @classmethod
    def _urdf_only(cls, value, info: ValidationInfo):
        if info.data.get("urdf") is None:
            raise ValueError("only applies to a 'urdf' model")
        return value

    @field_validator("foundation")
    @classmethod
    def _box_only(cls, value, info: ValidationInfo):
        if value is not None and info.data.get("box") is None:
            raise ValueError("only a box model ({box: ...}) can rest on a foundation")
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> "ModelEntry":
        kinds = [k for k in ("urdf", "sphere", "box") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError(f"needs exactly one of 'urdf', 'sphere' or 'box', got "
                             f"{', '.join(kinds) or 'none'}")
        return self


class SceneSpec(Schema):
    """A scene: what Simulator.from_scene, `mbsim-ros simulate --config` and the node's
    `scene` parameter load."""

    models: Annotated[list[ModelEntry], Field(min_length=1)]
    """The simulated models (at least one)."""
    ground: Ground | None = None
    """The ground plane and the scene's contact material; none: no ground."""
    heightfield: Heightfield | None = None
    """Terrain instead of the ground plane (the material stays ground's)."""
    boxes: list[StaticBox] = Field(default_factory=list)
    """Static boxes fixed in the world."""
    gravity: Vector3 | None = None
    """Gravity (m/s^2); default the URDF's (0, 0, -9.81)."""

    @model_validator(mode="after")
    def _plane_or_terrain(self) -> "SceneSpec":
        plane = self.ground is not None and {"height", "normal"} & self.ground.model_fields_set
        if self.heightfield is not None and plane:
            raise ValueError("a heightfield replaces the ground plane: give ground's height "
                             "and normal or a heightfield, not both")
        return self

    @model_validator(mode="after")
    def _restitution_needs_hertz(self) -> "SceneSpec":
        plain = self.ground is not None and self.ground.stiffness is not None
        given = [f"models[{k}]" for k, m in enumerate(self.models) if m.restitution is not None]
        given += [f"boxes[{k}]" for k, b in enumerate(self.boxes) if b.restitution is not None]
        if plain and given:
            raise ValueError(f"{', '.join(given)}: restitution applies to the Hertz law "
                             f"(youngs_modulus); the ground gives a plain stiffness")
        return self
