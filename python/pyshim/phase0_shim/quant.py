"""Quantized gate 1 facts: a quantized folder's own loader, tensor by tensor,
against the bf16 reference checkpoint.

The loader is found by what the module defines: a ``load_*weights*``
function returning the bf16 loaders' ``LlamaWeights`` structure, else a
class with ``layer_weights(k)`` / ``layer_rms(k)`` / ``embed_norm_lmhead()``
(read one layer at a time). For every tensor the op reports sufficient
statistics of the loader's values against the reference's in the same
(in, out) layout, the same against the obvious confusions (the transposed
tensor, the partner projection, even/odd rows swapped), and for every
tensor a bitwise comparison with the reference. Go computes the metrics
and judges; nothing here decides PASS or FAIL.
"""

from __future__ import annotations

import contextlib
import json
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from phase0_shim import heap, progress
from phase0_shim.config import import_module_from_path
from phase0_shim.opargs import op
from phase0_shim.optypes import (
    QuantArgs,
    QuantBound,
    QuantCandidate,
    QuantE2EArgs,
    QuantE2EFacts,
    QuantE2EOnlyArgs,
    QuantFactsResult,
    QuantImportFailure,
    QuantModuleArgs,
    QuantModuleFacts,
    QuantStats,
    QuantTensor,
)

STAGE = "quant_weights"
# Rows of the reference processed at once: bounds the float32 temporaries.
CHUNK_ROWS = 512
# Input rows of a projection processed at once in the loader's (in, out)
# layout: the reference's matching [out, SLAB_ROWS] columns are copied
# whole, then transposed in cache (a strided transpose of long rows misses
# the cache on every element: 3-4x slower).
SLAB_ROWS = 128
# The confusions (transposed, partner, row pairs swapped) only tell a cosine
# near 1 from one near 0: the first rows of the output dimension suffice.
CONFUSION_ROWS = 256
# Tensors whose statistics may wait while the loader reads on (about a layer).
PENDING = 8

# Projection fields (LlamaWeights' names, the classes' dict keys) and their HF tensors.
PROJECTIONS = {
    "wq": ("q", "self_attn.q_proj"),
    "wk": ("k", "self_attn.k_proj"),
    "wv": ("v", "self_attn.v_proj"),
    "wo": ("o", "self_attn.o_proj"),
    "w_gate": ("gate", "mlp.gate_proj"),
    "w_up": ("up", "mlp.up_proj"),
    "w_down": ("down", "mlp.down_proj"),
}
# The projection each one is most easily confused with (same shape by design).
PARTNERS = {"w_gate": "w_up", "w_up": "w_gate", "wk": "wv", "wv": "wk", "wq": "wo", "wo": "wq"}
KEPT = {
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
    "q_norm": "self_attn.q_norm",
    "k_norm": "self_attn.k_norm",
    "bq": "self_attn.q_proj.bias",
    "bk": "self_attn.k_proj.bias",
    "bv": "self_attn.v_proj.bias",
}
_DTYPES = {"F32": np.float32, "F16": np.float16}


class Reference:
    """The bf16 reference checkpoint's tensors, memory-mapped (one file or an index's shards)."""

    def __init__(self, model_dir: Path) -> None:
        import ml_dtypes

        self._dtypes: dict[str, Any] = {**_DTYPES, "BF16": ml_dtypes.bfloat16}
        index = model_dir / "model.safetensors.index.json"
        if index.is_file():
            weight_map = json.loads(index.read_text())["weight_map"]
            files = sorted(set(weight_map.values()))
        else:
            files = ["model.safetensors"]
        self._where: dict[str, tuple[np.memmap, int, dict[str, Any]]] = {}
        for rel in files:
            # Shard names stay inside the folder (its files may be links
            # into an HF cache's blobs/, which is fine).
            if Path(rel).is_absolute() or ".." in Path(rel).parts:
                raise ValueError(f"shard {rel} of {model_dir} names a path outside the folder")
            path = model_dir / rel
            mm = np.memmap(path, dtype=np.uint8, mode="r")
            n = int(np.frombuffer(mm[:8].tobytes(), dtype="<u8")[0])
            header = json.loads(mm[8 : 8 + n].tobytes())
            for name, entry in header.items():
                if name != "__metadata__":
                    self._where[name] = (mm, 8 + n, entry)

    def shape(self, name: str) -> list[int]:
        return list(self._where[name][2]["shape"])

    def has(self, name: str) -> bool:
        return name in self._where

    def release(self, name: str) -> None:
        """Drop the tensor's pages from this process (they stay in the page
        cache): the mapped reference would otherwise count whole in the
        worker's RSS by the last layer."""
        import mmap

        mm, base, entry = self._where[name]
        raw = getattr(mm, "_mmap", None)
        if raw is None:
            return
        o0, o1 = entry["data_offsets"]
        start = (base + o0) // mmap.PAGESIZE * mmap.PAGESIZE
        with contextlib.suppress(OSError, ValueError):
            raw.madvise(mmap.MADV_DONTNEED, start, base + o1 - start)

    def get(self, name: str) -> np.ndarray:
        """The tensor as stored (bf16 stays bf16), shaped."""
        mm, base, entry = self._where[name]
        dtype = self._dtypes.get(entry["dtype"])
        if dtype is None:
            raise ValueError(f"reference tensor {name} has dtype {entry['dtype']}; expected BF16, F16 or F32")
        o0, o1 = entry["data_offsets"]
        return np.frombuffer(mm[base + o0 : base + o1], dtype=dtype).reshape(entry["shape"])


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
        u = _contiguous(a).view(np.uint16)
        out = np.empty(u.shape, dtype=np.uint32)
        np.left_shift(u, 16, out=out, dtype=np.uint32)
        return out.view(np.float32)
    return np.asarray(a, dtype=np.float32)


def _stats_io(x_io: np.ndarray, y_oi: np.ndarray, bound: QuantBound | None) -> QuantStats:
    """_stats of the loader's x [in, out] against the reference's y [out, in]
    without transposing x: the sums are over the same element pairs, taken
    a slab of input rows at a time, and the bound's groups (runs of the
    input dimension) are runs of rows, whose maxima are row-wise maxima
    (elementwise across rows: 7x cheaper than 32-element inner reductions)."""
    if not x_io.flags.c_contiguous and x_io.T.flags.c_contiguous:
        return _stats(x_io.T, y_oi, bound)  # the loader's array is [out, in] underneath
    n = 0
    sx = sy = sxx = syy = sxy = sdd = 0.0
    maxd = 0.0
    beyond = 0
    g = bound["group"] if bound else 0
    counted = bool(bound) and g > 0 and x_io.shape[0] % g == 0
    slab = max(g, SLAB_ROWS // g * g) if counted else SLAB_ROWS
    for r in range(0, x_io.shape[0], slab):
        e = min(r + slab, x_io.shape[0])
        x = _f32(x_io[r:e])
        y = _f32(y_oi[:, r:e].T)
        d = x - y
        n += x.size
        sx += float(x.sum(axis=1).sum(dtype=np.float64))
        sy += float(y.sum(axis=1).sum(dtype=np.float64))
        sxx += _rowsum(x, x)
        syy += _rowsum(y, y)
        sxy += _rowsum(x, y)
        sdd += _rowsum(d, d)
        if not d.size:
            continue
        ad = np.abs(d, out=d)
        maxd = max(maxd, float(ad.max()))
        if counted and bound:
            yg = y.reshape(-1, g, y.shape[1])
            hi, lo = yg.max(axis=1), yg.min(axis=1)
            absmax = np.maximum(hi, -lo)
            step = absmax / bound["levels"] if bound["symmetric"] else (hi - lo) / bound["levels"]
            limit = 0.5 * step + bound["slack"] * absmax
            adg = ad.reshape(yg.shape)
            # Count element by element only when some group's largest
            # error exceeds the bound (none in a clean tensor).
            if (adg.max(axis=1) > limit).any():
                beyond += int((adg > limit[:, None, :]).sum())
    return {"n": n, "sum_x": sx, "sum_y": sy, "sum_xx": sxx, "sum_yy": syy, "sum_xy": sxy, "sum_dd": sdd, "max_abs_diff": maxd, "beyond_bound": beyond}


def _stats(x_oi: np.ndarray, y_oi: np.ndarray, bound: QuantBound | None, rows: int | None = None) -> QuantStats:
    """Sums of x (loader) against y (reference), both [out, in]; groups of the
    bound run along the input dimension. ``rows`` limits the sums to the
    first rows (the confusions only need a cosine near 1 or near 0)."""
    n = 0
    sx = sy = sxx = syy = sxy = sdd = 0.0
    maxd = 0.0
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
            hi, lo = yg.max(axis=2), yg.min(axis=2)
            absmax = np.maximum(hi, -lo)
            step = absmax / bound["levels"] if bound["symmetric"] else (hi - lo) / bound["levels"]
            limit = 0.5 * step + bound["slack"] * absmax
            # Count element by element only in the groups whose largest
            # error exceeds the bound (none in a clean tensor).
            adg = ad.reshape(yg.shape)
            over = adg.max(axis=2) > limit
            if over.any():
                beyond += int((adg[over] > limit[over][:, None]).sum())
    return {"n": n, "sum_x": sx, "sum_y": sy, "sum_xx": sxx, "sum_yy": syy, "sum_xy": sxy, "sum_dd": sdd, "max_abs_diff": maxd, "beyond_bound": beyond}


def _bf16_bits(a: np.ndarray) -> np.ndarray:
    """a's values as bf16 bit patterns (float32 rounded to nearest even, as
    ml_dtypes does for finite values; bf16 as stored)."""
    a = np.ascontiguousarray(a)
    if a.dtype.name == "bfloat16":
        return a.view(np.uint16)
    u = np.asarray(a, dtype=np.float32).view(np.uint32)
    return ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)


def _differing(x: np.ndarray, y: np.ndarray) -> int:
    """Elements whose bf16 bits differ (x brought to bf16; a float32 copy of
    a bf16 tensor converts back exactly)."""
    if x.ndim < 2:
        return int((_bf16_bits(x).ravel() != _bf16_bits(y).ravel()).sum())
    rows = max(1, (CHUNK_ROWS * 8192) // max(1, int(np.prod(y.shape[1:]))))
    return sum(_differing_rows(x[r : r + rows], y[r : r + rows]) for r in range(0, y.shape[0], rows))


def _differing_rows(x: np.ndarray, y: np.ndarray) -> int:
    yb = _bf16_bits(y).ravel()
    xc = np.ascontiguousarray(x)
    if xc.dtype == np.float32:
        # A float32 value equal to the widened bf16 converts back to it: only
        # the others (none in a tensor kept bf16) are rounded and compared.
        u = xc.view(np.uint32).ravel()
        wide = np.empty(yb.shape, dtype=np.uint32)
        np.left_shift(yb, 16, out=wide, dtype=np.uint32)
        odd = np.flatnonzero(u != wide)
        return int((_bf16_bits(u[odd].view(np.float32)) != yb[odd]).sum()) if odd.size else 0
    return int((_bf16_bits(xc).ravel() != yb).sum())


def _nonfinite(a: np.ndarray) -> int:
    """How many of a's values are NaN or Inf (bf16 by its exponent bits)."""
    a = np.ascontiguousarray(a)
    if a.dtype.name == "bfloat16":
        return int(((a.view(np.uint16) & np.uint16(0x7F80)) == np.uint16(0x7F80)).sum())
    if not np.issubdtype(a.dtype, np.floating):
        return 0
    return int(a.size - np.isfinite(a).sum())


def _nonfinite_problem(x: np.ndarray, y: np.ndarray) -> str | None:
    """Why x (the loader's) or y (the reference's) cannot be compared: NaN
    or Inf values, which no statistic (nor the worker's JSON) carries."""
    for what, a in (("the loader's tensor", x), ("the reference", y)):
        if bad := _nonfinite(a):
            return f"{what} holds {bad} NaN or Inf values of {a.size}"
    return None


def _swap_row_pairs(y: np.ndarray) -> np.ndarray:
    """y with rows 2k and 2k+1 exchanged: a wrong nibble order within a byte."""
    out = y.copy()
    out[0::2], out[1::2] = y[1::2], y[0::2]
    return out


def projection_facts(layer: int, field: str, x: Any, ref: Reference, hf: str, partner: str | None, bound: QuantBound) -> QuantTensor:
    """One projection: the loader's x [in, out] against the reference's [out, in]."""
    y = ref.get(hf)
    x = np.asarray(x)
    fact: QuantTensor = {"layer": layer, "field": field, "reference": hf, "shape": list(x.shape), "reference_shape": list(y.shape)}
    confusions: dict[str, QuantStats] = {}
    if x.ndim != 2 or y.ndim != 2:
        fact["problem"] = f"{x.ndim}-D array, expected 2-D (in, out)"
        return fact
    if (bad := _nonfinite_problem(x, y)) is not None:
        fact["problem"] = bad
        return fact
    if x.shape == (y.shape[1], y.shape[0]):
        fact["stats"] = _stats_io(x, y, bound)
        if x.shape[0] == x.shape[1]:
            confusions["transposed"] = _stats(x, y, None, CONFUSION_ROWS)
        if y.shape[0] % 2 == 0:
            head = min(CONFUSION_ROWS, y.shape[0])
            confusions["row_pairs_swapped"] = _stats(x.T, _swap_row_pairs(y[:head]), None)
        if partner is not None and ref.has(partner):
            py = ref.get(partner)
            if py.shape == y.shape:
                confusions["partner"] = _stats(x.T, py, None, CONFUSION_ROWS)
    elif x.shape == y.shape:
        confusions["transposed"] = _stats(x, y, None)
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
    if (bad := _nonfinite_problem(x, y)) is not None:
        fact["problem"] = bad
        return fact
    fact["differing"] = _differing(x.reshape(y.shape), y)
    if fact["differing"] and stats:
        rows = y.shape[0] if y.ndim > 1 else 1
        fact["stats"] = _stats(x.reshape(rows, -1), y.reshape(rows, -1), None)
    return fact


def find_loader(module: Any, source: str, n_layers: int, ref: Reference) -> tuple[str, Iterator[tuple[int, str, Any]]]:
    """The loader's name and its tensors, one layer at a time where its API
    allows: (layer, LlamaWeights field, array), layer -1 for the whole-model arrays."""
    funcs = sorted(n for n in vars(module) if re.fullmatch(r"load_\w*weights\w*", n) and callable(getattr(module, n)))
    if funcs:
        return f"{funcs[0]}()", _from_function(getattr(module, funcs[0]), source)
    for name, value in vars(module).items():
        if isinstance(value, type) and callable(getattr(value, "layer_weights", None)):
            return f"class {name}", _from_class(value, source, n_layers, ref)
    raise AttributeError(f"{module.__file__} defines no load_*weights* function and no class with layer_weights(k)")


def _from_function(fn: Any, source: str) -> Iterator[tuple[int, str, Any]]:
    with contextlib.redirect_stdout(sys.stderr):
        w = fn(source)
    for field in ("embed_table", "final_norm", "lm_head"):
        yield -1, field, getattr(w, field, None)
    for k, layer in enumerate(w.layers):
        for field in (*PROJECTIONS, *KEPT):
            value = getattr(layer, field, None)
            if value is not None:
                yield k, field, value


def _from_class(cls: Any, source: str, n_layers: int, ref: Reference) -> Iterator[tuple[int, str, Any]]:
    import inspect

    # layer_weights(k, dims=None) defaults to the module's own model's dims;
    # an I8 header does not carry them, so they come from the reference.
    takes_dims = "dims" in inspect.signature(cls.layer_weights).parameters
    with contextlib.redirect_stdout(sys.stderr):
        model = cls(source)
        embed, norm, lm_head = model.embed_norm_lmhead()
    yield -1, "embed_table", embed
    yield -1, "final_norm", norm
    yield -1, "lm_head", lm_head
    del embed, norm, lm_head
    by_key = {key: field for field, (key, _) in PROJECTIONS.items()}
    for k in range(n_layers):
        dims = {key: tuple(ref.shape(f"model.layers.{k}.{hf}.weight")) for key, hf in PROJECTIONS.values()}
        with contextlib.redirect_stdout(sys.stderr):
            w = model.layer_weights(k, dims) if takes_dims else model.layer_weights(k)
        for key, value in w.items():
            if key in by_key:
                yield k, by_key[key], value
        del w
        attn_norm, ffn_norm = model.layer_rms(k)
        yield k, "attn_norm", attn_norm
        yield k, "ffn_norm", ffn_norm
        if callable(getattr(model, "layer_qk_norm", None)):
            qn, kn = model.layer_qk_norm(k)
            yield k, "q_norm", qn
            yield k, "k_norm", kn
        bias = getattr(model, "layer_qkv_bias", None) or getattr(model, "layer_bias", None)
        if callable(bias):
            for field, value in zip(("bq", "bk", "bv"), bias(k)):
                yield k, field, value


def _import(module_path: Path) -> tuple[Any, QuantImportFailure | None]:
    """The module, or why it could not be imported when what it imports is
    missing (a --llms-dir holding an extracted llms/ without the folders
    beside it: ../../fused_decode, matrix_vector_multiplication/int4_awq)."""
    before = list(sys.path)
    try:
        return import_module_from_path(module_path), None
    except ModuleNotFoundError as e:
        added = [p for p in sys.path if p not in before]
        missing = [p for p in added if not Path(p).is_dir()]
        return None, {"module": e.name or "", "missing_paths": missing, "message": str(e)}


# The dequantized tensors gate 1 kept for quantized gate 2 in the same
# worker (QuantArgs.keep): the loader, then (layer, field, array) for each
# projection and the head, under the key they were loaded for.
_Kept = tuple[tuple[str, str, int], str, list[tuple[int, str, Any]]]
_kept: _Kept | None = None


def _bf16(value: Any) -> Any:
    """A kept tensor as bf16, the dtype gate 2 patches in: the loader's own
    array when it is bf16 already, else one bf16 copy (a float32 loader's
    whole model kept as float32 would take twice the memory)."""
    import ml_dtypes

    a = np.asarray(value)
    return a if a.dtype == ml_dtypes.bfloat16 else np.asarray(a, dtype=np.float32).astype(ml_dtypes.bfloat16)


def _kept_key(weights_module: str, source: str, n_layers: int) -> tuple[str, str, int]:
    return (str(Path(weights_module).resolve()), source, n_layers)


def _take_kept(weights_module: str, source: str, n_layers: int) -> tuple[str, list[tuple[int, str, Any]]] | None:
    """What gate 1 kept for this loader, source and depth, once; anything else kept is dropped."""
    global _kept
    kept, _kept = _kept, None
    if kept is None or kept[0] != _kept_key(weights_module, source, n_layers):
        return None
    return kept[1], kept[2]


def quant_facts_of(args: QuantArgs) -> QuantFactsResult:
    global _kept
    _kept = None  # an earlier run's tensors are never this one's
    module, failure = _import(Path(args["weights_module"]))
    if failure is not None:
        return {"loader": "", "layers_loaded": 0, "tensors": [], "import_failure": failure}
    ref = Reference(Path(args["reference_dir"]))
    bound = args["bound"]
    loader, layers = find_loader(module, args["source"], int(args["n_layers"]), ref)
    keep: list[tuple[int, str, Any]] | None = [] if args.get("keep") else None
    tensors: list[QuantTensor] = []
    loaded = set()
    candidates: list[tuple[Reference, QuantCandidate]] = [
        (Reference(Path(d)), {"reference_dir": d, "fields": [], "stats": []}) for d in args.get("candidate_dirs") or []
    ]

    def facts_of(layer: int, field: str, value: Any) -> QuantTensor | None:
        if layer < 0:
            hf = {"embed_table": "model.embed_tokens.weight", "final_norm": "model.norm.weight", "lm_head": "lm_head.weight"}[field]
            if field == "lm_head" and not ref.has(hf):
                hf = "model.embed_tokens.weight"  # tied: the head is the embedding
            # A quantized copy of the head is judged as a projection; its
            # statistics are computed there, once.
            fact = kept_facts(layer, field, value, ref, hf, stats=field != "lm_head")
            if field == "lm_head" and fact.get("differing"):
                fact = projection_facts(layer, field, np.asarray(value).T, ref, hf, None, bound)
            ref.release(hf)
            return fact
        if field in PROJECTIONS:
            prefix = f"model.layers.{layer}."
            partner = PARTNERS.get(field)
            hf = prefix + PROJECTIONS[field][1] + ".weight"
            fact = projection_facts(layer, field, value, ref, hf, prefix + PROJECTIONS[partner][1] + ".weight" if partner else None, bound)
            if layer == 0:
                _candidate_stats(candidates, field, value, hf)
            ref.release(hf)
            return fact
        if field in KEPT:
            suffix = KEPT[field] if KEPT[field].endswith(".bias") else KEPT[field] + ".weight"
            return kept_facts(layer, field, value, ref, f"model.layers.{layer}.{suffix}")
        return None

    # The statistics of one tensor run on a second thread while the loader
    # dequantizes the next (NumPy releases the GIL): the gate then costs
    # about the loader's time, not the sum. At most PENDING tensors wait,
    # which bounds the memory to about one layer beyond the loader's own.
    pending: deque[Future[QuantTensor | None]] = deque()
    # A tied head the loader returns as the very embedding array, against
    # the same reference tensor, has the embedding's facts: compared once.
    embed: tuple[Any, Future[QuantTensor | None]] | None = None

    def as_head(done: Future[QuantTensor | None], value: Any) -> QuantTensor | None:
        fact = done.result()
        if fact is None or fact.get("differing") != 0 or "problem" in fact:
            return facts_of(-1, "lm_head", value)
        return {**fact, "field": "lm_head"}

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="quant-stats") as pool:
        for layer, field, value in layers:
            if value is None:
                continue
            if keep is not None and (field in PROJECTIONS if layer >= 0 else field == "lm_head"):
                keep.append((layer, field, _bf16(value)))
            if layer >= 0:
                loaded.add(layer)
                embed = None
            if layer < 0 and field == "lm_head" and embed is not None and value is embed[0] and not ref.has("lm_head.weight"):
                pending.append(pool.submit(as_head, embed[1], value))
            else:
                pending.append(pool.submit(facts_of, layer, field, value))
                if layer < 0 and field == "embed_table":
                    embed = (value, pending[-1])
            del value
            while len(pending) > PENDING:
                if (fact := pending.popleft().result()) is not None:
                    tensors.append(fact)
        while pending:
            if (fact := pending.popleft().result()) is not None:
                tensors.append(fact)
    if keep is not None:
        _kept = (_kept_key(args["weights_module"], args["source"], int(args["n_layers"])), loader, keep)
    result: QuantFactsResult = {"loader": loader, "layers_loaded": len(loaded), "tensors": tensors, "import_failure": None}
    if candidates:
        result["candidates"] = [c for _, c in candidates]
    return result


def _candidate_stats(candidates: list[tuple[Reference, QuantCandidate]], field: str, value: Any, hf: str) -> None:
    """Layer 0's projection against each candidate checkpoint (same layout as the reference's)."""
    x = np.asarray(value)
    for cand, out in candidates:
        if not cand.has(hf):
            continue
        y = cand.get(hf)
        if x.ndim == 2 and x.shape == (y.shape[1], y.shape[0]):
            out["fields"].append(field)
            out["stats"].append(_stats_io(x, y, None))


@op("quant_facts", QuantArgs, QuantFactsResult, nonempty=("weights_module", "source", "reference_dir"))
def quant_facts(args: QuantArgs) -> QuantFactsResult:
    """Quantized gate 1 facts: the folder's own loader, every tensor against the reference."""
    try:
        with progress.heartbeat(STAGE, f"{Path(args['weights_module']).name}: dequantizing and comparing every tensor"):
            return quant_facts_of(args)
    finally:
        heap.release()


# Quantized gate 2: the dequantized projections patched into the reference's
# own transformers model (already loaded by the baseline op: no second load).

TOP_K = 5


def _last_logits(model: Any, ids: list[int]) -> Any:
    import torch

    with torch.inference_mode():
        out = model(torch.tensor([ids], dtype=torch.long), use_cache=False, return_dict=True)
    return out.logits[0].to(torch.float32)


def _projection_param(model: Any, layer: int, field: str) -> Any:
    """The HF parameter of LlamaWeights field ``field`` in layer ``layer`` ([out, in])."""
    path = PROJECTIONS[field][1].split(".")
    obj = model.get_decoder().layers[layer]
    for part in path:
        obj = getattr(obj, part)
    return obj.weight


def _torch_bf16(value: Any) -> Any:
    """A loader's array as a torch bf16 tensor of the same layout: a view of
    the array itself when it is bf16 already (and torch can share it), else
    one bf16 copy (_bf16), never a float32 one."""
    import torch

    a = _bf16(value)
    if not (a.flags.writeable and all(s >= 0 for s in a.strides)):
        a = a.copy()
    return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)


def _as_weight(value: Any) -> Any:
    """A loader's (in, out) array as an HF weight, (out, in) bf16."""
    return _torch_bf16(value).T


def _patch_head(model: Any, value: Any) -> bool:
    """Put the loader's lm_head ((vocab, emb), as the NPU uses it) into the
    model when it differs from the model's own: a quantized copy of a tied
    head gets a parameter of its own, so the embedding stays bf16. Returns
    whether the head was patched (False: it already was the model's)."""
    import torch

    head = model.get_output_embeddings()
    w = _torch_bf16(value).to(head.weight.dtype)
    if tuple(w.shape) != tuple(head.weight.shape):
        raise ValueError(f"lm_head: the loader's {list(w.shape)} does not fit the model's {list(head.weight.shape)}")
    if torch.equal(w, head.weight):
        return False
    head.weight = torch.nn.Parameter(w, requires_grad=False)
    return True


def _side(logits: Any) -> tuple[list[int], list[float]]:
    import torch

    lp = torch.log_softmax(logits, dim=-1)
    top = torch.topk(lp, TOP_K)
    return [int(i) for i in top.indices.tolist()], [float(v) for v in top.values.tolist()]


def e2e_facts(model: Any, prompt_ids: list[int], passage_ids: list[int], args: QuantE2EArgs, stage: str = "quant_baseline") -> QuantE2EFacts:
    """Prefill the prompt and the passage through ``model`` as loaded (bf16),
    patch every projection the folder's loader dequantizes into it, layer by
    layer, and prefill both again. Facts only: each side's top-5 (ids and
    log-probabilities) at the prompt's last position, the KL divergence
    KL(bf16 || quantized) of the next-token distributions there and at every
    passage position, each side's per-token NLL of the passage and its
    argmax per position. The model's weights stay patched: the caller drops it."""
    import torch

    module, failure = _import(Path(args["weights_module"]))
    if failure is not None:
        raise ImportError(f"{args['weights_module']}: {failure['message']}")
    ref = Reference(Path(args["reference_dir"]))
    with progress.layers(stage, model, "bf16 weights: prompt and passage"):
        ref_prompt = _last_logits(model, prompt_ids)[-1]
        ref_passage = _last_logits(model, passage_ids)[:-1]
    # The model's projections are dropped before the loader runs and the
    # loader's arrays become them (a bf16 array without a copy): a loader
    # that returns the whole model at once (upstream's load_*_weights) then
    # costs about one model's memory, not two (at 8 B, 16 GB instead of 32).
    n_layers = int(args["n_layers"])
    shapes = {}
    for k in range(n_layers):
        for field in PROJECTIONS:
            param = _projection_param(model, k, field)
            shapes[k, field] = tuple(param.shape)
            param.data = torch.empty(0, dtype=param.dtype)
    layers: Iterable[tuple[int, str, Any]]
    from_gate_1 = (kept := _take_kept(args["weights_module"], args["source"], n_layers)) is not None
    if kept is not None:
        loader, layers = kept
        doing = f"the tensors {loader} dequantized for gate 1 patched into the model"
    else:
        loader, layers = find_loader(module, args["source"], n_layers, ref)
        doing = f"{loader} dequantizing into the model"
    del kept
    patched, head_patched = 0, False
    with torch.no_grad(), progress.heartbeat(stage, f"{Path(args['weights_module']).name}: {doing}"):
        for layer, field, value in layers:
            if layer < 0 and field == "lm_head" and value is not None:
                head_patched = _patch_head(model, value)
                continue
            if value is None or (layer, field) not in shapes:
                continue  # a kept tensor (norms, biases) or a layer beyond n_layers
            want = shapes.pop((layer, field))
            if tuple(np.shape(value)) != want[::-1]:
                raise ValueError(f"layer {layer} {field}: the loader's {list(np.shape(value))} does not fit {list(want)} transposed")
            _projection_param(model, layer, field).data = _as_weight(value)
            patched += 1
        # What the loader did not give keeps the reference's weights, so
        # the prefill runs and Go judges the count.
        for (layer, field), want in shapes.items():
            hf = f"model.layers.{layer}.{PROJECTIONS[field][1]}.weight"
            _projection_param(model, layer, field).data = _as_weight(np.asarray(ref.get(hf)).T)
            ref.release(hf)
    with progress.layers(stage, model, "dequantized weights: prompt and passage"):
        q_prompt = _last_logits(model, prompt_ids)[-1]
        q_passage = _last_logits(model, passage_ids)[:-1]

    def kl(p_logits: Any, q_logits: Any) -> list[float]:
        lp, lq = torch.log_softmax(p_logits, dim=-1), torch.log_softmax(q_logits, dim=-1)
        return [float(x) for x in (lp.exp() * (lp - lq)).sum(-1).reshape(-1).tolist()]

    target = torch.tensor(passage_ids[1:], dtype=torch.long)[:, None]

    def nll(logits: Any) -> list[float]:
        return [float(x) for x in (-torch.log_softmax(logits, dim=-1).gather(1, target).squeeze(1)).tolist()]

    ref_ids, ref_lp = _side(ref_prompt)
    q_ids, q_lp = _side(q_prompt)
    return {
        "loader": loader,
        "patched": patched,
        "head_patched": head_patched,
        "from_gate_1": from_gate_1,
        "reference_top": ref_ids,
        "reference_top_logprobs": ref_lp,
        "quantized_top": q_ids,
        "quantized_top_logprobs": q_lp,
        "kl_prompt": kl(ref_prompt, q_prompt)[0],
        "passage_tokens": len(passage_ids),
        "kl_passage": kl(ref_passage, q_passage),
        "reference_nll": nll(ref_passage),
        "quantized_nll": nll(q_passage),
        "reference_argmax": [int(x) for x in ref_passage.argmax(-1).tolist()],
        "quantized_argmax": [int(x) for x in q_passage.argmax(-1).tolist()],
    }


# Quantized gate 3: what the module's own config functions say.


def _config_functions(module: Any) -> list[str]:
    """Top-level ``*_config`` functions of the module itself taking no required argument."""
    import inspect

    out = []
    for name, fn in vars(module).items():
        if not (name.endswith("_config") and inspect.isfunction(fn) and fn.__module__ == module.__name__):
            continue
        params = inspect.signature(fn).parameters.values()
        if all(p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
            out.append(name)
    return sorted(out)


def _config_classes(module: Any) -> list[str]:
    """Config dataclasses in the module's namespace (its own or imported
    from the tree, e.g. upstream's llama32_3b_q4nx uses llama32_3b's
    LlamaConfig) that take no required argument: what its loader defaults
    to. A class from outside the tree (transformers' LlamaConfig is a
    dataclass too, with Llama-2 defaults) is not the folder's config."""
    import dataclasses
    import inspect

    parents = Path(module.__file__ or ".").resolve().parents
    tree = parents[min(2, len(parents) - 1)]  # programming_examples, above llms/<folder>/
    out = []
    for name, cls in vars(module).items():
        if not (isinstance(cls, type) and name.endswith("Config") and dataclasses.is_dataclass(cls)):
            continue
        home = getattr(sys.modules.get(cls.__module__), "__file__", None)
        if home is None or tree not in Path(home).resolve().parents:
            continue
        params = inspect.signature(cls).parameters.values()
        if all(p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
            out.append(name)
    return sorted(out)


@op("quant_module_facts", QuantModuleArgs, QuantModuleFacts, nonempty=("weights_module",))
def quant_module_facts(args: QuantModuleArgs) -> QuantModuleFacts:
    """Call the module's ``*_config()`` functions, else the config classes it
    uses, with their defaults; say where its RoPE table comes from: its own
    generate_rope_lut, else the one of the module its config class comes
    from (upstream's 3B folder takes both from the bf16 llama32_3b)."""
    import dataclasses

    from phase0_shim.facts import jsonable

    module, failure = _import(Path(args["weights_module"]))
    if failure is not None:
        return {"configs": {}, "raised": {}, "rope_lut": False, "rope_module": "", "rms_norm": False, "import_failure": failure}
    configs: dict[str, Any] = {}
    raised: dict[str, str] = {}
    functions = _config_functions(module)
    classes = [] if functions else _config_classes(module)
    for name in functions or classes:
        try:
            with contextlib.redirect_stdout(sys.stderr):
                config = getattr(module, name)()
        except Exception as e:  # reported as a fact; Go decides
            raised[name] = f"{type(e).__name__}: {e}"
            continue
        if dataclasses.is_dataclass(config) and not isinstance(config, type):
            values = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
        else:
            values = {k: v for k, v in vars(config).items() if not k.startswith("_")}
        configs[name] = {"class": type(config).__name__, "fields": {k: jsonable(v) for k, v in values.items()}}
    rope_lut = callable(getattr(module, "generate_rope_lut", None))
    rope_module = ""
    if not rope_lut:
        for name in classes:
            home = sys.modules.get(getattr(module, name).__module__)
            if home is not None and home is not module and callable(getattr(home, "generate_rope_lut", None)):
                rope_module = str(Path(home.__file__ or "").resolve())
                break
    return {
        "configs": configs,
        "raised": raised,
        "rope_lut": rope_lut,
        "rope_module": rope_module,
        "rms_norm": callable(getattr(module, "rms_norm", None)),
        "import_failure": None,
    }


@op("quant_e2e", QuantE2EOnlyArgs, QuantE2EFacts, nonempty=("weights_module", "source", "reference_dir", "model_dir"))
def quant_e2e(args: QuantE2EOnlyArgs) -> QuantE2EFacts:
    """Quantized gate 2 without the bf16 baseline (reused from its record):
    one model load, then e2e_facts on the recorded prompt tokens and the
    calibration passage."""
    import torch
    from transformers import AutoModelForCausalLM

    from phase0_shim.calibration import PASSAGE
    from phase0_shim.tokens import load_tokenizer

    tokens = [int(t) for t in args["prompt_tokens"]]
    if not tokens:
        raise ValueError("quant_e2e: prompt_tokens is empty")
    tokenizer = load_tokenizer(args["model_dir"])
    with progress.heartbeat("quant_baseline", "loading the HF bf16 model"):
        model = AutoModelForCausalLM.from_pretrained(args["model_dir"], dtype=torch.bfloat16, low_cpu_mem_usage=True)
        model.eval()  # type: ignore[no-untyped-call]
    passage = [int(t) for t in tokenizer.encode(PASSAGE)]
    return e2e_facts(model, tokens, passage, args)
