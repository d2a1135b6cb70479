"""Quantized gate 2's twin: the reference's own projections put through the
deployment format's rule (Go sends it: group, levels, symmetric) and back,
one projection at a time in the loaded model, in place of the bundle's
(phase0_shim.quant.end_to_end._patch_twin).

What the twin costs the reference is what a plain 4-bit quantization of this
very model costs: the noise floor Go judges the folder's bundle against.
Facts only; nothing here decides PASS or FAIL.
"""

from __future__ import annotations

from typing import Any

from phase0_shim.optypes import QuantBound
from phase0_shim.quant.reading import Reference, projection_name
from phase0_shim.quant.vocab import PROJECTIONS

# The rules phase0 knows: affine (min/max) onto 0..levels, bf16 scale and
# min (Q4NX's I8 codec, AWQ round-to-nearest); symmetric onto
# -levels..levels-1 with scale absmax/levels (Q4_0, levels 8).
AFFINE_LEVELS = (15,)
SYMMETRIC_LEVELS = (8,)


def rule_problem(rule: QuantBound | None) -> str:
    """Why ``rule`` is not one phase0 can build a twin with ("" when it is)."""
    if rule is None:
        return "the op named no quantization rule for the twin"
    group, levels, symmetric = rule.get("group", 0), rule.get("levels", 0), rule.get("symmetric", False)
    known = SYMMETRIC_LEVELS if symmetric else AFFINE_LEVELS
    if not isinstance(group, int) or group <= 0 or levels not in known:
        kind = "symmetric" if symmetric else "affine"
        return f"the twin's rule ({kind}, group {group}, levels {levels}) is not one phase0 knows: {kind} 4-bit takes levels {list(known)} and a positive group"
    return ""


def describe(rule: QuantBound) -> str:
    """The rule in words, for the facts ("affine 4-bit g32, bf16 scale and min")."""
    if rule["symmetric"]:
        return f"symmetric 4-bit g{rule['group']}, scale absmax/{rule['levels']}"
    return f"affine 4-bit g{rule['group']} ({rule['levels'] + 1} levels), bf16 scale and min"


# Rows quantized at a time: the float32 temporaries of one chunk stay near
# CHUNK_ELEMENTS × 4 bytes × a few, whatever the tensor (an 8 B model's
# untied head is 622 M elements).
CHUNK_ELEMENTS = 1 << 22


def round_trip(w: Any, rule: QuantBound) -> Any:
    """``w`` ([out, in], any float dtype) quantized per ``group`` input columns
    of each row and dequantized, as a new bf16 tensor of the same shape,
    computed a chunk of rows at a time. A last group narrower than
    ``group`` (576 columns in groups of 128) is its own group."""
    import torch

    out_f, in_f = w.shape
    out = torch.empty((out_f, in_f), dtype=torch.bfloat16)
    rows = max(1, CHUNK_ELEMENTS // max(in_f, 1))
    for i in range(0, out_f, rows):
        out[i : i + rows] = _round_trip_rows(w[i : i + rows], rule)
    return out


def _round_trip_rows(w: Any, rule: QuantBound) -> Any:
    import torch

    out_f, in_f = w.shape
    g = int(rule["group"])
    levels = int(rule["levels"])
    a = w.detach().to(torch.float32, copy=True)
    pad = (-in_f) % g
    if pad:
        # Repeating the row's last value leaves the last group's min, max and absmax as they are.
        a = torch.cat([a, a[:, -1:].expand(out_f, pad)], dim=1)
    a = a.reshape(out_f, -1, g)
    # In place on the chunk's float32 copy: one buffer, not one per step.
    if rule["symmetric"]:
        amax = a.abs().amax(dim=2, keepdim=True)
        scale = torch.where(amax > 0, amax / levels, torch.ones_like(amax))
        deq = a.div_(scale).round_().clamp_(-levels, levels - 1).mul_(scale)
    else:
        lo, hi = torch.aminmax(a, dim=2, keepdim=True)
        scale = ((hi - lo) / levels).to(torch.bfloat16).to(torch.float32)
        lo = lo.to(torch.bfloat16).to(torch.float32)
        safe = torch.where(scale > 0, scale, torch.ones_like(scale))
        deq = a.sub_(lo).div_(safe).round_().clamp_(0, levels).mul_(scale).add_(lo)
    return deq.reshape(out_f, -1)[:, :in_f].to(torch.bfloat16)


def missing(ref: Reference, n_layers: int) -> list[str]:
    """The projections the twin needs that the reference checkpoint lacks."""
    return [name for k in range(n_layers) for field in PROJECTIONS if not ref.has(name := projection_name(k, field))]


def untied_head(model: Any, ref: Reference) -> bool:
    """Whether the reference has a head of its own (not the embedding), which a bundle quantizes too."""
    head, embed = model.get_output_embeddings(), model.get_input_embeddings()
    return bool(ref.has("lm_head.weight") and head is not None and head.weight is not embed.weight)
