# Test fixture for phase0: an AWQ weights module in the style of mlir-air's
# llama32_1b_int4 (tiny dimensions: phase0_testmodels.quant's 256-wide llama).
# Written for phase0 from AutoAWQ's format, not copied from mlir-air.

"""AutoAWQ (g128, asymmetric uint4) loader for the int4 Llama-3.2-1B example.

Returns the bf16 loader's LlamaWeights with each projection dequantized to bf16
[in, out]: w = (q - z) * s, scales rounded to bf16 first (what the NPU sees).
"""

import sys
from pathlib import Path
from typing import List, Optional

import numpy as np
from ml_dtypes import bfloat16

_THIS_DIR = Path(__file__).resolve().parent
_LLMS_DIR = _THIS_DIR.parent
_PROG_EXAMPLES = _LLMS_DIR.parent
for p in (str(_LLMS_DIR), str(_LLMS_DIR / "llama32_1b"), str(_THIS_DIR)):
    if p not in sys.path:
        sys.path.insert(0, p)

from llama32_1b_weights import (  # noqa: E402
    LlamaConfig,
    LayerWeights,
    LlamaWeights,
    _resolve_safetensor_files,
    _load_tensor,
)

sys.path.insert(0, str(_PROG_EXAMPLES / "matrix_vector_multiplication" / "int4_awq"))
from awq_unpack import unpack_int32  # noqa: E402

# Llama-3.2-1B dims (tiny: the test model's config.json).
D = 256
INTER = 512
VOCAB = 512
N_LAYERS = 2
ROPE_THETA = 500000.0
RMS_EPS = 1e-5
GROUP_SIZE = 128

_HF_AWQ_LINEARS = {
    "self_attn.q_proj": "wq",
    "self_attn.k_proj": "wk",
    "self_attn.v_proj": "wv",
    "self_attn.o_proj": "wo",
    "mlp.gate_proj": "w_gate",
    "mlp.up_proj": "w_up",
    "mlp.down_proj": "w_down",
}


def llama32_1b_int4_config():
    return LlamaConfig(
        n_layers=N_LAYERS,
        emb_dim=D,
        n_heads=4,
        head_dim=64,
        n_kv_heads=2,
        hidden_dim=INTER,
        vocab_size=VOCAB,
        rope_base=ROPE_THETA,
    )


def dequant_to_bf16(qweight, qzeros, scales, group_size):
    """AutoAWQ tensors -> bf16 [in, out]."""
    q = unpack_int32(qweight).astype(np.float32)
    z = np.repeat(unpack_int32(qzeros).astype(np.float32), group_size, axis=0)
    s = np.repeat(
        np.asarray(scales).astype(bfloat16).astype(np.float32), group_size, axis=0
    )
    return ((q - z) * s).astype(bfloat16)


def load_weights_awq(
    model_name_or_path: str,
    config: Optional[LlamaConfig] = None,
    group_size: int = GROUP_SIZE,
) -> LlamaWeights:
    from safetensors import safe_open

    config = config or llama32_1b_int4_config()
    key_to_file = {}
    for filepath in _resolve_safetensor_files(model_name_or_path):
        with safe_open(filepath, framework="numpy") as f:
            for key in f.keys():
                key_to_file[key] = filepath

    def get(key, dtype=None):
        if key not in key_to_file:
            raise KeyError(f"Missing tensor: {key} (is this an AutoAWQ checkpoint?)")
        with safe_open(key_to_file[key], framework="numpy") as f:
            return _load_tensor(f, key, dtype) if dtype else f.get_tensor(key)

    embed_table = get("model.embed_tokens.weight", bfloat16)
    layers: List[LayerWeights] = []
    for i in range(config.n_layers):
        linear = {}
        for hf_prefix, field_name in _HF_AWQ_LINEARS.items():
            base = f"model.layers.{i}.{hf_prefix}"
            linear[field_name] = dequant_to_bf16(
                get(f"{base}.qweight"),
                get(f"{base}.qzeros"),
                get(f"{base}.scales"),
                group_size,
            )
        layers.append(
            LayerWeights(
                attn_norm=get(f"model.layers.{i}.input_layernorm.weight", bfloat16),
                ffn_norm=get(
                    f"model.layers.{i}.post_attention_layernorm.weight", bfloat16
                ),
                **linear,
            )
        )
    final_norm = get("model.norm.weight", bfloat16)
    if "lm_head.weight" in key_to_file:
        lm_head = get("lm_head.weight", bfloat16)
    else:
        lm_head = embed_table
    return LlamaWeights(
        embed_table=embed_table, layers=layers, final_norm=final_norm, lm_head=lm_head
    )
