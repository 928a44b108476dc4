"""Reference tables of the schemas, in Markdown: every key with its type, default and
description (units in the description), nested keys by their path. docs/CONFIG.md is made by
``mbsim-ros schema markdown`` from these, and a test keeps it equal, so it cannot drift."""
from __future__ import annotations

import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from .base import strip_optional


def reference(schema: type[BaseModel], prefix: str = "") -> list[str]:
    """Table rows (``| key | type | default | meaning |``) of a schema and the schemas it
    nests, depth first."""
    rows = []
    for name, info in schema.model_fields.items():
        key = f"{prefix}{name}"
        inner = _model_inside(info.annotation)
        rows.append(f"| `{key}` | {type_name(info.annotation, info.metadata)} | "
                    f"{_default(info)} | {' '.join((info.description or '').split())} |")
        if inner is not None:
            rows += reference(inner, key + _suffix(info.annotation))
    return rows


def table(schema: type[BaseModel], prefix: str = "") -> str:
    head = "| key | type | default | meaning |\n|---|---|---|---|\n"
    return head + "\n".join(reference(schema, prefix)) + "\n"


def _suffix(kind: Any) -> str:
    """How a nested key is written below a field: ``a.b``, ``a[].b`` or ``a.<name>.b``."""
    kind = strip_optional(kind)
    origin = get_origin(kind)
    if origin is list:
        return "[]."
    if origin is dict:
        return ".<name>."
    return "."


def _model_inside(kind: Any) -> type[BaseModel] | None:
    kind = strip_optional(kind)
    if get_origin(kind) in (list, dict):
        kind = strip_optional(get_args(kind)[-1])
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return kind
    return None


def type_name(kind: Any, metadata: list = ()) -> str:
    """A short type as a user reads it: number > 0, [3 numbers], one of a, b, ..."""
    bounds = list(metadata)
    optional = False
    while True:
        origin = get_origin(kind)
        if origin is Annotated:
            bounds += list(kind.__metadata__)
            kind = get_args(kind)[0]
        elif origin in (Union, types.UnionType) and type(None) in get_args(kind):
            optional = True
            members = [a for a in get_args(kind) if a is not type(None)]
            kind = members[0] if len(members) == 1 else Union[tuple(members)]
        else:
            break
    text = _plain(kind) + _range(bounds)
    return text + " or none" if optional else text


def _plain(kind: Any) -> str:
    origin, args = get_origin(kind), get_args(kind)
    if origin is Literal:
        return "one of " + ", ".join(f"`{a}`" for a in args)
    if origin is tuple:
        return f"[{len(args)} {type_name(args[0]).split(' or')[0]}s]" if args else "list"
    if origin is list:
        return f"list of {type_name(args[0])}"
    if origin is dict:
        return f"{{name: {type_name(args[1])}}}"
    if origin in (Union, types.UnionType):
        return " | ".join(type_name(a) for a in args)
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return "mapping"
    return {bool: "bool", int: "integer", float: "number", str: "string"}.get(kind, str(kind))


def _range(bounds: list) -> str:
    words = []
    for bound in bounds:
        for cls, sign, attr in ((Gt, ">", "gt"), (Ge, ">=", "ge"), (Lt, "<", "lt"),
                                (Le, "<=", "le")):
            if isinstance(bound, cls):
                words.append(f"{sign} {getattr(bound, attr):g}")
    return f" ({', '.join(words)})" if words else ""


def _default(info) -> str:
    if info.is_required():
        return "required"
    value = info.default if info.default is not PydanticUndefined else info.default_factory()
    if isinstance(value, BaseModel):
        return "see below"
    if value is None:
        return "none"
    if isinstance(value, tuple):
        value = list(value)
    return f"`{value!r}`".replace("'", "") if not isinstance(value, str) else \
        (f"`{value}`" if value else '`""`')
