# Test fixture for phase0: a Q4NX weights module in the style of mlir-air's
# qwen3_8b_q4nx (tiny dimensions: phase0_testmodels.quant's 256-wide qwen3).
# Written for phase0 from the format facts, not copied from mlir-air.

"""Q4NX weight loader for the Qwen3-8B Q4NX example (tiny dims).

A model.q4nx bundle with I8-packed headers: the logical [out, K] of each
projection comes from the constants below. Qwen3 adds per-head QK-norms (bf16,
byte-identical to the checkpoint) and does not tie: lm_head is its own Q4NX
tensor.
"""

import json
import os
import sys
from pathlib import Path

import numpy as np
from ml_dtypes import bfloat16

_FUSED_DECODE = str(Path(__file__).resolve().parents[2] / "fused_decode")
if _FUSED_DECODE not in sys.path:
    sys.path.insert(0, _FUSED_DECODE)
from proj_qmm_pack import ROW_BLOCK, COL_BLOCK, dequant_blocks  # noqa: E402

# Qwen3-8B dims (tiny: the test model's config.json).
D = 256  # hidden_size
DH = 64  # head_dim
N_Q_HEADS = 4
N_KV_HEADS = 2
DQ = N_Q_HEADS * DH  # 256
DK = N_KV_HEADS * DH  # 128
DV = DK
INTER = 512  # mlp intermediate
NUM_LAYERS = 2
VOCAB = 512
RMS_EPS = 1e-6
ROPE_THETA = 1000000.0


def resolve_q4nx_model(model):
    if os.path.isfile(model):
        return model
    if os.path.isdir(model):
        p = os.path.join(model, "model.q4nx")
        if os.path.isfile(p):
            return p
    from huggingface_hub import hf_hub_download

    return hf_hub_download(model, "model.q4nx")


class Q4nxModel:
    """mmap + parse a model.q4nx safetensors file; vectorized I8 dequant."""

    def __init__(self, model):
        path = resolve_q4nx_model(model)
        self._mm = np.memmap(path, dtype=np.uint8, mode="r")
        hlen = int(np.frombuffer(self._mm[:8].tobytes(), dtype="<u8")[0])
        self._hdr = json.loads(self._mm[8 : 8 + hlen].tobytes())
        self._base = 8 + hlen

    def _raw(self, name):
        o0, o1 = self._hdr[name]["data_offsets"]
        return self._mm[self._base + o0 : self._base + o1]

    def bf16(self, name):
        v = np.frombuffer(self._raw(name).tobytes(), dtype=bfloat16)
        return v.astype(np.float32).reshape(self._hdr[name]["shape"])

    def dequant(self, name, M, K):
        """An I8-packed tensor as float32 [M, K] (w = scale*q + min)."""
        nb = (M // ROW_BLOCK) * (K // COL_BLOCK)
        assert self._hdr[name]["shape"][0] == nb, f"{name}: header nb != {nb}"
        return dequant_blocks(self._raw(name), M, K)

    # name -> (tensor suffix, out, in) logical dims (bundle is block-major).
    _PROJ = {
        "q": ("self_attn.q_proj", DQ, D),
        "k": ("self_attn.k_proj", DK, D),
        "v": ("self_attn.v_proj", DV, D),
        "o": ("self_attn.o_proj", D, DQ),
        "up": ("mlp.up_proj", INTER, D),
        "gate": ("mlp.gate_proj", INTER, D),
        "down": ("mlp.down_proj", D, INTER),
    }

    def layer_weights(self, k):
        out = {}
        for nm, (t, M, K) in self._PROJ.items():
            wt = self.dequant(f"model.layers.{k}.{t}.weight", M, K)
            out[nm] = np.ascontiguousarray(wt.T, dtype=bfloat16)
        return out

    def layer_rms(self, k):
        return tuple(
            self.bf16(f"model.layers.{k}.{n}.weight")
            for n in ("input_layernorm", "post_attention_layernorm")
        )

    def layer_qk_norm(self, k):
        qn = self.bf16(f"model.layers.{k}.self_attn.q_norm.weight")
        kn = self.bf16(f"model.layers.{k}.self_attn.k_norm.weight")
        return qn, kn

    def embed_norm_lmhead(self):
        """Not tied: a bf16 embedding and a separate Q4NX lm_head."""
        embed_in = self.bf16("model.embed_tokens.weight")
        norm = self.bf16("model.norm.weight")
        lm_head = self.dequant("lm_head.weight", VOCAB, D)
        return embed_in, norm, lm_head


def _qwen3_containers():
    sibling = str(Path(__file__).resolve().parents[1] / "qwen3_0_6b")
    if sibling not in sys.path:
        sys.path.insert(0, sibling)
    import qwen3_0_6b_weights

    return qwen3_0_6b_weights


def qwen3_8b_config(n_layers=NUM_LAYERS):
    """The bf16 Qwen3 LlamaConfig re-parameterized to these dims."""
    return _qwen3_containers().LlamaConfig(
        n_layers=n_layers,
        emb_dim=D,
        n_heads=N_Q_HEADS,
        head_dim=DH,
        n_kv_heads=N_KV_HEADS,
        hidden_dim=INTER,
        vocab_size=VOCAB,
        rope_base=ROPE_THETA,
        tie_word_embeddings=False,
    )


def load_q4nx_weights(model_source, config=None):
    """The bundle as the bf16 loaders' LlamaWeights (dequantized bf16)."""
    mod = _qwen3_containers()
    config = config or qwen3_8b_config()
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
