# Test fixture for phase0: a verify adapter in the style of mlir-air's
# qwen25_3b_q4 (what phase0 reads: MODEL_CHOICES).

"""Verify adapter for the Q4_0 Qwen2.5-3B example (fixture).

The weights are the bf16 checkpoint quantized to Q4_0 on load; the reference is
the same checkpoint in bf16.
"""

from __future__ import annotations

import os

MODEL_CHOICES = {
    "base": "Qwen/Qwen2.5-3B",
    "instruct": "Qwen/Qwen2.5-3B-Instruct",
}
DEFAULT_MODEL = "instruct"

QWEN_Q4_MODEL_SOURCE = os.environ.get("QWEN_Q4_MODEL_SOURCE", "")


def resolve_model(model_choice_or_id: str) -> str:
    return MODEL_CHOICES.get(model_choice_or_id, model_choice_or_id)


def hf_reference(npu_model_name: str) -> str:
    return npu_model_name
