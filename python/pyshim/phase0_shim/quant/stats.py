"""Sufficient statistics of a loader's tensor against the reference's: sums
over element pairs (Go computes cosine, relative error and the share beyond
the format's bound), bitwise comparisons, and the confusions a wrong tensor
most often is (transposed, the partner projection, even/odd rows swapped).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from phase0_shim.optypes import QuantBlocks, QuantBound, QuantStats, QuantTensor, QuantZeroed
from phase0_shim.quant.reading import Reference

# Rows of the reference processed at once: bounds the float32 temporaries.
CHUNK_ROWS = 512
# A tile of stats_io, in the loader's (in, out) layout: TILE_ROWS input
# rows (the bound's group when there is one) by TILE elements in all, 128 KiB
# a float32 buffer. The reference's matching [out, TILE_ROWS] block is copied
# whole, then transposed in cache (a strided transpose of long rows misses
# the cache on every element: 3-4x slower).
TILE_ROWS = 32
TILE = 32768
# The confusions (transposed, partner, row pairs swapped) only tell a cosine
# near 1 from one near 0: the first rows of the output dimension suffice.
CONFUSION_ROWS = 256
# Blocks holding errors beyond the bound that are compared with every block
# of the reference (each costs one pass over it): enough to name a pattern.
BLOCKS_CHECKED = 4
# A block matches another block of the reference at this cosine (a clean
# 4-bit block: ~0.997; an unrelated one: ~0).
BLOCK_MATCH = 0.98


def _excess(ad: np.ndarray, limit: np.ndarray) -> float:
    """The largest of ad / limit (errors in units of their bound), finite:
    a group whose bound is 0 (all its values equal) counts from a tiny one."""
    return float(min((ad / np.maximum(limit, np.finfo(np.float32).tiny)).max(), 1e30))


def bound_limit(hi: np.ndarray, lo: np.ndarray, bound: QuantBound) -> np.ndarray:
    """The format's error bound for groups whose largest reference value is
    ``hi`` and smallest ``lo``: half a quantization step (absmax / levels for
    a symmetric format, the range / levels for an affine one) plus the
    ``slack`` (bf16 rounding of scale and min) of the group's absmax
    (docs/quantized.md, "share of elements beyond the format's own bound")."""
    absmax = np.maximum(hi, -lo)
    step = absmax / bound["levels"] if bound["symmetric"] else (hi - lo) / bound["levels"]
    limit: np.ndarray = 0.5 * step + bound["slack"] * absmax
    return limit


def _rowsum(a: np.ndarray, b: np.ndarray) -> float:
    """sum(a * b): float32 products summed per row, rows summed in float64
    (a row is at most a few thousand elements, so float32 keeps ~1e-6)."""
    return float(np.einsum("ij,ij->i", a, b).sum(dtype=np.float64))


def _contiguous(a: np.ndarray) -> np.ndarray:
    """a C-contiguous; a transposed view (a slab of another array's columns)
    is copied as that slab first and transposed in cache: 2-3x faster than
    numpy's element-by-element strided copy."""
    if a.flags.c_contiguous or a.ndim != 2 or a.strides[0] >= a.strides[1]:
        return np.ascontiguousarray(a)
    return np.ascontiguousarray(np.ascontiguousarray(a.T).T)


def _f32(a: np.ndarray) -> np.ndarray:
    """a as float32; bf16 by widening its bits (exact, and faster than a cast)."""
    if a.dtype.itemsize == 2 and a.dtype.name == "bfloat16":
        return _f32_into(_contiguous(a), np.empty(a.shape, dtype=np.float32))
    return np.asarray(a, dtype=np.float32)


def stats_io(x_io: np.ndarray, y_oi: np.ndarray, bound: QuantBound | None, zeroed: np.ndarray | None = None) -> QuantStats:
    """stats_oi of the loader's x [in, out] against the reference's y [out, in]
    without transposing either whole: the sums are over the same element
    pairs, taken a tile at a time (TILE_ROWS input rows, or one bound group,
    by up to TILE elements) in float32 buffers reused for every tile. A
    tile's passes stay in the core's cache: a slab's whole-width
    temporaries went to memory on every pass, beside a loader that
    dequantizes at memory speed. The bound's groups (runs of the input
    dimension) are the tile's rows, whose maxima are elementwise maxima
    across them. ``zeroed`` (one count per output row), when given, is
    added each row's groups that x holds as all zeros where y does not:
    such a group's largest reference value is beyond the bound, so only
    the tiles holding errors beyond it are looked at."""
    if not x_io.flags.c_contiguous and x_io.T.flags.c_contiguous:
        return stats_oi(x_io.T, y_oi, bound, zeroed=zeroed)  # the loader's array is [out, in] underneath
    n_in, n_out = x_io.shape
    sx = sy = sxx = syy = sxy = sdd = 0.0
    maxd = worst = 0.0
    beyond = 0
    g = bound["group"] if bound else 0
    counted = bool(bound) and g > 0 and n_in % g == 0
    rows = g if counted else TILE_ROWS
    cols = max(1, min(TILE // rows, n_out))
    xb, yb, db, ones = (np.empty(rows * cols, dtype=np.float32) for _ in range(4))
    ones[:] = 1.0
    block = np.empty(rows * cols, dtype=y_oi.dtype)  # the reference's [cols, rows] block, copied whole
    for r in range(0, n_in, rows):
        e = min(r + rows, n_in)
        for c in range(0, n_out, cols):
            f = min(c + cols, n_out)
            shape = (e - r, f - c)
            size = shape[0] * shape[1]
            x = _f32_into(x_io[r:e, c:f], xb[:size].reshape(shape))
            # The block's rows are TILE_ROWS elements apart in y; copied
            # contiguous first, its transpose is read from cache.
            yt = block[:size].reshape(shape[::-1])
            np.copyto(yt, y_oi[c:f, r:e])
            y = _f32_into(yt.T, yb[:size].reshape(shape))
            d = np.subtract(x, y, out=db[:size].reshape(shape))
            xf, yf, df, one = x.ravel(), y.ravel(), d.ravel(), ones[:size]
            sx += float(np.dot(xf, one))
            sy += float(np.dot(yf, one))
            sxx += float(np.dot(xf, xf))
            syy += float(np.dot(yf, yf))
            sxy += float(np.dot(xf, yf))
            sdd += float(np.dot(df, df))
            ad = np.abs(d, out=d)
            top = ad.max(axis=0)
            maxd = max(maxd, float(top.max()))
            if counted and bound:
                hi, lo = y.max(axis=0), y.min(axis=0)
                limit = bound_limit(hi, lo, bound)
                # Count element by element only when some group's largest
                # error exceeds the bound (none in a clean tensor).
                if (top > limit).any():
                    beyond += int((ad > limit).sum())
                    worst = max(worst, _excess(ad, limit))
                    if zeroed is not None:
                        _count_zeroed(zeroed, c, x, top, np.maximum(hi, -lo))
    return {
        "n": n_in * n_out,
        "sum_x": sx,
        "sum_y": sy,
        "sum_xx": sxx,
        "sum_yy": syy,
        "sum_xy": sxy,
        "sum_dd": sdd,
        "max_abs_diff": maxd,
        "beyond_bound": beyond,
        "worst_excess": worst,
    }


def _count_zeroed(zeroed: np.ndarray, c: int, x: np.ndarray, top: np.ndarray, absmax: np.ndarray) -> None:
    """Add to zeroed[c + j] when x's column j (one group of output row c + j)
    is all zeros and the reference's is not. Only a column whose largest
    error is exactly its reference's largest |value| can be (then the error
    is the reference itself): those few are looked at, not the tile."""
    cand = np.flatnonzero((top == absmax) & (absmax > 0))
    if cand.size:
        zeroed[c + cand] += ~x[:, cand].any(axis=0)


def _f32_into(a: np.ndarray, out: np.ndarray) -> np.ndarray:
    """a written into out as float32; bf16 by widening its bits (exact)."""
    if a.dtype.itemsize == 2 and a.dtype.name == "bfloat16":
        np.left_shift(a.view(np.uint16), 16, out=out.view(np.uint32), dtype=np.uint32)
    else:
        out[...] = a
    return out


def _group_reduce(a: np.ndarray, op: Any) -> np.ndarray:
    """op (np.maximum or np.minimum) over the last axis of a [rows, groups,
    g]: halving it in place of a reduction along a 32-element axis, which
    numpy runs element by element (2x slower); the same values, max and min
    being exact in any order. An odd width takes numpy's reduction."""
    w = a.shape[-1]
    while w > 1 and w % 2 == 0:
        w //= 2
        a = op(a[..., :w], a[..., w : 2 * w])
    return a[..., 0] if w == 1 else op.reduce(a, axis=-1)


def stats_oi(x_oi: np.ndarray, y_oi: np.ndarray, bound: QuantBound | None, rows: int | None = None, zeroed: np.ndarray | None = None) -> QuantStats:
    """Sums of x (loader) against y (reference), both [out, in]; groups of the
    bound run along the input dimension. ``rows`` limits the sums to the
    first rows (the confusions only need a cosine near 1 or near 0);
    ``zeroed`` is counted as stats_io counts it."""
    n = 0
    sx = sy = sxx = syy = sxy = sdd = 0.0
    maxd = worst = 0.0
    beyond = 0
    g = bound["group"] if bound else 0
    total = y_oi.shape[0] if rows is None else min(rows, y_oi.shape[0])
    for r in range(0, total, CHUNK_ROWS):
        e = min(r + CHUNK_ROWS, total)
        x = _f32(x_oi[r:e])
        y = _f32(y_oi[r:e])
        d = x - y
        n += x.size
        sx += float(x.sum(dtype=np.float64))
        sy += float(y.sum(dtype=np.float64))
        sxx += _rowsum(x, x)
        syy += _rowsum(y, y)
        sxy += _rowsum(x, y)
        sdd += _rowsum(d, d)
        if not d.size:
            continue
        ad = np.abs(d, out=d)
        maxd = max(maxd, float(ad.max()))
        if bound and g > 0 and y.shape[1] % g == 0:
            yg = y.reshape(y.shape[0], -1, g)
            limit = bound_limit(_group_reduce(yg, np.maximum), _group_reduce(yg, np.minimum), bound)
            # Count element by element only in the groups whose largest
            # error exceeds the bound (none in a clean tensor): whether any
            # does is one elementwise comparison against the group's limit,
            # 10x cheaper than each group's largest error first.
            adg = ad.reshape(yg.shape)
            if (adg > limit[:, :, None]).any():
                over = adg.max(axis=2) > limit
                beyond += int((adg[over] > limit[over][:, None]).sum())
                worst = max(worst, _excess(adg[over], limit[over][:, None]))
                if zeroed is not None:
                    zeroed[r:e] += (~x.reshape(yg.shape).any(axis=2) & yg.any(axis=2)).sum(axis=1)
    return {"n": n, "sum_x": sx, "sum_y": sy, "sum_xx": sxx, "sum_yy": syy, "sum_xy": sxy, "sum_dd": sdd, "max_abs_diff": maxd, "beyond_bound": beyond, "worst_excess": worst}


def _zeroed_facts(zeroed: np.ndarray, groups: int) -> QuantZeroed | None:
    """The groups the loader returned as zeros (``zeroed``: per output row,
    as stats_io counts them), None when there are none."""
    rows = np.flatnonzero(zeroed)
    if not rows.size:
        return None
    return {"groups": int(zeroed.sum()), "rows": int((zeroed == groups).sum()), "first_row": int(rows[0]), "last_row": int(rows[-1])}


def _block_facts(x_io: np.ndarray, y_oi: np.ndarray, bound: QuantBound) -> QuantBlocks | None:
    """Where the errors beyond the bound lie by the format's storage block
    (x the loader's [in, out], y the reference's [out, in]): the blocks
    whose relative error is far above a clean block's, and for the first
    BLOCKS_CHECKED of them whether the loader's block matches another block
    of the reference (blocks stored out of order). None without a block."""
    br, bc = bound.get("block_rows", 0), bound.get("block_cols", 0)
    m, k = y_oi.shape
    if br <= 0 or bc <= 0 or m % br or k % bc:
        return None
    bad: list[tuple[int, int]] = []
    for i in range(0, m, br):
        y = _f32(y_oi[i : i + br]).reshape(br, k // bc, bc)
        x = _f32(x_io[:, i : i + br].T).reshape(br, k // bc, bc)
        dd = ((x - y) ** 2).sum(axis=(0, 2))
        yy = (y**2).sum(axis=(0, 2))
        # A clean 4-bit block's relative error is ~0.08; a misplaced one's ~1.4.
        for j in np.flatnonzero(dd > 0.25 * np.maximum(yy, np.finfo(np.float32).tiny)):
            bad.append((i // br, int(j)))
    moved = 0
    checked = bad[:BLOCKS_CHECKED]
    for bi, bj in checked:
        xb = _f32(x_io[bj * bc : (bj + 1) * bc, bi * br : (bi + 1) * br].T).ravel()
        xn = float(np.linalg.norm(xb))
        best, where = -1.0, (bi, bj)
        for r in range(0, m, br):
            tiles = _f32(y_oi[r : r + br]).reshape(br, k // bc, bc).transpose(1, 0, 2).reshape(k // bc, -1)
            cos = (tiles @ xb) / np.maximum(np.linalg.norm(tiles, axis=1) * xn, np.finfo(np.float32).tiny)
            c = int(cos.argmax())
            if float(cos[c]) > best:
                best, where = float(cos[c]), (r // br, c)
        if best > BLOCK_MATCH and where != (bi, bj):
            moved += 1
    return {"rows": br, "cols": bc, "total": (m // br) * (k // bc), "beyond": len(bad), "checked": len(checked), "moved": moved}


def bf16_bits(a: np.ndarray) -> np.ndarray:
    """a's values as bf16 bit patterns (float32 rounded to nearest even, as
    ml_dtypes does for finite values; bf16 as stored)."""
    a = np.ascontiguousarray(a)
    if a.dtype.name == "bfloat16":
        return a.view(np.uint16)
    u = np.asarray(a, dtype=np.float32).view(np.uint32)
    return ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)


def _row_chunks(a: np.ndarray, done: Callable[[int, int], None] | None = None) -> Iterator[slice]:
    """a's rows a chunk at a time (~4 M elements) for a pass over a whole
    tensor; ``done(start, end)`` is told each chunk once the caller is done
    with it (when it asks for the next)."""
    rows = max(1, (CHUNK_ROWS * 8192) // max(1, int(np.prod(a.shape[1:]))))
    for r in range(0, a.shape[0], rows):
        yield slice(r, r + rows)
        if done is not None:
            done(r, min(r + rows, a.shape[0]))


def count_differing(x: np.ndarray, y: np.ndarray, done: Callable[[int, int], None] | None = None) -> int:
    """Elements whose bf16 bits differ (x brought to bf16; a float32 copy of
    a bf16 tensor converts back exactly). ``done(start, end)`` is told each
    chunk of rows once it is compared."""
    if x.ndim < 2:
        return int((bf16_bits(x).ravel() != bf16_bits(y).ravel()).sum())
    return sum(_differing_rows(x[s], y[s]) for s in _row_chunks(y, done))


def _differing_rows(x: np.ndarray, y: np.ndarray) -> int:
    yb = bf16_bits(y).ravel()
    xc = np.ascontiguousarray(x)
    if xc.dtype == np.float32:
        # A float32 value equal to the widened bf16 converts back to it: only
        # the others (none in a tensor kept bf16) are rounded and compared.
        u = xc.view(np.uint32).ravel()
        wide = np.empty(yb.shape, dtype=np.uint32)
        np.left_shift(yb, 16, out=wide, dtype=np.uint32)
        odd = np.flatnonzero(u != wide)
        return int((bf16_bits(u[odd].view(np.float32)) != yb[odd]).sum()) if odd.size else 0
    return int((bf16_bits(xc).ravel() != yb).sum())


def _nonfinite(a: np.ndarray, done: Callable[[int, int], None] | None = None) -> int:
    """How many of a's values are NaN or Inf (bf16 by its exponent bits), a
    chunk of rows at a time: whole, the 1B embedding's count took 0.8 GB of
    temporaries. ``done(start, end)`` is told each chunk of a's rows once
    it is counted."""
    if a.ndim == 2 and not a.flags.c_contiguous and a.T.flags.c_contiguous:
        a, done = a.T, None  # a transposed view (a head judged as a projection): the same count, no strided copy
    if a.ndim < 2:
        return _nonfinite_flat(a)
    return sum(_nonfinite_flat(a[s]) for s in _row_chunks(a, done))


def _nonfinite_flat(a: np.ndarray) -> int:
    a = np.ascontiguousarray(a)
    if a.dtype.name == "bfloat16":
        return int(((a.view(np.uint16) & np.uint16(0x7F80)) == np.uint16(0x7F80)).sum())
    if not np.issubdtype(a.dtype, np.floating):
        return 0
    return int(a.size - np.isfinite(a).sum())


def nonfinite_problem(x: np.ndarray, y: np.ndarray, done: Callable[[int, int], None] | None = None) -> str | None:
    """Why x (the loader's) or y (the reference's) cannot be compared: NaN
    or Inf values, which no statistic (nor the worker's JSON) carries.
    ``done`` is told each chunk of y's rows once it is counted."""
    for what, a, told in (("the loader's tensor", x, None), ("the reference", y, done)):
        if bad := _nonfinite(a, told):
            return f"{what} holds {bad} NaN or Inf values of {a.size}"
    return None


def _swap_row_pairs(y: np.ndarray) -> np.ndarray:
    """y with rows 2k and 2k+1 exchanged: a wrong nibble order within a byte."""
    out = y.copy()
    out[0::2], out[1::2] = y[1::2], y[0::2]
    return out


def _group_centered(a: np.ndarray, g: int) -> np.ndarray:
    """a [rows, in] with each group of g input elements' mean removed."""
    f = _f32(a).reshape(a.shape[0], -1, g)
    return (f - f.mean(axis=2, keepdims=True)).reshape(a.shape)


def _finite_sums(s: QuantStats) -> bool:
    """Whether every sum of s is finite: then so is every element summed."""
    return all(math.isfinite(v) for v in (s["sum_x"], s["sum_y"], s["sum_xx"], s["sum_yy"], s["sum_xy"], s["sum_dd"], s["max_abs_diff"]))


def projection_facts(layer: int, field: str, x: Any, ref: Reference, hf: str, partner: str | None, bound: QuantBound) -> QuantTensor:
    """One projection: the loader's x [in, out] against the reference's [out, in]."""
    y = ref.get(hf)
    x = np.asarray(x)
    fact: QuantTensor = {"layer": layer, "field": field, "reference": hf, "shape": list(x.shape), "reference_shape": list(y.shape)}
    confusions: dict[str, QuantStats] = {}
    if x.ndim != 2 or y.ndim != 2:
        fact["problem"] = f"{x.ndim}-D array, expected 2-D (in, out)"
        return fact
    transposed = x.shape == (y.shape[1], y.shape[0])
    stats: QuantStats | None = None
    zeroed = np.zeros(y.shape[0], dtype=np.int64)
    if transposed:
        # The statistics first: all of their sums finite, neither tensor
        # holds a NaN or Inf (one makes its sum NaN or Inf), and the two
        # whole-tensor counts (1.3 s a billion elements, over arrays the
        # loader is dequantizing beside) are not needed.
        with np.errstate(invalid="ignore", over="ignore"):
            stats = stats_io(x, y, bound, zeroed=zeroed)
    if stats is None or not _finite_sums(stats):
        if (bad := nonfinite_problem(x, y)) is not None:
            fact["problem"] = bad
            return fact
    if transposed and stats is not None:
        fact["stats"] = stats
        if fact["stats"]["beyond_bound"] and (blocks := _block_facts(x, y, bound)) is not None:
            fact["blocks"] = blocks
        if (zero := _zeroed_facts(zeroed, y.shape[1] // max(1, bound["group"]))) is not None:
            fact["zeroed"] = zero
        if x.shape[0] == x.shape[1]:
            confusions["transposed"] = stats_oi(x, y, None, CONFUSION_ROWS)
        if y.shape[0] % 2 == 0:
            head = min(CONFUSION_ROWS, y.shape[0])
            confusions["row_pairs_swapped"] = stats_oi(x.T, _swap_row_pairs(y[:head]), None)
        g = bound["group"]
        if g > 0 and y.shape[1] % g == 0:
            # One offset per group (the loader's values match once each
            # group's mean is removed): a codec mismatch, Q4NX's zero point
            # decoded as I8's min or the reverse.
            head = min(CONFUSION_ROWS, y.shape[0])
            confusions["group_offset"] = stats_oi(_group_centered(x[:, :head].T, g), _group_centered(y[:head], g), None)
        if partner is not None and ref.has(partner):
            py = ref.get(partner)
            if py.shape == y.shape:
                confusions["partner"] = stats_oi(x.T, py, None, CONFUSION_ROWS)
    elif x.shape == y.shape:
        confusions["transposed"] = stats_oi(x, y, None)
    else:
        fact["problem"] = f"shape {list(x.shape)}, expected {[y.shape[1], y.shape[0]]} (in, out) for reference {list(y.shape)}"
    if confusions:
        fact["confusions"] = confusions
    return fact


def kept_facts(layer: int, field: str, x: Any, ref: Reference, hf: str, stats: bool = True) -> QuantTensor:
    """A tensor kept in bf16: compared bit for bit (and, when bits differ
    and ``stats``, how far off)."""
    y = ref.get(hf)
    x = np.asarray(x)
    fact: QuantTensor = {"layer": layer, "field": field, "reference": hf, "shape": list(x.shape), "reference_shape": list(y.shape)}
    if x.size != y.size:
        fact["problem"] = f"shape {list(x.shape)}, expected {list(y.shape)}"
        return fact
    # Each chunk of the reference's rows leaves the worker's RSS once read.
    drop = functools.partial(ref.release_rows, hf) if y.ndim > 1 else None
    if (bad := nonfinite_problem(x, y, drop)) is not None:
        fact["problem"] = bad
        return fact
    fact["differing"] = count_differing(x.reshape(y.shape), y, drop)
    if fact["differing"] and stats:
        rows = y.shape[0] if y.ndim > 1 else 1
        fact["stats"] = stats_oi(x.reshape(rows, -1), y.reshape(rows, -1), None)
    return fact

