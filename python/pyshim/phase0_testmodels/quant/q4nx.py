"""FastFlowLM Q4NX: 4-bit affine blocks of 32 rows x 256 columns (our own packer).

Facts (docs/formats.md): a quantized [M, K] weight
(HF layout, rows = output features) is cut into 32x256 blocks in row-block,
column-block order. Each block is 5,120 bytes:

* bf16 ``scales[8 column groups][32 rows]`` (512 B),
* bf16 ``mins[8][32]`` (512 B),
* uint8 ``qs[2 row-groups][256 cols][8]``, byte k of row-group g holding
  ``q[g*16 + 2k + 1] << 4 | q[g*16 + 2k]`` (even row in the low nibble).

Quantization is per row per 32-column group, min/max onto q in 0..15. Two
header codecs: ``I8`` (shape [n_blocks, 5120], ``w = scale*q + min``) and the
older ``Q4NX`` (logical shape [M, K], ``w = scale*(q - zp)`` with the unscaled
zero point zp stored in the min slot).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from ml_dtypes import bfloat16

from phase0_testmodels.quant.st import Raw

ROW_BLOCK = 32
COL_BLOCK = 256
GROUP = 32
N_GROUPS = COL_BLOCK // GROUP  # 8 column groups per block
PARALLEL = 16  # rows per row-group
ROW_GROUPS = ROW_BLOCK // PARALLEL  # 2
LEVELS = 15  # q in 0..15
BLOCK_BYTES = 2 * 2 * N_GROUPS * ROW_BLOCK + ROW_BLOCK * COL_BLOCK // 2  # 5120

Codec = Literal["I8", "Q4NX"]
CODECS: tuple[Codec, ...] = ("I8", "Q4NX")
NibbleOrder = Literal["even-low", "odd-low"]

F32 = npt.NDArray[np.float32]
U8 = npt.NDArray[np.uint8]


@dataclass(frozen=True)
class Quantized:
    """One tensor on the 4-bit grid, before the byte layout.

    ``q`` is [M, K] in 0..15; ``scale`` and ``offset`` are [M, K/32] and already
    bf16-representable (what the file stores): the min for ``I8``, the zero
    point for ``Q4NX``.
    """

    codec: Codec
    q: U8
    scale: F32
    offset: F32

    def dequant(self) -> F32:
        """The weights this grid stands for, float32 [M, K]."""
        s = np.repeat(self.scale, GROUP, axis=1)
        o = np.repeat(self.offset, GROUP, axis=1)
        q = self.q.astype(np.float32)
        w = s * q + o if self.codec == "I8" else s * (q - o)
        return w.astype(np.float32)


def _bf16(a: npt.NDArray[np.floating]) -> F32:
    return a.astype(bfloat16).astype(np.float32)


def check_shape(m: int, k: int) -> None:
    if m % ROW_BLOCK or k % COL_BLOCK:
        raise ValueError(f"Q4NX needs rows a multiple of {ROW_BLOCK} and columns of {COL_BLOCK}; got [{m}, {k}]")


def quantize(w: npt.NDArray[np.floating], codec: Codec = "I8") -> Quantized:
    """Min/max 4-bit affine quantization per row per 32-column group.

    The grid is computed from the bf16-rounded scale and offset the file will
    hold, so every element is within half a step of its weight up to that
    rounding (a clean tensor's bound).
    """
    w = np.asarray(w, dtype=np.float32)
    m, k = w.shape
    if k % GROUP:
        raise ValueError(f"columns {k} are not a multiple of the {GROUP}-column group")
    g = w.reshape(m, k // GROUP, GROUP)
    lo, hi = g.min(axis=2), g.max(axis=2)
    scale = _bf16((hi - lo) / LEVELS)
    # A constant group has no step: any positive scale reproduces it through the offset.
    safe = np.where(scale > 0, scale, np.float32(1.0)).astype(np.float32)
    if codec == "I8":
        offset = _bf16(lo)
        q = np.rint((g - offset[..., None]) / safe[..., None])
    else:
        scale = safe
        offset = _bf16(-lo / safe)
        q = np.rint(g / safe[..., None] + offset[..., None])
    q8 = np.clip(q, 0, LEVELS).astype(np.uint8).reshape(m, k)
    return Quantized(codec, q8, scale, offset)


def pack_blocks(qt: Quantized, nibbles: NibbleOrder = "even-low") -> U8:
    """The 32x256 blocks of ``qt``, uint8 [n_blocks, 5120], row-block then column-block.

    ``nibbles="odd-low"`` swaps the two rows of each byte: the wrong-nibble-order
    negative fixture.
    """
    m, k = qt.q.shape
    check_shape(m, k)
    nbi, nbj = m // ROW_BLOCK, k // COL_BLOCK

    def per_block(a: F32) -> U8:  # [M, K/32] -> [nbi, nbj, 8 groups, 32 rows] bf16 bytes
        t = a.reshape(nbi, ROW_BLOCK, nbj, N_GROUPS).transpose(0, 2, 3, 1)
        return np.ascontiguousarray(t.astype(bfloat16)).view(np.uint8).reshape(nbi, nbj, -1)

    q = qt.q.reshape(nbi, ROW_BLOCK, nbj, COL_BLOCK).transpose(0, 2, 1, 3)  # [nbi, nbj, row, col]
    q = q.reshape(nbi, nbj, ROW_GROUPS, PARALLEL // 2, 2, COL_BLOCK)  # row = g*16 + 2k + parity
    even, odd = q[..., 0, :], q[..., 1, :]
    low, high = (even, odd) if nibbles == "even-low" else (odd, even)
    qs = ((high << 4) | low).transpose(0, 1, 2, 4, 3)  # [nbi, nbj, g, col, k]
    qs = np.ascontiguousarray(qs).reshape(nbi, nbj, -1)
    blocks = np.concatenate([per_block(qt.scale), per_block(qt.offset), qs], axis=2)
    return np.ascontiguousarray(blocks.reshape(nbi * nbj, BLOCK_BYTES), dtype=np.uint8)


def unpack_blocks(blocks: U8, m: int, k: int, codec: Codec) -> Quantized:
    """Inverse of :func:`pack_blocks` (even row in the low nibble)."""
    check_shape(m, k)
    nbi, nbj = m // ROW_BLOCK, k // COL_BLOCK
    b = np.asarray(blocks, dtype=np.uint8).reshape(nbi, nbj, BLOCK_BYTES)
    half = 2 * N_GROUPS * ROW_BLOCK

    def from_block(raw: U8) -> F32:
        v = np.ascontiguousarray(raw).view(bfloat16).astype(np.float32)  # [nbi, nbj, 8*32]
        return np.ascontiguousarray(
            v.reshape(nbi, nbj, N_GROUPS, ROW_BLOCK).transpose(0, 3, 1, 2).reshape(m, k // GROUP)
        )

    scale, offset = from_block(b[..., :half]), from_block(b[..., half : 2 * half])
    qs = b[..., 2 * half :].reshape(nbi, nbj, ROW_GROUPS, COL_BLOCK, PARALLEL // 2).transpose(0, 1, 2, 4, 3)
    q = np.stack([qs & 0xF, qs >> 4], axis=4)  # [nbi, nbj, g, k, parity, col]
    q = q.reshape(nbi, nbj, ROW_BLOCK, COL_BLOCK).transpose(0, 2, 1, 3).reshape(m, k)
    return Quantized(codec, np.ascontiguousarray(q, dtype=np.uint8), scale, offset)


def entry(blocks: U8, m: int, k: int, codec: Codec) -> Raw:
    """A packed tensor as its safetensors entry under ``codec``'s header."""
    if codec == "I8":
        return Raw("I8", (blocks.shape[0], BLOCK_BYTES), blocks.tobytes())
    return Raw("Q4NX", (m, k), blocks.tobytes())


def dequant_entry(e: Raw, m: int | None = None, k: int | None = None) -> F32:
    """Our own dequant of one bundle entry; an ``I8`` header needs the logical [m, k]."""
    if e.dtype == "Q4NX":
        m, k = e.shape
        codec: Codec = "Q4NX"
    elif e.dtype == "I8":
        if m is None or k is None:
            raise ValueError(f"an I8 header {list(e.shape)} does not carry the logical shape: pass m and k")
        codec = "I8"
    else:
        raise ValueError(f"dtype {e.dtype} is not a Q4NX codec (I8 or Q4NX)")
    nb = (m // ROW_BLOCK) * (k // COL_BLOCK)
    if len(e.data) != nb * BLOCK_BYTES:
        raise ValueError(f"[{m}, {k}] needs {nb} blocks of {BLOCK_BYTES} bytes; the entry holds {len(e.data)} bytes")
    return unpack_blocks(np.frombuffer(e.data, dtype=np.uint8), m, k, codec).dequant()
