"""The typed boundary of every worker op: one JSON object in, one JSON object out.

Each op declares its arguments and its result as ``TypedDict`` classes and is
registered with :func:`op` (or :func:`op_with_array` when it also returns a
float32 payload) under the name Go calls it by. The decorator parses the
arguments strictly (an unknown or a missing key is an error naming the op and
the key) and checks the result against its class before encoding it, so a
renamed key fails on the side that renamed it. Go's package ``wire`` declares
the same keys (:mod:`phase0_shim.optypes` is generated from it), and the
contract test of Go's package ``ops`` compares both sides through
:mod:`phase0_shim.contract`.

Optional keys are the ones a class declares with ``total=False`` (required
keys live in a base class), matching ``omitempty`` on the Go side; a required
key may still carry null when its type allows ``None``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict, TypeVar, cast

import numpy as np

A = TypeVar("A", bound=Mapping[str, Any])
R = TypeVar("R", bound=Mapping[str, Any])


class NoArgs(TypedDict):
    """The arguments of an op that takes none: ``{}``."""


class NoResult(TypedDict):
    """The result of an op that reports nothing: ``{}``."""


@dataclass(frozen=True)
class Signature:
    """One registered op: its entry point and the classes of its two JSON objects."""

    entry: Callable[[str], Any]
    args: type[Mapping[str, Any]]
    result: type[Mapping[str, Any]]


# Every registered op by the name Go calls it by.
SIGNATURES: dict[str, Signature] = {}


def _keys(schema: type[Mapping[str, Any]]) -> tuple[frozenset[str], frozenset[str]]:
    required: frozenset[str] = getattr(schema, "__required_keys__")
    optional: frozenset[str] = getattr(schema, "__optional_keys__")
    return required, optional


def _check_keys(op: str, what: str, value: Mapping[str, Any], schema: type[Mapping[str, Any]]) -> None:
    required, optional = _keys(schema)
    unknown = sorted(set(value) - required - optional)
    if unknown:
        known = ", ".join(sorted(required | optional)) or "none"
        raise ValueError(f"{op}: unknown {what} key(s) {', '.join(map(repr, unknown))} ({schema.__name__} has {known})")
    missing = sorted(required - set(value))
    if missing:
        raise ValueError(f"{op}: missing {what} key(s) {', '.join(map(repr, missing))} ({schema.__name__} requires them)")


def parse(op: str, args_json: str, schema: type[A], nonempty: tuple[str, ...] = ()) -> A:
    """Decode an op's JSON arguments into ``schema``; the ``nonempty`` keys must not be null or ""."""
    args = json.loads(args_json)
    if not isinstance(args, dict):
        raise ValueError(f"{op}: arguments must be a JSON object, got {type(args).__name__}")
    _check_keys(op, "argument", args, schema)
    empty = [k for k in nonempty if args.get(k) in (None, "")]
    if empty:
        raise ValueError(f"{op}: argument(s) {', '.join(map(repr, empty))} must not be empty")
    return cast(A, args)


def dumps(op: str, result: Mapping[str, Any], schema: type[Mapping[str, Any]]) -> str:
    """Encode an op's result after checking its keys against ``schema`` (JSON has no NaN)."""
    _check_keys(op, "result", result, schema)
    return json.dumps(result, allow_nan=False, ensure_ascii=False)


def op(name: str, args: type[A], result: type[R], nonempty: tuple[str, ...] = ()) -> Callable[[Callable[[A], R]], Callable[[str], str]]:
    """Register ``fn(args) -> result`` as the op ``name``: JSON string in, JSON string out."""

    def register(fn: Callable[[A], R]) -> Callable[[str], str]:
        @functools.wraps(fn)
        def entry(args_json: str) -> str:
            return dumps(name, fn(parse(name, args_json, args, nonempty)), result)

        SIGNATURES[name] = Signature(entry, args, result)
        return entry

    return register


def op_with_array(
    name: str, args: type[A], result: type[R], nonempty: tuple[str, ...] = ()
) -> Callable[[Callable[[A], tuple[R, np.ndarray]]], Callable[[str], tuple[str, np.ndarray]]]:
    """Register ``fn(args) -> (result, float32 array)`` as the op ``name``."""

    def register(fn: Callable[[A], tuple[R, np.ndarray]]) -> Callable[[str], tuple[str, np.ndarray]]:
        @functools.wraps(fn)
        def entry(args_json: str) -> tuple[str, np.ndarray]:
            out, array = fn(parse(name, args_json, args, nonempty))
            return dumps(name, out, result), array

        SIGNATURES[name] = Signature(entry, args, result)
        return entry

    return register
