"""AutoAWQ GEMM checkpoints, 4-bit asymmetric, group 128 (our own packer).

Per Linear of HF weight [N=out, K=in], AutoAWQ stores (K-major):

* ``qweight`` int32 [K, N/8]: 8 nibbles per int32 along N; the nibble at bit
  ``4*i`` holds column ``8*j + ORDER[i]`` with ``ORDER = 0 2 4 6 1 3 5 7``;
* ``qzeros`` int32 [K/128, N/8], packed the same way;
* ``scales`` fp16 [K/128, N].

``w[k, n] = (q[k, n] - z[k/128, n]) * s[k/128, n]``. This packer quantizes
round-to-nearest (no activation-aware search, so no per-channel scale folded
into the norms: its norms stay byte-identical to the bf16 source, which a real
AutoAWQ checkpoint's are not). The model's ``config.json`` gets AutoAWQ's
``quantization_config``.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt
from ml_dtypes import bfloat16

from phase0_testmodels.quant.bundle import is_projection
from phase0_testmodels.quant.st import Checkpoint, Raw, raw, write

GROUP = 128
ORDER = np.array([0, 2, 4, 6, 1, 3, 5, 7])
F32 = npt.NDArray[np.float32]
I32 = npt.NDArray[np.int32]
ScaleDtype = Literal["F16", "BF16"]


@dataclass(frozen=True)
class AwqLinear:
    qweight: I32  # [K, N/8]
    qzeros: I32  # [K/g, N/8]
    scales: npt.NDArray[np.generic]  # [K/g, N], fp16 (or bf16)
    group: int = GROUP

    def dequant(self, scales_as_bf16: bool = True) -> F32:
        """[K, N] float32. ``scales_as_bf16``: round the scales to bf16 first, as upstream's loader does."""
        q = unpack(self.qweight).astype(np.float32)
        z = np.repeat(unpack(self.qzeros).astype(np.float32), self.group, axis=0)
        s = self.scales.astype(bfloat16) if scales_as_bf16 else self.scales
        return ((q - z) * np.repeat(s.astype(np.float32), self.group, axis=0)).astype(np.float32)


def pack(nibbles: npt.NDArray[np.uint8], order: npt.NDArray[np.int64] = ORDER) -> I32:
    """[..., N] nibbles -> [..., N/8] int32 in AutoAWQ's order."""
    *lead, n = nibbles.shape
    v = nibbles.reshape(*lead, n // 8, 8).astype(np.uint32)[..., order]
    out = np.zeros((*lead, n // 8), dtype=np.uint32)
    for i in range(8):
        out |= v[..., i] << np.uint32(4 * i)
    return out.view(np.int32)


def unpack(packed: npt.ArrayLike, order: npt.NDArray[np.int64] = ORDER) -> npt.NDArray[np.uint8]:
    p = np.asarray(packed).view(np.uint32)
    nib = np.stack([(p >> np.uint32(4 * i)) & 0xF for i in range(8)], axis=-1).astype(np.uint8)
    out = np.empty_like(nib)
    out[..., order] = nib
    return out.reshape(*p.shape[:-1], p.shape[-1] * 8)


def quantize(w_out_in: npt.ArrayLike, group: int = GROUP, scale_dtype: ScaleDtype = "F16") -> AwqLinear:
    """HF weight [N, K] -> AutoAWQ tensors (asymmetric RTN per ``group`` input rows of each column)."""
    w = np.asarray(w_out_in, dtype=np.float32).T  # [K, N]
    k, n = w.shape
    if k % group or n % 8:
        raise ValueError(f"AWQ needs in-features a multiple of {group} and out-features of 8; got [{n}, {k}]")
    g = w.reshape(k // group, group, n)
    lo, hi = g.min(axis=1), g.max(axis=1)
    sdt = np.float16 if scale_dtype == "F16" else bfloat16
    scale = np.maximum((hi - lo) / 15.0, 1e-5).astype(sdt)
    s32 = scale.astype(np.float32)
    zero = np.clip(np.rint(-lo / s32), 0, 15)
    q = np.clip(np.rint(g / s32[:, None, :]) + zero[:, None, :], 0, 15).astype(np.uint8).reshape(k, n)
    return AwqLinear(pack(q), pack(zero.astype(np.uint8)), scale, group)


def pack_checkpoint(src: Path | str, out: Path | str, *, group: int = GROUP, scale_dtype: ScaleDtype = "F16") -> Path:
    """An AutoAWQ-layout copy of the bf16 model folder ``src`` in ``out``; return ``out``."""
    ckpt = Checkpoint(src)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tensors: dict[str, Raw] = {}
    for name in ckpt.names():
        if is_projection(name):
            lin = quantize(ckpt.f32(name), group, scale_dtype)
            base = name.removesuffix(".weight")
            tensors[f"{base}.qweight"] = raw(lin.qweight)
            tensors[f"{base}.qzeros"] = raw(lin.qzeros)
            tensors[f"{base}.scales"] = raw(np.asarray(lin.scales))
        else:
            tensors[name] = raw(ckpt.array(name))
    write(out / "model.safetensors", tensors)
    config = ckpt.config()
    config["quantization_config"] = {
        "quant_method": "awq",
        "bits": 4,
        "group_size": group,
        "zero_point": True,
        "version": "gemm",
        "modules_to_not_convert": None,
    }
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    for p in Path(src).iterdir():
        if p.name.startswith("tokenizer") or p.name in ("special_tokens_map.json", "generation_config.json"):
            shutil.copyfile(p, out / p.name)
    return out


def read_linear(ckpt: Checkpoint, name: str, group: int = GROUP) -> AwqLinear:
    """The AWQ tensors of HF weight ``name`` (``...q_proj.weight``) from an AWQ checkpoint."""
    base = name.removesuffix(".weight")
    return AwqLinear(ckpt.array(f"{base}.qweight"), ckpt.array(f"{base}.qzeros"), ckpt.array(f"{base}.scales"), group)
