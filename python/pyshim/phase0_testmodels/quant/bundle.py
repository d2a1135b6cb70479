"""Pack an HF checkpoint into a FastFlowLM-style ``model.q4nx`` bundle, and read one back.

The bundle keeps HF tensor names. Embedding and norms (and QK-norms) are copied
byte for byte in bf16; every projection becomes Q4NX blocks under the chosen
header codec. The LM head is quantized too: an untied one because that is the
only copy, a tied one as an extra quantized copy of the embedding (FastFlowLM's
Llama bundles carry one; upstream's loaders read the bf16 embedding instead).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from phase0_testmodels.quant import q4nx
from phase0_testmodels.quant.st import Checkpoint, File, Raw, raw, write

PROJECTIONS = (
    "self_attn.q_proj",
    "self_attn.k_proj",
    "self_attn.v_proj",
    "self_attn.o_proj",
    "mlp.gate_proj",
    "mlp.up_proj",
    "mlp.down_proj",
)
LM_HEAD = "lm_head.weight"
EMBED = "model.embed_tokens.weight"
_PROJ = re.compile(r"^model\.layers\.\d+\.(" + "|".join(re.escape(p) for p in PROJECTIONS) + r")\.weight$")

# A hook of the negative fixtures: (tensor name, float32 [M, K] weight) -> the weight to quantize.
WeightHook = Callable[[str, q4nx.F32], q4nx.F32]
# A hook on the grid itself (doubled scale): (tensor name, grid) -> the grid to pack.
GridHook = Callable[[str, q4nx.Quantized], q4nx.Quantized]


def is_projection(name: str) -> bool:
    return _PROJ.match(name) is not None


@dataclass(frozen=True)
class PackOptions:
    codec: q4nx.Codec = "I8"
    nibbles: q4nx.NibbleOrder = "even-low"
    tied_lm_head_copy: bool = True  # add a quantized lm_head when the checkpoint ties it
    weight_hook: WeightHook | None = None
    grid_hook: GridHook | None = None
    metadata: dict[str, str] = field(default_factory=lambda: {"format": "pt"})


def quantized_names(ckpt: Checkpoint, opts: PackOptions) -> list[str]:
    names = [n for n in ckpt.names() if is_projection(n)]
    if LM_HEAD in ckpt or opts.tied_lm_head_copy:
        names.append(LM_HEAD)
    return names


def _weight(ckpt: Checkpoint, name: str) -> q4nx.F32:
    return ckpt.f32(EMBED if name == LM_HEAD and LM_HEAD not in ckpt else name)


def pack_tensor(name: str, w: q4nx.F32, opts: PackOptions) -> Raw:
    """One weight [M, K] as its bundle entry under ``opts``."""
    if opts.weight_hook is not None:
        w = opts.weight_hook(name, w)
    qt = q4nx.quantize(w, opts.codec)
    if opts.grid_hook is not None:
        qt = opts.grid_hook(name, qt)
    m, k = w.shape
    return q4nx.entry(q4nx.pack_blocks(qt, opts.nibbles), m, k, opts.codec)


def pack_bundle(src: Path | str | Checkpoint, out: Path | str, opts: PackOptions = PackOptions()) -> Path:
    """Write ``src``'s weights as ``out`` (a ``model.q4nx`` file); return ``out``."""
    ckpt = src if isinstance(src, Checkpoint) else Checkpoint(src)
    tensors: dict[str, Raw] = {}
    for name in ckpt.names():
        if not is_projection(name) and name != LM_HEAD:
            tensors[name] = _plain_entry(ckpt, name)
    for name in quantized_names(ckpt, opts):
        tensors[name] = pack_tensor(name, _weight(ckpt, name), opts)
    return write(out, tensors, opts.metadata)


def _plain_entry(ckpt: Checkpoint, name: str) -> Raw:
    """A plain tensor copied byte for byte (bf16 stays bf16)."""
    return raw(ckpt.array(name))


@dataclass(frozen=True)
class Bundle:
    """A ``model.q4nx`` read with our own dequant (the reference for read-back tests)."""

    path: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "_file", File(self.path))

    @property
    def file(self) -> File:
        f: File = self.__dict__["_file"]
        return f

    def codec(self, name: str) -> str:
        return str(self.file.header[name]["dtype"])

    def dequant(self, name: str, m: int | None = None, k: int | None = None) -> q4nx.F32:
        return q4nx.dequant_entry(self.file.entry(name), m, k)

    def plain(self, name: str) -> q4nx.F32:
        return self.file.array(name).astype(np.float32)

    def projections(self, shapes: dict[str, tuple[int, int]]) -> Iterator[tuple[str, q4nx.F32]]:
        """(name, [M, K] float32) for each quantized entry named in ``shapes``."""
        for name, (m, k) in shapes.items():
            yield name, self.dequant(name, m, k)


def reference_shapes(ckpt: Checkpoint, opts: PackOptions = PackOptions()) -> dict[str, tuple[int, int]]:
    """Logical [M, K] of every tensor the bundle quantizes, from the bf16 source."""
    out: dict[str, tuple[int, int]] = {}
    for name in quantized_names(ckpt, opts):
        m, k = ckpt.array(EMBED if name == LM_HEAD and LM_HEAD not in ckpt else name).shape
        out[name] = (int(m), int(k))
    return out


__all__ = [
    "Bundle",
    "PackOptions",
    "PROJECTIONS",
    "is_projection",
    "pack_bundle",
    "pack_tensor",
    "quantized_names",
    "reference_shapes",
]
