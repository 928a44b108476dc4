"""What every input schema is built from: the strict base model (an unknown key is an error),
the checked number and vector types, and SchemaError, which words every problem of one input
with its full path, the valid keys there and the nearest match.

pydantic v2 validates; its error locations are turned into paths such as ``models[1].position``
and its JSON Schema export is what ``mbsim-ros schema`` prints (docs/CONFIG.md).
"""
from __future__ import annotations

import difflib
import math
import types
import typing
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from annotated_types import Ge, Gt, Le
from pydantic import AfterValidator, AllowInfNan, BaseModel, ConfigDict, Field, Strict
from pydantic import ValidationError

__all__ = ["Schema", "SchemaError", "validate", "Real", "Positive", "NonNegative", "Fraction",
           "Flag", "Count", "Index", "Text", "Vector3", "Quaternion", "JointValues",
           "Field", "path_of", "nearest"]

S = TypeVar("S", bound="Schema")


class SchemaError(ValueError):
    """An input that does not match its schema. ``problems`` lists every problem found (each
    starts with its path); the message is all of them, after the input's name."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = list(problems)
        if len(self.problems) == 1:
            text = f"{source}: {self.problems[0]}"
        else:
            text = f"{source}: {len(self.problems)} problems:\n  " + "\n  ".join(self.problems)
        super().__init__(text)


class Schema(BaseModel):
    """The base of every input schema: unknown keys are refused, values are not coerced from
    strings, defaults are the documented ones."""

    model_config = ConfigDict(extra="forbid", populate_by_name=False, use_attribute_docstrings=True,
                              validate_default=False)


def _unit_quaternion(q: tuple) -> tuple:
    norm = math.sqrt(sum(c * c for c in q))
    if abs(norm - 1.0) > 1e-6:
        raise ValueError(f"(qx, qy, qz, qw) must be a unit quaternion, norm {norm:.6g}")
    return q


Real = Annotated[float, Strict(), AllowInfNan(False)]
Positive = Annotated[Real, Gt(0)]
NonNegative = Annotated[Real, Ge(0)]
Fraction = Annotated[Real, Ge(0), Le(1)]
Flag = Annotated[bool, Strict()]
Count = Annotated[int, Strict(), Ge(1)]
Index = Annotated[int, Strict(), Ge(0)]
Text = Annotated[str, Strict()]
Vector3 = tuple[Real, Real, Real]
Quaternion = Annotated[tuple[Real, Real, Real, Real], AfterValidator(_unit_quaternion)]
JointValues = dict[Text, Real]


def validate(schema: type[S], data: Any, source: str) -> S:
    """``data`` checked against ``schema``; SchemaError names every problem (``source`` names
    the input: a file, 'scene', 'campaign spec')."""
    if data is None:
        data = {}
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise SchemaError(source, [_problem(schema, e) for e in exc.errors()]) from None


def path_of(loc: tuple) -> str:
    """``('models', 1, 'position')`` -> ``models[1].position``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def nearest(word: str, choices) -> str | None:
    """The choice closest to a misspelled word, if one is close."""
    found = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return found[0] if found else None


def _problem(schema: type, error: dict) -> str:
    loc, kind, given = tuple(error["loc"]), error["type"], error.get("input")
    where = path_of(loc) or "(top level)"
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden":
        valid = _keys_at(schema, loc[:-1]) or []
        text = f"{where}: unknown key; valid keys here: {', '.join(valid)}"
        guess = nearest(loc[-1], valid)
        return text + (f" (did you mean {guess}?)" if guess else "")
    if kind == "missing" and loc and isinstance(loc[-1], int):
        return f"{path_of(loc[:-1])}: too few items (item {loc[-1]} missing)"
    if kind == "missing":
        return f"{where}: missing (required)"
    if kind == "literal_error":
        expected = ctx.get("expected", "")
        choices = [c.strip().strip("'") for c in expected.replace(" or ", ", ").split(",")]
        guess = nearest(given, choices)
        text = f"{where}: {given!r} is not one of {', '.join(choices)}"
        return text + (f" (did you mean {guess}?)" if guess else "")
    if kind in _BOUNDS:
        return f"{where}: must be {_BOUNDS[kind]} {_bound(ctx)}, got {given!r}"
    if kind in _EXPECTED:
        return f"{where}: expected {_EXPECTED[kind]}, got {given!r}"
    if kind in ("too_short", "too_long"):
        return (f"{where}: expected {ctx.get('expected') or ctx.get('max_length')} items, "
                f"got {given!r}")
    if kind == "finite_number":
        return f"{where}: must be finite, got {given!r}"
    if kind in ("value_error", "assertion_error"):
        return f"{where}: {error['msg'].split(', ', 1)[-1]}"
    return f"{where}: {error['msg']}, got {given!r}"


_BOUNDS = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<",
           "less_than_equal": "<="}
_EXPECTED = {"float_type": "a number", "int_type": "a whole number", "bool_type": "true or false",
             "string_type": "a string", "dict_type": "a mapping", "list_type": "a list",
             "tuple_type": "a list", "model_type": "a mapping", "model_attributes_type":
             "a mapping", "float_parsing": "a number", "int_from_float": "a whole number"}


def _bound(ctx: dict) -> Any:
    for key in ("gt", "ge", "lt", "le"):
        if key in ctx:
            return ctx[key]
    return ""


def _keys_at(schema: type, loc: tuple) -> list[str] | None:
    """The keys a mapping at ``loc`` may hold, walking the schema's annotations."""
    kind: Any = schema
    for part in loc:
        kind = _child(_strip(kind), part)
        if kind is None:
            return None
    kind = _strip(kind)
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return [info.alias or name for name, info in kind.model_fields.items()]
    return None


def _strip(kind: Any) -> Any:
    """The type under Annotated and Optional."""
    while True:
        origin = get_origin(kind)
        if origin is Annotated:
            kind = get_args(kind)[0]
        elif origin in (Union, types.UnionType):
            members = [a for a in get_args(kind) if a is not type(None)]
            models = [m for m in members if isinstance(_strip(m), type)
                      and issubclass(_strip(m), BaseModel)]
            kind = (models or members)[0]
        else:
            return kind


def _child(kind: Any, part: Any) -> Any:
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        for name, info in kind.model_fields.items():
            if part in (name, info.alias):
                return info.annotation
        return None
    origin, args = get_origin(kind), get_args(kind)
    if origin in (list, typing.List, tuple) and args:
        return args[part] if origin is tuple and isinstance(part, int) and part < len(args) \
            and args[-1] is not Ellipsis else args[0]
    if origin in (dict, typing.Dict) and len(args) == 2:
        return args[1]
    return None
