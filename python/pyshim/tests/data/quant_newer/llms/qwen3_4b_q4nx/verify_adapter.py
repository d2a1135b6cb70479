# Test fixture for phase0: a verify adapter in the style of mlir-air's newer
# qwen3_4b_q4nx (what phase0 reads: MODEL_CHOICES and the bundle's source).

"""Verify adapter for the Q4NX Qwen3-4B example (fixture)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

_THIS_DIR = Path(__file__).resolve().parent
for _p in (str(_THIS_DIR.parent / "verify"), str(_THIS_DIR)):
    while _p in sys.path:
        sys.path.remove(_p)
    sys.path.insert(0, _p)

import qwen3_4b_q4nx_weights as _w  # noqa: E402

_N_LAYERS = _w.NUM_LAYERS

# Qwen3-4B ships one checkpoint: both keys map to it.
MODEL_CHOICES = {
    "base": "Qwen/Qwen3-4B",
    "instruct": "Qwen/Qwen3-4B",
}
DEFAULT_MODEL = "instruct"

Q4NX_MODEL_SOURCE = os.environ.get("Q4NX_MODEL_SOURCE", "FastFlowLM/Qwen3-4B-NPU2")


def resolve_model(model_choice_or_id: str) -> str:
    return MODEL_CHOICES.get(model_choice_or_id, model_choice_or_id)


def hf_reference(npu_model_name: str) -> str:
    return npu_model_name


def build_config():
    return _w.qwen3_4b_q4nx_config()
