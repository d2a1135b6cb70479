# Test fixture for phase0: a verify adapter in the style of mlir-air's newer
# qwen25_3b_q4 (what phase0 reads: MODEL_CHOICES and the bundle's source).

"""Verify adapter for the Q4_0 Qwen2.5-3B example reading FastFlowLM's bundle (fixture)."""

from __future__ import annotations

import os

MODEL_CHOICES = {
    "instruct": "Qwen/Qwen2.5-3B-Instruct",
}
DEFAULT_MODEL = "instruct"

Q4NX_MODEL_SOURCE = os.environ.get("Q4NX_MODEL_SOURCE", "FastFlowLM/Qwen2.5-3B-Instruct-NPU2")


def resolve_model(model_choice_or_id: str) -> str:
    return MODEL_CHOICES.get(model_choice_or_id, model_choice_or_id)


def hf_reference(npu_model_name: str) -> str:
    return npu_model_name
