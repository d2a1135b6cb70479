"""The op contract as Python declares it, for Go's contract test.

:func:`schema` answers, for every op :mod:`phase0_shim.ops` exposes, the keys
of its arguments and of its result: whether each is optional and, when its
value is (a list, a map or an optional of) another TypedDict, that class's
keys in turn. Go compares this with its own types (ops/contract_test.go).
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Mapping
from typing import Any, TypedDict, Union

from phase0_shim.opargs import SIGNATURES, NoArgs, op


class FieldSchema(TypedDict):
    optional: bool
    fields: dict[str, FieldSchema] | None  # None: not a TypedDict (a scalar, or open-ended)


class OpSchema(TypedDict):
    args: dict[str, FieldSchema]
    result: dict[str, FieldSchema]


def _fields(tp: Any) -> dict[str, FieldSchema] | None:
    """The keys of the TypedDict that ``tp`` is or wraps (list, dict value, optional)."""
    if typing.is_typeddict(tp):
        return describe(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is list and args:
        return _fields(args[0])
    if origin is dict and len(args) == 2:
        return _fields(args[1])
    if origin in (Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _fields(inner[0]) if len(inner) == 1 else None
    return None


def describe(schema: type[Mapping[str, Any]]) -> dict[str, FieldSchema]:
    """Every key of a TypedDict class, with its optionality and nested keys."""
    hints = typing.get_type_hints(schema)
    optional: frozenset[str] = getattr(schema, "__optional_keys__")
    return {name: {"optional": name in optional, "fields": _fields(tp)} for name, tp in hints.items()}


def ops_schema() -> dict[str, OpSchema]:
    """The registered ops that phase0_shim.ops exposes under their own names."""
    from phase0_shim import ops

    return {
        name: {"args": describe(sig.args), "result": describe(sig.result)}
        for name, sig in sorted(SIGNATURES.items())
        if getattr(ops, name, None) is sig.entry
    }


class SchemaResult(TypedDict):
    ops: dict[str, OpSchema]


@op("schema", NoArgs, SchemaResult)
def schema(_: NoArgs) -> SchemaResult:
    """Entry point for Go's contract test (this module, not phase0_shim.ops)."""
    return {"ops": ops_schema()}


if __name__ == "__main__":
    print(json.dumps(ops_schema(), indent=2))
