"""FastFlowLM's signed Q4_0 bundle, as qwen25_3b_q4 reads it (our own packer).

Facts (docs/formats.md, "Q4_0 in a Q4NX container"): the ``model.q4nx``
container of the Q4NX bundles (32x256 blocks, row-block then column-block
order, an ``I8`` header ``[n_blocks, 5120]``), holding per row and 32-column
group a bf16 scale, a ``mins`` slot that is all zero, and signed
two's-complement nibbles: ``w = q * scale`` with q in -8..7. The scale is
llama.cpp's ``d = peak / -8`` (the group's largest-magnitude value maps onto
-8 exactly), so it is negative where that value is positive. The bundle also
folds an AWQ-style smoothing in (the input norm scaled by s, q/k/v's input
columns by 1/s; the post-attention norm by s2 and gate/up's input columns by
1/s2; up's rows by t and down's input columns by 1/t), pads the FFN width to
a multiple of 512 with exact zeros, ships the embedding after a 4-bit round
trip and an untied Q4_0 ``lm_head`` under a tied config.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
from ml_dtypes import bfloat16

from phase0_testmodels.quant import q4nx
from phase0_testmodels.quant.st import Checkpoint, Raw, raw, write

GROUP = 32
PAD_MULTIPLE = 512
F32 = npt.NDArray[np.float32]
# (tensor name, signed grid) -> the grid to pack: the corrupted fixtures.
GridHook = Callable[[str, "Signed"], "Signed"]


@dataclass(frozen=True)
class Signed:
    """One tensor on the signed grid: q [M, K] in -8..7, scale [M, K/32] (bf16-representable, any sign)."""

    q: npt.NDArray[np.int8]
    scale: F32

    def dequant(self) -> F32:
        return (
            self.q.astype(np.float32) * np.repeat(self.scale, GROUP, axis=1)
        ).astype(np.float32)


def _bf16(a: npt.NDArray[np.floating]) -> F32:
    return np.asarray(a, dtype=np.float32).astype(bfloat16).astype(np.float32)


def quantize(w: npt.ArrayLike) -> Signed:
    """Signed 4-bit per 32 input columns: scale = peak / -8 (bf16), q = clip(rint(w / scale), -8, 7)."""
    a = np.asarray(w, dtype=np.float32)
    m, k = a.shape
    if k % GROUP:
        raise ValueError(f"columns {k} are not a multiple of the {GROUP}-column group")
    g = a.reshape(m, k // GROUP, GROUP)
    peak = np.take_along_axis(g, np.abs(g).argmax(axis=2)[..., None], axis=2)[..., 0]
    scale = _bf16(peak / -8.0)
    safe = np.where(scale != 0, scale, np.float32(1.0)).astype(np.float32)
    q = np.clip(np.rint(g / safe[..., None]), -8, 7).astype(np.int8)
    return Signed(q.reshape(m, k), scale)


def round_trip(w: npt.ArrayLike) -> F32:
    return quantize(w).dequant()


def entry(s: Signed) -> Raw:
    """The grid as Q4NX blocks under an I8 header: nibbles two's complement, mins zero."""
    nib = (s.q.astype(np.int16) & 0xF).astype(np.uint8)
    grid = q4nx.Quantized("I8", nib, s.scale, np.zeros_like(s.scale))
    m, k = s.q.shape
    return q4nx.entry(q4nx.pack_blocks(grid), m, k, "I8")


def decode(e: Raw, m: int, k: int) -> F32:
    """Our own dequant of one entry of logical [m, k] (the read-back tests' reference)."""
    g = q4nx.unpack_blocks(np.frombuffer(e.data, dtype=np.uint8), m, k, "I8")
    if g.offset.any():
        raise ValueError(
            f"[{m}, {k}]: the mins slot holds {int(np.count_nonzero(g.offset))} non-zero values; this codec stores none"
        )
    q = ((g.q.astype(np.int16) ^ 8) - 8).astype(np.int8)
    return Signed(q, g.scale).dequant()


def padded(n: int) -> int:
    return -(-n // PAD_MULTIPLE) * PAD_MULTIPLE


@dataclass(frozen=True)
class FLMOptions:
    seed: int = 3
    spread: float = 0.3  # log-std of the smoothing factors s, s2 and t
    grid_hook: GridHook | None = None
    metadata: dict[str, str] = field(default_factory=lambda: {"format": "pt"})


def pack_flm_bundle(
    src: Path | str, out_dir: Path | str, opts: FLMOptions = FLMOptions()
) -> Path:
    """Write ``src`` (a tied Qwen2 checkpoint) as ``out_dir/model.q4nx`` with its config.json; return the file."""
    ckpt = Checkpoint(src)
    cfg = ckpt.config()
    d, inter, n_layers = (
        int(cfg["hidden_size"]),
        int(cfg["intermediate_size"]),
        int(cfg["num_hidden_layers"]),
    )
    pad = padded(inter)
    rng = np.random.default_rng(opts.seed)

    def factors(n: int) -> F32:
        return np.exp(opts.spread * rng.standard_normal(n)).astype(np.float32)

    out: dict[str, Raw] = {}

    def put(name: str, w: F32) -> None:
        s = quantize(w)
        if opts.grid_hook is not None:
            s = opts.grid_hook(name, s)
        out[name] = entry(s)

    for k in range(n_layers):
        p = f"model.layers.{k}."
        # A smoothed norm is stored in bf16; the projections take the exact
        # inverse of what was stored, so norm x projection is unchanged.
        norms = {}
        for norm, projs in (
            ("input_layernorm", ("q", "k", "v")),
            ("post_attention_layernorm", ("gate", "up")),
        ):
            n = ckpt.f32(p + norm + ".weight")
            stored = _bf16(n * factors(d))
            out[p + norm + ".weight"] = raw(stored.astype(bfloat16))
            for proj in projs:
                norms[proj] = n / stored
        t = factors(inter)
        for proj, mod in (
            ("q", "self_attn"),
            ("k", "self_attn"),
            ("v", "self_attn"),
            ("o", "self_attn"),
            ("gate", "mlp"),
            ("up", "mlp"),
            ("down", "mlp"),
        ):
            name = f"{p}{mod}.{proj}_proj.weight"
            w = ckpt.f32(name)
            if proj in norms:
                w = w * norms[proj][None, :]
            if proj == "up":
                w = w * t[:, None]
            if proj == "down":
                w = w / t[None, :]
            if proj in ("gate", "up"):
                w = np.concatenate([w, np.zeros((pad - inter, d), np.float32)])
            if proj == "down":
                w = np.concatenate([w, np.zeros((d, pad - inter), np.float32)], axis=1)
            put(name, w)
            if mod == "self_attn" and proj != "o":
                out[f"{p}{mod}.{proj}_proj.bias"] = raw(
                    ckpt.array(f"{p}{mod}.{proj}_proj.bias")
                )
    embed = ckpt.f32("model.embed_tokens.weight")
    out["model.embed_tokens.weight"] = raw(round_trip(embed).astype(bfloat16))
    out["model.norm.weight"] = raw(ckpt.array("model.norm.weight"))
    put("lm_head.weight", embed)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(Path(src) / "config.json", out_dir / "config.json")
    return write(out_dir / "model.q4nx", out, opts.metadata)
