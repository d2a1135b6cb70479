# Test fixture for phase0: a Q4NX weights module in the style of mlir-air's
# gemma3_4b_q4nx (tiny dimensions: phase0_testmodels.quant.families' Gemma 3).
# Written for phase0 from the folder's description, not copied from mlir-air.

"""Q4NX weight loader for the Gemma3-4B (text) Q4NX example (tiny dims).

The bundle keeps Gemma's text tensors under model.: every RMSNorm weight
already stored as (1 + w) (fed as-is: adding 1 again would fold it twice),
the input embedding already multiplied by sqrt(hidden) in bf16, the LM head
as the raw tied matrix in Q4NX. Headers are I8-packed, so the logical
[out, K] of each projection comes from the constants below.
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

# Gemma3-4B (text) dims (tiny: the test model's text_config).
D = 256  # hidden_size
DH = 128  # head_dim
N_Q_HEADS = 2
N_KV_HEADS = 1
DQ = N_Q_HEADS * DH
DK = N_KV_HEADS * DH
DV = DK
INTER = 512
NUM_LAYERS = 6
VOCAB = 512
RMS_EPS = 1e-6
EMBED_SCALE = float(np.sqrt(D))

ROPE_LOCAL_THETA = 10000.0
ROPE_GLOBAL_THETA = 1000000.0
ROPE_GLOBAL_LINEAR_FACTOR = 8.0
SLIDING_WINDOW = 16
SLIDING_PATTERN = 6


def is_global_layer(layer_idx):
    """Every SLIDING_PATTERN-th layer attends globally; the others are local."""
    return (layer_idx + 1) % SLIDING_PATTERN == 0


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
    """mmap + parse a model.q4nx safetensors file; Gemma's accessors."""

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
        """The four norms (input, post-attention, pre- and post-feedforward), as stored (1 + w)."""
        names = (
            "input_layernorm",
            "post_attention_layernorm",
            "pre_feedforward_layernorm",
            "post_feedforward_layernorm",
        )
        return tuple(self.bf16(f"model.layers.{k}.{n}.weight") for n in names)

    def layer_qk_norm(self, k):
        qn = self.bf16(f"model.layers.{k}.self_attn.q_norm.weight")
        kn = self.bf16(f"model.layers.{k}.self_attn.k_norm.weight")
        return qn, kn

    def embed_norm_lmhead(self):
        """(embedding x sqrt(hidden) as stored, final norm (1 + w), the raw tied head dequantized)."""
        embed_in = self.bf16("model.embed_tokens.weight")
        norm = self.bf16("model.norm.weight")
        lm_head = self.dequant("lm_head.weight", VOCAB, D)
        return embed_in, norm, lm_head


def generate_rope_lut(position, theta, linear_factor=1.0):
    """Half-split cos/sin for one position: [cos(DH/2) ++ sin(DH/2)]."""
    half = DH // 2
    inv_freq = 1.0 / (theta ** (np.arange(0, half, dtype=np.float64) / half))
    ang = (position / linear_factor) * inv_freq
    cos = np.cos(ang).astype(bfloat16).astype(np.float32)
    sin = np.sin(ang).astype(bfloat16).astype(np.float32)
    return np.concatenate([cos, sin]).astype(np.float32)


def rope_w_layer(position, layer_idx, qn, kn):
    """The layer's table (global or local by the pattern) followed by its QK-norms."""
    if is_global_layer(layer_idx):
        lut = generate_rope_lut(position, ROPE_GLOBAL_THETA, ROPE_GLOBAL_LINEAR_FACTOR)
    else:
        lut = generate_rope_lut(position, ROPE_LOCAL_THETA)
    return np.concatenate([lut, qn, kn]).astype(bfloat16)
