"""Per-tensor statistics of a dequantized weight against its source checkpoint.

What the Go judge computes for quantized gate 1, here for calibration and to
cross-check it. Both tensors are [out, in] (HF layout) float32. Groups are
``group`` consecutive input columns of one output row (32 for Q4NX and Q4_0,
128 for AWQ). The quantization step of a group is taken from the reference
alone, as the judge has no other: ``(max - min) / 15`` for 4-bit affine
(Q4NX, AWQ), ``amax / 8`` for the symmetric Q4_0.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

Step = Literal["affine", "symmetric"]
F32 = npt.NDArray[np.float32]


@dataclass(frozen=True)
class TensorStats:
    cosine: float
    rel_l2: float
    std_ratio: float
    max_half_steps: float  # max over groups of max|err| / (step/2)
    p999_half_steps: float  # 99.9th percentile over groups of the same
    frac_beyond_half: float  # elements with |err| > step/2 (1% tolerance for bf16 scale rounding)
    frac_beyond_step: float  # elements with |err| > one whole step

    def row(self) -> dict[str, float]:
        return asdict(self)


def group_step(ref: F32, group: int, step: Step) -> F32:
    """The quantization step of each [row, group] of ``ref``: [out, in/group]."""
    m, k = ref.shape
    g = ref.reshape(m, k // group, group)
    if step == "affine":
        s = (g.max(axis=2) - g.min(axis=2)) / 15.0
    else:
        s = np.abs(g).max(axis=2) / 8.0
    return s.astype(np.float32)


def tensor_stats(ref: npt.ArrayLike, deq: npt.ArrayLike, *, group: int = 32, step: Step = "affine") -> TensorStats:
    r = np.asarray(ref, dtype=np.float64)
    d = np.asarray(deq, dtype=np.float64)
    if r.shape != d.shape:
        raise ValueError(f"shapes differ: reference {r.shape}, dequantized {d.shape}")
    m, k = r.shape
    err = np.abs(d - r)
    nr, nd = np.linalg.norm(r), np.linalg.norm(d)
    cosine = float((r * d).sum() / (nr * nd)) if nr > 0 and nd > 0 else 0.0
    s = group_step(r.astype(np.float32), group, step).astype(np.float64)
    tiny = np.finfo(np.float32).tiny
    half = np.maximum(s / 2.0, tiny)
    per_group = err.reshape(m, k // group, group).max(axis=2) / half
    half_el = np.repeat(half, group, axis=1)
    return TensorStats(
        cosine=cosine,
        rel_l2=float(np.linalg.norm(d - r) / nr) if nr > 0 else float("inf"),
        std_ratio=float(d.std() / r.std()) if r.std() > 0 else float("inf"),
        max_half_steps=float(np.max(per_group)),
        p999_half_steps=float(np.quantile(per_group, 0.999)),
        frac_beyond_half=float((err > half_el * 1.01).mean()),
        frac_beyond_step=float((err > 2 * half_el).mean()),
    )
