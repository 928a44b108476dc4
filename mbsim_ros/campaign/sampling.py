"""A run's parameters from (campaign seed, run seed): each named parameter draws from its own
numpy Generator, seeded by SeedSequence((campaign seed, run seed, crc32(name))), so a run's draws
are the same in any worker and any order, and adding a parameter changes no other's."""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from .spec import AxesDraw, CampaignSpec, Distribution

SENSOR_SEED = "sensor_seed"


@dataclass(frozen=True)
class Names:
    """The model's names the draws default to: its one-DOF joints and its bodies."""

    joints: list[str]
    bodies: list[str]


def generator(campaign_seed: int, run_seed: int, name: str) -> np.random.Generator:
    """The Generator of one named parameter of one run."""
    entropy = (int(campaign_seed), int(run_seed), zlib.crc32(name.encode()))
    return np.random.default_rng(np.random.SeedSequence(entropy))


def draw(dist: Distribution | float, rng: np.random.Generator) -> float:
    """One value of a distribution (a plain number is itself)."""
    if not isinstance(dist, Distribution):
        return float(dist)
    if dist.dist == "uniform":
        return float(rng.uniform(dist.low, dist.high))
    if dist.dist == "normal":
        return float(rng.normal(dist.mean, dist.std))
    return float(dist.values[int(rng.integers(len(dist.values)))])


JOINT_DRAWS = ("joint_positions", "joint_velocities", "joint_damping", "joint_friction",
               "armature")
LINK_DRAWS = ("link_mass", "link_inertia")
SCALARS = ("friction", "ground_stiffness", "delay", "lag")
PUSH_VALUES = ("start", "duration")
AXES = ("x", "y", "z")


def sample(spec: CampaignSpec, names: Names, campaign_seed: int, run_seed: int) -> dict:
    """Column name -> value of every parameter the spec randomizes, in the spec's order."""
    randomize = spec.randomize
    out: dict[str, float | int] = {}

    def one(name: str, dist) -> None:
        out[name] = draw(dist, generator(campaign_seed, run_seed, name))

    for key in JOINT_DRAWS:
        entry = getattr(randomize, key)
        for joint in (entry.joints or names.joints) if entry is not None else ():
            one(f"{key}.{joint}", entry)
    for key in ("base_position", "base_orientation"):
        entry: AxesDraw | None = getattr(randomize, key)
        for axis in entry.axes if entry is not None else ():
            one(f"{key}.{axis}", entry)
    for key in LINK_DRAWS:
        entry = getattr(randomize, key)
        for link in (entry.links or names.bodies) if entry is not None else ():
            one(f"{key}.{link}", entry)
    for key in SCALARS:
        if getattr(randomize, key) is not None:
            one(key, getattr(randomize, key))
    if randomize.gravity_tilt is not None:
        for axis in ("x", "y"):
            one(f"gravity_tilt.{axis}", randomize.gravity_tilt)
    for k, push in enumerate(randomize.pushes):
        for key in PUSH_VALUES:
            one(f"push[{k}].{key}", getattr(push, key))
        for axis, value in zip(AXES, push.force):
            one(f"push[{k}].f{axis}", value)
        for axis, value in zip(AXES, push.torque):
            one(f"push[{k}].t{axis}", value)
    if spec.sensors is not None and randomize.sensor_noise:
        rng = generator(campaign_seed, run_seed, SENSOR_SEED)
        out[SENSOR_SEED] = int(rng.integers(2 ** 31))
    return out


def by_prefix(params: dict, prefix: str) -> dict[str, float]:
    """{suffix: value} of the parameters named ``prefix.suffix``."""
    start = prefix + "."
    return {k[len(start):]: v for k, v in params.items() if k.startswith(start)}
