"""Q4_0 as a qwen25_3b_q4-style module does it on the host (our own code).

There is no Q4_0 bundle: the module reads the bf16 checkpoint and quantizes
each projection on load, symmetric signed 4-bit per 32 input columns of an
output row: ``scale = amax / 8`` (llama.cpp's magnitude convention, so the
positive peak rounds to +8 and clips to +7), ``q = clip(rint(w / scale), -8, 7)``,
``w ~= q * scale``; an all-zero group gets scale 1. Codes are one signed value
per byte; the two-per-byte packing is the device's business.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

GROUP = 32
F32 = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Q40:
    q: npt.NDArray[np.int8]  # [M, K] in -8..7
    scale: F32  # [M, K/32]

    def dequant(self) -> F32:
        return (self.q.astype(np.float32) * np.repeat(self.scale, GROUP, axis=1)).astype(np.float32)


def quantize(w: npt.ArrayLike, group: int = GROUP) -> Q40:
    a = np.asarray(w, dtype=np.float32)
    m, k = a.shape
    if k % group:
        raise ValueError(f"columns {k} are not a multiple of the {group}-column group")
    g = a.reshape(m, k // group, group)
    amax = np.abs(g).max(axis=2)
    scale = np.where(amax > 0, amax / 8.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(g / scale[..., None]), -8, 7).astype(np.int8)
    return Q40(q.reshape(m, k), scale)


def round_trip(w: npt.ArrayLike) -> F32:
    """What the module hands on: Q4_0 and back, float32 [M, K]."""
    return quantize(w).dequant()
