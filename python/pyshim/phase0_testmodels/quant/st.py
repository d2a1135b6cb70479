"""A minimal safetensors reader and writer that allows the format's custom dtypes.

FastFlowLM's ``model.q4nx`` is a safetensors file whose quantized entries carry
``dtype: "Q4NX"`` with the logical shape, which the ``safetensors`` library
refuses to write (the byte length does not follow from shape and dtype). So the
packers write the file themselves: an 8-byte little-endian header length, the
JSON header padded with spaces to a multiple of 8, then the payloads in header
order. The reader is just as small and memory-maps the file.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import numpy.typing as npt
from ml_dtypes import bfloat16

# safetensors dtype -> NumPy dtype, for the plain tensors a checkpoint holds.
_NP: dict[str, Any] = {
    "BF16": bfloat16,
    "F16": np.float16,
    "F32": np.float32,
    "I8": np.int8,
    "U8": np.uint8,
    "I32": np.int32,
    "I64": np.int64,
}
_NAME = {np.dtype(v): k for k, v in _NP.items()}


@dataclass(frozen=True)
class Raw:
    """One entry as stored: a safetensors dtype name, a shape and the bytes."""

    dtype: str
    shape: tuple[int, ...]
    data: bytes


def raw(array: npt.NDArray[Any]) -> Raw:
    """A plain NumPy array as a safetensors entry of its own dtype."""
    a = np.ascontiguousarray(array)
    return Raw(_NAME[a.dtype], tuple(int(d) for d in a.shape), a.tobytes())


def write(path: Path | str, tensors: Mapping[str, Raw], metadata: Mapping[str, str] | None = None) -> Path:
    """Write ``tensors`` (in name order) to ``path`` atomically; return ``path``."""
    path = Path(path)
    header: dict[str, Any] = {"__metadata__": dict(metadata or {"format": "pt"})}
    offset = 0
    names = sorted(tensors)
    for name in names:
        t = tensors[name]
        header[name] = {"dtype": t.dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(t.data)]}
        offset += len(t.data)
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for name in names:
            f.write(tensors[name].data)
    os.replace(tmp, path)
    return path


class File:
    """A memory-mapped safetensors file: header entries and their raw bytes."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._mm = np.memmap(self.path, dtype=np.uint8, mode="r")
        (hlen,) = struct.unpack("<Q", self._mm[:8].tobytes())
        if hlen > len(self._mm) - 8:
            raise ValueError(f"{self.path}: header length {hlen} exceeds the file ({len(self._mm)} bytes)")
        self.header: dict[str, Any] = json.loads(self._mm[8 : 8 + hlen].tobytes())
        self.metadata: dict[str, str] = self.header.pop("__metadata__", {}) or {}
        self._base = 8 + hlen

    def names(self) -> list[str]:
        return sorted(self.header)

    def entry(self, name: str) -> Raw:
        e = self.header[name]
        o0, o1 = e["data_offsets"]
        return Raw(e["dtype"], tuple(e["shape"]), self._mm[self._base + o0 : self._base + o1].tobytes())

    def array(self, name: str) -> npt.NDArray[Any]:
        """A plain entry in its own dtype and shape (bf16 as ml_dtypes.bfloat16)."""
        r = self.entry(name)
        return np.frombuffer(r.data, dtype=_NP[r.dtype]).reshape(r.shape)


class Checkpoint:
    """The tensors of an HF model folder (one file or shards), by name."""

    def __init__(self, folder: Path | str) -> None:
        self.folder = Path(folder)
        files = sorted(self.folder.glob("*.safetensors"))
        if not files:
            raise FileNotFoundError(f"{self.folder}: no *.safetensors files")
        self._where: dict[str, File] = {}
        for p in files:
            f = File(p)
            for n in f.names():
                self._where[n] = f

    def names(self) -> list[str]:
        return sorted(self._where)

    def __contains__(self, name: object) -> bool:
        return name in self._where

    def array(self, name: str) -> npt.NDArray[Any]:
        return self._where[name].array(name)

    def f32(self, name: str) -> npt.NDArray[np.float32]:
        return self.array(name).astype(np.float32)

    def config(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.folder / "config.json").read_text(encoding="utf-8"))
        return data
