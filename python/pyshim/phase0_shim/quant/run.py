"""A quantized run's state in the worker: what quantized gate 1 (op
``quant_facts``) leaves for quantized gate 2 (op ``baseline`` with
``quant``, or op ``quant_e2e``) in the same session.

One :class:`QuantRun` owns it: the reference checkpoint's reader, the
allocator gate 1 ran the folder's loader under (its cache and the arena the
kept tensors were carved from), and the dequantized tensors gate 1 kept.
The worker holds at most one, in :data:`phase0_shim.session.STATE`: gate 1
puts it there when asked to keep its tensors, the gate 2 op takes it (once,
and only for the same loader, source and depth), a baseline without
quantized gate 2 drops it before its model loads, and ``reset_session``
drops it when a session is lent to another run (docs/quantized.md, "Where
the loader comes from"; docs/worker.md).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from phase0_shim import heap
from phase0_shim.quant.families import FamilyReference

# One kept tensor: (layer, field, array); layer < 0 for the head.
KeptTensor = tuple[int, str, Any]


@dataclass(frozen=True)
class RunKey:
    """What gate 2 must ask for to be given gate 1's tensors: the folder's
    module (resolved), the loader's source and the layers loaded."""

    weights_module: str
    source: str
    n_layers: int

    @classmethod
    def of(cls, weights_module: str, source: str, n_layers: int) -> RunKey:
        return cls(str(Path(weights_module).resolve()), source, n_layers)


@dataclass
class Kept:
    """The tensors gate 1 kept for gate 2: the loader that made them and,
    in the loader's order, each projection and the head in bf16."""

    loader: str
    tensors: list[KeptTensor] = field(default_factory=list)


@dataclass
class QuantRun:
    """One quantized run's state across the worker's ops: the reference's
    reader, gate 1's allocator (inactive once gate 1 is done; its figures
    stay) and the tensors kept for gate 2 (None when gate 1 kept none)."""

    key: RunKey
    reference_dir: str
    reference: FamilyReference
    reuse: heap.Reuse = field(default_factory=lambda: heap.Reuse(None))
    kept: Kept | None = None

    def take_kept(self) -> Kept | None:
        """The kept tensors, handed over once: the run holds them no more."""
        kept, self.kept = self.kept, None
        return kept


def as_bf16(value: Any, reuse: heap.Reuse | None = None) -> Any:
    """A loader's tensor as bf16, the dtype gate 2 patches in: the loader's
    own array when it is bf16 already, else one bf16 copy (a float32
    loader's whole model kept as float32 would take twice the memory),
    through gate 1's allocator when given (carved out of its arena, room
    allowing)."""
    import ml_dtypes

    a = np.asarray(value)
    if a.dtype == ml_dtypes.bfloat16:
        return a
    with reuse.carving() if reuse is not None else contextlib.nullcontext():
        return np.asarray(a, dtype=np.float32).astype(ml_dtypes.bfloat16)


def is_bf16(value: Any) -> bool:
    import ml_dtypes

    return bool(np.asarray(value).dtype == ml_dtypes.bfloat16)
