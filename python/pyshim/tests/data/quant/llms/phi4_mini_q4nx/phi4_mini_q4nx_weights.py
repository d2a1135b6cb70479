# Test fixture for phase0: a Q4NX weights module in the style of mlir-air's
# phi4_mini_q4nx (tiny dimensions: phase0_testmodels.quant.families' Phi-3); as
# upstream's newer module, llms/ itself is not put on sys.path.
# Written for phase0 from the folder's description, not copied from mlir-air.

"""Q4NX weight loader for the Phi-4-mini-instruct Q4NX example (tiny dims).

The bundle holds q, k, v and gate, up already split (the reference fuses
them), a tied head (the bf16 embedding is the head) and the LongRoPE factor
tables rope.short.weight / rope.long.weight. The Q4NX reader is
llama32_1b_q4nx's; the containers are the bf16 Llama loader's.
"""

import sys
from pathlib import Path

import numpy as np
from ml_dtypes import bfloat16

_HERE = Path(__file__).resolve().parent
_LLMS = _HERE.parent
for _p in (str(_LLMS / "llama32_1b_q4nx"), str(_LLMS / "llama32_1b"), str(_HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from llama32_1b_q4nx_weights import Q4nxModel  # noqa: E402
from llama32_1b_weights import LlamaConfig, LayerWeights, LlamaWeights  # noqa: E402

HF_REPO = "microsoft/Phi-4-mini-instruct"
Q4NX_REPO = "FastFlowLM/Phi4-mini-Instruct-NPU2"

ROPE_DIM = 48  # partial_rotary_factor 0.75 x head_dim 64
ROPE_BASE = 10000.0
ROPE_ORIG_MAX_POS = 64


def phi4_mini_config():
    """LlamaConfig carrying the (tiny) Phi-4-mini dimensions."""
    return LlamaConfig(
        n_layers=2,
        emb_dim=256,
        n_heads=4,
        head_dim=64,
        n_kv_heads=2,
        hidden_dim=512,
        vocab_size=512,
        rope_base=ROPE_BASE,
    )


def longrope_attention_scaling(max_pos=256, orig_max=ROPE_ORIG_MAX_POS):
    """sqrt(1 + ln(max/orig)/ln(orig)): the cos/sin multiplier of LongRoPE."""
    return float(np.sqrt(1.0 + np.log(max_pos / orig_max) / np.log(orig_max)))


def longrope_inv_freq(factors, dim=ROPE_DIM, theta=ROPE_BASE):
    f = np.asarray(factors, np.float64).reshape(-1)
    base = theta ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    return 1.0 / (f * base)


def load_rope_factors(model_source=None):
    qm = Q4nxModel(model_source or Q4NX_REPO)
    return (
        np.asarray(qm.bf16("rope.short.weight"), np.float64),
        np.asarray(qm.bf16("rope.long.weight"), np.float64),
    )


def generate_rope_lut(config=None, seq_len=2048, dtype=bfloat16, model_source=None):
    """[seq_len, ROPE_DIM] = [cos..., sin...]: short factors up to the original
    context, long beyond it, both scaled by the LongRoPE attention factor."""
    config = config or phi4_mini_config()
    short, long_ = load_rope_factors(model_source)
    factors = short if seq_len <= ROPE_ORIG_MAX_POS else long_
    inv = longrope_inv_freq(factors, dim=ROPE_DIM, theta=config.rope_base)
    angles = np.outer(np.arange(seq_len, dtype=np.float64), inv)
    scale = longrope_attention_scaling()
    return np.concatenate([np.cos(angles) * scale, np.sin(angles) * scale], axis=1).astype(dtype)


def _proj_dims(c):
    dq, dkv = c.n_heads * c.head_dim, c.n_kv_heads * c.head_dim
    return {
        "q": ("self_attn.q_proj", dq, c.emb_dim),
        "k": ("self_attn.k_proj", dkv, c.emb_dim),
        "v": ("self_attn.v_proj", dkv, c.emb_dim),
        "o": ("self_attn.o_proj", c.emb_dim, dq),
        "gate": ("mlp.gate_proj", c.hidden_dim, c.emb_dim),
        "up": ("mlp.up_proj", c.hidden_dim, c.emb_dim),
        "down": ("mlp.down_proj", c.emb_dim, c.hidden_dim),
    }


def load_q4nx_weights(model_source=None, config=None):
    """The bundle as a LlamaWeights (dequantized bf16, (in, out) projections)."""
    config = config or phi4_mini_config()
    qm = Q4nxModel(model_source or Q4NX_REPO)
    embed = np.asarray(qm.bf16("model.embed_tokens.weight"), bfloat16)
    norm = np.asarray(qm.bf16("model.norm.weight"), bfloat16)
    layers = []
    for k in range(config.n_layers):
        w = {}
        for key, (t, M, K) in _proj_dims(config).items():
            wt = qm.dequant(f"model.layers.{k}.{t}.weight", M, K)
            w[key] = np.ascontiguousarray(wt.T, dtype=bfloat16)
        rms_in, rms_post = qm.layer_rms(k)
        layers.append(
            LayerWeights(
                attn_norm=np.asarray(rms_in, bfloat16),
                wq=w["q"],
                wk=w["k"],
                wv=w["v"],
                wo=w["o"],
                ffn_norm=np.asarray(rms_post, bfloat16),
                w_gate=w["gate"],
                w_up=w["up"],
                w_down=w["down"],
            )
        )
    return LlamaWeights(embed_table=embed, layers=layers, final_norm=norm, lm_head=embed)
