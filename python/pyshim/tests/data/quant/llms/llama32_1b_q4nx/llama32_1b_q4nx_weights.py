# Test fixture for phase0: a Q4NX weights module in the style of mlir-air's
# llama32_1b_q4nx (tiny dimensions: phase0_testmodels.quant's 256-wide llama).
# Written for phase0 from the format facts, not copied from mlir-air.

"""Q4NX weight loader + dequant for the Llama-3.2-1B Q4NX example (tiny dims).

Reads a FastFlowLM model.q4nx bundle (a safetensors file with HF tensor names:
bf16 embedding and norms, Q4NX-blocked projections under an I8 or Q4NX header)
and returns dequantized bf16 matrices in the (in, out) layout of the bf16
loaders.
"""

import json
import os
import sys
from pathlib import Path

import numpy as np
from ml_dtypes import bfloat16

# The block geometry and dequant live in the fused_decode example.
_FUSED_DECODE = str(Path(__file__).resolve().parents[2] / "fused_decode")
if _FUSED_DECODE not in sys.path:
    sys.path.insert(0, _FUSED_DECODE)
from proj_qmm_pack import (  # noqa: E402
    ROW_BLOCK,
    COL_BLOCK,
    dequant_blocks,
)

# Llama-3.2-1B dims (tiny: phase0_testmodels.quant, config.json of the test model).
D = 256  # model dim
DQ = 256  # q proj out (4 heads * 64)
DK = 128  # k proj out (2 kv heads * 64)
DV = 128
DH = 64  # head dim
N_Q_HEADS = 4
N_KV_HEADS = 2
INTER = 512  # mlp intermediate
VOCAB = 512
N_LAYERS = 2
ROPE_THETA = 500000.0
RMS_EPS = 1e-5


def resolve_q4nx_model(model):
    """An HF repo id, a directory holding model.q4nx, or the file itself."""
    if os.path.isfile(model):
        return model
    if os.path.isdir(model):
        p = os.path.join(model, "model.q4nx")
        if os.path.isfile(p):
            return p
    from huggingface_hub import hf_hub_download

    return hf_hub_download(model, "model.q4nx")


class Q4nxModel:
    """mmap + parse a model.q4nx safetensors file; vectorized dequant."""

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
        """A BF16 tensor as float32, in its declared shape."""
        v = np.frombuffer(self._raw(name).tobytes(), dtype=bfloat16)
        return v.astype(np.float32).reshape(self._hdr[name]["shape"])

    def dequant(self, name, M, K):
        """A quantized tensor as float32 [M, K]; the header dtype picks the codec."""
        e = self._hdr[name]
        if e["dtype"] == "Q4NX":
            assert tuple(e["shape"]) == (M, K), f"{name}: header {e['shape']}"
        else:
            nb = (M // ROW_BLOCK) * (K // COL_BLOCK)
            assert e["shape"][0] == nb, f"{name}: {e['shape'][0]} blocks != {nb}"
        return dequant_blocks(
            self._raw(name), M, K, subtract_zero_point=e["dtype"] == "Q4NX"
        )

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
        """Dequantized bf16 GEMM input-B [K, out] per projection for layer k."""
        out = {}
        for nm, (t, M, K) in self._PROJ.items():
            wt = self.dequant(f"model.layers.{k}.{t}.weight", M, K)  # [out, K]
            out[nm] = np.ascontiguousarray(wt.T, dtype=bfloat16)  # [K, out]
        return out

    def layer_rms(self, k):
        """(input_layernorm, post_attention_layernorm) float32 for layer k."""
        return (
            self.bf16(f"model.layers.{k}.input_layernorm.weight"),
            self.bf16(f"model.layers.{k}.post_attention_layernorm.weight"),
        )

    def embed_norm_lmhead(self):
        """(embed [VOCAB,D], final_norm [D], lm_head [VOCAB,D]) float32.

        Llama-3.2-1B ties the LM head to the embedding: the bundle's quantized
        lm_head copy is not used, the bf16 embedding is."""
        embed = self.bf16("model.embed_tokens.weight")
        norm = self.bf16("model.norm.weight")
        return embed, norm, embed
