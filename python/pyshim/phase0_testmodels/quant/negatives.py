"""Negative ``model.q4nx`` bundles: one per failure class quantized gate 1 must FAIL.

Each is our packer with one thing wrong, in one named tensor of layer 1 (so
a report must name a layer other than the first) unless the class is a whole-
bundle one. ``NEGATIVES`` maps a class to its builder, the tensors it breaks
and the cause the judge should name.

    python -m phase0_testmodels.quant.negatives --src MODEL_DIR --out DIR [--codec I8|Q4NX] [--other OTHER_DIR]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from phase0_testmodels.quant import q4nx
from phase0_testmodels.quant.bundle import PackOptions, pack_bundle
from phase0_testmodels.quant.st import Checkpoint

LAYER = 1
RANDOM_TENSOR = f"model.layers.{LAYER}.mlp.down_proj.weight"
TRANSPOSED_TENSOR = f"model.layers.{LAYER}.self_attn.o_proj.weight"  # square, so the block count cannot tell
GATE = f"model.layers.{LAYER}.mlp.gate_proj.weight"
UP = f"model.layers.{LAYER}.mlp.up_proj.weight"
SCALED_TENSOR = f"model.layers.{LAYER}.self_attn.q_proj.weight"
WHOLE_BUNDLE = "*"


def random_tensor(
    src: Path, out: Path, opts: PackOptions = PackOptions(), *, tensor: str = RANDOM_TENSOR, seed: int = 1
) -> Path:
    """``tensor`` replaced by random weights of the same standard deviation (a never-loaded layer)."""
    rng = np.random.default_rng(seed)

    def hook(name: str, w: q4nx.F32) -> q4nx.F32:
        return (rng.standard_normal(w.shape) * w.std()).astype(np.float32) if name == tensor else w

    return pack_bundle(src, out, replace(opts, weight_hook=hook))


def transposed(src: Path, out: Path, opts: PackOptions = PackOptions(), *, tensor: str = TRANSPOSED_TENSOR) -> Path:
    """``tensor`` packed as [in, out] instead of [out, in]."""

    def hook(name: str, w: q4nx.F32) -> q4nx.F32:
        return np.ascontiguousarray(w.T) if name == tensor else w

    return pack_bundle(src, out, replace(opts, weight_hook=hook))


def gate_up_swapped(src: Path, out: Path, opts: PackOptions = PackOptions(), *, gate: str = GATE, up: str = UP) -> Path:
    """Layer 1's gate_proj and up_proj stored under each other's names."""
    ckpt = Checkpoint(src)
    swap = {gate: up, up: gate}

    def hook(name: str, w: q4nx.F32) -> q4nx.F32:
        return ckpt.f32(swap[name]) if name in swap else w

    return pack_bundle(ckpt, out, replace(opts, weight_hook=hook))


def wrong_nibble_order(src: Path, out: Path, opts: PackOptions = PackOptions()) -> Path:
    """Every block with the odd row in the low nibble (a packer bug: the whole bundle)."""
    return pack_bundle(src, out, replace(opts, nibbles="odd-low"))


def doubled_scale(src: Path, out: Path, opts: PackOptions = PackOptions(), *, tensor: str = SCALED_TENSOR) -> Path:
    """``tensor``'s scales doubled (its offsets kept): std ratio ~2."""

    def hook(name: str, qt: q4nx.Quantized) -> q4nx.Quantized:
        return replace(qt, scale=(qt.scale * 2).astype(np.float32)) if name == tensor else qt

    return pack_bundle(src, out, replace(opts, grid_hook=hook))


def other_model(other_src: Path, out: Path, opts: PackOptions = PackOptions()) -> Path:
    """A clean bundle of another checkpoint of the same shape (e.g. another seed)."""
    return pack_bundle(other_src, out, opts)


@dataclass(frozen=True)
class Negative:
    build: Callable[..., Path]
    tensors: tuple[str, ...]  # what must FAIL; WHOLE_BUNDLE: every projection
    cause: str


NEGATIVES: dict[str, Negative] = {
    "random": Negative(random_tensor, (RANDOM_TENSOR,), "random weights: cosine ~0, std ratio ~1"),
    "transposed": Negative(transposed, (TRANSPOSED_TENSOR,), "transposed: cosine with the reference's transpose ~1"),
    "gate_up_swapped": Negative(gate_up_swapped, (GATE, UP), "gate/up swapped: cosine with the partner ~1"),
    "nibble_order": Negative(wrong_nibble_order, (WHOLE_BUNDLE,), "even/odd rows swapped in every block"),
    "doubled_scale": Negative(doubled_scale, (SCALED_TENSOR,), "scale doubled: std ratio ~2"),
    "other_model": Negative(other_model, (WHOLE_BUNDLE,), "weights of another model: cosine ~0 everywhere"),
}


def build_all(src: Path, out_dir: Path, other: Path | None, codec: q4nx.Codec = "I8") -> dict[str, Path]:
    """Every negative bundle of ``src`` as ``out_dir/<class>/model.q4nx``."""
    opts = PackOptions(codec=codec)
    made: dict[str, Path] = {}
    for kind, neg in NEGATIVES.items():
        folder = out_dir / kind
        folder.mkdir(parents=True, exist_ok=True)
        if kind == "other_model":
            if other is None:
                continue
            made[kind] = other_model(other, folder / "model.q4nx", opts)
        else:
            made[kind] = neg.build(src, folder / "model.q4nx", opts)
    return made


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m phase0_testmodels.quant.negatives", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--src", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--other", type=Path, help="another checkpoint of the same shape (other_model)")
    parser.add_argument("--codec", choices=q4nx.CODECS, default="I8")
    ns = parser.parse_args(argv)
    for kind, path in build_all(ns.src, ns.out, ns.other, ns.codec).items():
        print(f"{kind}\t{path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
