# Test fixture for phase0: a hand-written weights module in the style of
# mlir-air's qwen3_0_6b (tiny dimensions: phase0_testmodels' qwen3).

"""Qwen3-0.6B weight loader (tiny test dimensions).

Loads HF safetensors into numpy arrays. Projection weights are transposed to
(in, out) for y = x @ W; norms are 1-D.
"""

import os
import glob as glob_module
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np
from ml_dtypes import bfloat16


@dataclass
class LlamaConfig:
    """Qwen3-0.6B hyperparameters (named LlamaConfig for downstream reuse)."""

    n_layers: int = 2
    emb_dim: int = 64
    n_heads: int = 4
    head_dim: int = 32  # decoupled: n_heads * head_dim != emb_dim
    n_kv_heads: int = 2
    hidden_dim: int = 128
    vocab_size: int = 512
    rope_base: float = 1000000.0
    qk_norm: bool = True
    tie_word_embeddings: bool = False
    dtype: np.dtype = bfloat16


@dataclass
class LayerWeights:
    attn_norm: np.ndarray  # (emb_dim,)
    wq: np.ndarray  # (emb_dim, n_heads*head_dim)
    wk: np.ndarray  # (emb_dim, n_kv_heads*head_dim)
    wv: np.ndarray  # (emb_dim, n_kv_heads*head_dim)
    wo: np.ndarray  # (n_heads*head_dim, emb_dim)
    ffn_norm: np.ndarray  # (emb_dim,)
    w_gate: np.ndarray  # (emb_dim, hidden_dim)
    w_up: np.ndarray  # (emb_dim, hidden_dim)
    w_down: np.ndarray  # (hidden_dim, emb_dim)
    q_norm: np.ndarray  # (head_dim,)  Qwen3 QK-norm
    k_norm: np.ndarray  # (head_dim,)  Qwen3 QK-norm


@dataclass
class LlamaWeights:
    embed_table: np.ndarray  # (vocab_size, emb_dim)
    layers: List[LayerWeights] = field(default_factory=list)
    final_norm: np.ndarray = None  # (emb_dim,)
    lm_head: np.ndarray = None  # (vocab_size, emb_dim)


# HF suffix -> (field, needs_transpose)
_HF_LAYER_MAP = {
    "input_layernorm.weight": ("attn_norm", False),
    "self_attn.q_proj.weight": ("wq", True),
    "self_attn.k_proj.weight": ("wk", True),
    "self_attn.v_proj.weight": ("wv", True),
    "self_attn.o_proj.weight": ("wo", True),
    "post_attention_layernorm.weight": ("ffn_norm", False),
    "mlp.gate_proj.weight": ("w_gate", True),
    "mlp.up_proj.weight": ("w_up", True),
    "mlp.down_proj.weight": ("w_down", True),
    "self_attn.q_norm.weight": ("q_norm", False),
    "self_attn.k_norm.weight": ("k_norm", False),
}


def _resolve_safetensor_files(model_path: str) -> List[str]:
    if os.path.isdir(model_path):
        files = sorted(glob_module.glob(os.path.join(model_path, "*.safetensors")))
        if not files:
            raise FileNotFoundError(f"No .safetensors files found in {model_path}")
        return files
    from huggingface_hub import snapshot_download

    local_dir = snapshot_download(
        model_path, allow_patterns=["*.safetensors", "*.json"], local_files_only=True
    )
    return sorted(glob_module.glob(os.path.join(local_dir, "*.safetensors")))


def _load_tensor(file_handle, key: str, dtype) -> np.ndarray:
    tensor = file_handle.get_tensor(key)
    if hasattr(tensor, "numpy"):
        tensor = tensor.numpy()
    return tensor.astype(dtype)


def load_weights(
    model_name_or_path: str,
    dtype=bfloat16,
    config: Optional[LlamaConfig] = None,
) -> LlamaWeights:
    from safetensors import safe_open

    if config is None:
        config = LlamaConfig()

    key_to_file = {}
    for filepath in _resolve_safetensor_files(model_name_or_path):
        with safe_open(filepath, framework="numpy") as f:
            for key in f.keys():
                key_to_file[key] = filepath

    def get(key):
        if key not in key_to_file:
            raise KeyError(f"Missing weight: {key}")
        with safe_open(key_to_file[key], framework="numpy") as f:
            return _load_tensor(f, key, dtype)

    embed_table = get("model.embed_tokens.weight")
    assert embed_table.shape == (config.vocab_size, config.emb_dim)

    layers = []
    for i in range(config.n_layers):
        tensors = {}
        for suffix, (name, transpose) in _HF_LAYER_MAP.items():
            t = get(f"model.layers.{i}.{suffix}")
            tensors[name] = np.ascontiguousarray(t.T) if transpose else t
        layers.append(LayerWeights(**tensors))

    final_norm = get("model.norm.weight")
    if "lm_head.weight" in key_to_file:
        lm_head = get("lm_head.weight")
        assert lm_head.shape == (config.vocab_size, config.emb_dim)
    else:
        print("  Tied embeddings: reusing embed_table as lm_head.")
        lm_head = embed_table

    return LlamaWeights(
        embed_table=embed_table, layers=layers, final_norm=final_norm, lm_head=lm_head
    )


def generate_rope_lut(
    config: Optional[LlamaConfig] = None,
    seq_len: int = 2048,
    dtype=bfloat16,
) -> np.ndarray:
    """RoPE LUT [cos_0..cos_{half-1}, sin_0..sin_{half-1}], (seq_len, head_dim).

    freq_i = 1 / theta^(2i / head_dim); angle = pos * freq_i.
    """
    if config is None:
        config = LlamaConfig()

    head_dim = config.head_dim
    half = head_dim // 2
    theta = config.rope_base

    dim_indices = np.arange(0, head_dim, 2, dtype=np.float64)
    inv_freq = 1.0 / (theta ** (dim_indices / head_dim))
    positions = np.arange(seq_len, dtype=np.float64)
    angles = np.outer(positions, inv_freq)

    lut = np.empty((seq_len, head_dim), dtype=np.float64)
    lut[:, :half] = np.cos(angles)
    lut[:, half:] = np.sin(angles)
    return lut.astype(dtype)
