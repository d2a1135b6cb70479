"""Minimal conforming weights module for phase0's tests.

Shaped like a generated ``<name>_weights.py`` (``LlamaConfig``, ``LayerWeights``,
``LlamaWeights``, ``load_weights``), with defaults matching the tiny Llama from
``phase0_testmodels``. Tests write copies with other defaults to cover the
other families and broken configs.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np
from ml_dtypes import bfloat16


@dataclass
class LlamaConfig:
    n_layers: int = 2
    emb_dim: int = 64
    n_heads: int = 4
    head_dim: int = 16
    n_kv_heads: int = 2
    hidden_dim: int = 128
    vocab_size: int = 512
    rope_base: float = 500000.0
    rms_norm_eps: float = 1e-05
    tie_word_embeddings: bool = False
    qkv_bias: bool = False
    qk_norm: bool = False
    rope_scaling: Optional[dict] = None
    dtype: np.dtype = bfloat16


@dataclass
class LayerWeights:
    attn_norm: np.ndarray
    wq: np.ndarray
    wk: np.ndarray
    wv: np.ndarray
    wo: np.ndarray
    ffn_norm: np.ndarray
    w_gate: np.ndarray
    w_up: np.ndarray
    w_down: np.ndarray
    bq: Optional[np.ndarray] = None
    bk: Optional[np.ndarray] = None
    bv: Optional[np.ndarray] = None
    q_norm: Optional[np.ndarray] = None
    k_norm: Optional[np.ndarray] = None


@dataclass
class LlamaWeights:
    embed_table: np.ndarray
    layers: list = field(default_factory=list)
    final_norm: Optional[np.ndarray] = None
    lm_head: Optional[np.ndarray] = None


# HF suffix -> (field, transpose to (in, out))
_LAYER_MAP = {
    "input_layernorm.weight": ("attn_norm", False),
    "self_attn.q_proj.weight": ("wq", True),
    "self_attn.k_proj.weight": ("wk", True),
    "self_attn.v_proj.weight": ("wv", True),
    "self_attn.o_proj.weight": ("wo", True),
    "post_attention_layernorm.weight": ("ffn_norm", False),
    "mlp.gate_proj.weight": ("w_gate", True),
    "mlp.up_proj.weight": ("w_up", True),
    "mlp.down_proj.weight": ("w_down", True),
}
_BIAS_MAP = {"self_attn.q_proj.bias": "bq", "self_attn.k_proj.bias": "bk", "self_attn.v_proj.bias": "bv"}
_QK_NORM_MAP = {"self_attn.q_norm.weight": "q_norm", "self_attn.k_norm.weight": "k_norm"}


def _read_safetensors(path: Path) -> dict:
    """name -> bf16 array, for a bf16-only safetensors file."""
    data = path.read_bytes()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_len])
    base = 8 + header_len
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "BF16":
            raise ValueError(f"{path.name}: {name} is {info['dtype']}, expected BF16")
        start, end = info["data_offsets"]
        raw = np.frombuffer(data[base + start : base + end], dtype=bfloat16)
        tensors[name] = raw.reshape(info["shape"])
    return tensors


def load_weights(model_name_or_path, dtype=bfloat16, config=None) -> LlamaWeights:
    config = config or LlamaConfig()
    files = sorted(Path(model_name_or_path).glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"no .safetensors files in {model_name_or_path}")
    tensors = {}
    for f in files:
        tensors.update(_read_safetensors(f))

    def get(name, transpose=False):
        if name not in tensors:
            raise KeyError(f"missing weight: {name}")
        t = tensors[name].astype(dtype)
        return np.ascontiguousarray(t.T) if transpose else t

    layers = []
    for i in range(config.n_layers):
        prefix = f"model.layers.{i}."
        fields = {name: get(prefix + suffix, tr) for suffix, (name, tr) in _LAYER_MAP.items()}
        if config.qkv_bias:
            fields.update({name: get(prefix + suffix) for suffix, name in _BIAS_MAP.items()})
        if config.qk_norm:
            fields.update({name: get(prefix + suffix) for suffix, name in _QK_NORM_MAP.items()})
        layers.append(LayerWeights(**fields))
    embed = get("model.embed_tokens.weight")
    lm_head = get("lm_head.weight") if "lm_head.weight" in tensors else embed
    return LlamaWeights(embed_table=embed, layers=layers, final_norm=get("model.norm.weight"), lm_head=lm_head)
