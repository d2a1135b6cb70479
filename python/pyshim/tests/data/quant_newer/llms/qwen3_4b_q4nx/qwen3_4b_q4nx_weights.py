# Test fixture for phase0: a Q4NX weights module in the style of mlir-air's
# newer qwen3_4b_q4nx (tiny dimensions: phase0_testmodels.quant's 256-wide
# qwen3 with 128-wide heads, so DQ 512 != D 256, and a tied head).
# Written for phase0 from the format facts, not copied from mlir-air.

"""Q4NX weight loader for the Qwen3-4B Q4NX example (tiny dims).

The 8B reader re-parameterized: the codec, header parsing and accessors are
inherited and driven by _PROJ. Two deltas from 8B: the dimensions (the q
dim is decoupled from D, so o_proj maps DQ -> D) and a TIED head: the bundle
carries no lm_head.weight, the head is the bf16 embedding.
"""

import sys
from pathlib import Path

import numpy as np
from ml_dtypes import bfloat16

_Q8B = str(Path(__file__).resolve().parents[1] / "qwen3_8b_q4nx")
if _Q8B not in sys.path:
    sys.path.insert(0, _Q8B)

from qwen3_8b_q4nx_weights import (  # noqa: E402
    Q4nxModel as _Q4nxModel8B,
    _qwen3_containers,
    resolve_q4nx_model,
)

# Qwen3-4B dims (tiny: the test model's config.json).
D = 256  # hidden_size
DH = 128  # head_dim
N_Q_HEADS = 4
N_KV_HEADS = 2
Q_PER_KV = N_Q_HEADS // N_KV_HEADS
DQ = N_Q_HEADS * DH  # 512 -- NOT equal to D, so o_proj is 512 -> 256
DK = N_KV_HEADS * DH  # 256
DV = DK
INTER = 512  # mlp intermediate
NUM_LAYERS = 2
VOCAB = 512
RMS_EPS = 1e-6
ROPE_THETA = 1000000.0

assert DQ != D, "Qwen3-4B has a decoupled q dim; o_proj contracts DQ -> D"


class Q4nxModel(_Q4nxModel8B):
    """Qwen3-8B's Q4NX reader at Qwen3-4B's dimensions, with a TIED head."""

    _PROJ = {
        "q": ("self_attn.q_proj", DQ, D),
        "k": ("self_attn.k_proj", DK, D),
        "v": ("self_attn.v_proj", DV, D),
        "o": ("self_attn.o_proj", D, DQ),
        "up": ("mlp.up_proj", INTER, D),
        "gate": ("mlp.gate_proj", INTER, D),
        "down": ("mlp.down_proj", D, INTER),
    }

    def embed_norm_lmhead(self):
        """TIED: the head IS the embedding matrix (no lm_head.weight in the bundle)."""
        embed_in = self.bf16("model.embed_tokens.weight")
        norm = self.bf16("model.norm.weight").astype(np.float32)
        return embed_in, norm, embed_in


def qwen3_4b_q4nx_config(n_layers=NUM_LAYERS):
    """The bf16 Qwen3 LlamaConfig at these dims, tied."""
    return _qwen3_containers().LlamaConfig(
        n_layers=n_layers,
        emb_dim=D,
        n_heads=N_Q_HEADS,
        head_dim=DH,
        n_kv_heads=N_KV_HEADS,
        hidden_dim=INTER,
        vocab_size=VOCAB,
        rope_base=ROPE_THETA,
        tie_word_embeddings=True,  # 4B ties; 8B does not
    )


def load_q4nx_weights(model_source, config=None):
    """The bundle as the bf16 loaders' LlamaWeights; lm_head is the embedding."""
    mod = _qwen3_containers()
    config = config or qwen3_4b_q4nx_config()
    qm = Q4nxModel(model_source)
    embed, norm, lm_head = qm.embed_norm_lmhead()
    layers = []
    for k in range(config.n_layers):
        w = qm.layer_weights(k)
        rms_in, rms_post = qm.layer_rms(k)
        qn, kn = qm.layer_qk_norm(k)
        layers.append(
            mod.LayerWeights(
                attn_norm=np.asarray(rms_in, bfloat16),
                wq=w["q"],
                wk=w["k"],
                wv=w["v"],
                wo=w["o"],
                ffn_norm=np.asarray(rms_post, bfloat16),
                w_gate=w["gate"],
                w_up=w["up"],
                w_down=w["down"],
                q_norm=np.asarray(qn, bfloat16),
                k_norm=np.asarray(kn, bfloat16),
            )
        )
    return mod.LlamaWeights(
        embed_table=np.asarray(embed, bfloat16),
        layers=layers,
        final_norm=np.asarray(norm, bfloat16),
        lm_head=np.asarray(lm_head, bfloat16),
    )


__all__ = ["Q4nxModel", "load_q4nx_weights", "qwen3_4b_q4nx_config", "resolve_q4nx_model"]
