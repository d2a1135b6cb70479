# Test fixture for phase0: the host Q4_0 quantizer and safetensors reader a
# qwen25_3b_q4-style module imports from ../../fused_decode, written for phase0
# from the format facts.

"""Q4_0 of a bf16 HF checkpoint: symmetric signed 4-bit per 32 input columns.

scale = amax / 8 (llama.cpp's magnitude convention), q = clip(rint(w/scale),
-8, 7), one code per byte; an all-zero group gets scale 1.
"""

import glob
import json
import os

import numpy as np
from ml_dtypes import bfloat16

from proj_qmm_pack import GROUP

HF_REPO = "Qwen/Qwen2.5-3B-Instruct"


class HFModel:
    """mmap + parse the safetensors files of a local model folder or repo id."""

    def __init__(self, model=HF_REPO):
        self._files = {}
        for f in self._resolve(model):
            mm = np.memmap(f, dtype=np.uint8, mode="r")
            hlen = int(np.frombuffer(mm[:8].tobytes(), dtype="<u8")[0])
            hdr = json.loads(mm[8 : 8 + hlen].tobytes())
            hdr.pop("__metadata__", None)
            for name, e in hdr.items():
                self._files[name] = (mm, e, 8 + hlen)

    @staticmethod
    def _resolve(model):
        if os.path.isfile(model):
            return [model]
        if not os.path.isdir(model):
            from huggingface_hub import snapshot_download

            model = snapshot_download(model, allow_patterns=["*.safetensors", "*.json"])
        return sorted(glob.glob(os.path.join(model, "*.safetensors")))

    def has(self, name):
        return name in self._files

    def bf16(self, name):
        mm, e, base = self._files[name]
        o0, o1 = e["data_offsets"]
        dt = {"BF16": bfloat16, "F32": np.float32, "F16": np.float16}[e["dtype"]]
        raw = mm[base + o0 : base + o1].tobytes()
        return np.frombuffer(raw, dtype=dt).astype(np.float32).reshape(e["shape"])


def requant_q4_0(w, group=GROUP):
    """[M, K] -> (uint8 two's-complement codes [M, K], float32 scale [M, K/group])."""
    M, K = w.shape
    g = w.reshape(M, K // group, group)
    amax = np.abs(g).max(2)
    sc = np.where(amax <= 0, 1.0, amax / 8.0).astype(np.float32)
    q = np.clip(np.rint(g / sc[..., None]), -8, 7).astype(np.int8)
    return q.reshape(M, K).view(np.uint8), sc
