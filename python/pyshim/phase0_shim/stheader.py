"""A safetensors file's header, read with the bounds Go's reader keeps
(read/safetensors/header.go; docs/ARCHITECTURE.md, "safetensors reading").

The shim's modules that read a checkpoint by hand (the quantized gates'
reference reader, :mod:`phase0_shim.quant.reading`) read its header here,
never trusting what the file says: the 8-byte header length is capped at
:data:`MAX_HEADER_SIZE` (the reference implementation's cap, Go's
``MaxHeaderSize``) and must fit the file; the header is UTF-8 JSON, one
object without a repeated key; each tensor names a known dtype, a shape of
non-negative integers and ``data_offsets`` whose span is exactly what the
dtype and shape need; and the tensors' data tile the rest of the file, no
overlap, no gap, nothing past its end or after the last tensor. A violation
is a :class:`HeaderError` naming the file (and the tensor) with what was
expected and what was found.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The largest JSON header accepted, in bytes (Go's MaxHeaderSize).
MAX_HEADER_SIZE = 100_000_000
METADATA_KEY = "__metadata__"
# Bytes per element of safetensors' own dtypes (Go's stformat.DTypeSize).
DTYPE_SIZES: dict[str, int] = {
    **dict.fromkeys(("BOOL", "U8", "I8", "F8_E4M3", "F8_E5M2", "F8_E8M0"), 1),
    **dict.fromkeys(("I16", "U16", "F16", "BF16"), 2),
    **dict.fromkeys(("I32", "U32", "F32"), 4),
    **dict.fromkeys(("I64", "U64", "F64"), 8),
}
_INT64_MAX = (1 << 63) - 1
_FIELDS = ("dtype", "shape", "data_offsets")

# A dtype beyond safetensors' own (a FastFlowLM bundle's Q4NX): the bytes a
# tensor of a shape takes, None when the shape cannot hold it.
ExtraDType = Callable[[tuple[int, ...]], int | None]


class HeaderError(ValueError):
    """A safetensors header that does not describe its file."""


@dataclass(frozen=True)
class Entry:
    """One tensor: its dtype, shape and data offsets relative to the data
    section (``data_offsets`` as the header has them)."""

    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int


@dataclass(frozen=True)
class Header:
    """A checked header: where the data section starts in the file (8 + the
    header's length), each tensor by name, and the free-form metadata."""

    path: Path
    data_start: int
    tensors: dict[str, Entry]
    metadata: dict[str, str]


def read_header(path: Path | str, extra: Mapping[str, ExtraDType] | None = None) -> Header:
    """The header of the safetensors file ``path``, checked against the file
    (only its first 8 + header-length bytes are read); ``extra`` are dtypes
    accepted beyond safetensors' own."""
    path = Path(path)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < 8:
            raise HeaderError(f"{path}: file is {size} bytes, too short for the 8-byte header length")
        n = int.from_bytes(f.read(8), "little")
        if n > MAX_HEADER_SIZE:
            raise HeaderError(f"{path}: header length {n} exceeds the {MAX_HEADER_SIZE}-byte cap")
        if n > size - 8:
            raise HeaderError(f"{path}: header length {n} runs past the end of the {size}-byte file")
        if n < 2:
            raise HeaderError(f"{path}: header length {n} cannot hold a JSON object")
        raw = f.read(n)
    if len(raw) != n:
        raise HeaderError(f"{path}: read {len(raw)} of the header's {n} bytes (the file shrank)")
    tensors, metadata = _parse(path, raw, extra or {})
    _check_layout(path, tensors, size - 8 - n)
    return Header(path, 8 + n, tensors, metadata)


def _parse(path: Path, raw: bytes, extra: Mapping[str, ExtraDType]) -> tuple[dict[str, Entry], dict[str, str]]:
    if raw[:1] != b"{":
        raise HeaderError(f"{path}: header starts with {raw[:1]!r}, want '{{'")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise HeaderError(f"{path}: header is not valid UTF-8 (byte {8 + e.start})") from None
    try:
        header = json.loads(text, object_pairs_hook=_no_repeats(path), parse_constant=_no_constant(path))
    except json.JSONDecodeError as e:
        raise HeaderError(f"{path}: header is not valid JSON: {e.msg} at header byte {e.pos}") from None
    if not isinstance(header, dict):
        raise HeaderError(f"{path}: header is a JSON {type(header).__name__}, want an object")
    metadata: dict[str, str] = {}
    tensors: dict[str, Entry] = {}
    for name, value in header.items():
        if name == METADATA_KEY:
            metadata = _metadata(path, value)
        else:
            tensors[name] = _entry(path, name, value, extra)
    return tensors, metadata


def _no_repeats(path: Path) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise HeaderError(f"{path}: key {key!r} appears twice in the header")
            out[key] = value
        return out

    return hook


def _no_constant(path: Path) -> Callable[[str], Any]:
    def hook(name: str) -> Any:
        raise HeaderError(f"{path}: header holds {name}, which is not JSON")

    return hook


def _metadata(path: Path, value: Any) -> dict[str, str]:
    if value is None:  # "__metadata__": null is the same as absent
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise HeaderError(f"{path}: {METADATA_KEY} is {json.dumps(value)[:80]}, want an object of strings")
    return dict(value)


def _entry(path: Path, name: str, value: Any, extra: Mapping[str, ExtraDType]) -> Entry:
    where = f"{path}: tensor {name!r}"
    if not isinstance(value, dict):
        raise HeaderError(f"{where}: got {json.dumps(value)[:80]}, want an object")
    unknown = sorted(set(value) - set(_FIELDS))
    if unknown:
        raise HeaderError(f"{where}: unknown field {unknown[0]!r} (want dtype, shape, data_offsets)")
    missing = [k for k in _FIELDS if k not in value]
    if missing:
        raise HeaderError(f"{where}: missing field {missing[0]}")
    dtype = value["dtype"]
    if not isinstance(dtype, str) or (dtype not in DTYPE_SIZES and dtype not in extra):
        raise HeaderError(f"{where}: unknown dtype {json.dumps(dtype)}")
    shape = _ints(where, "shape", value["shape"])
    offsets = _ints(where, "data_offsets", value["data_offsets"])
    if len(offsets) != 2:
        raise HeaderError(f"{where}: data_offsets has {len(offsets)} values, want [begin, end]")
    begin, end = offsets
    if begin > end:
        raise HeaderError(f"{where}: data_offsets [{begin}, {end}]: begin is after end")
    needs = math.prod(shape) * DTYPE_SIZES[dtype] if dtype in DTYPE_SIZES else extra[dtype](shape)
    if needs is None or needs < 0:
        raise HeaderError(f"{where}: shape {list(shape)} cannot hold {dtype} data")
    if needs > _INT64_MAX:
        raise HeaderError(f"{where}: shape {list(shape)} of {dtype}: byte size overflows")
    if end - begin != needs:
        raise HeaderError(f"{where}: shape {list(shape)} of {dtype} needs {needs} bytes but data_offsets [{begin}, {end}] span {end - begin}")
    return Entry(dtype, shape, begin, end)


def _ints(where: str, what: str, value: Any) -> tuple[int, ...]:
    """A JSON array of non-negative integers (booleans are not integers here)."""
    if not isinstance(value, list) or not all(type(v) is int and 0 <= v <= _INT64_MAX for v in value):
        raise HeaderError(f"{where}: {what} is {json.dumps(value)[:80]}, want an array of non-negative integers")
    return tuple(value)


def _check_layout(path: Path, tensors: dict[str, Entry], data_len: int) -> None:
    """The tensors' data tile the data section exactly, in offset order."""
    ordered = sorted(tensors.items(), key=lambda item: (item[1].begin, item[1].end))
    end, previous = 0, ""
    for name, e in ordered:
        if e.begin > end:
            raise HeaderError(f"{path}: tensor {name!r}: gap: data begins at {e.begin} but the previous tensor ends at {end}")
        if e.begin < end:
            raise HeaderError(f"{path}: tensor {name!r}: data [{e.begin}, {e.end}] overlaps tensor {previous!r} ending at {end}")
        end, previous = e.end, name
    if end > data_len:
        cut = next(i for i, (_, e) in enumerate(ordered) if e.end > data_len)
        name, e = ordered[cut]
        rest = len(ordered) - cut - 1
        lost = f" (and the {rest} tensors after it)" if rest else ""
        raise HeaderError(
            f"{path}: tensor {name!r}{lost}: data [{e.begin}, {e.end}] runs past the end: tensor data ends at {end} "
            f"but the file has only {data_len} data bytes (truncated)"
        )
    if end < data_len:
        raise HeaderError(f"{path}: {data_len - end} trailing bytes after the tensor data (data ends at {end} of {data_len})")
