# Test fixture for phase0: a Q4_0 weights module in the style of mlir-air's
# qwen25_3b_q4 (tiny dimensions: phase0_testmodels.quant's 256-wide qwen2).
# Written for phase0 from the format facts, not copied from mlir-air.

"""Q4_0 weight loader for the Qwen2.5-3B Q4 example (tiny dims).

No bundle: the bf16 HF checkpoint is quantized to Q4_0 tensor by tensor on
load and dequantized back to bf16 (in, out); biases, norms and the tied
embedding stay bf16.
"""

import sys
from pathlib import Path

import numpy as np
from ml_dtypes import bfloat16

_FUSED_DECODE = str(Path(__file__).resolve().parents[2] / "fused_decode")
_QWEN25 = str(Path(__file__).resolve().parents[1] / "qwen25_0_5b")
for _p in (_FUSED_DECODE, _QWEN25):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from qwen25_3b_requant import HFModel, HF_REPO, requant_q4_0  # noqa: E402
from proj_qmm_pack import GROUP  # noqa: E402
from qwen25_0_5b_weights import LlamaConfig, LayerWeights, LlamaWeights  # noqa: E402

# Qwen2.5-3B dims (tiny: the test model's config.json).
D = 256  # model dim
DQ = 256  # q proj out (4 heads * 64)
DK = 128  # k proj out (2 kv heads * 64)
DV = 128
DH = 64
N_Q_HEADS = 4
N_KV_HEADS = 2
INTER = 512
VOCAB = 512
N_LAYERS = 2
ROPE_THETA = 1000000.0
RMS_EPS = 1e-6

_PROJ = {
    "q": "self_attn.q_proj",
    "k": "self_attn.k_proj",
    "v": "self_attn.v_proj",
    "o": "self_attn.o_proj",
    "up": "mlp.up_proj",
    "gate": "mlp.gate_proj",
    "down": "mlp.down_proj",
}


def dequant_q4_0(q_u8, scale, group=GROUP):
    """(uint8 two's-complement codes [M,K], scale [M,K/g]) -> float32 [M,K]."""
    return q_u8.view(np.int8).astype(np.float32) * np.repeat(scale, group, axis=1)


def qwen25_3b_config(n_layers=N_LAYERS):
    return LlamaConfig(
        n_layers=n_layers,
        emb_dim=D,
        n_heads=N_Q_HEADS,
        head_dim=DH,
        n_kv_heads=N_KV_HEADS,
        hidden_dim=INTER,
        vocab_size=VOCAB,
        rope_base=ROPE_THETA,
    )


class Qwen25Q4Model:
    """HF bf16 checkpoint -> Q4_0 -> bf16, tensor by tensor."""

    def __init__(self, model=HF_REPO):
        self.hf = HFModel(model)

    def _q4(self, name):
        q, sc = requant_q4_0(self.hf.bf16(name))
        return np.ascontiguousarray(dequant_q4_0(q, sc).T, dtype=bfloat16)

    def layer_weights(self, k):
        return {nm: self._q4(f"model.layers.{k}.{t}.weight") for nm, t in _PROJ.items()}

    def layer_bias(self, k):
        return tuple(
            np.asarray(self.hf.bf16(f"model.layers.{k}.{_PROJ[p]}.bias"), bfloat16)
            for p in ("q", "k", "v")
        )

    def layer_rms(self, k):
        return (
            self.hf.bf16(f"model.layers.{k}.input_layernorm.weight"),
            self.hf.bf16(f"model.layers.{k}.post_attention_layernorm.weight"),
        )

    def embed_norm_lmhead(self):
        """Tied: the LM head is the bf16 embedding."""
        embed = self.hf.bf16("model.embed_tokens.weight")
        return embed, self.hf.bf16("model.norm.weight"), embed


def load_q4_weights(model=HF_REPO, config=None, n_layers=None):
    config = config or qwen25_3b_config()
    n_layers = config.n_layers if n_layers is None else n_layers
    qm = Qwen25Q4Model(model)
    layers = []
    for k in range(n_layers):
        W = qm.layer_weights(k)
        rms_in, rms_post = qm.layer_rms(k)
        bq, bk, bv = qm.layer_bias(k)
        layers.append(
            LayerWeights(
                attn_norm=np.asarray(rms_in, bfloat16),
                wq=W["q"],
                wk=W["k"],
                wv=W["v"],
                wo=W["o"],
                ffn_norm=np.asarray(rms_post, bfloat16),
                w_gate=W["gate"],
                w_up=W["up"],
                w_down=W["down"],
                bq=bq,
                bk=bk,
                bv=bv,
            )
        )
    embed, final_norm, lm_head = qm.embed_norm_lmhead()
    return LlamaWeights(
        embed_table=np.asarray(embed, bfloat16),
        layers=layers,
        final_norm=np.asarray(final_norm, bfloat16),
        lm_head=np.asarray(lm_head, bfloat16),
    )
