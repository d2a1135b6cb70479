# Test fixture for phase0: a verify adapter in the style of mlir-air's
# gemma3_4b_q4nx (what phase0 reads: MODEL_CHOICES and the bundle's source).

"""Verify adapter for the Q4NX Gemma3-4B example (fixture)."""

from __future__ import annotations

import os

MODEL_CHOICES = {
    "instruct": "unsloth/gemma-3-4b-it",
}
DEFAULT_MODEL = "instruct"

Q4NX_MODEL_SOURCE = os.environ.get("Q4NX_MODEL_SOURCE", "FastFlowLM/Gemma3-4B-NPU2")


def resolve_model(model_choice_or_id: str) -> str:
    return MODEL_CHOICES.get(model_choice_or_id, model_choice_or_id)


def hf_reference(npu_model_name: str) -> str:
    return npu_model_name
