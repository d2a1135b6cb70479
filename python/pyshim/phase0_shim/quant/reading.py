"""The source checkpoint's tensors, memory-mapped, read by name."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from phase0_shim.quant.vocab import PROJECTIONS
from phase0_shim.stheader import Entry, read_header

_DTYPES = {"F32": np.float32, "F16": np.float16}


def projection_name(layer: int, field: str) -> str:
    """The reference checkpoint's tensor of a projection field (wq, w_gate …) in layer."""
    return f"model.layers.{layer}.{PROJECTIONS[field][1]}.weight"


class Reference:
    """The source checkpoint's tensors, memory-mapped (one file or an index's shards)."""

    def __init__(self, model_dir: Path) -> None:
        import ml_dtypes

        self._dtypes: dict[str, Any] = {**_DTYPES, "BF16": ml_dtypes.bfloat16}
        index = model_dir / "model.safetensors.index.json"
        if index.is_file():
            weight_map = json.loads(index.read_text())["weight_map"]
            files = sorted(set(weight_map.values()))
        else:
            files = ["model.safetensors"]
        self._where: dict[str, tuple[np.memmap, int, Entry]] = {}
        for rel in files:
            # Shard names stay inside the folder (its files may be links
            # into an HF cache's blobs/, which is fine).
            if Path(rel).is_absolute() or ".." in Path(rel).parts:
                raise ValueError(f"shard {rel} of {model_dir} names a path outside the folder")
            path = model_dir / rel
            # Checked before anything is mapped: every offset read below
            # lies inside the file and spans what its dtype and shape need.
            header = read_header(path)
            mm = np.memmap(path, dtype=np.uint8, mode="r")
            for name, entry in header.tensors.items():
                self._where[name] = (mm, header.data_start, entry)

    def shape(self, name: str) -> list[int]:
        return list(self._where[name][2].shape)

    def has(self, name: str) -> bool:
        return name in self._where

    def release(self, name: str) -> None:
        """Drop the tensor's pages from this process (they stay in the page
        cache): the mapped reference would otherwise count whole in the
        worker's RSS by the last layer."""
        _, _, entry = self._where[name]
        self._drop(name, 0, entry.end - entry.begin)

    def release_rows(self, name: str, start: int, end: int) -> None:
        """release() for the tensor's rows [start, end) only: a tensor read
        a chunk of rows at a time holds one chunk's pages, not the whole
        tensor's (the 1B embedding's 0.5 GB were most of gate 1's peak over
        the bf16 model stage)."""
        _, _, entry = self._where[name]
        rows = entry.shape[0] if entry.shape else 0
        if rows > 0:
            row_bytes = (entry.end - entry.begin) // rows
            self._drop(name, start * row_bytes, min(end, rows) * row_bytes)

    def _drop(self, name: str, lo: int, hi: int) -> None:
        """Drop bytes [lo, hi) of the tensor's data from this process, out
        to whole pages. Dropped pages of a read-only file mapping fault back
        in from the page cache: rounding out costs a re-read at most, never
        a value."""
        import mmap

        mm, base, entry = self._where[name]
        raw = getattr(mm, "_mmap", None)
        if raw is None or hi <= lo:
            return
        start = (base + entry.begin + lo) // mmap.PAGESIZE * mmap.PAGESIZE
        with contextlib.suppress(OSError, ValueError):
            raw.madvise(mmap.MADV_DONTNEED, start, base + entry.begin + hi - start)

    def get(self, name: str) -> np.ndarray:
        """The tensor as stored (bf16 stays bf16), shaped."""
        mm, base, entry = self._where[name]
        dtype = self._dtypes.get(entry.dtype)
        if dtype is None:
            raise ValueError(f"reference tensor {name} has dtype {entry.dtype}; expected BF16, F16 or F32")
        return np.frombuffer(mm[base + entry.begin : base + entry.end], dtype=dtype).reshape(entry.shape)



def release_mapped(folder: Path) -> int:
    """Drop from this process the pages of every read-only mapping of a file
    in ``folder`` (a loader's np.memmap of its bundle; they stay in the page
    cache and fault back in when read again): otherwise the whole bundle
    counts in the worker's RSS by the last layer, beside the tensors gate 1
    keeps for gate 2. Writable mappings are left alone (dropping a private
    one's pages would lose what was written). Returns the bytes advised;
    0 where /proc/self/maps or madvise is not available."""
    import ctypes
    import mmap
    import os

    try:
        files = {os.path.realpath(p) for p in folder.iterdir() if p.is_file()} if folder.is_dir() else {os.path.realpath(folder)}
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            maps = f.read().splitlines()
        madvise = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return 0
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    advised = 0
    for line in maps:
        parts = line.split(maxsplit=5)
        if len(parts) < 6 or "w" in parts[1] or parts[5] not in files:
            continue
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        if madvise(lo, hi - lo, mmap.MADV_DONTNEED) == 0:
            advised += hi - lo
    return advised
