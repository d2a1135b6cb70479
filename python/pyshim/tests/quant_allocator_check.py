"""Quantized gate 1 in a phase0 worker with and without its NumPy allocator.

The Go test ``gate/quant``'s ``TestQuantFactsAllocatorChangesNothing``
starts a worker on this module and calls :func:`gate1` for every family's
quantized fixtures, once with the worker's allocator (``_phase0_reuse``,
python/bridge/reuse.c) and once without it: hidden from ``sys.modules``,
``heap.reusing`` then runs NumPy's own allocator, as under a plain python.
Each call runs op ``quant_facts`` through its registered entry (JSON in,
the op's JSON text out) and reports a digest of every array gate 1 kept
for gate 2, so Go compares both runs byte for byte (docs/worker.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

# The smallest block the allocator caches and carves while on: the
# fixtures' tensors (256 wide) are far under its 4 MiB default, which would
# leave every array to the C library and the comparison vacuous. At 64 KiB
# nearly every array the loader and gate 1 make goes through its cache, its
# arena and the kept tensors' carving, as a real model's arrays do.
SMALLEST = 64 << 10


@contextlib.contextmanager
def _allocator(on: bool) -> Iterator[None]:
    """The worker's allocator caching and carving from SMALLEST bytes (on),
    or hidden from heap.reusing (off: NumPy's own, as under a plain python)."""
    native = sys.modules.get("_phase0_reuse")
    if native is None:
        raise RuntimeError("no _phase0_reuse: not in a phase0 worker")
    if not on:
        del sys.modules["_phase0_reuse"]
        try:
            yield
        finally:
            sys.modules["_phase0_reuse"] = native
        return
    previous = native.smallest(SMALLEST)
    try:
        yield
    finally:
        native.smallest(previous)


def _digest(a: Any) -> str:
    array = np.ascontiguousarray(np.asarray(a))
    h = hashlib.sha256(f"{array.dtype.str}{list(array.shape)}".encode())
    h.update(array.view(np.uint8).reshape(-1).data)
    return h.hexdigest()


def gate1(request_json: str) -> str:
    """``{"args": QuantArgs, "allocator": bool}``: op quant_facts's JSON
    text (or what it raised), each kept array's digest in gate 1's order,
    and what the allocator did."""
    from phase0_shim import ops
    from phase0_shim.session import STATE

    request = json.loads(request_json)
    out: dict[str, Any] = {"result": "", "error": "", "kept": [], "reuse": {}}
    with _allocator(bool(request["allocator"])):
        try:
            out["result"] = ops.quant_facts(json.dumps(request["args"]))
        except Exception as e:  # the loader's raise is a fact too
            out["error"] = f"{type(e).__name__}: {e}"
    run = STATE.quant()
    if run is not None:
        if run.kept is not None:
            out["loader"] = run.kept.loader
            out["kept"] = [[layer, field, _digest(a)] for layer, field, a in run.kept.tensors]
        reuse = run.reuse
        out["reuse"] = {"hits": reuse.hits, "misses": reuse.misses, "reused_bytes": reuse.reused_bytes, "carved_bytes": reuse.carved_bytes}
    STATE.drop_quant()
    return json.dumps(out)
