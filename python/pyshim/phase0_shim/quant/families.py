"""A deployed family's reference (read/tensornames' Family, through
vocab.FAMILY_*): the text model's tensors under the shared ``model.`` names
wherever the checkpoint keeps them (Gemma 3's ``language_model.model.``),
a fused tensor's rows as the projections the loaders hold split (Phi-3's
qkv_proj and gate_up_proj), and the kept tensors brought to the convention
the family's bundles store them under (Gemma's 1 + w norms, its embedding
× √hidden), with the statistics that tell a convention error from another.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from phase0_shim.optypes import QuantStats, QuantTensor
from phase0_shim.quant.reading import Reference
from phase0_shim.quant.stats import CHUNK_ROWS, bf16_bits, nonfinite_problem, stats_oi
from phase0_shim.quant.vocab import FAMILY_FUSED, FAMILY_KEPT, FAMILY_PREFIXES, FAMILY_RMS, FAMILY_STORED, PROJECTIONS

_MODEL = "model."
_LAYERS = "model.layers."


class FamilyReference(Reference):
    """The reference as the shared names read it, for ``family`` ("" or a
    supported family: the checkpoint's own names). A Reference to the
    gates' code; it reads through ``base``."""

    def __init__(self, base: Reference, family: str, embed_scale: float = 0.0) -> None:  # noqa: super() maps nothing: base did
        if family and family not in FAMILY_PREFIXES:
            raise ValueError(f"unknown deployed family {family!r}; known: {', '.join(sorted(FAMILY_PREFIXES))}")
        self.base = base
        self.family = family
        self.embed_scale = embed_scale
        self.prefix = _MODEL
        for p in FAMILY_PREFIXES.get(family, ()):
            if base.has(p + "layers.0.input_layernorm.weight") or base.has(p + "embed_tokens.weight"):
                self.prefix = p
                break
        # split field's HF module -> (fused tensor suffix, its parts' modules)
        self._fused: dict[str, tuple[str, tuple[str, ...]]] = {}
        for fused, fields in FAMILY_FUSED.get(family, {}).items():
            modules = tuple(PROJECTIONS[f][1] for f in fields)
            for m in modules:
                self._fused[m + ".weight"] = (fused, modules)

    def _name(self, name: str) -> str:
        """The checkpoint's name for a shared one."""
        if name.startswith(_MODEL) and self.prefix != _MODEL:
            return self.prefix + name[len(_MODEL) :]
        return name

    def _split(self, name: str) -> tuple[str, int, int] | None:
        """(fused tensor, first row, end row) when name is a split part."""
        if not name.startswith(_LAYERS):
            return None
        layer, _, rest = name[len(_LAYERS) :].partition(".")
        hit = self._fused.get(rest)
        if hit is None:
            return None
        fused, modules = hit
        whole = self._name(f"{_LAYERS}{layer}.{fused}")
        if not self.base.has(whole):
            return None
        rows = self._part_rows(layer, fused, modules)
        at = modules.index(rest[: -len(".weight")])
        start = sum(rows[:at])
        return whole, start, start + rows[at]

    def _part_rows(self, layer: str, fused: str, modules: tuple[str, ...]) -> list[int]:
        """Each part's rows: q from o_proj's input width, k = v the rest
        halved; parts of one size (gate, up) an equal share."""
        total = self.base.shape(self._name(f"{_LAYERS}{layer}.{fused}"))[0]
        if len(modules) == 3:
            q = self.base.shape(self._name(f"{_LAYERS}{layer}.{PROJECTIONS['wo'][1]}.weight"))[1]
            return [q, (total - q) // 2, (total - q) // 2]
        return [total // len(modules)] * len(modules)

    def describe(self, name: str) -> str:
        """The checkpoint's tensor a shared name reads: its own name, or the
        fused tensor and the rows (``…qkv_proj.weight[256:384]``)."""
        split = self._split(name)
        if split is not None:
            whole, a, b = split
            return f"{whole}[{a}:{b}]"
        return self._name(name)

    def has(self, name: str) -> bool:
        return self._split(name) is not None or self.base.has(self._name(name))

    def shape(self, name: str) -> list[int]:
        split = self._split(name)
        if split is not None:
            whole, a, b = split
            return [b - a, *self.base.shape(whole)[1:]]
        return self.base.shape(self._name(name))

    def get(self, name: str) -> np.ndarray:
        split = self._split(name)
        if split is not None:
            whole, a, b = split
            return self.base.get(whole)[a:b]
        return self.base.get(self._name(name))

    def release(self, name: str) -> None:
        split = self._split(name)
        self.base.release(split[0] if split is not None else self._name(name))

    def release_rows(self, name: str, start: int, end: int) -> None:
        split = self._split(name)
        if split is None:
            self.base.release_rows(self._name(name), start, end)
        else:
            whole, first, stop = split
            self.base.release_rows(whole, first + start, min(first + end, stop))

    def stored(self, field: str) -> str:
        """How the family's bundle stores field ("" as the reference has it)."""
        return FAMILY_STORED.get(self.family, {}).get(field, "")


def rms_fields(family: str, n: int) -> tuple[str, ...]:
    """The fields of a layer_rms(k) tuple of n norms."""
    fields = FAMILY_RMS.get(family, ("attn_norm", "ffn_norm"))
    return fields if len(fields) == n else ("attn_norm", "ffn_norm", *FAMILY_KEPT.get(family, {}))[:n]


def kept_hf(family: str) -> dict[str, str]:
    """The family's kept layer fields beyond the shared ones -> their HF tensor."""
    return FAMILY_KEPT.get(family, {})


def _as_bf16(a: np.ndarray) -> np.ndarray:
    import ml_dtypes

    return np.asarray(a, dtype=np.float32).astype(ml_dtypes.bfloat16)


def _apply(convention: str, y: np.ndarray, scale: float, times: int = 1) -> np.ndarray:
    """The reference brought to the convention (times: 0 = as stored in the
    reference, 2 = the convention applied twice), rounded once to bf16."""
    y32 = np.asarray(y, dtype=np.float32)
    if convention == "one_plus":
        return _as_bf16(y32 + np.float32(times))
    if convention == "embed_scale":
        return _as_bf16(y32 * np.float32(scale**times))
    raise ValueError(f"unknown convention {convention!r}")


# Per convention: the other ways of storing it a bundle gets wrong, and
# how many times the convention each applies.
_MISTAKES = {
    "one_plus": {"stored_as_w": 0, "one_plus_twice": 2},
    "embed_scale": {"unscaled": 0, "scaled_twice": 2},
}


def _off_by_more_than_a_step(x: np.ndarray, want: np.ndarray) -> int:
    """Elements whose bf16 bits are more than one step from want's (one
    step is the rounding of 1 + w or w · √hidden done another way).
    |xb - wb| > 1 is taken in uint16 arithmetic, (xb - wb + 1) mod 2^16 > 2:
    the same for any two patterns but 0xFFFF (a NaN) against 0 or 1, and
    twice as fast as two int32 copies."""
    xb = bf16_bits(x).ravel()
    wb = bf16_bits(want).ravel()
    d = np.subtract(xb, wb)
    d += np.uint16(1)
    return int(np.count_nonzero(d > np.uint16(2)))


def _convention_differing(x: np.ndarray, y: np.ndarray, convention: str, scale: float) -> int:
    """_off_by_more_than_a_step(x, _apply(convention, y, scale)) of [rows, n]
    arrays, CHUNK_ROWS rows at a time: the float32 and int32 temporaries stay
    in cache instead of a handful of whole-tensor copies (Gemma 3 4B's
    embedding is 0.67 B elements: 11 CPU-s in one piece)."""
    return sum(_off_by_more_than_a_step(x[r : r + CHUNK_ROWS], _apply(convention, y[r : r + CHUNK_ROWS], scale)) for r in range(0, y.shape[0], CHUNK_ROWS))


def convention_facts(layer: int, field: str, x: Any, ref: FamilyReference, hf: str, convention: str) -> QuantTensor:
    """A kept tensor the bundle stores under a convention: compared with the
    reference brought to it (within one bf16 step), and, when off, with
    each mistaken way of storing it (the statistics say which it is)."""
    y = ref.get(hf)
    x = np.asarray(x)
    fact: QuantTensor = {"layer": layer, "field": field, "reference": ref.describe(hf), "shape": list(x.shape), "reference_shape": list(y.shape)}
    fact["convention"] = convention
    if x.size != y.size:
        fact["problem"] = f"shape {list(x.shape)}, expected {list(y.shape)}"
        return fact
    if (bad := nonfinite_problem(x, y)) is not None:
        fact["problem"] = bad
        return fact
    x = x.reshape(y.shape)
    rows = y.shape[0] if y.ndim > 1 else 1
    fact["differing"] = _convention_differing(x.reshape(rows, -1), y.reshape(rows, -1), convention, ref.embed_scale)
    if fact["differing"]:
        want = _apply(convention, y, ref.embed_scale)
        fact["stats"] = stats_oi(x.reshape(rows, -1), want.reshape(rows, -1), None)
        confusions: dict[str, QuantStats] = {}
        for name, times in _MISTAKES[convention].items():
            other = _apply(convention, y, ref.embed_scale, times)
            confusions[name] = stats_oi(x.reshape(rows, -1), other.reshape(rows, -1), None)
        fact["confusions"] = confusions
    return fact


def detect_family(base: Reference) -> str:
    """The deployed family whose layout ``base`` has ("" for the shared one):
    its fused tensors, else its text model under a prefix of its own."""
    for family, fused in FAMILY_FUSED.items():
        if any(base.has(f"{_LAYERS}0.{name}") for name in fused):
            return family
    for family, prefixes in FAMILY_PREFIXES.items():
        if any(p != _MODEL and base.has(p + "layers.0.input_layernorm.weight") for p in prefixes):
            return family
    return ""


def fused_slot(layer: Any, module_path: str) -> tuple[Any, slice] | None:
    """The fused parameter of a loaded layer holding ``module_path``'s rows
    (Phi-3's qkv_proj for self_attn.q_proj) and which rows; None when the
    layer has the module itself."""
    for fused, fields in (f for fam in FAMILY_FUSED.values() for f in fam.items()):
        modules = [PROJECTIONS[f][1] for f in fields]
        if module_path not in modules:
            continue
        obj = layer
        for part in fused[: -len(".weight")].split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if obj is None:
            continue
        total = int(obj.weight.shape[0])
        if len(modules) == 3:
            q = int(layer.self_attn.o_proj.weight.shape[1])
            rows = [q, (total - q) // 2, (total - q) // 2]
        else:
            rows = [total // len(modules)] * len(modules)
        at = modules.index(module_path)
        start = sum(rows[:at])
        return obj.weight, slice(start, start + rows[at])
    return None
