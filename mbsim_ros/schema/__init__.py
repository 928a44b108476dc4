"""The input schemas: one per thing a user writes (scenes, configs, sensors, campaign specs),
on one strict base (base.py). docs/CONFIG.md is generated from them."""
from .base import (Count, Field, Flag, Fraction, Index, JointValues, NonNegative, Number,
                   Positive, Quaternion, Real, Schema, SchemaError, Text, Vector3, Whole,
                   load_yaml, nearest, path_of, strip_optional, validate)

__all__ = ["Schema", "SchemaError", "validate", "Real", "Positive", "NonNegative", "Fraction",
           "Flag", "Count", "Index", "Number", "Whole", "Text", "Vector3", "Quaternion",
           "JointValues", "Field", "path_of", "nearest", "load_yaml", "strip_optional"]
