# Test fixture for phase0: a weights module in the style of mlir-air's newer
# qwen25_3b_q4, which reads FastFlowLM's Qwen2.5-3B bundle (tiny dimensions:
# phase0_testmodels.quant's 256-wide qwen2 with an FFN of 448 padded to 512).
# Written for phase0 from the format facts (docs/formats.md), not copied from mlir-air.

"""Q4_0-in-Q4NX loader for the Qwen2.5-3B Q4 example (fixture).

The bundle's model.q4nx holds Q4NX's 32x256 blocks under I8 headers, but the
codec is signed Q4_0: two's-complement nibbles, w = q * scale, the mins slot
zero. An AWQ-style smoothing is folded into norms and projections, and the
FFN is padded with zeros to INTER_PAD; the host loader returns INTER.
"""

import json
import os
import sys
from pathlib import Path

import numpy as np
from ml_dtypes import bfloat16

_FUSED_DECODE = str(Path(__file__).resolve().parents[2] / "fused_decode")
_QWEN25 = str(Path(__file__).resolve().parents[1] / "qwen25_0_5b")
for _p in (_FUSED_DECODE, _QWEN25):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from proj_qmm_pack import BLOCK_BYTES, COL_BLOCK, GROUP, N_GROUPS, PARALLEL, ROW_BLOCK  # noqa: E402
from qwen25_0_5b_weights import LayerWeights, LlamaConfig, LlamaWeights  # noqa: E402

D = 256
DH = 64
N_Q_HEADS = 4
N_KV_HEADS = 2
DQ = N_Q_HEADS * DH
DK = N_KV_HEADS * DH
DV = DK
INTER = 448
INTER_PAD = 512
NUM_LAYERS = 2
VOCAB = 512
RMS_EPS = 1e-6
ROPE_THETA = 1000000.0

_PROJ = {
    "q": ("self_attn.q_proj", DQ, D),
    "k": ("self_attn.k_proj", DK, D),
    "v": ("self_attn.v_proj", DV, D),
    "o": ("self_attn.o_proj", D, DQ),
    "gate": ("mlp.gate_proj", INTER_PAD, D),
    "up": ("mlp.up_proj", INTER_PAD, D),
    "down": ("mlp.down_proj", D, INTER_PAD),
}


def _bundle_path(model):
    if os.path.isdir(model):
        return os.path.join(model, "model.q4nx")
    return model


class Q4nxModel:
    """A model.q4nx memory-mapped; each quantized tensor dequantized by raw_q4_0."""

    def __init__(self, model):
        self._mm = np.memmap(_bundle_path(model), dtype=np.uint8, mode="r")
        n = int(np.frombuffer(self._mm[:8].tobytes(), dtype="<u8")[0])
        self._hdr = json.loads(self._mm[8 : 8 + n].tobytes())
        self._base = 8 + n

    def _bytes(self, name):
        a, b = self._hdr[name]["data_offsets"]
        return self._mm[self._base + a : self._base + b]

    def bf16(self, name):
        v = np.frombuffer(self._bytes(name).tobytes(), dtype=bfloat16)
        return v.astype(np.float32).reshape(self._hdr[name]["shape"])

    def raw_q4_0(self, name, M, K):
        """(signed codes int8 [M, K], scales float32 [M, K/GROUP]) of a block-major tensor."""
        rb, cb = M // ROW_BLOCK, K // COL_BLOCK
        blocks = np.frombuffer(self._bytes(name).tobytes(), dtype=np.uint8).reshape(rb, cb, BLOCK_BYTES)
        half = N_GROUPS * ROW_BLOCK * 2
        if blocks[..., half : 2 * half].any():
            raise ValueError(f"{name}: the mins slot is not zero")
        sc = blocks[..., :half].copy().view(bfloat16).astype(np.float32)
        sc = sc.reshape(rb, cb, N_GROUPS, ROW_BLOCK).transpose(0, 3, 1, 2).reshape(M, K // GROUP)
        nib = blocks[..., 2 * half :].reshape(rb, cb, ROW_BLOCK // PARALLEL, COL_BLOCK, PARALLEL // 2)
        pairs = np.stack([nib & 0xF, nib >> 4], axis=-1)  # [rb, cb, group, col, byte, low/high]
        q = pairs.transpose(0, 1, 2, 4, 5, 3).reshape(rb, cb, ROW_BLOCK, COL_BLOCK)
        q = q.transpose(0, 2, 1, 3).reshape(M, K)
        signed = (q.astype(np.int16) ^ 8) - 8
        return signed.astype(np.int8), sc

    def dequant(self, name, M, K):
        q, sc = self.raw_q4_0(name, M, K)
        return q.astype(np.float32) * np.repeat(sc, GROUP, axis=1)

    def layer_weights(self, k):
        """Each projection (in, out) bf16 at the logical FFN width."""
        out = {}
        for nm, (t, M, K) in _PROJ.items():
            w = self.dequant(f"model.layers.{k}.{t}.weight", M, K)
            if nm in ("gate", "up"):
                w = w[:INTER]
            elif nm == "down":
                w = w[:, :INTER]
            out[nm] = np.ascontiguousarray(w.T, dtype=bfloat16)
        return out

    def layer_rms(self, k):
        return tuple(self.bf16(f"model.layers.{k}.{n}.weight") for n in ("input_layernorm", "post_attention_layernorm"))

    def layer_qkv_bias(self, k):
        return tuple(self.bf16(f"model.layers.{k}.self_attn.{n}_proj.bias") for n in ("q", "k", "v"))

    def embed_norm_lmhead(self):
        """The shipped Q4_0 lm_head, though the config ties it."""
        return (
            self.bf16("model.embed_tokens.weight"),
            self.bf16("model.norm.weight"),
            self.dequant("lm_head.weight", VOCAB, D),
        )


def qwen25_3b_config(n_layers=NUM_LAYERS):
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


def load_q4nx_weights(model_source, config=None, n_layers=None):
    config = config or qwen25_3b_config()
    n_layers = config.n_layers if n_layers is None else n_layers
    qm = Q4nxModel(model_source)
    layers = []
    for k in range(n_layers):
        w = qm.layer_weights(k)
        rms_in, rms_post = qm.layer_rms(k)
        bq, bk, bv = qm.layer_qkv_bias(k)
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
                bq=np.asarray(bq, bfloat16),
                bk=np.asarray(bk, bfloat16),
                bv=np.asarray(bv, bfloat16),
            )
        )
    embed, norm, head = qm.embed_norm_lmhead()
    return LlamaWeights(
        embed_table=np.asarray(embed, bfloat16),
        layers=layers,
        final_norm=np.asarray(norm, bfloat16),
        lm_head=np.asarray(head, bfloat16),
    )


load_q4_weights = load_q4nx_weights
