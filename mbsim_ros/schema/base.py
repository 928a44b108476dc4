"""What every input schema is built from: the strict base model (an unknown key is an error),
the checked number and vector types, and SchemaError, which words every problem of one input
with its full path, the valid keys there and the nearest match.

pydantic v2 validates; its error locations are turned into paths such as ``models[1].position``
and its JSON Schema export is what ``mbsim-ros schema`` prints (docs/CONFIG.md).
"""
from __future__ import annotations

import difflib
import functools
import math
import types
import typing
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from annotated_types import Ge, Gt, Le
import numpy as np
from pydantic import AfterValidator, AllowInfNan, BaseModel, ConfigDict
from pydantic import Field, Strict
from pydantic import ValidationError

__all__ = ["Schema", "SchemaError", "validate", "load_yaml", "Real", "Positive", "NonNegative",
           "Fraction", "Flag", "Count", "Index", "Number", "Whole", "Text", "Vector3",
           "Quaternion", "JointValues", "Field", "path_of", "nearest", "strip_optional"]

S = TypeVar("S", bound="Schema")


class SchemaError(ValueError):
    """An input that does not match its schema, or a value the schema cannot judge (a joint
    that must exist). ``problems`` lists every problem found, each starting with its path; the
    message is all of them after the input's name. ``SchemaError("path: what")`` is one
    problem with no source."""

    def __init__(self, source: str, problems: list[str] | None = None) -> None:
        if problems is None:
            source, problems = "", [source]
        self.source = source
        self.problems = list(problems)
        lead = f"{source}: " if source else ""
        if len(self.problems) == 1:
            text = lead + self.problems[0]
        else:
            text = f"{lead}{len(self.problems)} problems:\n  " + "\n  ".join(self.problems)
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


Number = Annotated[float, Strict()]
"""A number that may be infinite (a stiffness of inf: rigid)."""
Real = Annotated[float, Strict(), AllowInfNan(False)]
Positive = Annotated[Real, Gt(0)]
NonNegative = Annotated[Real, Ge(0)]
Fraction = Annotated[Real, Ge(0), Le(1)]
Flag = Annotated[bool, Strict()]
Whole = Annotated[int, Strict()]
Count = Annotated[Whole, Ge(1)]
Index = Annotated[Whole, Ge(0)]
Text = Annotated[str, Strict()]
Vector3 = tuple[Real, Real, Real]
Quaternion = Annotated[tuple[Real, Real, Real, Real], AfterValidator(_unit_quaternion)]
JointValues = dict[Text, Real]


def load_yaml(text: str):
    """YAML as users write it: PyYAML's safe loader, with floats as YAML 1.2 reads them
    (``2.0e11`` and ``1e-3`` are numbers, not strings as YAML 1.1 has it)."""
    import yaml

    return yaml.load(text, Loader=_loader())


@functools.cache
def _loader():
    import re

    import yaml

    class Loader(yaml.SafeLoader):
        """SafeLoader with YAML 1.2's float syntax."""

    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
                    |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
                    |[-+]?\.(?:inf|Inf|INF)
                    |\.(?:nan|NaN|NAN))$""", re.X),
        list("-+0123456789."))
    return Loader


def validate(schema: type[S], data: Any, source: str,
             error: type[SchemaError] = SchemaError, key: str = "key") -> S:
    """``data`` checked against ``schema``; ``error`` (SchemaError or a subclass) names every
    problem (``source`` names the input: a file, 'scene', 'campaign spec'; ``key`` what its
    keys are called: key, option)."""
    if data is None:
        data = {}
    try:
        return schema.model_validate(_plain(data))
    except ValidationError as exc:
        raise error(source, _merged(schema, exc.errors(), key)) from None


def _merged(schema: type, errors: list, key: str) -> list[str]:
    """One line per problem. A value that may be one of several things (a number or a
    distribution) fails every branch: when it is none of their kinds, one line says which kinds
    it may be; when it is of one kind, only that branch's problems are kept."""
    lines, unions = [], {}
    for error in errors:
        shown, _, union_at = _walk(schema, tuple(error["loc"]))
        if union_at is None:
            lines.append(_problem(schema, error, key))
            continue
        unions.setdefault(shown[:union_at], []).append((len(shown) == union_at, error))
    for at, branch_errors in unions.items():
        deeper = [e for shallow, e in branch_errors
                  if not (shallow and e["type"] in _EXPECTED)]
        if deeper:
            lines += [_problem(schema, e, key) for e in deeper]
        else:
            kinds = sorted({_EXPECTED[e["type"]] for _, e in branch_errors})
            lines.append(f"{path_of(at) or '(top level)'}: expected {' or '.join(kinds)}, got "
                         f"{branch_errors[0][1].get('input')!r}")
    return lines


def _plain(data: Any) -> Any:
    """numpy scalars (which library callers pass) as the Python numbers they hold, in nested
    mappings and lists too."""
    if isinstance(data, np.generic) and data.ndim == 0:
        return data.item()
    if isinstance(data, dict):
        return {key: _plain(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return type(data)(_plain(value) for value in data)
    return data


def path_of(loc: tuple) -> str:
    """``('models', 1, 'position')`` -> ``models[1].position``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def nearest(word: str, choices) -> str | None:
    """The choice closest to a misspelled word, if one is close."""
    choices = [str(c) for c in choices]
    same_letters = [c for c in choices if c.lower() == str(word).lower()]
    found = same_letters or difflib.get_close_matches(str(word), choices, n=1, cutoff=0.6)
    return found[0] if found else None


def _problem(schema: type, error: dict, key: str = "key") -> str:
    shown, kind_at, _ = _walk(schema, tuple(error["loc"]))
    loc, kind, given = shown, error["type"], error.get("input")
    where = path_of(loc) or "(top level)"
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden":
        valid = _keys(kind_at(len(loc) - 1)) or []
        text = f"{where}: unknown {key}; valid {key}s here: {', '.join(valid)}"
        guess = nearest(loc[-1], valid)
        return text + (f" (did you mean {guess}?)" if guess else "")
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        choices = [c.strip().strip("'") for c in str(ctx.get("expected_tags", "")).split(",")]
        key = path_of(loc + (ctx.get("discriminator", "type").strip("'"),))
        if kind == "union_tag_not_found":
            return f"{key}: missing (required): one of {', '.join(choices)}"
        guess = nearest(ctx.get("tag"), choices)
        return (f"{key}: {ctx.get('tag')!r} is not one of {', '.join(choices)}"
                + (f" (did you mean {guess}?)" if guess else ""))
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
        bound = _bound(ctx)
        named = {("greater_than", 0): "positive (> 0)",
                 ("greater_than_equal", 0): "non-negative (>= 0)"}.get((kind, bound))
        return f"{where}: must be {named or f'{_BOUNDS[kind]} {bound}'}, got {given!r}"
    if kind in _EXPECTED:
        return f"{where}: expected {_EXPECTED[kind]}, got {given!r}"
    if kind == "too_short":
        return f"{where}: needs at least {ctx.get('min_length')} item(s), got {given!r}"
    if kind == "too_long":
        return f"{where}: takes at most {ctx.get('max_length')} item(s), got {given!r}"
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


def _walk(schema: type, loc: tuple) -> tuple[tuple, Any, int | None]:
    """(the location without union tags, a function from the depth in that location to the
    schema type there, the depth of the first plain union whose branch the location took, or
    None), walking the schema's annotations."""
    kinds: list = [schema]
    shown: list = []
    union_at = None
    for part in loc:
        kind = strip_optional(kinds[-1])
        member = _tagged(kind, part)
        if member is None:
            member = _branch(kind, part)
            if member is not None and union_at is None:
                union_at = len(shown)
        if member is not None:
            kinds[-1] = member
            continue
        shown.append(part)
        kinds.append(_child(kind, part) if kind is not None else None)
    return tuple(shown), (lambda depth: kinds[depth] if depth < len(kinds) else None), union_at


def _branch(kind: Any, tag: Any) -> Any:
    """The member of a plain union that pydantic's location names by its type's name
    (``constrained-float``, ``dict[str,...]``, ``function-after[..., Distribution]``)."""
    if get_origin(kind) not in (Union, types.UnionType) or not isinstance(tag, str):
        return None
    scalar = tag.removeprefix("constrained-") in ("float", "int", "bool", "str")
    for member in get_args(kind):
        plain = strip_optional(member)
        origin = get_origin(plain)
        if isinstance(plain, type) and issubclass(plain, BaseModel):
            if not scalar and plain.__name__ in tag:
                return member
        elif origin is not None:
            if tag.startswith(f"{getattr(origin, '__name__', origin)}["):
                return member
        elif scalar:
            return member
    return None


def _keys(kind: Any) -> list[str] | None:
    """The keys a mapping of this schema type may hold."""
    kind = strip_optional(kind)
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return [info.alias or name for name, info in kind.model_fields.items()]
    return None


def _tagged(kind: Any, tag: Any) -> type | None:
    """The member of a discriminated union whose Literal field holds ``tag``."""
    if get_origin(kind) not in (Union, types.UnionType) or not isinstance(tag, str):
        return None
    for member in get_args(kind):
        member = strip_optional(member)
        if isinstance(member, type) and issubclass(member, BaseModel):
            for info in member.model_fields.values():
                if get_origin(info.annotation) is Literal and get_args(info.annotation) == (tag,):
                    return member
    return None


def strip_optional(kind: Any) -> Any:
    """The type under Annotated and Optional (a union of several models stays a union)."""
    while True:
        origin = get_origin(kind)
        if origin is Annotated:
            kind = get_args(kind)[0]
        elif origin in (Union, types.UnionType):
            members = [a for a in get_args(kind) if a is not type(None)]
            if len(members) > 1:
                return Union[tuple(members)]
            kind = members[0]
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
